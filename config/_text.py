"""Reading a team file's bytes into plain data: UTF-8, TOML or YAML, and a bounded shape.

Every failure is a one-line ``ConfigError`` that starts with the file's name:
bytes that are not UTF-8, a syntax error (with its line and column), and data
nested deeper than any team file needs (the parsers recurse, so thousands of
nested brackets would otherwise end in ``RecursionError``).
"""

from __future__ import annotations

import functools
import json
import re
import stat
import tomllib
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from regiment.errors import ConfigError

if TYPE_CHECKING:
    import yaml

__all__ = (
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_VALUES",
    "ConfigFormat",
    "decode_bytes",
    "key_text",
    "parse_text",
    "read_team_file",
)

ConfigFormat: TypeAlias = Literal["toml", "yaml"]

MAX_DEPTH = 32
"""How deeply tables and arrays may nest. A team file needs five levels; the
limit only has to stop input that would exhaust the parsers' recursion."""

_SCAN_LIMIT = 200
"""Brackets nested this deep are refused before parsing; a rough count, so far
above ``MAX_DEPTH`` (which the parsed data is held to exactly)."""

MAX_VALUES = 100_000
"""How many values a file may hold once YAML aliases are expanded (an alias is
a reference, so a few lines can stand for billions of values)."""

MAX_BYTES = 1 << 20
"""The largest team file read, 1 MiB. A team file is a few KB; a much larger one took
the parsers minutes and gigabytes (a 50 MB string: over 60 s and 6 GB), and /dev/zero
was read until memory ran out (a ``MemoryError`` traceback)."""


def read_team_file(file: Path, source: str) -> bytes:
    """The bytes of a team file: a regular file (a FIFO waited for a writer for ever) of
    at most ``MAX_BYTES``; else a ``ConfigError`` that says what it is."""
    try:
        mode = file.stat().st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):  # opening a directory says so
            raise ConfigError(
                f"{source}: cannot read the team file: it is not a regular file (a pipe or a "
                "device, say); give the path of the .toml or .yaml file itself"
            )
        with file.open("rb") as opened:
            data = opened.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the team file: {_why_not(exc)}") from exc
    if len(data) > MAX_BYTES:
        raise ConfigError(
            f"{source}: the team file is larger than {MAX_BYTES:,} bytes; a team file is a "
            "few KB of TOML or YAML: check that this is the file you meant"
        )
    return data


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def key_text(key: object) -> str:
    """A key as a file writes it: bare when it can be, else quoted (so it stays on one line)."""
    text = str(key)
    return text if _BARE_KEY.fullmatch(text) else json.dumps(text)


def decode_bytes(data: bytes, source: str) -> str:
    """The file's text; a ``ConfigError`` naming the file and the first bad byte if not UTF-8.
    A byte-order mark some editors (Notepad) put first is dropped, as YAML's parser does."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{source}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); a team file is TOML or YAML text saved as UTF-8"
        ) from exc


def parse_text(text: str, fmt: ConfigFormat, source: str) -> object:
    """Parse TOML or YAML text into plain data, and check its depth and size."""
    # PyYAML slows down with the square of the bracket depth (2,000 brackets take
    # seconds), so text far past the limit is refused before it is parsed.
    spot = _deep_spot(text, brackets=_SCAN_LIMIT, indent=None)
    if spot:
        raise _too_deep(source, spot)
    try:
        raw = _toml(text, source) if fmt == "toml" else _yaml(text, source)
    except RecursionError as exc:  # the parsers recurse once per level
        raise _too_deep(source, _deep_spot(text, brackets=MAX_DEPTH, indent=4 * MAX_DEPTH)) from exc
    _check_shape(raw, source)
    return raw


def _toml(text: str, source: str) -> object:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        problem = _one_line(str(exc))
        raise ConfigError(
            f"{source}: not valid TOML: {problem}{_toml_hint(problem, text)}"
        ) from exc


def _toml_hint(problem: str, text: str) -> str:
    """What to do about the mistakes tomllib words in its own terms: a key given twice in
    a table ("Cannot overwrite a value"), a table declared twice ("Cannot declare ...")."""
    found = re.search(r"\(at line (\d+), column \d+\)$", problem)
    lines = text.splitlines()
    if found is None or not 0 < int(found[1]) <= len(lines):
        return ""
    line = lines[int(found[1]) - 1].strip()
    if problem.startswith("Cannot overwrite a value") and not line.startswith("["):
        key = line.split("=", 1)[0].strip()
        return f"; the key `{key}` is given twice in its table: keep one"
    if problem.startswith(("Cannot overwrite a value", "Cannot declare")):
        return (
            f"; `{line}` names a table (or key) the file has already: a table is declared "
            "once, with all of its keys under it (a list of tables is `[[name]]` for each item)"
        )
    return ""


def _yaml(text: str, source: str) -> object:
    try:
        import yaml
    except ImportError as exc:  # pyyaml is the `cli` extra
        raise ConfigError(
            f"{source}: reading YAML needs pyyaml, the cli extra: pip install 'regiment[cli]' "
            "(or write the team file in TOML)"
        ) from exc
    try:
        raw: object = yaml.load(text, Loader=_strict_loader())
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(f"{source}: {_yaml_problem(exc)}") from exc
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = exc.character
        shown = f"U+{char:04X}" if isinstance(char, int) else repr(char)
        raise ConfigError(
            f"{source}: line {line}, column {column}: not valid YAML: the character {shown} "
            "is not allowed in YAML text; remove it, or write it as an escape in a quoted string"
        ) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {_one_line(str(exc))}") from exc
    return {} if raw is None else raw


@functools.cache
def _strict_loader() -> type[yaml.SafeLoader]:
    """PyYAML's safe loader, refusing a key given twice in one mapping (it keeps the
    last one silently, so a file's first ``step_timeout:`` would be lost unseen; TOML
    refuses it too)."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        def construct_mapping(
            self, node: yaml.MappingNode, deep: bool = False
        ) -> dict[Hashable, Any]:
            seen: set[tuple[str, str]] = set()
            for key, _ in node.value:
                if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE:
                    continue  # a merge (<<) may override: that is its point
                if (key.tag, key.value) in seen:
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping",
                        node.start_mark,
                        f"the key {key.value!r} is given twice; keep one",
                        key.start_mark,
                    )
                seen.add((key.tag, key.value))
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


_MERGE = "tag:yaml.org,2002:merge"


def _yaml_problem(exc: object) -> str:
    """``line L, column C: not valid YAML: <problem> (<context>)``, from a marked error."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or "cannot be read"
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    detail = f"{problem} ({context})" if context else str(problem)
    return f"{where}not valid YAML: {_one_line(detail)}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _too_deep(source: str, path: str = "") -> ConfigError:
    where = f"{path}: " if path else ""
    return ConfigError(
        f"{source}: {where}arrays or tables nested more than {MAX_DEPTH} deep; "
        "a team file needs only a few levels, so check the brackets and indentation"
    )


_TOP_KEY = re.compile(r"^\[*\s*(?P<key>[A-Za-z0-9_.\"'-]+)\s*[\]=:]")
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'[^']*'|#.*$")


def _deep_spot(text: str, *, brackets: int, indent: int | None) -> str:
    """``line N (under key)``: where brackets or indentation first go past the given depths.

    A rough scan (strings and comments skipped), used only to say where a file
    the parser could not finish goes too deep.
    """
    depth, key = 0, None
    for number, line in enumerate(text.splitlines(), 1):
        if depth == 0 and (top := _TOP_KEY.match(line)):
            key = top.group("key")
        deepest = depth
        for char in _STRING.sub("", line):
            depth += 1 if char in "[{" else -1 if char in "]}" else 0
            deepest = max(deepest, depth)
        indented = len(line) - len(line.lstrip(" -"))
        if deepest > brackets or (indent is not None and indented > indent):
            return f"line {number}" + (f" (under {key_text(key)})" if key else "")
    return ""


def _check_shape(raw: object, source: str) -> None:
    """Refuse data nested past ``MAX_DEPTH`` or holding more than ``MAX_VALUES`` values.

    Iterative, and counting every visit, so a self-referencing YAML alias or an
    alias bomb ends here instead of in a recursion or an endless walk. Paths
    are kept as links to the parent's and spelt out only for the message.
    """
    stack: list[tuple[object, int, _Trail]] = [(raw, 0, None)]
    seen = 0
    while stack:
        value, depth, trail = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise ConfigError(
                f"{source}: more than {MAX_VALUES} values (YAML aliases expand); "
                "a team file is small, so remove the repeated aliases"
            )
        if isinstance(value, dict):
            children: Iterable[tuple[object, object]] = value.items()
        elif isinstance(value, list | tuple | set | frozenset):
            children = enumerate(value)
        else:
            continue
        if depth >= MAX_DEPTH:
            raise _too_deep(source, _short(_spell(trail)))
        stack.extend((v, depth + 1, (trail, k, isinstance(value, dict))) for k, v in children)


_Trail: TypeAlias = "tuple[_Trail, object, bool] | None"


def _spell(trail: _Trail) -> str:
    parts: list[str] = []
    while trail is not None:
        trail, key, named = trail
        parts.append(f".{key_text(key)}" if named else f"[{key}]")
    return "".join(reversed(parts)).lstrip(".")


def _short(path: str) -> str:
    """A path down to the depth limit can be long; the start locates it."""
    return path if len(path) <= 80 else path[:77] + "..."


def _why_not(exc: OSError) -> str:
    """Why a team file could not be read, and what to give instead."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"{reason}; check the path (a relative one is read from {Path.cwd()})"
    if isinstance(exc, IsADirectoryError):
        return f"{reason}; give the path of the .toml or .yaml file in it"
    return reason

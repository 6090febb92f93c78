"""The line of a team file that a config error is about, for the command's error line.

A config error names the file and the key path as the file writes it
(``team.toml: workers[1].tools[0]: cannot import ...``); the command adds the line
that path is on (``team.toml:14: workers[1].tools[0]: ...``), as compilers and
linters do, so an editor or a terminal can jump to it. The line is found by reading
the file again: the key's own line, or, for a key that is missing or an item of a
list, the nearest line the path leads through (its table, or its list's key).
An error that names no key path, or a file that cannot be read, is left as it is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ("with_line",)

# "<file>: <key path>: ..." or "<file>: unknown table `[x]` ..." (a path has no spaces)
_HEAD = re.compile(r"^(?P<file>[^\n]+?\.(?:toml|ya?ml)): (?P<rest>.*)$", re.S)
_PATH = re.compile(
    r'^(?P<path>(?:[A-Za-z0-9_-]+|"[^"]*"|\[\d+\])(?:\.?(?:[A-Za-z0-9_-]+|"[^"]*"|\[\d+\]))*): '
)
_UNKNOWN_KEY = re.compile(r"^unknown key `(?P<key>[^`]+?) ?[=:]`")
_UNKNOWN_TABLE = re.compile(r"^unknown table `\[{1,2}(?P<key>[^\]`]+)\]{1,2}`")
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_SEGMENT = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|[^.\s]+')


def with_line(message: str) -> str:
    """``message`` with the line of the team file it names after the file's name
    (``team.toml:14: ...``), when it names a key path found in that file."""
    head = _HEAD.match(message)
    if head is None:
        return message
    file, rest = head["file"], head["rest"]
    path = ""
    if named := _PATH.match(rest):
        path = named["path"]
        rest = rest[named.end() :]
    if unknown := _UNKNOWN_KEY.match(rest) or _UNKNOWN_TABLE.match(rest):
        path = f"{path}.{unknown['key']}" if path else unknown["key"]
    if not path:
        return message
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return message
    lines = _yaml_lines(text) if file.endswith(("yaml", "yml")) else _toml_lines(text)
    line = _nearest(lines, path)
    return message if line is None else f"{file}:{line}: {message[len(file) + 2 :]}"


def _nearest(lines: dict[str, int], path: str) -> int | None:
    """The line of ``path``, else of the longest path it goes through that has one."""
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return None


def _key(segment: str) -> str:
    """A key as the error's path writes it: bare when it can be, else JSON-quoted."""
    if segment[:1] in ('"', "'"):
        segment = json.loads(segment) if segment[0] == '"' else segment[1:-1]
    return segment if _BARE.fullmatch(segment) else json.dumps(segment)


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _toml_lines(text: str) -> dict[str, int]:
    """The first line of each table and key of a TOML file, by key path (and of each
    item of a list written one or more items a line)."""
    lines: dict[str, int] = {}
    arrays: dict[str, int] = {}  # an array of tables' path: how many it has so far
    table, depth, quote = "", 0, ""  # the table we are in; an open value's nesting
    items: tuple[str, int] | None = None  # an open list's path and its next item's index
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if depth or quote:  # inside a value that goes on from an earlier line
            if items and depth == 1 and not quote and stripped[:1] not in ("", "]", "#"):
                lines.setdefault(f"{items[0]}[{items[1]}]", number)
            depth, quote, commas = _scan(line, depth, quote)
            items = (items[0], items[1] + commas) if items and (depth or quote) else None
        elif stripped.startswith("["):
            table = _table(stripped, arrays, lines, number)
        elif stripped and not stripped.startswith("#") and "=" in stripped:
            key, _, value = stripped.partition("=")
            path = table
            for segment in _SEGMENT.findall(key):
                path = _join(path, _key(segment))
            lines.setdefault(path, number)
            depth, quote, commas = _scan(value, 0, "")
            items = (path, commas) if depth == 1 and value.strip().startswith("[") else None
    return lines


def _table(header: str, arrays: dict[str, int], lines: dict[str, int], number: int) -> str:
    """The path of the table ``header`` (``[a.b]``, ``[[a]]``) opens on line ``number``,
    noted in ``lines`` (and, for an array of tables, counted in ``arrays``)."""
    double = header.startswith("[[")
    inner = header.strip("[").split("]", 1)[0]
    prefix = ""
    segments = [_key(s) for s in _SEGMENT.findall(inner)]
    for segment in segments[:-1]:
        prefix = _join(prefix, segment)
        if prefix in arrays:  # through an array of tables: its latest table
            prefix = f"{prefix}[{arrays[prefix] - 1}]"
        lines.setdefault(prefix, number)  # [check.c] opens `check` too (an unknown table)
    table = _join(prefix, segments[-1]) if segments else prefix
    if double:
        lines.setdefault(table, number)  # the array itself: its first table
        arrays[table] = arrays.get(table, 0) + 1
        table = f"{table}[{arrays[table] - 1}]"
    lines.setdefault(table, number)
    return table


def _scan(text: str, depth: int, quote: str) -> tuple[int, str, int]:
    """After ``text``: the nesting of brackets and braces, the open multi-line string
    (its quote), and how many commas separated the items of a list open at depth 1."""
    i, commas = 0, 0
    while i < len(text):
        if quote:
            if text[i] == "\\" and quote in ('"', '"""'):
                i += 2
                continue
            if text.startswith(quote, i):
                i, quote = i + len(quote), ""
                continue
        elif text.startswith(('"""', "'''"), i):
            quote, i = text[i : i + 3], i + 3
            continue
        elif text[i] in "\"'":
            quote = text[i]
        elif text[i] == "#":
            break
        elif text[i] in "[{":
            depth += 1
        elif text[i] in "]}":
            depth -= 1
        elif text[i] == "," and depth == 1:
            commas += 1
        i += 1
    return max(depth, 0), quote if len(quote) == 3 else "", commas


def _yaml_lines(text: str) -> dict[str, int]:
    """The line of each key and list item of a YAML file, by key path (none without
    pyyaml, or for text it cannot read)."""
    try:
        import yaml
    except ImportError:
        return {}
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    lines: dict[str, int] = {}
    todo: list[tuple[str, object]] = [("", root)]
    while todo:
        path, node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                inner = _join(path, _key(json.dumps(str(key.value))))
                lines.setdefault(inner, key.start_mark.line + 1)
                todo.append((inner, value))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                lines.setdefault(f"{path}[{index}]", item.start_mark.line + 1)
                todo.append((f"{path}[{index}]", item))
    return lines

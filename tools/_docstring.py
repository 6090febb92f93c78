"""Reading a tool's description and its parameters' descriptions from a docstring."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ("Docstring", "parse_docstring")

# Google-style section headers; text before the first one is the description.
_SECTIONS = frozenset(
    {
        "args",
        "arguments",
        "attributes",
        "example",
        "examples",
        "keyword args",
        "keyword arguments",
        "note",
        "notes",
        "parameters",
        "params",
        "raises",
        "references",
        "return",
        "returns",
        "see also",
        "todo",
        "warning",
        "warnings",
        "yield",
        "yields",
    }
)
_ARGS_SECTIONS = frozenset(
    {"args", "arguments", "keyword args", "keyword arguments", "parameters", "params"}
)
# "name: text" or "name (type): text", as Google style writes an argument.
_ARG_LINE = re.compile(r"^\*{0,2}(?P<name>\w+)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)$")
# "name : type" (or just "name"), as NumPy style writes an argument; its text follows.
_NUMPY_ARG = re.compile(r"^\*{0,2}(?P<name>\w+)\s*(:.*)?$")
# ":param name: text" or ":param type name: text", and the other Sphinx fields.
_SPHINX_FIELD = re.compile(r"^:(?P<kind>\w+)(?P<rest>[^:]*):\s*(?P<text>.*)$")
_SPHINX_PARAMS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword"})


@dataclass(frozen=True)
class Docstring:
    """What a tool docstring says: the description and per-parameter notes."""

    description: str
    params: dict[str, str] = field(default_factory=dict)


@dataclass
class _Reading:
    """Where a docstring's reader is: its section, and the entry it adds lines to."""

    section: str | None = None  # a section name, "sphinx" in :param: fields, None at the top
    numpy: bool = False  # the section's header was underlined (NumPy style)
    entry_indent: int | None = None
    current: list[str] | None = None


def parse_docstring(doc: str | None) -> Docstring:
    """Split a docstring (Google, NumPy or Sphinx style) into its description and
    its parameters' entries.

    The description is everything before the first section header (or Sphinx
    field), so a summary line plus the paragraphs that explain when to use the tool
    all reach the model.
    """
    if not doc:
        return Docstring("")
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, list[str]] = {}
    at = _Reading()
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if (header := _section_header(line, following)) is not None:
            at = _Reading(section=header, numpy=_underline(following))
        elif at.numpy and at.entry_indent is None and _underline(line):
            continue  # the header's underline
        elif not line[:1].isspace() and (sphinx := _SPHINX_FIELD.match(line)) is not None:
            at = _Reading(section="sphinx")
            if sphinx["kind"] in _SPHINX_PARAMS and sphinx["rest"].split():
                at.current = params.setdefault(sphinx["rest"].split()[-1], [sphinx["text"]])
        elif at.section is None:
            description.append(line)
        elif line.strip() and (at.section in _ARGS_SECTIONS or at.section == "sphinx"):
            _entry_line(at, line, params)
    return Docstring(
        "\n".join(description).strip(),
        {name: " ".join(part for part in text if part) for name, text in params.items()},
    )


def _entry_line(at: _Reading, line: str, params: dict[str, list[str]]) -> None:
    """A line of an arguments section: a new entry, or more text of the current one."""
    indent = len(line) - len(line.lstrip())
    if at.section != "sphinx" and (at.entry_indent is None or indent <= at.entry_indent):
        at.entry_indent = indent
        if at.numpy and (numpy := _NUMPY_ARG.match(line.strip())) is not None:
            at.current = params.setdefault(numpy["name"], [])
            return
        if not at.numpy and (google := _ARG_LINE.match(line.strip())) is not None:
            at.current = params.setdefault(google["name"], [google["text"]])
            return
    if at.current is not None:
        at.current.append(line.strip())


def _underline(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 3 and set(stripped) == {"-"}


def _section_header(line: str, following: str) -> str | None:
    """The section a line opens: ``Args:`` (Google), or ``Parameters`` over a line of
    dashes (NumPy)."""
    if line[:1].isspace():
        return None
    text = line.strip()
    if text.endswith(":"):
        text = text[:-1]
    elif not _underline(following):
        return None
    name = text.strip().lower()
    return name if name in _SECTIONS else None

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


@dataclass(frozen=True)
class Docstring:
    """What a tool docstring says: the description and per-parameter notes."""

    description: str
    params: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str | None) -> Docstring:
    """Split a (Google-style) docstring into its description and its ``Args:`` entries.

    The description is everything before the first section header, so a summary
    line plus the paragraphs that explain when to use the tool all reach the model.
    """
    if not doc:
        return Docstring("")
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, list[str]] = {}
    section: str | None = None
    current: list[str] | None = None
    entry_indent: int | None = None
    for line in lines:
        header = _section_header(line)
        if header is not None:
            section, current, entry_indent = header, None, None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in _ARGS_SECTIONS or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if entry_indent is None:
            entry_indent = indent
        match = _ARG_LINE.match(line.strip())
        if indent <= entry_indent and match is not None:
            current = params.setdefault(match["name"], [])
            current.append(match["text"])
        elif current is not None:
            current.append(line.strip())
    return Docstring(
        "\n".join(description).strip(),
        {name: " ".join(part for part in text if part) for name, text in params.items()},
    )


def _section_header(line: str) -> str | None:
    if line[:1].isspace() or not line.rstrip().endswith(":"):
        return None
    name = line.strip()[:-1].strip().lower()
    return name if name in _SECTIONS else None

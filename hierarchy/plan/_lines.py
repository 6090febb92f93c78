"""Line-based reading of a planner reply that carries no plan-shaped JSON.

Numbered (``1.``, ``1)``, ``Step 1:``) or bulleted (``-``, ``*``, ``•``) lines
are the steps, so lead-in and closing prose is not; otherwise every non-blank
line is a step. Notes such as ``(worker: billing; depends on: 1)`` fill in a
step's worker, dependencies and check, and code-fence lines are skipped. Also
home of the raw step shapes and "nothing to do" phrases that
:mod:`regiment.hierarchy.plan._parse` shares.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

import msgspec

__all__ = (
    "_NOTHING_FULL",
    "_RawStep",
    "_Reading",
    "_from_lines",
    "_looks_like_json",
    "_meaningful",
    "_split_deps",
)

_ALNUM = re.compile(r"[^\W_]")
# "[1] Check eligibility", "[urgent] call back": a bracketed tag followed by prose.
_BRACKET_TAG = re.compile(r"^\[[^\[\]{}\"',:]*\]\s*[^\s\[\]{},:]")
_DEP_SEPARATOR = re.compile(r"\s*(?:,|;|&|\band\b)\s*", re.I)

_FENCE_LINE = re.compile(r"^\s*```")
_LEADING_MARKUP = re.compile(r"^(?:#{1,6}\s+)?(?:\*\*|__)?")
_NUMBERED = re.compile(
    r"^(?:step\s*#?\s*(\d+)\s*[.):\-\u2013\u2014]?|#?(\d+)\s*[.):](?!\d)|\((\d+)\))\s*(.*)$", re.I
)
# A marker alone ("- ", "* ", "1. ") is still a marked line: a blank step, not text.
_BULLET = re.compile(r"^[-*•+‣◦▪](?:\s+(?:\[[ xX]?\]\s*)?(.*))?$")
_KEYS = r"worker|assignee|agent|assigned[ _]to|depends[ _]on|dependencies|deps|after|check"
_ANNOTATION = re.compile(r"\s*[(\[]([^()\[\]]*)[)\]]")
_NOTE_SEPARATOR = re.compile(rf";|,\s*(?=(?:{_KEYS})\s*[:=])", re.I)
_KEY_VALUE = re.compile(rf"^\s*({_KEYS})\s*[:=]\s*(.*?)\s*$", re.I)
_KEY_NAMES = {"worker": "worker", "assignee": "worker", "agent": "worker", "assigned_to": "worker"}
_KEY_NAMES |= {"check": "check"}  # every other key names dependencies

_NOTHING = (
    r"(?:no[\s_-]*(?:steps?|actions?|work|changes?)(?:\s+(?:are|is))?"
    r"(?:\s+(?:needed|required|necessary|to\s+(?:do|take)))?"
    r"|nothing(?:\s+(?:more|else|further))?(?:\s+(?:to\s+do|needs?\s+(?:to\s+be\s+)?(?:done|doing)"
    r"|(?:is\s+)?(?:needed|required|necessary|left\s+to\s+do)))?"
    r"|none|n/a)"
)
# The first line of an unmarked reply ("Nothing to do: the refund exists.") ...
_NOTHING_START = re.compile(rf"^\W*{_NOTHING}[ \t]*(?:[.!:;,\-\u2013\u2014]|$)", re.I)
# ... or a plan whose only step is just such a phrase.
_NOTHING_FULL = re.compile(rf"^\W*{_NOTHING}\W*$", re.I)


class _RawStep(msgspec.Struct, frozen=True, kw_only=True):
    """A step as the model wrote it, before ids are assigned (a struct: made in C)."""

    description: str
    label: str | None = None  # the model's own id or number for the step
    worker: str | None = None
    deps: tuple[str, ...] = ()
    check: str | None = None


class _Reading(NamedTuple):
    raws: list[_RawStep]
    nothing_to_do: bool = False
    error: str | None = None  # why the reply could not be read as a plan (``raws`` is empty)


def _meaningful(text: str) -> bool:
    """Whether ``text`` says something: a marker, dashes or blanks alone are not a step.

    That is: whether a character of it is alphanumeric (``str.isalnum``, which is
    what ``\\w`` matches in a ``str`` pattern, bar the underscore).
    """
    return _ALNUM.search(text) is not None


def _looks_like_json(text: str) -> bool:
    """Whether ``text`` (a reply, a fence's body or a step's text) reads as JSON, not prose."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return True
    return stripped.startswith("[") and not _BRACKET_TAG.match(stripped)


def _split_deps(text: str) -> list[str]:
    parts = (part.strip() for part in _DEP_SEPARATOR.split(text))
    return [part for part in parts if part]


class _Line(NamedTuple):
    indent: int
    kind: Literal["numbered", "bullet", "plain"]
    label: str | None
    text: str  # without marker
    whole: str  # stripped, with marker: how a sub-line is kept in its step


def _from_lines(reply: str) -> _Reading:
    lines = [line for line in map(_classify, reply.splitlines()) if line is not None]
    # A blank marker ("- ") does not make a reply a list; it is skipped as a step.
    kinds = {line.kind for line in lines if _meaningful(line.text)}
    kind = "numbered" if "numbered" in kinds else "bullet" if "bullet" in kinds else None
    if kind is None:
        if lines and _NOTHING_START.match(lines[0].whole):
            return _Reading([], nothing_to_do=True)
        return _Reading([_raw_from_line(line.text, None, []) for line in lines])
    top = min(line.indent for line in lines if line.kind == kind)
    groups: list[tuple[_Line, list[str]]] = []
    current: list[str] | None = None
    for line in lines:
        if line.kind == kind and line.indent == top:
            current = []
            groups.append((line, current))
        elif current is not None and (line.indent > top or line.kind != "plain"):
            current.append(line.whole)
        else:
            current = None  # prose between or after the steps
    return _Reading([_raw_from_line(line.text, line.label, extra) for line, extra in groups])


def _classify(line: str) -> _Line | None:
    """The line's indent, marker and text; ``None`` for blank and code-fence lines."""
    if not line.strip() or _FENCE_LINE.match(line):
        return None
    expanded = line.expandtabs(4)
    indent = len(expanded) - len(expanded.lstrip())
    body = _LEADING_MARKUP.sub("", expanded.strip())
    if numbered := _NUMBERED.match(body):
        label = next(group for group in numbered.groups()[:3] if group is not None)
        return _Line(indent, "numbered", label, _clean(numbered.group(4)), body)
    if bullet := _BULLET.match(body):
        return _Line(indent, "bullet", None, _clean(bullet.group(1) or ""), body)
    return _Line(indent, "plain", None, _clean(body), body)


def _clean(text: str) -> str:
    return text.replace("**", "").strip()


def _raw_from_line(text: str, label: str | None, extra: list[str]) -> _RawStep:
    """A step from a line, reading ``(worker: x; depends on: 1, 2; check: y)`` notes."""
    notes: dict[str, str] = {}
    kept: list[str] = []
    position = 0
    for match in _ANNOTATION.finditer(text):
        pairs = [_KEY_VALUE.match(part) for part in _NOTE_SEPARATOR.split(match.group(1))]
        if all(pairs):
            kept.append(text[position : match.start()])
            position = match.end()
            for pair in pairs:
                assert pair is not None  # for mypy: all() checked it
                key = _KEY_NAMES.get(pair.group(1).lower().replace(" ", "_"), "depends_on")
                notes[key] = pair.group(2)
    kept.append(text[position:])
    description = "\n".join(part for part in ["".join(kept).strip(), *extra] if part)
    return _RawStep(
        description=description,
        label=label,
        worker=notes.get("worker", "").strip() or None,
        deps=tuple(_split_deps(notes.get("depends_on", ""))),
        check=notes.get("check", "").strip() or None,
    )

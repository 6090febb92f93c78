"""Lenient parsing of a planner model's reply into plan steps.

Models wrap plans in many ways, so the parser looks, in order, for:

1. JSON: a reply that starts with ``{``/``[`` or carries a ``json`` code fence
   is JSON and is read only as JSON; in prose, the first balanced array or
   object that decodes *and* looks like a plan: a list of strings, a list of
   step objects, or an object with ``steps`` (optionally a ``nothing_to_do`` /
   ``done`` flag).
2. Marked lines: numbered (``1.``, ``1)``, ``Step 1:``) or bulleted (``-``,
   ``*``, ``•``) lines are the steps, so lead-in and closing prose is not.
3. Otherwise every line that says something (has a letter or a digit) is a step.

JSON reading (1) lives in :mod:`regiment.hierarchy.plan._json` and
:mod:`regiment.hierarchy.plan._shape`, line-based reading (2 and 3) in
:mod:`regiment.hierarchy.plan._lines`; this module turns either reading into
steps with ids and dependencies.

It never raises on what a model wrote. JSON that is not a plan, a step
without a text description, a dependency on a blank line or a reply with no
steps gives a :class:`ParsedPlan` with no steps and an ``error`` saying what
was wrong, which the planner sends back to the model as a re-prompt. A blank
step (a JSON step whose text is a blank string, a bullet alone) is dropped, as
issue #5 asks; any other step is never dropped, guessed at, or made of raw JSON.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import msgspec

from regiment.errors import ConfigError
from regiment.hierarchy._text import valid_text
from regiment.hierarchy.plan._json import _from_json
from regiment.hierarchy.plan._lines import (
    _NOTHING_FULL,
    _from_lines,
    _looks_like_json,
    _meaningful,
    _RawStep,
    _Reading,
)
from regiment.hierarchy.plan._plan import PlanStep
from regiment.hierarchy.plan._shape import _ID_LIKE, _excerpt, _numeric
from regiment.hierarchy.plan._usual import _kept_as_written, _one_pass

__all__ = ("ParsedPlan", "parse_plan")


class ParsedPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`parse_plan` understood from a reply.

    Attributes:
        steps: the steps, at most ``max_steps``; blank steps (a JSON step whose
            text is a blank string; a marker alone or dashes in a prose plan) are dropped.
        truncated_from: the step count before truncation, if the reply had too many.
        nothing_to_do: the reply said no steps are needed (``steps`` is empty).
        source: where the steps came from: ``json``, ``lines``, or ``empty``
            (the reply was blank, or too long to be a plan).
        error: why the reply gave no plan (``steps`` is then empty): JSON
            that is not a plan, a malformed step, no steps at all. It is
            written for the planner model, which gets it back as a re-prompt.
        written_as: for a dependency id made from a number that is no step of the
            reply (``"s7"`` from ``7``), what the model wrote (``"7"``); give it to
            :func:`validate_plan`, so a problem quotes the model's own words.
    """

    steps: tuple[PlanStep, ...]
    truncated_from: int | None = None
    nothing_to_do: bool = False
    source: Literal["json", "lines", "empty"] = "lines"
    error: str | None = None
    written_as: dict[str, str] = {}


_NO_STEPS = (
    'the reply held no steps; reply with the steps as JSON, or {"steps": []} if nothing needs doing'
)
# Longer replies are not read: a plan is a few short steps, and the bracket scan
# and the line reader stay cheap on what a hostile model can send.
_MAX_REPLY_CHARS = 64_000


def parse_plan(
    reply: str,
    *,
    max_steps: int = 10,  # Planner.max_steps's default
    id_prefix: str = "s",
    start_index: int = 1,
    default_worker: str | None = None,
) -> ParsedPlan:
    """Parse a planner model's reply into steps, leniently.

    A reply that starts with ``{``/``[`` or carries a ``json`` code fence is
    read only as JSON: if that JSON is not a plan, the result has no steps and
    an ``error``, never a step made of the raw text. Prose is read by lines.

    Ids: explicit string ids from the model are kept (trimmed; duplicates get
    ``-2``, ``-3`` suffixes). Steps without one, or with a numeric id such as
    ``1`` or ``"step 2"``, are numbered ``{id_prefix}{start_index}``,
    ``{id_prefix}{start_index + 1}``, ... by position, skipping ids already
    taken; a replan passes ``start_index`` past the kept steps so ids never
    collide with them.

    Dependencies: a string naming an explicit id means that step; a number
    ``N`` (or ``"N"``, ``"step N"``) means the step the model labelled ``N``,
    or, when it labelled none, the Nth step of the reply; other numbers become
    ``{id_prefix}N`` and other strings are kept as given (a kept step's id, or
    a mistake that validation reports). A dependency on a blank line is an error.

    Args:
        reply: the model's text. Lone surrogates (text no encoder accepts) are
            read as U+FFFD, so no step carries them.
        max_steps: keep at most this many steps (10, as a ``Planner``, unless given);
            more are cut and the original count is recorded in ``truncated_from``.
        id_prefix: prefix of generated ids.
        start_index: number of the first generated id.
        default_worker: the worker of a step that names none (``None``: left unset).

    Raises:
        ConfigError: ``reply`` is not a ``str``, or ``max_steps`` < 1 or ``start_index``
            < 0. Nothing the model wrote raises: that is ``ParsedPlan.error``.
    """
    if max_steps < 1 or start_index < 0:
        raise ConfigError(
            f"parse_plan needs max_steps >= 1 and start_index >= 0, got "
            f"max_steps={max_steps}, start_index={start_index}"
        )
    _check_text(reply)
    if not reply.strip():
        return ParsedPlan(steps=(), source="empty", error=_NO_STEPS)
    if len(reply) > _MAX_REPLY_CHARS:
        return ParsedPlan(steps=(), source="empty", error=_too_long(len(reply)))
    reply = valid_text(reply)
    if reply.lstrip()[:1] == "{" and (steps := _one_pass(reply, default_worker)) is not None:
        return _cut(steps, max_steps)
    naming = _Naming(id_prefix, start_index, default_worker)
    reading = _from_json(reply)
    if reading is not None:
        return _finish(reading, "json", max_steps, naming)
    return _finish(_from_lines(reply), "lines", max_steps, naming)


def _check_text(reply: object) -> None:
    """A ``ConfigError`` for a reply that is not a ``str`` (an ``AttributeError`` else)."""
    if not isinstance(reply, str):
        shown = f"{type(reply).__name__}: {reply!r:.80}"
        raise ConfigError(f"parse_plan reads a model's reply as text (a str); got {shown}")


def _too_long(length: int) -> str:
    return (
        f"the reply is {length} characters long, more than a plan needs "
        f"(at most {_MAX_REPLY_CHARS}); reply with short steps as JSON"
    )


class _Naming(NamedTuple):
    prefix: str  # of generated ids
    start: int  # the first generated id's number
    worker: str | None  # of a step that names none


def _finish(
    reading: _Reading, source: Literal["json", "lines"], max_steps: int, naming: _Naming
) -> ParsedPlan:
    raws = reading.raws
    if reading.error is not None:
        return ParsedPlan(steps=(), source=source, error=reading.error)
    # Blank steps are dropped: a JSON step was read as "" if blank (its text was checked
    # as it was read); a line may be a marker alone.
    if source == "json":
        kept = [i for i, raw in enumerate(raws) if raw.description]
    else:
        kept = [i for i, raw in enumerate(raws) if _meaningful(raw.description)]
    lone = len(kept) == 1 and _NOTHING_FULL.match(raws[kept[0]].description)
    if reading.nothing_to_do or lone:
        return ParsedPlan(steps=(), nothing_to_do=True, source=source)
    if not kept:
        return ParsedPlan(steps=(), source=source, error=_NO_STEPS)
    if source == "lines" and (error := _json_line(raws, kept)) is not None:
        return ParsedPlan(steps=(), source=source, error=error)
    written = source == "json" and len(kept) == len(raws)
    steps = _as_written(raws, naming.worker) if written else None
    if steps is None:  # numbers, missing or repeated ids: the general rules
        resolve = _DepResolver(raws, naming.prefix)
        steps, problems = _resolved(raws, kept, naming, resolve)
        if problems:
            return ParsedPlan(steps=(), source=source, error="; ".join(problems))
        parsed = _cut(steps, max_steps, source)
        return msgspec.structs.replace(parsed, written_as=resolve.written_as)
    return _cut(steps, max_steps, source)


def _cut(
    steps: list[PlanStep], max_steps: int, source: Literal["json", "lines"] = "json"
) -> ParsedPlan:
    """The plan of ``steps``, cut to ``max_steps`` (and how many there were, if more)."""
    truncated_from = len(steps) if len(steps) > max_steps else None
    return ParsedPlan(steps=tuple(steps[:max_steps]), truncated_from=truncated_from, source=source)


def _resolved(
    raws: list[_RawStep], kept: list[int], naming: _Naming, resolve: _DepResolver | None = None
) -> tuple[list[PlanStep], list[str]]:
    """The kept steps with ids assigned and dependencies resolved by the general
    rules (see :func:`parse_plan`), and the problems found doing so (``resolve``:
    the resolver to use, which keeps what else it learns)."""
    resolve = resolve or _DepResolver(raws, naming.prefix)
    ids = _assign_ids(raws, kept, naming.prefix, naming.start)
    resolve.ids = ids
    steps = [
        PlanStep(
            id=ids[i],
            description=raws[i].description,
            worker=raws[i].worker or naming.worker,
            depends_on=resolve(raws[i].deps, ids[i]),
            check=raws[i].check,
        )
        for i in kept
    ]
    return steps, resolve.problems


def _as_written(raws: list[_RawStep], worker: str | None) -> list[PlanStep] | None:
    """The steps of the usual JSON plan, which need no resolving: every step has its
    own id, none of them a number, and no dependency is a number. ``None`` otherwise.

    With such steps the general rules keep each id as written and each dependency
    as written (a step's id, or a mistake that validation reports), once each.
    """
    steps: list[PlanStep] = []
    ids: set[str] = set()
    for raw in raws:
        if raw.label is None:
            return None
        deps = _kept_as_written(raw.label, raw.deps, ids)
        if deps is None:
            return None
        steps.append(
            PlanStep(
                id=raw.label,
                description=raw.description,
                worker=raw.worker or worker,
                depends_on=deps,
                check=raw.check,
            )
        )
    return steps


def _json_line(raws: list[_RawStep], kept: list[int]) -> str | None:
    """An error if a line-read step is JSON: JSON that was no plan is never a step."""
    for i in kept:
        if _looks_like_json(raws[i].description):
            return (
                f"a line of the reply is JSON but not a plan: {_excerpt(raws[i].description)}; "
                'reply with the whole plan as one JSON object {"steps": [...]}'
            )
    return None


def _assign_ids(raws: list[_RawStep], kept: list[int], prefix: str, start: int) -> dict[int, str]:
    ids: dict[int, str] = {}
    taken: set[str] = set()
    # Explicit ids first, so a generated id never takes a name the model chose.
    for i in kept:
        label = raws[i].label
        if label and _numeric(label) is None and _ID_LIKE.fullmatch(label) is not None:
            ids[i] = _unique(label, taken)
    for position, i in enumerate(kept):
        if i not in ids:
            number = start + position
            while f"{prefix}{number}" in taken:
                number += 1
            ids[i] = f"{prefix}{number}"
            taken.add(ids[i])
    return ids


def _unique(base: str, taken: set[str]) -> str:
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    taken.add(candidate)
    return candidate


class _DepResolver:
    """Turns the dependencies a model wrote into step ids."""

    def __init__(self, raws: list[_RawStep], prefix: str) -> None:
        self.ids: dict[int, str] = {}  # each kept step's id, by position
        self._prefix, self._count = prefix, len(raws)
        self.problems: list[str] = []
        self.written_as: dict[str, str] = {}  # see ParsedPlan.written_as
        self._explicit: dict[str, int] = {}
        self._numbered: dict[int, int] = {}
        for i, raw in enumerate(raws):
            number = _numeric(raw.label) if raw.label else None
            if raw.label and number is None:
                self._explicit.setdefault(raw.label, i)
            elif number is not None:
                self._numbered.setdefault(number, i)

    def __call__(self, deps: tuple[str, ...], step_id: str) -> tuple[str, ...]:
        resolved: list[str] = []
        for dep in deps:
            name = self._name(dep)
            if name is None:
                self.problems.append(
                    f"step {step_id} depends on {dep!r}, which is a blank line (or step) of "
                    "the plan, not a step; say what that step must do, or drop the dependency"
                )
            elif name not in resolved:
                resolved.append(name)
        return tuple(resolved)

    def _name(self, dep: str) -> str | None:
        """The id ``dep`` means, or ``None`` when it points at a blank (dropped) line."""
        target: int | None = self._explicit.get(dep)
        number = _numeric(dep)
        if target is None and number is not None:
            if self._numbered:
                target = self._numbered.get(number)
            elif 1 <= number <= self._count:
                target = number - 1
        if target is not None:
            return self.ids.get(target)
        if number is None:
            return dep
        # No step of the reply: a kept step's id, or a slip that validation quotes.
        name = f"{self._prefix}{number}"
        self.written_as.setdefault(name, dep)
        return name

"""The usual JSON plan, read in one pass: decoded straight into typed steps.

Planners mostly reply ``{"steps": [{"id": "s1", "description": "...",
"depends_on": [...]}, ...]}``. The general reader decodes that into Python
values, reads each step object out of its dict (a first pass), then turns the
steps into ``PlanStep``\\ s (a second). Here the decoder checks the shape itself
(only those keys, each of its type) and one loop makes the steps.

It only takes a plan the general rules would read as written: every step has
its own id, no id or dependency is a number, every dependency is a plain word,
and more than a lone "nothing to do" step. Anything else (a missing id, a
number, a key it does not know, a malformed value) gives ``None``, and the
general reader reads the reply and says what is wrong. A property test checks
that whatever this pass accepts, the general reader gives the same steps.
"""

from __future__ import annotations

import msgspec

from regiment.hierarchy.plan._lines import _NOTHING_FULL, _looks_like_json, _meaningful
from regiment.hierarchy.plan._plan import PlanStep
from regiment.hierarchy.plan._shape import _ID_LIKE, _NUMBER_START, _numeric

__all__ = ("_kept_as_written", "_one_pass")


class _Step(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    description: str
    id: str | None = None
    worker: str | None = None
    depends_on: tuple[str, ...] = ()
    check: str | None = None


class _Plan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    steps: tuple[_Step, ...]


_DECODER = msgspec.json.Decoder(_Plan)


def _one_pass(reply: str, worker: str | None) -> list[PlanStep] | None:
    """The steps of ``reply`` if it is the usual JSON plan; ``None`` to read it generally."""
    try:
        written = _DECODER.decode(reply).steps
    except msgspec.DecodeError:  # not JSON, another shape, or a value of another type
        return None
    if not written or (len(written) == 1 and _NOTHING_FULL.match(written[0].description)):
        return None  # nothing to do: the general reader says so
    steps: list[PlanStep] = []
    ids: set[str] = set()
    for step in written:
        label, text = step.id, step.description
        if label is None:
            return None  # the general reader fills in the id
        # Text that starts with a letter or digit says something and is no JSON: the
        # usual step's, with no Python call for either (two a step of every plan, #22).
        if not text[:1].isalnum() and (not _meaningful(text) or _looks_like_json(text)):
            return None  # the general reader says what is wrong
        for dep in step.depends_on:  # a loop, not all(<genexpr>): this runs for every step
            if not dep.isalnum() or dep.lower() == "and":
                return None  # a phrase, not an id: the general reader resolves it
        label = label.strip()
        deps = _kept_as_written(label, step.depends_on, ids)
        if deps is None:
            return None
        steps.append(
            PlanStep(
                id=label,
                description=text.strip(),
                worker=(step.worker and step.worker.strip()) or worker,
                depends_on=deps,
                check=(step.check and step.check.strip()) or None,
            )
        )
    return steps


def _kept_as_written(label: str, deps: tuple[str, ...], ids: set[str]) -> tuple[str, ...] | None:
    """A step's dependencies as the general rules keep them, when they keep its id
    ``label`` and its dependencies as written: the id is new (it joins ``ids``) and
    neither it nor any dependency is a number. ``None`` when they would not."""
    # ``_numeric``'s own first test, made here: most ids ("s1") fail it, and then no
    # Python call is made for them (it runs for every step of every plan: issue #22).
    starts = _NUMBER_START.match
    if not label or label in ids or _ID_LIKE.fullmatch(label) is None:
        return None  # (a number is no id: _ID_LIKE starts with a letter) a label, see _ID_LIKE
    if starts(label.strip()) and _numeric(label) is not None:  # "step3", "step_3"
        return None
    for dep in deps:
        if starts(dep.strip()) is not None and _numeric(dep) is not None:
            return None
    ids.add(label)
    if len(deps) > 1 and len(set(deps)) < len(deps):
        return tuple(dict.fromkeys(deps))  # each once, in the order written
    return deps

"""What a guard's ``Rewrite`` may change, checked before anything acts on it.

A rewrite replaces what a subject carries (a request's messages, a call's
arguments, an answer's text); it cannot move the subject elsewhere (another
tool, step or role). A rewrite that does, or that puts a value of the wrong
type in, is a bug in the guard: the chain trips on it with a reason that says
so, as it does on a guard that raises, instead of the step or the run failing
later on an error that names none of it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from regiment.hierarchy.guard._types import (
    AnswerSubject,
    PlanSubject,
    ReplySubject,
    RequestSubject,
    ToolCallSubject,
    ToolResultSubject,
)
from regiment.hierarchy.plan._plan import PlanStep
from regiment.models import Message, ModelResponse

__all__ = ("checked_rewrite",)

# Per subject type: the fields a rewrite must leave as they were.
_FIXED: dict[type[Any], tuple[str, ...]] = {
    RequestSubject: ("role", "worker", "step_id"),
    ReplySubject: ("role", "worker", "step_id"),
    PlanSubject: ("goal", "version", "committed"),
    ToolCallSubject: ("worker", "step_id", "tool"),
    ToolResultSubject: ("worker", "step_id", "tool", "arguments"),
    AnswerSubject: ("goal",),
}


def checked_rewrite(old: object, new: object) -> object | str:
    """``new`` as the run can use it (a list of messages or steps made a tuple), or
    the reason the rewrite of ``old`` into it cannot be used."""
    kind = type(old).__name__
    if type(new) is not type(old):
        return f"rewrote a {kind} into a {type(new).__name__}"
    for name in _FIXED[type(old)]:
        if getattr(new, name) != getattr(old, name):
            return (
                f"rewrote the {kind}'s {name} ({getattr(old, name)!r} into "
                f"{getattr(new, name)!r}); a rewrite may change only what the subject "
                f"carries, not what it is: trip instead"
            )
    return _typed(new)


def _typed(new: object) -> object | str:
    """``new`` with its sequences made tuples, or what is wrong with a field's type."""
    kind = type(new)
    if kind is RequestSubject and not isinstance(system := _field(new, "system"), str):
        return _wrong(new, "system", system, "a str")
    if kind is RequestSubject or kind is PlanSubject:
        name, item = ("messages", Message) if kind is RequestSubject else ("steps", PlanStep)
        return _items(new, name, _field(new, name), item)
    if kind is ReplySubject and not isinstance(reply := _field(new, "response"), ModelResponse):
        return _wrong(new, "response", reply, "a ModelResponse")
    if kind is ToolCallSubject:
        arguments = _field(new, "arguments")
        if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
            return _wrong(new, "arguments", arguments, "a mapping of names to JSON values")
    if kind is ToolResultSubject:
        if not isinstance(is_error := _field(new, "is_error"), bool):
            return _wrong(new, "is_error", is_error, "a bool")
        try:
            json.dumps(content := _field(new, "content"))
        except (TypeError, ValueError) as exc:
            return _wrong(new, "content", content, f"a JSON value ({exc})")
    if kind is AnswerSubject and not isinstance(text := _field(new, "text"), str):
        return _wrong(new, "text", text, "a str")
    return new


def _field(subject: object, name: str) -> object:
    """A field as a guard may have left it: of any type, whatever its annotation says."""
    value: object = getattr(subject, name)
    return value


def _items(new: object, name: str, value: object, item: type[Any]) -> object | str:
    """``new`` with its field ``name`` a tuple of ``item`` (a list is taken as one)."""
    wanted = f"a tuple of {item.__name__}"
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        return _wrong(new, name, value, wanted)
    if not all(isinstance(v, item) for v in value):
        odd = next(v for v in value if not isinstance(v, item))
        return (
            f"rewrote the {type(new).__name__}'s {name} into a {type(value).__name__} "
            f"holding {_shown(odd)}, not {wanted}"
        )
    if isinstance(value, tuple):
        return new
    made: object = dataclasses.replace(new, **{name: tuple(value)})  # type: ignore[type-var]
    return made


def _wrong(new: object, name: str, value: object, wanted: str) -> str:
    return f"rewrote the {type(new).__name__}'s {name} into {_shown(value)}, not {wanted}"


def _shown(value: object) -> str:
    """``the int 42``: a value's type and the start of its repr."""
    text = repr(value)
    return f"the {type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"

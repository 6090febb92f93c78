"""Guardrails: outcomes, the subjects they judge, and the guard itself.

A guardrail is a sync or async callable over one kind of subject that returns
``Pass()``, ``Rewrite(new_subject)`` or ``Trip(reason)``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeAlias, TypeVar, final

from regiment._json import JsonValue
from regiment.errors import ConfigError
from regiment.hierarchy.guard._note import SubjectKind
from regiment.hierarchy.plan._plan import PlanStep
from regiment.models import Message, Model, ModelResponse

__all__ = (
    "AnswerSubject",
    "GuardLike",
    "Guardrail",
    "OnTrip",
    "Outcome",
    "Pass",
    "PlanSubject",
    "ReplySubject",
    "RequestSubject",
    "Rewrite",
    "Subject",
    "ToolCallSubject",
    "ToolResultSubject",
    "Trip",
    "as_guardrail",
    "as_guardrails",
    "guardrail",
)

S = TypeVar("S")
OnTrip: TypeAlias = Literal["fail_step", "tell_model"]


@final
@dataclass(frozen=True, slots=True)
class Pass:
    """The subject may go on unchanged."""


@final
@dataclass(frozen=True, slots=True)
class Rewrite(Generic[S]):
    """The subject goes on as ``subject`` (the next guard in the chain sees it)."""

    subject: S


@final
@dataclass(frozen=True, slots=True)
class Trip:
    """The subject must not go on; ``reason`` says why (it may reach the model)."""

    reason: str


Outcome: TypeAlias = Pass | Rewrite[Any] | Trip


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RequestSubject:
    """A model request before it is sent: ``role`` is ``"worker"`` or the planner
    side's role; ``worker``/``step_id`` are set inside a step."""

    role: str
    worker: str | None
    step_id: str | None
    system: str
    messages: tuple[Message, ...]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ReplySubject:
    """A model's reply, before anything acts on it."""

    role: str
    worker: str | None
    step_id: str | None
    response: ModelResponse

    @property
    def text(self) -> str:
        return self.response.text


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PlanSubject:
    """A parsed, valid plan before its steps are dispatched (first plan, replans,
    new rounds); ``committed`` names the tools of steps already committed."""

    goal: str
    version: int
    steps: tuple[PlanStep, ...]
    committed: tuple[PlanStep, ...] = ()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallSubject:
    """A tool call the model asked for, before it runs."""

    worker: str
    step_id: str
    tool: str
    arguments: Mapping[str, JsonValue]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultSubject:
    """A tool's result, before the model sees it."""

    worker: str
    step_id: str
    tool: str
    arguments: Mapping[str, JsonValue]
    content: JsonValue
    is_error: bool


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerSubject:
    """The synthesized final answer, before the run returns it."""

    goal: str
    text: str


Subject: TypeAlias = (
    RequestSubject
    | ReplySubject
    | PlanSubject
    | ToolCallSubject
    | ToolResultSubject
    | AnswerSubject
)
KINDS: dict[type[Any], SubjectKind] = {
    RequestSubject: "model_request",
    ReplySubject: "model_reply",
    PlanSubject: "plan",
    ToolCallSubject: "tool_call",
    ToolResultSubject: "tool_result",
    AnswerSubject: "answer",
}
Check: TypeAlias = Callable[[Any], Outcome | Awaitable[Outcome]]
INLINE = "_regiment_inline"  # set on a sync check that is quick enough for the event loop


def inline(check: Check) -> Check:
    """``check``, marked to run in the event loop (the built-ins: they never block)."""
    setattr(check, INLINE, True)
    return check


@final
@dataclass(frozen=True, slots=True)
class Guardrail:
    """A check over one kind of subject.

    Attributes:
        check: ``check(subject)`` returns (or, if async, resolves to) an outcome.
        kind: the subject it judges: ``model_request``, ``model_reply``, ``plan``,
            ``tool_call``, ``tool_result`` or ``answer``.
        name: how events and spans name it (the callable's name by default).
        on_trip: inside a step, ``"fail_step"`` fails the step; ``"tell_model"``
            gives the worker's model the reason instead (as the tool's error
            result, or as a message after a rejected reply) and the step goes on.
            A tripped model request always fails the step.
        source: the ``"module:attribute"`` path a team file named it by (set by the
            team file's loader); a Ray replica imports it from there instead of
            receiving it pickled.
        model: the model its check asks through ``judge(model, ...)``, if it asks one:
            named here, a team whose ``Budget.usd`` limits money checks at ``Team(...)``
            that it has a price (``ConfigError`` else).
    """

    check: Check
    kind: SubjectKind
    name: str = ""
    on_trip: OnTrip = "fail_step"
    model: Model | None = field(default=None, compare=False)
    source: str = field(default="", compare=False, repr=False)
    _in_thread: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_options(self.kind, self.on_trip, f"guardrail {self.name or _name(self.check)!r}")
        if not self.name:
            object.__setattr__(self, "name", _name(self.check))
        if self.model is not None and (
            not isinstance(self.model, Model) or isinstance(self.model, type)  # (a class)
        ):
            raise ConfigError(
                f"guardrail {self.name!r}: model must be the Model its check asks through "
                f"judge() (e.g. AnthropicModel(...)), not {self.model!r}"
            )
        # A plain function may block (a moderation service called over HTTP): it runs in
        # a worker thread, as a sync tool does; the built-ins, quick and pure, need not.
        check = self.check
        is_async = inspect.iscoroutinefunction(check) or inspect.iscoroutinefunction(
            getattr(check, "__call__", None)  # noqa: B004 - an object with an async __call__
        )
        in_thread = not is_async and not getattr(check, INLINE, False)
        object.__setattr__(self, "_in_thread", in_thread)


GuardLike: TypeAlias = Guardrail | Callable[..., Any]


def guardrail(
    kind: SubjectKind, *, name: str = "", on_trip: OnTrip = "fail_step", model: Model | None = None
) -> Callable[[Check], Guardrail]:
    """Decorate a check as a :class:`Guardrail` over ``kind`` (``model``: the one it asks
    through ``judge``, if any; see :class:`Guardrail`).

    Raises:
        ConfigError: ``kind`` is not a kind of subject: ``@guardrail`` written without
            its kind would otherwise turn the check into this decorator.
    """
    if callable(kind):
        raise ConfigError(
            f"@guardrail needs the kind of subject first: write @guardrail('answer') (or "
            f"another kind, with on_trip=... if wanted) above {_name(kind)!r}, or leave the "
            "decorator off if its parameter is annotated with a subject type"
        )

    _check_options(kind, on_trip, f"guardrail({kind!r})")  # here, not at its first use

    def wrap(check: Check) -> Guardrail:
        return Guardrail(check, kind, name=name, on_trip=on_trip, model=model)

    return wrap


def _check_options(kind: object, on_trip: object, label: str) -> None:
    if kind not in KINDS.values():
        kinds = ", ".join(KINDS.values())
        raise ConfigError(f"guardrail kind must be one of {kinds}, not {kind!r}")
    if on_trip not in ("fail_step", "tell_model"):
        raise ConfigError(f"{label}: on_trip must be 'fail_step' or 'tell_model', not {on_trip!r}")


def as_guardrail(value: object, where: str = "") -> Guardrail:
    """A :class:`Guardrail` as it is, or a plain callable whose first parameter is
    annotated with a subject type (that names its kind).

    Raises:
        ConfigError: ``value`` is neither.
    """
    if isinstance(value, Guardrail):
        return value
    if not callable(value):
        raise ConfigError(f"{where}guardrail {value!r} is not callable; give a function")
    kind = _annotated_kind(value)
    if kind is None and _makes_guardrails(value):
        name = _name(value)
        raise ConfigError(
            f"{where}guardrail {name!r} makes a guardrail rather than being one: call it "
            f"({name}(...)) and give what it returns; in a team file, name a module "
            f"attribute that holds it (pii = {name}(...) in myapp/guards.py, then "
            '"myapp.guards:pii")'
        )
    if kind is None:
        kinds = ", ".join(cls.__name__ for cls in KINDS)
        raise ConfigError(
            f"{where}guardrail {_name(value)!r}: cannot tell which subject it checks; "
            f"annotate its parameter with one of {kinds}, or wrap it with "
            f"regiment.guardrail('<kind>')"
        )
    return Guardrail(value, kind)


def _annotated_kind(fn: Callable[..., Any]) -> SubjectKind | None:
    try:
        hints = typing.get_type_hints(fn)
        params = list(inspect.signature(fn).parameters)
    except (NameError, TypeError, ValueError):
        return None
    first = hints.get(params[0]) if params else None
    return KINDS.get(first) if isinstance(first, type) else None


def _makes_guardrails(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` is a factory of guardrails (``redact_pii``, given without its call)."""
    try:
        made = typing.get_type_hints(fn).get("return")
    except (NameError, TypeError, ValueError):
        return False
    return isinstance(made, type) and issubclass(made, Guardrail)


def _name(check: object) -> str:
    return str(getattr(check, "__name__", None) or type(check).__name__)


def as_guardrails(
    values: Iterable[object],
    where: str = "",
    kinds: Collection[SubjectKind] = (),
    listed: Callable[[str], str] = "guardrails=[{}]".format,
) -> tuple[Guardrail, ...]:
    """Each of ``values`` as a :class:`Guardrail` (see :func:`as_guardrail`).

    ``listed``: how the hint for one guard given bare spells it in a list, as the
    caller's argument is written (``tool_guardrails={'f': [g]}``).

    Raises:
        ConfigError: ``kinds`` is given and a guard judges another kind of subject:
            none comes where it was put, so it would never run.
    """
    given: object = values  # what the caller gave, whatever its annotation says
    if callable(given) or isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        one = isinstance(given, Guardrail) or callable(given)
        shown = given.name if isinstance(given, Guardrail) else _name(given)
        hint = f" (put it in a list: {listed(shown)})" if one else ""
        raise ConfigError(
            f"{where}guardrails must be a list of guardrails; got {shown if one else repr(given)}"
            + hint
        )
    guards = tuple(as_guardrail(value, where) for value in values)
    for guard in guards:
        if kinds and guard.kind not in kinds:
            raise ConfigError(
                f"{where}guardrail {guard.name!r} judges the {guard.kind}, but no {guard.kind} "
                f"is judged here, so it would never run (here: {', '.join(kinds)}); "
                f"put it on {_PLACES[guard.kind]}"
            )
    return guards


# Where each kind goes, in code and as a team file writes it (the same error serves both).
_CALLS = (
    "Team, Planner, Critic or Worker (guardrails=...); in a team file: `guardrails` at the "
    "top, under `[planner]` or `[critic]`, or in a `[[workers]]` entry"
)
_TOOLS = (
    "Team(guardrails=...), Worker(guardrails=...) or Worker(tool_guardrails=...); in a team "
    "file: `guardrails` at the top, or `guardrails` or `tool_guardrails` in a `[[workers]]` entry"
)
_PLACES: dict[SubjectKind, str] = {
    "model_request": _CALLS,
    "model_reply": _CALLS,
    "plan": "Team(guardrails=...) or Planner(guardrails=...); in a team file: `guardrails` at "
    "the top or under `[planner]`",
    "tool_call": _TOOLS,
    "tool_result": _TOOLS,
    "answer": "Team(guardrails=...) or Planner(synthesizer_guardrails=...); in a team file: "
    "`guardrails` at the top or `synthesizer_guardrails` under `[planner]`",
}

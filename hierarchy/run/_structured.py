"""Structured answers: the synthesis asks for JSON matching a pydantic model,
validates it, and re-asks with the validation error, a bounded number of times.

The request carries the model's JSON schema as ``ModelRequest.output`` (Claude
answers by a forced tool call, a Chat Completions server under a JSON-schema
response format, a scripted model with its text). Whatever the provider, the
reply the planner actor sees holds the answer's JSON text as its only part, so
the run's ``answer`` is that JSON text, and the journal replays it like any
other reply. The validated instance is attached to the ``RunResult`` as
``output``; it is not part of the result's JSON (see ``RunResult.output``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, final

import msgspec

from regiment._stray import raise_stray
from regiment._text import counted, json_shown
from regiment.errors import ConfigError, ModelError, ModelRefused, OutputInvalid, RunError
from regiment.hierarchy._result import RunResult, with_output
from regiment.hierarchy.guard._roles import Caller
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    structured_text,
)
from regiment.tools import ToolDefinition

if TYPE_CHECKING:  # pydantic loads on first use (see tests/test_import_cost.py)
    from pydantic import BaseModel, ValidationError

    from regiment.hierarchy.run._reask import Reasks

__all__ = ("AnswerShape", "shaped", "structured_call")

logger = logging.getLogger("regiment")

TOOL_NAME = "final_answer"


@final
@dataclass(frozen=True, slots=True)
class AnswerShape:
    """A team's structured answer: the pydantic model, its tool definition, the bound.

    Attributes:
        kind: the pydantic model the answer must validate against.
        tool: the answer's schema as a tool definition (``ModelRequest.output``).
        attempts: answers asked for at most: the first, then one per re-ask.
    """

    kind: type[BaseModel]
    tool: ToolDefinition
    attempts: int

    @classmethod
    def of(cls, kind: object, retries: int, *, team: str) -> AnswerShape:
        """The shape of ``Team(output_type=kind, output_retries=retries)``.

        Raises:
            ConfigError: ``kind`` is not a pydantic model class, or ``retries`` is negative.
        """
        from pydantic import BaseModel

        if not (isinstance(kind, type) and issubclass(kind, BaseModel)) or kind is BaseModel:
            raise ConfigError(
                f"team '{team}': output_type must be a pydantic model class "
                f"(a subclass of pydantic.BaseModel with the answer's fields), got {kind!r}"
            )
        if retries < 0:
            raise ConfigError(f"team '{team}': output_retries must be 0 or more, got {retries}")
        described = (kind.__doc__ or "").strip() or f"The final answer, as a {kind.__name__}."
        try:
            schema = kind.model_json_schema()
        except Exception as exc:  # pydantic's own errors vary (an unresolved forward ref, ...)
            raise ConfigError(
                f"team '{team}': output_type {kind.__qualname__}: pydantic could not make its "
                f"JSON schema ({type(exc).__name__}: {exc})"
            ) from exc
        tool = ToolDefinition(name=TOOL_NAME, description=described, input_schema=schema)
        return cls(kind, tool, retries + 1)

    @property
    def name(self) -> str:
        """The model's qualified name, for messages."""
        return f"{self.kind.__module__}.{self.kind.__qualname__}"

    def problem(self, text: str) -> str | None:
        """What keeps ``text`` from validating as this shape's type (``"Reply: ..."``),
        or ``None`` when it validates."""
        from pydantic import ValidationError

        try:
            _validated(self, text)
        except ValidationError as exc:
            return f"{self.kind.__name__}: {_problems(exc)}"
        return None

    def attach(self, result: RunResult) -> RunResult:
        """``result`` with its ``output``: the completed answer, validated.

        An answer guard's edit is held to the type before it is taken (``RunGuards``);
        an answer that no longer validates all the same leaves ``output`` empty (and is
        logged), the answer stays as it is.
        """
        from pydantic import ValidationError

        if result.status != "completed":
            return result
        try:
            return with_output(result, _validated(self, result.answer))
        except ValidationError as exc:
            logger.warning(
                "run %s: the answer no longer validates: %s", result.run_id, _problems(exc)
            )
            return result


def shaped(shape: AnswerShape | None, result: RunResult) -> RunResult:
    """``result``, with its ``output`` when the team has a structured answer."""
    return result if shape is None else shape.attach(result)


async def structured_call(
    caller: Caller,
    request: ModelRequest,
    shape: AnswerShape,
    reasks: Reasks | None = None,
) -> tuple[ModelResponse, int]:
    """Ask for the answer until it validates, at most ``shape.attempts`` times, each ask
    after the first held to what the run's budget has left after those before it
    (``reasks``: not made when nothing is; the last reply, not valid, is then returned
    with ``reasks.unpaid`` saying why, and the run ends on that limit).

    Returns the last reply reduced to the answer's JSON text, charged with the
    usage of every attempt, and the number of attempts.

    Raises:
        OutputInvalid: no answer validated; names the model and the last error.
    """
    from pydantic import ValidationError

    request = msgspec.structs.replace(request, output=shape.tool)
    spent = Usage()
    detail = ""
    response: ModelResponse | None = None  # the last reply (none before the first ask)
    for attempt in range(1, shape.attempts + 1):
        if response is not None and reasks is not None:
            held = reasks.held(request, spent, attempt - 1)
            if not isinstance(held, ModelRequest):  # ``reasks.unpaid``: the run ends on it
                logger.info("the structured answer is not asked again: %s", held.why)
                return msgspec.structs.replace(response, usage=spent), attempt - 1
            request = held
            await reasks.asking(request, attempt)
        try:
            response = await caller.call(request)
        except ModelError as exc:  # the attempts before it were spent too
            if isinstance(exc, ModelRefused) or exc.usage is not None or attempt > 1:
                exc.usage, exc.model_calls = spent + (exc.usage or Usage()), attempt
            raise
        spent = spent + response.usage
        text = structured_text(response, shape.tool)
        if response.cut_off:  # cut JSON may still validate: the SDK reads it leniently
            detail = "it reached its max_tokens limit before it was finished: it is cut short"
            logger.warning("the structured answer was cut short; asking again")
            request = _reask(request, response, shape, detail)
            continue
        try:
            _validated(shape, text)
        except ValidationError as exc:
            detail = _problems(exc)
            logger.info("the structured answer did not validate; asking again: %s", detail)
            request = _reask(request, response, shape, detail)
            continue
        parts = (TextPart(text=text),)
        return msgspec.structs.replace(response, parts=parts, usage=spent), attempt
    raise _invalid(shape, shape.attempts, detail, spent)


def _problems(exc: ValidationError) -> str:
    """What pydantic found wrong, on one line (``temp: Field required``): its own text
    spans lines with a help link after each error, and it ends up in ``OutputInvalid``,
    the last line ``regiment run`` prints, logs and the re-ask."""
    said = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "the answer"
        text = f"{where}: {error['msg']}"
        if error["type"] != "missing":
            text += f" (got {json_shown(error.get('input'))})"  # as the model wrote it: JSON
        said.append(text)
    return "; ".join(said) or str(exc)


def _invalid(shape: AnswerShape, attempts: int, detail: str, spent: Usage) -> OutputInvalid:
    """No answer validated in ``attempts`` asks, which spent ``spent``."""
    return OutputInvalid(
        f"the synthesizer's answer did not validate against {shape.name} in "
        f"{counted(attempts, 'attempt')}; last error: {detail}. Make the model easier to "
        "fill (fewer required fields, plainer types), raise Team(output_retries=...), "
        "or use a stronger synthesizer model",
        output_type=shape.name,
        attempts=attempts,
        detail=detail,
        usage=spent,
    )


def _reask(
    request: ModelRequest, response: ModelResponse, shape: AnswerShape, detail: str
) -> ModelRequest:
    """The request again, with the invalid answer and what was wrong with it."""
    feedback = (
        f"That answer does not validate against {shape.kind.__name__}:\n{detail}\n"
        "Answer again with one JSON object that matches the schema."
    )
    calls = [p for p in response.parts if isinstance(p, ToolCallPart) and p.name == TOOL_NAME]
    reply: tuple[TextPart | ToolResultPart, ...] = (
        tuple(ToolResultPart(call_id=c.id, content=feedback, is_error=True) for c in calls)
        if calls
        else (TextPart(text=feedback),)
    )
    turns = (*request.messages, response.to_message(), Message(role="user", parts=reply))
    return msgspec.structs.replace(request, messages=turns)


def _validated(shape: AnswerShape, text: str) -> BaseModel:
    """``text`` validated as ``shape``'s type. pydantic makes a validator's ``ValueError``
    or ``AssertionError`` a ``ValidationError`` (the answer is asked for again); any
    other exception is a bug in the validator: the run fails with a ``RunError`` naming
    the type (it said "the synthesis model call failed", as if the model had). A
    validator's stray ``CancelledError`` (see :mod:`regiment._stray`) is a
    ``RuntimeError``, not a cancelled caller."""
    from pydantic import ValidationError

    try:
        return shape.kind.model_validate_json(text)
    except ValidationError:
        raise
    except Exception as exc:
        raise RunError(
            f"a validator of the output_type {shape.name} raised {type(exc).__name__}: {exc}; "
            "a validator raises ValueError for an answer that does not fit (the synthesizer "
            "is asked again); fix it to do so, or to accept the answer"
        ) from exc
    except BaseException as exc:
        raise_stray(exc, f"a validator of {shape.name}", "return, or raise a ValueError")
        raise

"""A worker step's guards: around each model call and each tool call.

Built once per worker when the team starts; a worker with no guards gets
``None`` and its tool loop takes none of these paths.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, final

import anyio
import msgspec

from regiment._json import JsonObject
from regiment.errors import GuardrailError
from regiment.hierarchy._budget import over_allowance
from regiment.hierarchy._cut_calls import cut_charged
from regiment.hierarchy._messages import BudgetLimit, StepAllowance
from regiment.hierarchy._top_up import reply_room
from regiment.hierarchy.guard._chain import Checked, Where, run_chain
from regiment.hierarchy.guard._judge import (
    JudgeCall,
    JudgeTape,
    Purse,
    charged,
    judging_within,
    unpriced_judge,
)
from regiment.hierarchy.guard._note import GuardNote
from regiment.hierarchy.guard._tool_guard import EditCheck, flagged, judging_edits, refused
from regiment.hierarchy.guard._types import (
    Guardrail,
    ReplySubject,
    RequestSubject,
    ToolCallSubject,
    ToolResultSubject,
)
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from regiment.telemetry import Telemetry
from regiment.tools import Tool, ToolResult

if TYPE_CHECKING:
    from regiment.hierarchy._messages import AssignStep
    from regiment.hierarchy.workers._loop import StepProgress

__all__ = ("StepGuards", "step_purse", "tripped")


class Caller(Protocol):
    """What makes a step's model calls (``ModelCaller`` does)."""

    async def call(self, request: ModelRequest) -> ModelResponse: ...

    def passed(self, request: ModelRequest, response: ModelResponse) -> None:
        """The reply guards let ``response`` (as they left it) through."""


def tripped(checked: Checked[Any], subject: str) -> GuardrailError:
    """The error for a trip that ends what it guarded."""
    guard = checked.tripped
    name = guard.name if guard is not None else "?"
    return GuardrailError(
        f"guardrail '{name}' tripped on the {subject.replace('_', ' ')}: {checked.reason}",
        guardrail=name,
        subject=subject,
        reason=checked.reason,
    )


def _of(kind: str, guards: Iterable[Guardrail]) -> tuple[Guardrail, ...]:
    return tuple(g for g in guards if g.kind == kind)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StepGuards:
    """The guards of one worker's steps: the team's, then the worker's, then the tool's."""

    worker: str
    telemetry: Telemetry
    request: tuple[Guardrail, ...]
    reply: tuple[Guardrail, ...]
    tool_call: Mapping[str, tuple[Guardrail, ...]]
    tool_result: Mapping[str, tuple[Guardrail, ...]]
    any_call: tuple[Guardrail, ...]
    any_result: tuple[Guardrail, ...]

    @classmethod
    def build(
        cls,
        worker: str,
        guards: Sequence[Guardrail],
        per_tool: Mapping[str, Sequence[Guardrail]],
        telemetry: Telemetry,
    ) -> StepGuards | None:
        """The guards for ``worker``, or ``None`` when it has none."""
        if not guards and not any(per_tool.values()):
            return None
        calls, results = _of("tool_call", guards), _of("tool_result", guards)
        return cls(
            worker=worker,
            telemetry=telemetry,
            request=_of("model_request", guards),
            reply=_of("model_reply", guards),
            tool_call={t: calls + _of("tool_call", g) for t, g in per_tool.items()},
            tool_result={t: results + _of("tool_result", g) for t, g in per_tool.items()},
            any_call=calls,
            any_result=results,
        )

    def caller(
        self,
        caller: Caller,
        assign: AssignStep,
        progress: StepProgress,
        messages: list[Message],
        tape: JudgeTape | None = None,
    ) -> Callable[[ModelRequest], Awaitable[ModelResponse | None]]:
        """``caller.call`` between the step's request and reply guards: ``None`` for a
        reply a ``tell_model`` guard rejected (charged to ``progress`` here, and
        ``messages`` given the reply and the reason); their judge calls go on ``tape``."""
        step_id = assign.step.id

        purse = step_purse(assign.allowance, progress, pending=1)  # its own call not charged yet

        async def call(request: ModelRequest) -> ModelResponse | None:
            with judging_within(purse, tape):
                request = await self.check_request(request, step_id, progress)
            response = await caller.call(request)
            try:  # the reply is not charged yet: its judges see what it spent
                unpaid = step_purse(assign.allowance, progress, pending=1, unpaid=response.usage)
                with judging_within(unpaid, tape):
                    checked = await self.check_reply(response, step_id, progress)
            except (GuardrailError, anyio.get_cancelled_exc_class()):
                # a `fail_step` trip, or the step cut while its guards judged the reply:
                # the reply was billed all the same (a cut step's report carries it)
                _billed(progress, response)
                raise
            if isinstance(checked, ModelResponse):
                caller.passed(request, checked)
                return checked
            _billed(progress, response)
            messages.extend(checked)
            return None

        return call

    async def check_request(
        self, request: ModelRequest, step_id: str, progress: StepProgress
    ) -> ModelRequest:
        """The request as the guards leave it.

        Raises:
            GuardrailError: a guard tripped (a request cannot be told to the model).
        """
        if not self.request:
            return request
        subject = RequestSubject(
            role="worker",
            worker=self.worker,
            step_id=step_id,
            system=request.system,
            messages=request.messages,
        )
        where = Where("worker", self.worker, step_id)
        checked = await run_chain(
            self.request, subject, self.telemetry, progress.guard_notes, where
        )
        _charge(progress, checked)
        if checked.tripped is not None:
            raise tripped(checked, "model_request")
        new = checked.subject
        if new is subject:
            return request
        return msgspec.structs.replace(request, system=new.system, messages=new.messages)

    async def check_reply(
        self, response: ModelResponse, step_id: str, progress: StepProgress
    ) -> ModelResponse | tuple[Message, ...]:
        """The reply as the guards leave it, or (``tell_model``) the messages that
        give the model its rejected reply and the reason.

        Raises:
            GuardrailError: a ``fail_step`` guard tripped.
        """
        if not self.reply:
            return response
        subject = ReplySubject(
            role="worker", worker=self.worker, step_id=step_id, response=response
        )
        where = Where("worker", self.worker, step_id)
        checked = await run_chain(self.reply, subject, self.telemetry, progress.guard_notes, where)
        _charge(progress, checked)
        guard = checked.tripped
        if guard is None:
            return checked.subject.response
        if guard.on_trip == "fail_step":
            raise tripped(checked, "model_reply")
        told = f"rejected by guardrail '{guard.name}': {checked.reason}"
        calls = response.tool_calls
        answer = (
            Message.tool_results(
                tuple(
                    ToolResultPart(call_id=c.id, content=f"not run: {told}", is_error=True)
                    for c in calls
                )
            )
            if calls
            else Message.user(f"Your reply was {told}. Answer again.")
        )
        return Message(role="assistant", parts=response.parts), answer

    async def call_tool(
        self,
        call: ToolCallPart,
        step_id: str,
        progress: StepProgress,
        run: Callable[[ToolCallPart], Awaitable[ToolResult]],
        tool: Tool[..., object] | None,
        passed: tuple[JsonObject, tuple[GuardNote, ...]] | None = None,
        noted: list[GuardNote] | None = None,
        tripped_on: list[JsonObject] | None = None,
    ) -> ToolResult:
        """Run one tool call (``run`` runs it) between its guards.

        The call guards see the arguments as ``tool``'s schema reads them; a call whose
        arguments do not validate (or of a tool the worker lacks) goes to ``run``
        unguarded (the usual tool error). ``passed``: the arguments the call ran with
        before the run's resume (the journal holds its intent); its call guards let it
        through then, so it runs with those, not judged again (its result guards judge
        it), and what its guards did then is told again. ``noted`` gets what its guards
        do now; ``tripped_on``, the arguments a ``fail_step`` guard tripped on.

        Raises:
            GuardrailError: a ``fail_step`` guard tripped on the call or its result.
        """
        where = Where("worker", self.worker, step_id)
        guards = before = self.tool_call.get(call.name, self.any_call)
        if passed is not None:
            before, call = (), msgspec.structs.replace(call, arguments=passed[0])
            progress.guard_notes.extend(passed[1])  # they rewrote it then: told again
        validated = None if tool is None or not before else tool.validated(call.arguments)
        if tool is not None and isinstance(validated, dict):
            mine: list[GuardNote] = [] if noted is None else noted
            held = (tool, mine, tripped_on)
            checked = await self._check_call(before, call, validated, held, progress, where)
            if isinstance(checked, ToolResult):
                return checked
            call = checked
        result = await judging_edits(run, call, _edits(self, guards, tool, call, (progress, where)))
        after = self.tool_result.get(call.name, self.any_result)
        if not after:
            return result
        done = ToolResultSubject(
            worker=self.worker,
            step_id=step_id,
            tool=call.name,
            arguments=result.arguments,
            content=result.content,
            is_error=result.is_error,
        )
        judged = await run_chain(after, done, self.telemetry, progress.guard_notes, where)
        _charge(progress, judged)
        if (guard := judged.tripped) is not None:
            if guard.on_trip == "fail_step":
                raise tripped(judged, "tool_result")
            text = f"result withheld by guardrail '{guard.name}': {judged.reason}"
            return flagged(result, text, is_error=True)
        new = judged.subject
        if new is done:
            return result
        return flagged(result, new.content, is_error=new.is_error)

    async def _check_call(
        self,
        before: tuple[Guardrail, ...],
        call: ToolCallPart,
        arguments: JsonObject,
        held: tuple[Tool[..., object], list[GuardNote], list[JsonObject] | None],
        progress: StepProgress,
        where: Where,
    ) -> ToolCallPart | ToolResult:
        """The call as the guards leave it, or the result that answers it instead (what
        they did goes to the step's notes and to ``held[1]``; the arguments a ``fail_step``
        guard tripped on, to ``held[2]``)."""
        subject = ToolCallSubject(
            worker=self.worker, step_id=str(where.step_id), tool=call.name, arguments=arguments
        )
        tool, notes, tripped_on = held
        checked = await run_chain(before, subject, self.telemetry, notes, where)
        progress.guard_notes.extend(notes)
        _charge(progress, checked)
        if (guard := checked.tripped) is not None:
            judged = dict(checked.subject.arguments)  # as the guards before it left them
            if guard.on_trip == "fail_step":
                if tripped_on is not None:
                    tripped_on.append(judged)
                raise tripped(checked, "tool_call")
            return refused(call, guard, checked.reason, judged)
        if checked.subject is subject:
            return call
        rewritten = dict(checked.subject.arguments)
        problem = tool.validated(rewritten)
        if isinstance(problem, str):  # a rewrite is held to the tool's schema too
            return ToolResult(
                call_id=call.id,
                tool_name=call.name,
                content=f"invalid arguments for tool {call.name!r} after a guardrail "
                f"rewrote them: {problem}",
                is_error=True,
                error_type="invalid_arguments",
                arguments=rewritten,
            )
        return msgspec.structs.replace(call, arguments=rewritten)


def _edits(
    guards: StepGuards,
    before: tuple[Guardrail, ...],
    tool: Tool[..., object] | None,
    call: ToolCallPart,
    at: tuple[StepProgress, Where],
) -> EditCheck | None:
    """What judges the arguments an approval's edit gives ``call`` (``_tool_guard``)."""
    if tool is None or not before or not tool.requires_approval:
        return None

    async def judge(edited: ToolCallPart, arguments: JsonObject) -> ToolCallPart | ToolResult:
        held = (tool, list[GuardNote](), None)
        return await guards._check_call(before, edited, arguments, held, *at)

    return EditCheck(tool, call, judge)


def step_purse(
    allowance: StepAllowance, progress: StepProgress, pending: int = 0, unpaid: Usage | None = None
) -> Purse:
    """The step's allowance as a purse for its guards' judge calls; ``pending``
    model calls of the step are in flight, not yet charged (``unpaid``: what a reply
    not charged yet spent). A step topped up since
    it began (``progress.allowance``) judges within what it holds now, each judge's
    reply held to what that has left (``reply_room``)."""

    def left(
        request: ModelRequest, made: Sequence[ModelResponse], call: JudgeCall
    ) -> tuple[BudgetLimit, str] | int | None:
        calls = progress.model_calls + pending + len(made)
        usage = sum((r.usage for r in made), progress.usage)
        if unpaid is not None:
            usage = usage + unpaid
        held = progress.allowance or allowance
        rates = call.rates
        if held.micro_usd is not None and rates is None:
            unpriced_judge(_warned(progress), call)
        out = over_allowance(held, calls, usage, request, "the judge call", rates)
        return out if out is not None else reply_room(held, usage, request, rates)

    # in the run's process: its judge calls cut in flight are charged to it (billed all the
    # same), whatever its budget: a run with no limit counts them as one with limits does
    ledger = None if progress.fence is None else progress.fence.top_ups.ledger
    if ledger is None:
        return left
    return cut_charged(left, ledger.spent)


def _warned(progress: StepProgress) -> set[tuple[str, str]]:
    """Where the unpriced judges already named are kept: the step's run's (in-process),
    else the step's own (on a Ray replica)."""
    fence = progress.fence
    ledger = None if fence is None else fence.top_ups.ledger
    if ledger is not None:
        if ledger.judges_warned is None:
            ledger.judges_warned = set()
        return ledger.judges_warned
    if progress.judges_warned is None:
        progress.judges_warned = set()
    return progress.judges_warned


def _billed(progress: StepProgress, response: ModelResponse) -> None:
    """Charge the step for a reply its guards rejected: the model was paid for it."""
    progress.model_calls += 1
    progress.usage = progress.usage + response.usage


def _charge(progress: StepProgress, checked: Checked[Any]) -> None:
    """The guards' own model calls count against the step's allowance."""
    for response in charged(checked.spent):  # (replayed ones: taken from here)
        progress.model_calls += 1
        progress.usage = progress.usage + response.usage

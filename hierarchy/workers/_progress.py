"""What a step has spent and found so far: :class:`StepProgress`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import anyio
import msgspec
from msgspec.structs import replace

from regiment.hierarchy._fence import StepFence
from regiment.hierarchy._messages import (
    AssignStep,
    BudgetLimit,
    StepAllowance,
    StepReport,
    StepStatus,
    ToolOutcome,
)
from regiment.hierarchy._top_up import Need
from regiment.hierarchy.guard._note import GuardNote
from regiment.models import Message, ModelResponse, TextPart, ToolCallPart, Usage

__all__ = ("StepProgress",)

_NO_USAGE = Usage()  # what a step has spent before its first reply


class StepProgress(msgspec.Struct, eq=False):  # eq=False: compared by identity, as before
    """What a step has spent and found so far; kept outside the loop so a step
    that times out or is cancelled still reports what it did.

    A struct, not a dataclass nor a class with an ``__init__``: one is made per step,
    by C code (a Python ``__init__`` was a call a step, issue #22).
    """

    usage: Usage = _NO_USAGE  # frozen: shared, not made once a step
    # Of ``usage``, what is an estimate (a step served by a nested run: its calls cut
    # in flight, charged at their most); set only by such a step.
    estimated: Usage = _NO_USAGE
    model_calls: int = 0
    tool_calls: int = 0
    last_text: str = ""
    refused_tool_calls: int = 0
    # Set when the step is cut short (its scope cancelled): the loop then calls its
    # model no more, even if nothing it awaited since was a checkpoint.
    stopped: bool = False
    # Cut because its run pauses (``PAUSING``): a call waiting for a decision was not
    # called off, so its spans say it awaits one, not that it was cancelled.
    paused: bool = False
    awaiting: bool = False  # then a call of it was cut while it waited for a decision
    # The step's conversation, as it grows: a step given up names the calls in flight.
    messages: list[Message] | None = None
    # A step served by a nested run: cuts that run's steps at once when this one is
    # cut (``pausing``: by its run's pause).
    on_cut: Callable[[bool], None] | None = None
    # Its run's fence (set by its worker, from the run's channel): moved by the planner as
    # it decides the step's plan is over, before the step's cut reaches a busy worker.
    fence: StepFence | None = None
    # Its allowance once its run has topped it up (``fence.top_ups``); until then, its
    # ``AssignStep``'s.
    allowance: StepAllowance | None = None
    # A step on a Ray replica, whose run (and its ``fence``) is in another process: asks
    # its run across the hop for a top-up, under the same rule (``None`` in-process).
    ask_more: Callable[[Need], Awaitable[StepAllowance | None]] | None = None
    # (guard, model) of the unpriced judges a WARNING named already, for a step with no
    # run's ledger in its process (on a Ray replica); made on first use.
    judges_warned: set[tuple[str, str]] | None = None

    # Calls of the step waiting for a decision (a human's on the desk, an in-process
    # approver's): its step_timeout stands still meanwhile, as the run's wall clock does.
    deciding: int = 0
    held_s: float = 0.0  # seconds the timeout stood still, for waits that have ended
    held_from: float = 0.0  # when the current wait began (the loop's clock)
    nudge: Callable[[], None] | None = None  # wakes the worker's step timer (set by it)
    # The calls of the running reply that work (not done, not waiting for a decision;
    # see SiblingCalls), and those decided that are about to work again: while one does,
    # the step is not just waiting, even if other calls of it wait for decisions.
    calls_working: int = 0
    waking: int = 0
    # Tells the step's run to look again whether it only waits (set by the approval gate
    # once a call of the step waits on the desk; SiblingCalls calls it as a call ends).
    recheck: Callable[[], Awaitable[None]] | None = None

    # In its run's fence's ``calling`` (it called tools): a replan that cuts it lists them.
    listed: bool = False

    # Its tool calls' outcomes and its guards' notes (``outcomes``, ``guard_notes``): made
    # as the first is kept, so a step that calls no tool, with no guards, makes no list
    # (two objects fewer the collector tracks a running step, #22 row 4).
    tool_outcomes: list[ToolOutcome] | None = None
    guardrails: list[GuardNote] | None = None

    @property
    def outcomes(self) -> list[ToolOutcome]:
        """The outcomes of its tool calls so far (a list of its own, made on first use)."""
        kept = self.tool_outcomes
        if kept is None:
            self.tool_outcomes = kept = []
        return kept

    @property
    def guard_notes(self) -> list[GuardNote]:
        """What its guards did so far (a list of its own, made on first use)."""
        notes = self.guardrails
        if notes is None:
            self.guardrails = notes = []
        return notes

    def fenced(self, version: int) -> bool:
        """Whether its planner has fenced plan version ``version`` (or cut the step):
        it must start no tool. Read before every tool starts."""
        fence = self.fence
        return self.stopped or (fence is not None and fence.holding(version) is not None)

    def working(self) -> bool:
        """Whether a call of the step works while others may wait for decisions."""
        return self.calls_working > 0 or self.waking > 0

    @contextmanager
    def waiting_for_decision(self) -> Iterator[None]:
        """Stop the step's timeout for the block (a call waits for a decision)."""
        if self.deciding == 0:
            self.held_from = anyio.current_time()
        self.deciding += 1
        try:
            yield
        finally:
            self.deciding -= 1
            if self.deciding == 0:
                self.held_s += anyio.current_time() - self.held_from
                if self.nudge is not None:
                    self.nudge()  # its timeout counts again, from where it stood

    @property
    def calling(self) -> tuple[ToolCallPart, ...]:
        """The tool calls running now: those of the last reply, until their results are in."""
        last = self.messages[-1] if self.messages else None
        if last is None or last.role != "assistant":
            return ()
        return tuple(p for p in last.parts if isinstance(p, ToolCallPart))

    def took(self, response: ModelResponse) -> tuple[ToolCallPart, ...]:
        """Count one model call's reply, keep its text (``last_text``); its tool calls.

        One pass over its parts (``ModelResponse.text`` and ``.tool_calls`` were two
        property calls a reply, #22)."""
        self.model_calls += 1
        spent = self.usage
        self.usage = response.usage if spent == _NO_USAGE else spent + response.usage
        text = ""
        calls: list[ToolCallPart] = []
        for part in response.parts:
            if isinstance(part, TextPart):
                text += part.text
            elif isinstance(part, ToolCallPart):
                calls.append(part)
        self.last_text = text
        return tuple(calls)

    def report(
        self,
        assign: AssignStep,
        worker: str,
        status: StepStatus,
        *,
        output: str | None = None,
        error: str | None = None,
        exhausted: BudgetLimit | None = None,
        error_type: str | None = None,
        fatal: bool = False,
    ) -> StepReport:
        """A report carrying this progress.

        Made with at most 15 keywords: CPython 3.11 compiles a call with more into a
        dict built and unpacked again (~8k instructions, once a step, #22); the fields
        a step that ended well leaves at their defaults go in only when set."""
        if self.listed and self.fence is not None:  # (it called tools) a replan cuts it no more
            self.fence.reported(self)
        report = StepReport(
            run_id=assign.run_id,
            plan_version=assign.plan_version,
            step_id=assign.step.id,
            attempt=assign.attempt,
            worker=worker,
            status=status,
            output=self.last_text if output is None else output,
            tool_outcomes=() if (kept := self.tool_outcomes) is None else tuple(kept),
            usage=self.usage,
            model_calls=self.model_calls,
            tool_calls=self.tool_calls,
            refused_tool_calls=self.refused_tool_calls,
            guardrails=() if (notes := self.guardrails) is None else tuple(notes),
        )
        if self.estimated is not _NO_USAGE:  # a nested run's estimate (it set one)
            report = replace(report, estimated=self.estimated)
        if error is None and exhausted is None and error_type is None and not fatal:
            return report
        return replace(report, error=error, exhausted=exhausted, error_type=error_type, fatal=fatal)

"""The guards of a team's planner side: per role, the plan and the answer.

``RoleGuards`` is what the team gives every run; ``GuardedCaller`` puts a
role's model request and reply guards around its model calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, final

import msgspec

from regiment.hierarchy._cut_calls import judges_handed
from regiment.hierarchy.guard._chain import Checked, Where, run_chain
from regiment.hierarchy.guard._judge import JudgeTape, judging_reply
from regiment.hierarchy.guard._note import GuardNote
from regiment.hierarchy.guard._step import tripped
from regiment.hierarchy.guard._types import Guardrail, ReplySubject, RequestSubject
from regiment.models import ModelRequest, ModelResponse
from regiment.telemetry import Telemetry

if TYPE_CHECKING:
    from regiment.hierarchy._live_events import LiveSink

__all__ = ("Caller", "GuardLog", "GuardRole", "GuardedCaller", "RoleGuards", "guarded")

GuardRole: TypeAlias = Literal["planner", "critic", "synthesizer"]
ROLES: tuple[GuardRole, ...] = ("planner", "critic", "synthesizer")


@final
@dataclass(slots=True)
class GuardLog:
    """What the planner side's guards did since the run's actor last looked: their
    trips and rewrites, and their own model calls (by role, to charge them); ``tape``:
    where those calls are journaled, in a journaled run (and replayed from, resumed)."""

    notes: list[GuardNote] = field(default_factory=list)
    spent: list[tuple[GuardRole, ModelResponse]] = field(default_factory=list)
    tape: JudgeTape | None = None

    def charge(self, role: GuardRole, checked: Checked[Any]) -> bool:
        """Charge what a chain's judges spent, unless the planner-side call it guards
        was cut meanwhile (its ``CutWatch`` charged it all): whether it did."""
        if not judges_handed():
            return False
        self.spent.extend((role, response) for response in checked.spent)
        if self.tape is not None:  # replayed ones: charged from here, not as the run ends
            for response in checked.spent:
                self.tape.charged(response)
        return True


class Caller(Protocol):
    """Anything that makes a model call for a role (``ModelCaller`` does)."""

    async def call(self, request: ModelRequest, live: LiveSink | None = None) -> ModelResponse: ...


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RoleGuards:
    """The team-wide guards and each role's own (planner, critic, synthesizer)."""

    team: tuple[Guardrail, ...] = ()
    roles: Mapping[GuardRole, tuple[Guardrail, ...]] = field(default_factory=dict)

    def of(self, role: GuardRole, kind: str) -> tuple[Guardrail, ...]:
        """The chain for ``kind`` in ``role``'s calls: the team's guards, then the role's."""
        own = self.roles.get(role, ())
        return tuple(g for g in (*self.team, *own) if g.kind == kind)

    @property
    def plan(self) -> tuple[Guardrail, ...]:
        return self.of("planner", "plan")

    @property
    def answer(self) -> tuple[Guardrail, ...]:
        return self.of("synthesizer", "answer")


@final
class GuardedCaller:
    """A role's model calls between its request and reply guards; a trip ends the
    call with ``GuardrailError`` (the run fails with it)."""

    def __init__(
        self,
        caller: Caller,
        role: GuardRole,
        request: Sequence[Guardrail],
        reply: Sequence[Guardrail],
        telemetry: Telemetry,
        log: GuardLog,
    ) -> None:
        self._caller, self._role, self._telemetry = caller, role, telemetry
        self._request, self._reply = tuple(request), tuple(reply)
        self._log = log

    async def call(self, request: ModelRequest, live: LiveSink | None = None) -> ModelResponse:
        where, role = Where(self._role), self._role
        if self._request:
            subject = RequestSubject(
                role=role,
                worker=None,
                step_id=None,
                system=request.system,
                messages=request.messages,
            )
            checked = await run_chain(
                self._request, subject, self._telemetry, self._log.notes, where
            )
            self._log.charge(role, checked)
            if checked.tripped is not None:
                raise tripped(checked, "model_request")
            if checked.subject is not subject:
                new = checked.subject
                request = msgspec.structs.replace(request, system=new.system, messages=new.messages)
        if not self._reply:
            return await self._caller.call(request, live)
        response = await self._caller.call(request, None)  # a reader sees only what passes
        done = ReplySubject(role=role, worker=None, step_id=None, response=response)
        with judging_reply(response.usage):  # charged after: its judges count it spent
            judged = await run_chain(self._reply, done, self._telemetry, self._log.notes, where)
        charged = self._log.charge(role, judged)
        if judged.tripped is not None and charged:  # billed all the same: charge it
            self._log.spent.append((role, response))
            raise tripped(judged, "model_reply")
        response = judged.subject.response
        if live is not None:
            live.tell(request, response.text)
        return response


def guarded(
    caller: Caller,
    role: GuardRole,
    guards: RoleGuards,
    telemetry: Telemetry,
    log: GuardLog,
) -> Caller:
    """``caller`` itself when ``role`` has no request or reply guards."""
    request, reply = guards.of(role, "model_request"), guards.of(role, "model_reply")
    if not request and not reply:
        return caller
    return GuardedCaller(caller, role, request, reply, telemetry, log)

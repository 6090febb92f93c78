"""Where the judge calls of a run's planner side are journaled, and replayed from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from regiment._json import JsonObject
from regiment.hierarchy._in_flight import journal_intent
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy.guard._judge import JudgeTape
from regiment.journal import ModelCallFinished
from regiment.models import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from regiment.hierarchy.run._journaling import RunJournal

__all__ = ("run_tape",)


def run_tape(journal: RunJournal | None) -> JudgeTape | None:
    """Where the judge calls of a journaled run's planner side (its role, plan and
    answer guards) are journaled, and replayed from on a resume."""
    if journal is None:
        return None
    calls = journal.calls
    roles: dict[str, str] = {}  # whose call each judge call in flight judges

    async def write(  # durably: it was paid for
        key: str, response: ModelResponse, made: int, failed: JsonObject | None
    ) -> None:
        role = roles.pop(key, None)  # (a resume charges it there if it never replays it)
        record = ModelCallFinished(
            run_id=calls.run_id,
            call_key=key,
            response=response,
            calls=made,
            failed=failed,
            role=role,
        )
        await calls.append(record, durable=True)

    async def begin(key: str, role: str, caller: ModelCaller, request: ModelRequest) -> None:
        roles[key] = role or "guardrail"
        # its intent, whatever the budget: one in flight at a crash is counted on resume
        await journal_intent(calls, key, role or "guardrail", caller, request)

    replay = calls.replay
    return JudgeTape("run/", replay.responses, write, begin, replay.asked, replay.taken)

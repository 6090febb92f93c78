"""A planner-side model call's reply, to the journal and back, as the call ended.

Besides the response, the journal keeps the model calls it took (a synthesis asked
again is one response for its asks) and, for a synthesis whose empty or invalid answer
the budget could not pay to ask again for, the limit in the way. A resume replays the
three, so it counts the calls the run made and ends on that limit (``partial``, or
``BudgetExceeded``) as the run would have, rather than take the reply as its answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from regiment.hierarchy.run._reask import Unpaid
from regiment.journal import ModelCallFinished
from regiment.models import ModelResponse

if TYPE_CHECKING:
    from regiment.hierarchy._replay import Replay
    from regiment.hierarchy.run._changes import ModelCharged

__all__ = ("Replayed", "replayed_reply", "reply_record")


class Replayed(NamedTuple):
    """A reply journaled before a resume: its response, the model calls it took, and
    the budget that could not ask again for an empty or invalid answer (a synthesis)."""

    response: ModelResponse
    calls: int = 1
    unpaid: Unpaid | None = None


def reply_record(run_id: str, key: str, change: ModelCharged) -> ModelCallFinished:
    """The journal's record of the reply ``change`` charged (it has a response)."""
    assert change.response is not None
    unpaid = None if change.unpaid is None else change.unpaid.journaled()
    return ModelCallFinished(
        run_id=run_id, call_key=key, response=change.response, calls=change.calls, unpaid=unpaid
    )


def replayed_reply(replay: Replay, key: str) -> Replayed | None:
    """The reply journaled under ``key`` before the resume, if any."""
    if (response := replay.responses.get(key)) is None:
        return None
    if (asked := replay.asked.get(key)) is None:
        return Replayed(response)
    return Replayed(response, asked.calls, Unpaid.of(asked.unpaid))

"""Where a run is: a closed union of phases, each carrying exactly what it needs.

The planner actor holds one ``Phase`` and matches on it (``match`` +
``assert_never``). What comes after a compression, or after the steps still in
flight have wound down, is data here (``AfterCompress``, ``Ending``), never a
callback: the actor reads it and decides.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, final

import msgspec

from regiment.errors import RunError
from regiment.hierarchy._planner import PlanningSession
from regiment.hierarchy._result import RunStatus
from regiment.hierarchy.run._rounds import CritiqueSession

__all__ = (
    "AfterCompress",
    "AskCritic",
    "AskReplan",
    "Compressing",
    "Critiquing",
    "Done",
    "EndAnswered",
    "Ending",
    "EndCancelled",
    "EndFailed",
    "EndPartial",
    "EndPaused",
    "Executing",
    "Phase",
    "Planning",
    "PlanKind",
    "Synthesize",
    "Synthesizing",
    "WindingDown",
)

PlanKind: TypeAlias = Literal["plan", "replan", "round"]


# -- what a compression is for -------------------------------------------------


@final
class AskReplan(msgspec.Struct, frozen=True):
    """Replace the unfinished tail: ``reason`` says why the current version failed."""

    reason: str


@final
class AskCritic(msgspec.Struct, frozen=True):
    """Judge the round whose steps are all committed."""


@final
class Synthesize(msgspec.Struct, frozen=True):
    """Write the final answer."""


AfterCompress: TypeAlias = AskReplan | AskCritic | Synthesize


# -- how a run that is winding down ends ---------------------------------------


@final
class EndCancelled(msgspec.Struct, frozen=True):
    """The caller cancelled the run."""

    reason: str


@final
class EndFailed(msgspec.Struct, frozen=True):
    """The run fails with ``error`` (a budget that says ``on_exhausted="raise"``)."""

    error: RunError


@final
class EndPartial(msgspec.Struct, frozen=True):
    """A budget ran out: the run answers with what it committed."""


@final
class EndPaused(msgspec.Struct, frozen=True):
    """Every step in flight waits for an approval: the run pauses until decided."""


@final
class EndAnswered(msgspec.Struct, frozen=True):
    """The answer is written; the run ends with it once the steps of older plan
    versions, cancelled by a replan, have reported (what they used is the run's,
    and their drops are its events)."""

    answer: str
    status: RunStatus


Ending: TypeAlias = EndCancelled | EndFailed | EndPartial | EndPaused | EndAnswered


# -- the phases ------------------------------------------------------------------


@final
class Planning(msgspec.Struct, frozen=True):
    """Waiting for the planner: the first plan, a replan, or the plan of a new round.

    ``reason`` is the new version's reason (``initial`` for the first plan).
    """

    kind: PlanKind
    session: PlanningSession
    reason: str


@final
class Executing(msgspec.Struct, frozen=True):
    """Dispatching the current version's ready steps and applying their reports."""


@final
class Compressing(msgspec.Struct, frozen=True):
    """Waiting for the compressor; ``then`` is the call the smaller context is for."""

    before_tokens: int
    then: AfterCompress


@final
class Critiquing(msgspec.Struct, frozen=True):
    """Waiting for the critic's verdict on the round."""

    session: CritiqueSession


@final
class Synthesizing(msgspec.Struct, frozen=True):
    """Waiting for the final answer."""


@final
class WindingDown(msgspec.Struct, frozen=True):
    """Everything in flight was cancelled; the run ends as ``ending`` once the
    last dispatched step has reported. ``draining``: nothing was cancelled (a step
    ran out of its budget share): the steps in flight finish within their own
    shares, and the wall clock, a cancel or a wait for a decision cuts them."""

    ending: Ending
    draining: bool = False


@final
class Done(msgspec.Struct, frozen=True):
    """The run has ended; late messages are ignored."""


Phase: TypeAlias = (
    Planning | Executing | Compressing | Critiquing | Synthesizing | WindingDown | Done
)


def replacing_version(phase: Phase) -> bool:
    """Whether the current plan version is being replaced (its reports are stale)."""
    match phase:
        case Planning(kind="replan") | Compressing(then=AskReplan()):
            return True
        case _:
            return False

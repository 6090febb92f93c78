"""Where a run is: a closed union of phases, each carrying exactly what it needs.

The planner actor holds one ``Phase`` and matches on it (``match`` +
``assert_never``). What comes after a compression, or after the steps still in
flight have wound down, is data here (``AfterCompress``, ``Ending``), never a
callback: the actor reads it and decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, final

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
@dataclass(frozen=True, slots=True)
class AskReplan:
    """Replace the unfinished tail: ``reason`` says why the current version failed."""

    reason: str


@final
@dataclass(frozen=True, slots=True)
class AskCritic:
    """Judge the round whose steps are all committed."""


@final
@dataclass(frozen=True, slots=True)
class Synthesize:
    """Write the final answer."""


AfterCompress: TypeAlias = AskReplan | AskCritic | Synthesize


# -- how a run that is winding down ends ---------------------------------------


@final
@dataclass(frozen=True, slots=True)
class EndCancelled:
    """The caller cancelled the run."""

    reason: str


@final
@dataclass(frozen=True, slots=True)
class EndFailed:
    """The run fails with ``error`` (a budget that says ``on_exhausted="raise"``)."""

    error: RunError


@final
@dataclass(frozen=True, slots=True)
class EndPartial:
    """A budget ran out: the run answers with what it committed."""


@final
@dataclass(frozen=True, slots=True)
class EndPaused:
    """Every step in flight waits for an approval: the run pauses until decided."""


@final
@dataclass(frozen=True, slots=True)
class EndAnswered:
    """The answer is written; the run ends with it once the steps of older plan
    versions, cancelled by a replan, have reported (what they used is the run's,
    and their drops are its events)."""

    answer: str
    status: RunStatus


Ending: TypeAlias = EndCancelled | EndFailed | EndPartial | EndPaused | EndAnswered


# -- the phases ------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class Planning:
    """Waiting for the planner: the first plan, a replan, or the plan of a new round.

    ``reason`` is the new version's reason (``initial`` for the first plan).
    """

    kind: PlanKind
    session: PlanningSession
    reason: str


@final
@dataclass(frozen=True, slots=True)
class Executing:
    """Dispatching the current version's ready steps and applying their reports."""


@final
@dataclass(frozen=True, slots=True)
class Compressing:
    """Waiting for the compressor; ``then`` is the call the smaller context is for."""

    before_tokens: int
    then: AfterCompress


@final
@dataclass(frozen=True, slots=True)
class Critiquing:
    """Waiting for the critic's verdict on the round."""

    session: CritiqueSession


@final
@dataclass(frozen=True, slots=True)
class Synthesizing:
    """Waiting for the final answer."""


@final
@dataclass(frozen=True, slots=True)
class WindingDown:
    """Everything in flight was cancelled; the run ends as ``ending`` once the
    last dispatched step has reported. ``draining``: nothing was cancelled (a step
    ran out of its budget share): the steps in flight finish within their own
    shares, and the wall clock, a cancel or a wait for a decision cuts them."""

    ending: Ending
    draining: bool = False


@final
@dataclass(frozen=True, slots=True)
class Done:
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

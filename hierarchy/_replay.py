"""What a resumed run replays from its journal instead of doing again.

A resume re-drives the run from its goal: the planner and the workers make the
same decisions in the same order, but a model call whose response is journaled
gets that response (not re-sent), a tool call whose result is journaled gets
that result (not re-executed), and a step the run had committed gets its
journaled report (not re-dispatched). The records this rebuilds are journaled
already, so :meth:`Replay.already` tells the run journal which ones not to
write twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import final

import msgspec

from regiment._json import JsonObject
from regiment.errors import UnknownRun
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy.events import Event
from regiment.hierarchy.plan._plan import Plan
from regiment.journal import (
    Entry,
    EventRecorded,
    Journal,
    ModelCallFinished,
    ModelCallStarted,
    PlanVersion,
    Record,
    StepDispatched,
    StepReported,
    ToolCallFinished,
    ToolCallStarted,
)
from regiment.models import ModelResponse

__all__ = ("NO_REPLAY", "JournaledEvents", "Replay", "ToolKey", "event_record", "of_attempt")

ToolKey = tuple[int, str, int]  # plan version, step id, call index


@final
@dataclass(slots=True)
class Replay:
    """A journaled run, indexed for a resume (empty for a new run)."""

    responses: dict[str, ModelResponse] = field(default_factory=dict)
    # A planner-side reply that took more than one call, or that the budget could not ask
    # again for (a synthesis): its record, so a resume ends as the run would have.
    asked: dict[str, ModelCallFinished] = field(default_factory=dict)
    intents: dict[ToolKey, ToolCallStarted] = field(default_factory=dict)
    results: dict[ToolKey, ToolCallFinished] = field(default_factory=dict)
    committed: dict[tuple[int, str], StepReport] = field(default_factory=dict)
    # Steps whose report the run dropped as stale (a replan replaced their version), with
    # the version its event named current, and the reports not committed, as journaled.
    dropped: dict[tuple[int, str], int] = field(default_factory=dict)
    uncommitted: dict[tuple[int, str], object] = field(default_factory=dict)
    versions: set[int] = field(default_factory=set)
    plans: dict[int, JsonObject] = field(default_factory=dict)  # each version, as adopted
    dispatched: set[tuple[int, str, int]] = field(default_factory=set)
    reported: set[tuple[int, str, int, str]] = field(default_factory=set)
    events: Counter[bytes] = field(default_factory=Counter)
    # Model calls started (a budgeted run's intents) and not answered yet, by key, and
    # those started again before an answer: in flight when the run stopped (``unanswered``).
    started: dict[str, ModelCallStarted] = field(default_factory=dict)
    lost: list[ModelCallStarted] = field(default_factory=list)
    # The role each journaled intent named, the worker of each dispatched step, and the
    # replies a resume has charged as it replayed them (``taken``): the rest, never
    # reached, are charged from here as it ends (``run._unreplayed``), each once.
    roles: dict[str, str] = field(default_factory=dict)
    workers: dict[tuple[int, str], str] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)
    # The same for journaled tool calls (a replayed result, a call run again: the step's
    # report counts it), and, for each step attempt a nested team served, the journals of
    # its run and of the runs below it, until that run is taken up again or its report is.
    tools_taken: set[ToolKey] = field(default_factory=set)
    nested: dict[tuple[int, str, int], list[tuple[str, Replay]]] = field(default_factory=dict)

    @classmethod
    def of(cls, entries: Iterable[Entry]) -> Replay:
        """Index a run's journaled records."""
        replay = cls()
        for entry in entries:
            replay._add(entry.record)
        return replay

    @property
    def empty(self) -> bool:
        return not (self.responses or self.intents or self.versions or self.events)

    def _add(self, record: Record) -> None:
        match record:
            case ModelCallStarted(call_key=key):
                if (before := self.started.get(key)) is not None:
                    self.lost.append(before)  # sent again (a resume): that one got no answer
                self.started[key] = record
                self.roles[key] = record.role
            case ModelCallFinished(call_key=key, response=response):
                self.responses[key] = response
                self.started.pop(key, None)
                if record.role is not None:  # (a planner-side judge's, journaled with it)
                    self.roles.setdefault(key, record.role)
                if record.calls != 1 or record.unpaid is not None or record.failed is not None:
                    self.asked[key] = record
                    for ask in range(2, record.calls + 1):  # a synthesis' later asks
                        self.started.pop(f"{key}#{ask}", None)
            case ToolCallStarted():
                self.intents[(record.plan_version, record.step_id, record.call_index)] = record
            case ToolCallFinished():
                self.results[(record.plan_version, record.step_id, record.call_index)] = record
            case StepReported(committed=True, report=body):
                report = msgspec.convert(body, StepReport)
                self.committed[(record.plan_version, record.step_id)] = report
                self.reported.add(_reported(record))
            case StepReported():
                self.reported.add(_reported(record))
                self.uncommitted[(record.plan_version, record.step_id)] = record.report
            case PlanVersion(version=version, plan=plan):
                self.versions.add(version)
                self.plans[version] = plan
            case StepDispatched():
                self.dispatched.add((record.plan_version, record.step_id, record.attempt))
                self.workers[(record.plan_version, record.step_id)] = record.worker
            case EventRecorded():
                self.events[_event_key(record)] += 1
                if record.kind == "StaleReportDropped":
                    event = record.event
                    stale, step_id = event.get("report_version"), event.get("step_id")
                    current = event.get("current_version")
                    if isinstance(stale, int) and isinstance(step_id, str):
                        self.dropped[(stale, step_id)] = current if isinstance(current, int) else 0
            case _:
                pass

    def take_attempt(self, version: int, step_id: str, attempt: int) -> None:
        """Mark the journaled calls of a step's attempt ``taken``: a report that counts
        them (its journaled one, replayed; a Ray replica's, which replayed them) is charged."""
        self.taken.update(k for k in self.responses if of_attempt(k, version, step_id, attempt))
        self.tools_taken.update(k for k in self.tool_keys() if k[:2] == (version, step_id))
        self.nested.pop((version, step_id, attempt), None)

    def tool_keys(self) -> set[ToolKey]:
        """Every journaled tool call: its intent (its body began) or its result."""
        return self.intents.keys() | self.results.keys()

    def unanswered(self) -> list[ModelCallStarted]:
        """The model calls started with no response journaled after them (in flight
        when the run's process died): the provider bills them all the same."""
        return [*self.lost, *self.started.values()]

    def plan_before(self, version: int) -> Plan | None:
        """Plan version ``version`` as the run adopted it before a resume, if it did."""
        body = self.plans.get(version)
        return None if body is None else msgspec.convert(body, Plan)

    def report_before(self, version: int, step_id: str) -> tuple[StepReport, int | None] | None:
        """The journaled report of a step the run committed before a resume (``None``),
        or dropped as stale (the version then current: it is dropped again, as it was)."""
        key = (version, step_id)
        if (report := self.committed.get(key)) is not None:
            return report, None
        if key in self.dropped and key in self.uncommitted:
            return msgspec.convert(self.uncommitted[key], StepReport), self.dropped[key]
        return None

    def already(self, record: Record) -> bool:
        """Whether ``record`` was journaled before the resume (an event counts once)."""
        match record:
            case ModelCallFinished(call_key=key):
                return key in self.responses
            case PlanVersion(version=version):
                return version in self.versions
            case StepDispatched(span=str()):  # sent again, traced: its new span's id is news
                return False
            case StepDispatched():
                return (record.plan_version, record.step_id, record.attempt) in self.dispatched
            case StepReported():
                return _reported(record) in self.reported
            case EventRecorded():
                if _paused(record):  # it paused again: that is news, not a replay
                    return False
                body = _event_key(record)
                if self.events[body] > 0:
                    self.events[body] -= 1
                    return True
                return False
            case _:
                return False


def of_attempt(key: str, version: int, step_id: str, attempt: int) -> bool:
    """Whether ``key`` is a model (or judge) call of attempt ``attempt`` of step ``step_id``
    of plan version ``version`` (``step_key``: a first attempt's own calls are numbered
    straight after the step, its judges' and a later attempt's under ``a{attempt}/``)."""
    prefix = f"step/{version}/{step_id}/"
    if not key.startswith(prefix):
        return False
    rest = key[len(prefix) :]
    if rest.startswith(f"a{attempt}/"):
        return True
    return attempt == 1 and rest.isdigit()


def event_record(run_id: str, event: object) -> EventRecorded:
    """The journal's record of one of the run's events."""
    body = msgspec.to_builtins(event)
    return EventRecorded(run_id=run_id, kind=type(event).__name__, event=body)


# An event's fields that list step ids in the order the steps committed: parallel steps
# commit in either order, and a resume replays the committed ones in plan order, so a
# replayed event may list them otherwise than the journaled one, and is the same event.
_COMMIT_ORDER = {
    "Replanned": "kept",
    "SynthesisStarted": "committed_steps",
    "ContextCompressed": "kept_step_ids",
}


def _event_key(record: EventRecorded) -> bytes:
    """What tells a replayed event from a new one: the record, with the step ids its
    event lists in commit order sorted."""
    name = _COMMIT_ORDER.get(record.kind)
    ids = record.event.get(name) if name is not None else None
    if name is not None and isinstance(ids, list):
        event: JsonObject = {**record.event, name: sorted(ids, key=str)}
        record = EventRecorded(run_id=record.run_id, kind=record.kind, event=event)
    return msgspec.json.encode(record)


def _paused(record: EventRecorded) -> bool:
    if record.kind != "RunCompleted" or not isinstance(record.event, dict):
        return False
    result = record.event.get("result")
    return isinstance(result, dict) and result.get("status") == "paused"


def _reported(record: StepReported) -> tuple[int, str, int, str]:
    return (record.plan_version, record.step_id, record.attempt, record.status)


NO_REPLAY = Replay()
"""A new run's: nothing to replay (never written to)."""


@final
class JournaledEvents:
    """A journaled run's events, numbered as the journal has them, and which events
    of its resume are replays of those (the journal does not write them again).

    What a service uses to keep a resumed run's event numbers: its record starts
    with ``events`` and adds only the resumed stream's events that are not replays.
    ``entries`` are the journal's records as read, which
    ``RunningTeam.resume_stream(run_id, journaled=...)`` takes instead of reading them again.
    """

    __slots__ = ("_replay", "entries", "events", "run_id")

    def __init__(
        self, run_id: str, events: list[Event], replay: Replay, entries: tuple[Entry, ...] = ()
    ) -> None:
        self.run_id = run_id
        self.events = events
        self.entries = entries
        self._replay = replay

    @classmethod
    def none(cls) -> JournaledEvents:
        """A new run's: nothing journaled, nothing replayed."""
        return cls("", [], NO_REPLAY)

    @classmethod
    async def read(cls, journal: Journal, run_id: str) -> JournaledEvents:
        """The run's journaled events (none for a run the journal does not have)."""
        try:
            entries = await journal.read(run_id)
        except UnknownRun:
            return cls.none()
        events = [
            msgspec.convert(e.record.event, Event)
            for e in entries
            if isinstance(e.record, EventRecorded)
        ]
        return cls(run_id, events, Replay.of(entries), entries)

    def is_replay(self, event: Event) -> bool:
        """Whether ``event``, from the resumed run, is one of ``events`` again
        (each journaled event is matched once; a paused end never is)."""
        replay = self._replay
        return bool(replay.events) and replay.already(event_record(self.run_id, event))

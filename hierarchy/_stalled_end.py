"""The end of a run stalled mid-work, made from its journal alone (``cancel_paused``).

A run whose process died mid-work has no live state to cancel and no pause to end at:
its journal is all there is. Its ``RunFailed`` (``RunCancelled``) carries what a resume
would have counted, read from there and nothing run again: each journaled model reply
(one per call key, a synthesis asked again counting each ask), each call started and
never answered at the most it may have spent (``charge_unanswered``, as a resume charges
it: an estimate, in ``estimated_usage``), the tool calls it began, and the same of the
runs of its nested teams' steps; its plans and the step reports it committed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import msgspec

from regiment.errors import UnknownRun
from regiment.hierarchy._in_flight import charge_unanswered
from regiment.hierarchy._replay import Replay
from regiment.hierarchy._spent import Spent
from regiment.hierarchy.events import RunFailed
from regiment.hierarchy.plan._plan import Plan
from regiment.journal import Entry, Journal, StepDispatched, nested_run_id
from regiment.models import Usage

__all__ = ("charge_journaled", "charge_replies", "runs_below", "stalled_ending")

_ROLE = "journal"  # (a reply's role is not journaled; only the totals are reported)


async def stalled_ending(
    journal: Journal, run_id: str, entries: Sequence[Entry], why: str
) -> RunFailed:
    """Run ``run_id``'s ``RunCancelled`` end (``why``), from its journal ``entries`` and
    those of its nested teams' runs: what a resume would count, nothing run again."""
    spent = Spent()
    await _charge(journal, run_id, entries, spent)
    replay = Replay.of(entries)
    plans = tuple(msgspec.convert(replay.plans[version], Plan) for version in sorted(replay.plans))
    reports = tuple(replay.committed.values())
    return RunFailed(
        run_id=run_id,
        error_type="RunCancelled",
        message=why,
        plans=plans,
        steps=reports,
        committed=tuple(step_id for _, step_id in replay.committed),
        usage=sum(spent.by_role().values(), Usage()),
        model_calls=spent.model_calls,
        tool_calls=spent.tool_calls,
        estimated_usage=spent.estimated,
    )


async def _charge(journal: Journal, run_id: str, entries: Sequence[Entry], spent: Spent) -> None:
    """Charge ``spent`` with what run ``run_id`` (its ``entries``) and its nested teams'
    runs spent, as their journals have it."""
    charge_journaled(Replay.of(entries), spent, run_id)
    for nested, below in await runs_below(journal, run_id, entries):
        charge_journaled(below, spent, nested)


def charge_journaled(replay: Replay, spent: Spent, run_id: str) -> None:
    """Charge ``spent`` with all that run ``run_id``'s journal (``replay``) holds as spent:
    its replies, its calls never answered (at their most) and the tool calls it began."""
    charge_unanswered(replay, spent, run_id)  # (a WARNING on regiment.run says what)
    charge_replies(replay, spent, replay.responses, lambda _: _ROLE)
    spent.charge(_ROLE, Usage(), tool_calls=len(replay.tool_keys()))


async def runs_below(
    journal: Journal, run_id: str, entries: Sequence[Entry]
) -> list[tuple[str, Replay]]:
    """The runs of the nested teams that served run ``run_id``'s steps (its ``entries``),
    and of theirs, as journaled: each one's id and its records, indexed."""
    found: list[tuple[str, Replay]] = []
    for nested in nested_runs(run_id, entries):
        try:
            below = await journal.read(nested)
        except UnknownRun:  # the step went to a worker, not to a nested team
            continue
        found.append((nested, Replay.of(below)))
        found.extend(await runs_below(journal, nested, below))
    return found


def charge_replies(
    replay: Replay, spent: Spent, keys: Iterable[str], role: Callable[[str], str]
) -> None:
    """Charge ``spent`` with the journaled reply of each call key in ``keys``, once, to
    ``role(key)``: its usage, and the model calls it took (a synthesis asked again, a
    refusal that reported several)."""
    responses, asked = replay.responses, replay.asked
    for key in keys:
        record = asked.get(key)
        calls = 1 if record is None else record.calls
        spent.charge(role(key), responses[key].usage, model_calls=calls)


def nested_runs(run_id: str, entries: Sequence[Entry]) -> Iterator[str]:
    """The ids a nested team's run of each step run ``run_id`` dispatched (its ``entries``)
    would have, each once; a step that went to a worker has none in the journal."""
    seen: set[str] = set()
    for entry in entries:
        if isinstance(step := entry.record, StepDispatched):
            nested = nested_run_id(run_id, step.plan_version, step.step_id, step.attempt)
            if nested not in seen:
                seen.add(nested)
                yield nested

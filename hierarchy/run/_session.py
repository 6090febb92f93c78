"""What a run of a session is told about the session's earlier runs.

A follow-up goal in the same session ("now refund the other order too") needs
what came before: the earlier runs' goals, answers and committed step outputs,
from the journal. They go into the planner's first request, newest runs kept
first when they do not all fit in the context budget (the team's compression
threshold, or its share of the context window; 2,000 tokens without
compression), and long outputs are cut.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from regiment.journal import CommittedStep, Journal, SessionRun, patient_reads

if TYPE_CHECKING:
    from regiment.hierarchy._result import RunResult
    from regiment.hierarchy._team import Team

__all__ = ("SessionMemory", "session_context")

KEPT_SESSIONS = 1_000  # the sessions used most recently


class SessionMemory:
    """A started team's sessions when it has no journal: the runs each one ended,
    in this process only, bounded: per session, the newest runs that fit the
    planner's session context (texts cut as the context cuts them, so an older run
    that could never be shown is not kept), for the 1,000 sessions used last."""

    def __init__(self) -> None:
        self._runs: OrderedDict[str, deque[tuple[SessionRun, int]]] = OrderedDict()

    def remember(self, session: str, result: RunResult, team: Team) -> None:
        """Keep ``result``'s goal, status, answer and committed outputs for ``session``."""
        done = {r.step_id: r for r in result.steps if r.status == "done"}
        steps = tuple(
            CommittedStep(
                plan_version=r.plan_version,
                step_id=r.step_id,
                worker=r.worker,
                output=_cut(r.output),
            )
            for r in (done[i] for i in result.committed if i in done)
        )
        budget = _budget_tokens(team) * _CHARS_PER_TOKEN
        run = SessionRun(
            run_id=result.run_id,
            goal=result.goal[:budget],  # the context never shows more (a goal may be 1 MiB)
            status=result.status,
            started_at=datetime.now(UTC),
            answer=_cut(result.answer),
            steps=steps,
        )
        runs = self._runs.pop(session, None) or deque()
        runs.append((run, len(_describe(run))))
        while len(runs) > 1 and sum(size for _, size in runs) > budget:  # the newest that fit
            runs.popleft()
        self._runs[session] = runs  # the most recent session last
        while len(self._runs) > KEPT_SESSIONS:
            self._runs.popitem(last=False)

    def history(self, session: str, exclude: str) -> tuple[SessionRun, ...]:
        return tuple(r for r, _ in self._runs.get(session, ()) if r.run_id != exclude)


_DEFAULT_TOKENS = 2_000
_OUTPUT_CHARS = 400  # of one step's output
_CHARS_PER_TOKEN = 4  # the rough estimate the budgets use


async def session_context(
    journal: Journal | None, memory: SessionMemory, team: Team, session: str, run_id: str
) -> str:
    """The earlier runs of ``session`` as text for the planner; ``""`` if there are none."""
    if journal is not None:
        with patient_reads():  # the run's own: it waits for a restarting server
            earlier = await journal.session_history(session, exclude=run_id)
    else:
        earlier = memory.history(session, exclude=run_id)
    if not earlier:
        return ""
    budget = _budget_tokens(team) * _CHARS_PER_TOKEN
    kept: list[str] = []
    used = 0
    for run in reversed(earlier):  # the newest first, while they fit
        text = _describe(run)
        if kept and used + len(text) > budget:
            break
        kept.append(text[:budget])
        used += len(text)
    dropped = len(earlier) - len(kept)
    head = f"Earlier runs in session {session!r}, oldest first"
    if dropped:
        head += f" ({dropped} older run{'s' if dropped > 1 else ''} left out to fit the context)"
    return head + ":\n" + "\n".join(reversed(kept))


def _describe(run: SessionRun) -> str:
    lines = [f"- Goal: {run.goal}", f"  Status: {run.status}"]
    if run.answer:
        lines.append(f"  Answer: {_cut(run.answer)}")
    for step in run.steps:
        lines.append(f"  Step {step.step_id} ({step.worker}): {_cut(step.output)}")
    return "\n".join(lines)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _OUTPUT_CHARS else text[: _OUTPUT_CHARS - 3] + "..."


def _budget_tokens(team: Team) -> int:
    compression = team.compression
    if compression is None:
        return _DEFAULT_TOKENS
    if compression.threshold_tokens is not None:
        return compression.threshold_tokens
    return int(compression.context_window * compression.window_fraction)

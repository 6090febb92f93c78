"""What a run of a session is told about the session's earlier runs.

A follow-up goal in the same session ("now refund the other order too") needs
what came before: the earlier runs' goals, answers and committed step outputs,
from the journal. They go into the planner's first request, newest runs kept
first when they do not all fit in the context budget (the team's compression
threshold, or its share of the context window; 2,000 tokens without
compression), and long outputs are cut.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regiment.journal import Journal, SessionRun

if TYPE_CHECKING:
    from regiment.hierarchy._team import Team

__all__ = ("session_context",)

_DEFAULT_TOKENS = 2_000
_OUTPUT_CHARS = 400  # of one step's output
_CHARS_PER_TOKEN = 4  # the rough estimate the budgets use


async def session_context(journal: Journal, team: Team, session: str, run_id: str) -> str:
    """The earlier runs of ``session`` as text for the planner; ``""`` if there are none."""
    earlier = await journal.session_history(session, exclude=run_id)
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

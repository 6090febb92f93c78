"""The live view tells a step's exhausted share from the run's end."""

from __future__ import annotations

from regiment.cli._progress import RunProgress
from regiment.hierarchy import BudgetExhausted


def test_a_steps_share_is_a_note_on_its_row_and_the_runs_end_is_the_phase() -> None:
    progress = RunProgress(clock=lambda: 0.0)
    progress.apply(
        BudgetExhausted(run_id="r", limit="tool_calls", detail="s2: 1 refused", step_id="s2")
    )
    assert progress.phase == "starting"
    assert progress.steps["s2"].note == "s2: 1 refused"
    progress.apply(BudgetExhausted(run_id="r", limit="tool_calls", detail="all spent"))
    assert progress.phase == "budget exhausted (tool_calls)"

"""The progress line that says the answer is being written says which steps it is written
from, and how many (and which) its request gives marked as rejected by their checks."""

from __future__ import annotations

import io

from regiment.cli._progress import RunProgress
from regiment.cli._view import PlainView
from regiment.hierarchy import events as ev


def _lines(*events: ev.Event) -> list[str]:
    progress, out = RunProgress(), io.StringIO()
    view = PlainView(progress, out)
    for event in events:
        progress.apply(event)
        view.show(event)
    return [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]


def test_the_synthesis_line_counts_the_rejected_steps() -> None:
    # It said "synthesizing the answer from s1", as if s2 had never run.
    run = "run-1"
    lines = _lines(
        ev.StepCompleted(run_id=run, plan_version=1, step_id="s1", worker="w", output="a"),
        ev.CheckFailed(run_id=run, plan_version=1, step_id="s2", check="c", reason="no"),
        ev.CheckFailed(run_id=run, plan_version=1, step_id="s3", check="c", reason="no"),
        ev.StepCompleted(run_id=run, plan_version=2, step_id="s3", worker="w", output="b"),
        ev.SynthesisStarted(run_id=run, committed_steps=("s1", "s3")),
    )
    assert lines[-1] == (
        "synthesizing the answer from s1, s3; s2 too, marked as rejected by its check"
    )
    # It said "left out: s2", but the synthesizer's request has s2's output, marked
    # "[rejected by its check 'c': no]" (as the README says), and the answer may quote it.


def test_without_rejected_steps_the_line_is_as_before() -> None:
    lines = _lines(ev.SynthesisStarted(run_id="run-1", committed_steps=("s1",)))
    assert lines == ["synthesizing the answer from s1"]
    lines = _lines(ev.SynthesisStarted(run_id="run-1", committed_steps=()))
    assert lines == ["synthesizing the answer from no steps"]

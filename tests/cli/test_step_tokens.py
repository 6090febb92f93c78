"""A step's token count in the command's report comes from its report, not from spans:
the same with ``OTEL_SDK_DISABLED=true`` as with tracing on."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL, build_team
from examples.refund.tools import Ledger
from regiment.cli import run_async
from regiment.cli._live import LiveView
from regiment.cli._progress import RunProgress, TokenMeter
from regiment.hierarchy import events as ev
from regiment.models import ScriptedModel

pytestmark = pytest.mark.anyio

REFUND = str(Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml")


async def _step_lines(monkeypatch: pytest.MonkeyPatch, sdk_disabled: str) -> list[str]:
    monkeypatch.setenv("OTEL_SDK_DISABLED", sdk_disabled)
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", REFUND, GOAL, "--plain", "--no-journal"]
    assert await run_async(argv, stdout=out, stderr=err, environ={}) == 0, err.getvalue()
    lines = err.getvalue().splitlines()
    return [line.split("] ", 1)[1] for line in lines if " done by " in line or "run " in line]


async def test_step_lines_show_their_tokens_with_the_sdk_disabled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    traced = await _step_lines(monkeypatch, "false")
    untraced = await _step_lines(monkeypatch, "true")
    # Before, only the run's total was left: "<- s1 done by billing: Done: ...".
    assert untraced == traced
    done = [line for line in untraced if " done by " in line]
    assert done
    assert all(re.search(r"done by \w+, \d+ tokens: ", line) for line in done), done


async def test_the_live_table_shows_reported_tokens_when_no_span_was_seen() -> None:
    result = await build_team(ScriptedModel(refund_brain), Ledger()).run(GOAL)
    progress, out = RunProgress(), io.StringIO()
    view = LiveView(progress, Console(file=out, width=160, force_terminal=False), TokenMeter())
    with view:
        for event in (*result.events, ev.RunCompleted(run_id=result.run_id, result=result)):
            progress.apply(event)
    table = out.getvalue()
    for step in result.steps:
        if step.status == "done":
            assert f"{step.usage.total_tokens:,}" in table, step.step_id
    assert f"{result.usage.total_tokens:,} tokens" in table

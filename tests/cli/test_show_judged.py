"""``regiment show`` says why a step's report was not committed: its check rejected it,
or a replan dropped it as stale (not ``[done]``/``[cancelled]``, as a committed one reads)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from regiment.models import ModelRequest, ModelResponse, ToolResultPart
from tests.hierarchy.brains import Brain, Hang, plan_json
from tests.hierarchy.replan_team import PROBE, RECOVER, replan_team

from .helpers import run_cli

pytestmark = pytest.mark.anyio


async def test_show_marks_a_rejected_step_and_a_dropped_report(tmp_path: Path) -> None:
    hang = Hang()

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description == "probe":
            await hang.started.wait()  # the probe fails its check while s2 is in flight
            return "did: probe"
        if description == "hold":
            return await hang(description, results, request)
        return f"did: {description}"

    brain = Brain([plan_json(PROBE, {"id": "s2", "description": "hold"}), RECOVER], work=work)
    path = str(tmp_path / "runs.db")
    async with replan_team(brain).start(journal=path) as running:
        result = await running.run("goal")
    assert result.rejected == ("s1",)
    code, out, err = await run_cli("show", result.run_id, "--journal", path)
    assert code == 0, err
    lines = out.splitlines()
    assert "  v1 s1 [rejected by its check 'fails': not met: never passes] did: probe" in lines
    (dropped,) = [line for line in lines if line.startswith("  v1 s2 ")]
    # dropped while v2 was asked for, or once it was adopted: as its event says
    assert re.match(
        r"  v1 s2 \[cancelled, dropped: plan v1 was (being replaced|replaced by v2)\] ", dropped
    )
    assert "  v2 s3 [committed] did: recover" in lines

"""A priced run on the command line: the step lines, the run's summary line, the live
table and ``regiment show`` give what it cost beside its tokens."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from examples.refund.team import GOAL

from .helpers import run_cli

pytestmark = pytest.mark.anyio

REFUND = Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml"
PRICED = """
[prices.scripted]
input = 3.0
output = 15.0
"""


def _team(tmp_path: Path, usd: float | None) -> str:
    text = REFUND.read_text(encoding="utf-8").replace(
        'model = "anthropic:claude-sonnet-4-5"', 'model = "scripted"'
    )
    if usd is not None:
        text = text.replace("[budget]\n", f"[budget]\nusd = {usd}\n")
    path = tmp_path / "team.toml"
    path.write_text(text + PRICED, encoding="utf-8")
    return str(path)


async def test_the_plain_lines_and_show_give_the_cost(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    code, _, err = await run_cli("run", _team(tmp_path, 5.0), GOAL, "--plain", "--journal", journal)
    assert code == 0, err
    done = [line for line in err.splitlines() if " done by " in line]
    assert done
    assert all(re.search(r"done by \w+, \d+ tokens, \$0\.\d{6}: ", line) for line in done), done
    (summary,) = [line for line in err.splitlines() if "] run completed:" in line]
    cost = re.search(r"tokens, \$(0\.\d{6})$", summary)
    assert cost is not None, summary
    code, listed, err = await run_cli("runs", "--json", "--journal", journal)
    assert code == 0, err
    (row,) = [json.loads(line) for line in listed.splitlines()]
    code, shown, err = await run_cli("show", row["run_id"], "--json", "--journal", journal)
    assert code == 0, err
    usage = json.loads(shown)["usage"]
    assert usage["micro_usd"] == round(float(cost.group(1)) * 1_000_000) > 0


async def test_a_money_budget_too_small_ends_the_run_partial_and_says_so(tmp_path: Path) -> None:
    code, _, err = await run_cli("run", _team(tmp_path, 0.001), GOAL, "--plain", "--no-journal")
    assert code == 0, err  # a partial run is done, with a note
    assert "budget exhausted (usd)" in err
    assert "] run partial:" in err

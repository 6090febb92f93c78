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


_EMPTY_ANSWER = '''
from regiment.models import ModelRequest, ModelResponse, TextPart, Usage, effective_settings
from regiment.models import estimate_tokens, text_response


def brain(request: ModelRequest) -> ModelResponse:
    """One step; the synthesizer writes all its reply may hold, with no text."""
    if request.role in ("planner", "replanner"):
        return text_response('{"steps": [{"id": "s1", "description": "count"}]}')
    if request.role != "synthesizer":
        return text_response("counted: 42")
    held = effective_settings(None, request).max_tokens or request.max_tokens
    usage = Usage(input_tokens=estimate_tokens(request), output_tokens=held)
    return ModelResponse(parts=(), usage=usage, stop_reason="max_tokens", model="scripted")
'''


async def test_an_empty_answer_money_cannot_ask_again_ends_partial(tmp_path: Path) -> None:
    # It ended "run completed" with an empty answer (exit 0, nothing on stdout, no note):
    # the run that money stopped is partial, as other budget stops are, and says so.
    module = f"empty_answer_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(_EMPTY_ANSWER, encoding="utf-8")
    team = tmp_path / "team.toml"
    team.write_text(
        f'name = "counters"\nmodel = "scripted"\nbrain = "{module}:brain"\n\n'
        '[budget]\nusd = 0.05\n\n[[workers]]\nname = "w"\ndescription = "Counts."\n' + PRICED,
        encoding="utf-8",
    )
    code, out, err = await run_cli("run", str(team), "count", "--plain", "--no-journal")
    assert code == 0, err  # a partial run is done, with a note
    assert "] run partial:" in err
    assert "budget exhausted (usd): the synthesizer's answer was empty" in err
    assert out.startswith("Partial result (budget exhausted: usd).\ns1: counted: 42")


async def test_the_refund_team_on_a_cent_stops_at_its_first_step_as_documented(
    tmp_path: Path,
) -> None:
    # README (Top-ups): a whole run costs $0.0229 at these prices; on $0.01 its first step
    # cannot draw what its second call needs, as the synthesis keeps its part: the run
    # ends partial there, within the cent, and the line says what the step had and needed.
    code, _, err = await run_cli("run", _team(tmp_path, 0.01), GOAL, "--plain", "--no-journal")
    assert code == 0, err
    assert "budget exhausted (usd): step s1 used up its share of the budget" in err
    (summary,) = [line for line in err.splitlines() if "] run partial:" in line]
    cost = re.search(r"tokens, \$(0\.\d{6})$", summary)
    assert cost is not None, summary
    assert 0 < float(cost.group(1)) <= 0.005  # about half the cent, as README says
    code, _, err = await run_cli("run", _team(tmp_path, 1.0), GOAL, "--plain", "--no-journal")
    assert code == 0, err
    (summary,) = [line for line in err.splitlines() if "] run completed:" in line]
    assert summary.endswith("$0.022941")  # what README says a whole run costs

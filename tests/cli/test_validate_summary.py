"""``regiment validate``'s summary names what shapes a run beyond its roles: the critic,
compression, the budget and concurrency, one line each when the file sets them. It
listed the planner, workers and checks only, so a file whose [budget] was misplaced (or
whose critic took a model it should not) looked the same as one without."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]

BASE = """name = "t"
brain = "examples.refund.brain:refund_brain"
{top}
[[workers]]
name = "billing"
description = "Issues refunds."
{tables}
"""

SET = {
    "top": "concurrency = 3\n",
    "tables": """
[critic]
model = "anthropic:claude-haiku-4-5"

[compression]
context_window = 10000
window_fraction = 0.25

[budget]
model_calls = 40
tokens = 1500000
usd = 2.5
wall_clock = 600
replans = 1
on_exhausted = "raise"

[prices."anthropic:claude-haiku-4-5"]
input = 1
output = 5

[prices.scripted]
input = 0
output = 0
""",
}


async def _summary(tmp_path: Path, text: str) -> list[str]:
    team = tmp_path / "team.toml"
    team.write_text(text, encoding="utf-8")
    code, out, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
    assert (code, err) == (0, ""), err
    return out.splitlines()


async def test_the_summary_names_critic_compression_budget_and_concurrency(
    tmp_path: Path,
) -> None:
    lines = await _summary(tmp_path, BASE.format(**SET))
    assert lines[-4:] == [
        "  critic: anthropic:claude-haiku-4-5, at most 3 rounds",
        "  compression: the planner's model (scripted), when the carried context passes "
        "2,500 estimated tokens",
        "  budget: model_calls 40, tokens 1,500,000, usd 2.5, replans 1, wall_clock 600.0 s; "
        "on_exhausted 'raise'",
        "  concurrency: at most 3 steps of a run at once",
    ]


async def test_the_summary_leaves_out_what_the_file_does_not_set(tmp_path: Path) -> None:
    lines = await _summary(tmp_path, BASE.format(top="", tables=""))
    assert lines[-1] == "  worker billing: scripted; no tools"
    said = "\n".join(lines)
    for word in ("critic", "compression", "budget", "concurrency"):
        assert word not in said


async def test_a_budget_that_only_changes_what_exhaustion_does_says_so(tmp_path: Path) -> None:
    text = BASE.format(top="", tables='[budget]\non_exhausted = "raise"\n')
    lines = await _summary(tmp_path, text)
    assert lines[-1] == "  budget: no limits set; on_exhausted 'raise'"


@pytest.mark.parametrize("suffix", ["toml", "yaml"])
async def test_concurrency_the_file_sets_to_its_default_is_named(
    tmp_path: Path, suffix: str
) -> None:
    # An explicit `concurrency = 8` (the default) was left out, as if the file did not
    # set it: the summary could not show a value the file gave.
    if suffix == "toml":
        text = BASE.format(top="concurrency = 8\n", tables="")
    else:
        text = (
            "name: t\nbrain: examples.refund.brain:refund_brain\nconcurrency: 8\n"
            "workers:\n  - name: billing\n    description: Issues refunds.\n"
        )
    team = tmp_path / f"team.{suffix}"
    team.write_text(text, encoding="utf-8")
    code, out, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
    assert (code, err) == (0, ""), err
    assert out.splitlines()[-1] == "  concurrency: at most 8 steps of a run at once (the default)"


@pytest.mark.parametrize("suffix", ["toml", "yaml"])
async def test_budget_limits_the_file_sets_to_their_default_are_named(
    tmp_path: Path, suffix: str
) -> None:
    # `replans = 3` and `rounds = 3` (their defaults) were left out, and a [budget] of
    # only such limits gave no budget line at all, as if the file had none.
    if suffix == "toml":
        text = BASE.format(top="", tables="[budget]\nreplans = 3\nrounds = 3\ntokens = 1000\n")
        only = BASE.format(top="", tables="[budget]\nreplans = 3\n")
    else:
        head = (
            "name: t\nbrain: examples.refund.brain:refund_brain\n"
            "workers:\n  - name: billing\n    description: Issues refunds.\n"
        )
        text = head + "budget:\n  replans: 3\n  rounds: 3\n  tokens: 1000\n"
        only = head + "budget:\n  replans: 3\n"
    team = tmp_path / f"team.{suffix}"
    said = []
    for body in (text, only):
        team.write_text(body, encoding="utf-8")
        code, out, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
        assert (code, err) == (0, ""), err
        said.append(out.splitlines()[-1])
    assert said == [
        "  budget: tokens 1,000, replans 3 (the default), rounds 3 (the default); "
        "on_exhausted 'partial'",
        "  budget: replans 3 (the default); on_exhausted 'partial'",
    ]

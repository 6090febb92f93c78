"""Issue #19: prompt caching's read and written tokens show "in the CLI summary". The
lines said only ``, 5095 tokens``: a run whose provider read most of its input from the
prompt cache looked the same as one that read none. Now the step lines, the run's last
progress line and the live table say ``(prompt cache: N read, M written)``, and say
nothing more for a provider that reports no cache use (the scripted brain here)."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import pytest
from rich.console import Console

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL
from regiment.cli._live import LiveView
from regiment.cli._progress import RunProgress, TokenMeter
from regiment.hierarchy import events as ev
from regiment.models import ModelRequest, ModelResponse, Usage

from .helpers import run_cli

pytestmark = pytest.mark.anyio

REFUND = Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml"
# What one call of the brain below reports: most of its input read from the cache.
CALL = Usage(input_tokens=40, output_tokens=10, cache_read_tokens=900, cache_write_tokens=60)


def cached_brain(request: ModelRequest) -> ModelResponse:
    """The refund story, each reply reporting ``CALL`` as its usage."""
    return msgspec.structs.replace(refund_brain(request), usage=CALL)


def _team(tmp_path: Path, brain: str) -> str:
    text = REFUND.read_text(encoding="utf-8").replace(
        'model = "anthropic:claude-sonnet-4-5"', 'model = "scripted"'
    )
    path = tmp_path / "team.toml"
    path.write_text(text.replace("examples.refund.brain:refund_brain", brain), encoding="utf-8")
    return str(path)


async def test_the_lines_say_what_the_prompt_cache_took(tmp_path: Path) -> None:
    team = _team(tmp_path, "tests.cli.test_cache_tokens:cached_brain")
    code, _, err = await run_cli("run", team, GOAL, "--plain", "--no-journal")
    assert code == 0, err
    (last,) = [line for line in err.splitlines() if "] run completed: " in line]
    # 9 model calls, each 1,010 tokens of which 900 read from the cache and 60 written
    assert last.endswith(
        "run completed: 9 model calls, 3 tool calls, 9090 tokens"
        " (prompt cache: 8100 read, 540 written)"
    ), last
    done = [line for line in err.splitlines() if " done by billing, " in line]
    assert done
    assert all(", 2020 tokens (prompt cache: 1800 read, 120 written): " in ln for ln in done), done


async def test_a_provider_that_reports_no_cache_use_adds_nothing(tmp_path: Path) -> None:
    team = _team(tmp_path, "examples.refund.brain:refund_brain")
    code, _, err = await run_cli("run", team, GOAL, "--plain", "--no-journal")
    assert code == 0, err
    assert "prompt cache" not in err
    assert "] run completed: 9 model calls, 3 tool calls, " in err


async def test_the_live_table_says_it_once_the_run_has_ended() -> None:
    usage = Usage(input_tokens=5, output_tokens=5, cache_read_tokens=700, cache_write_tokens=3)
    progress, out = RunProgress(), io.StringIO()
    view = LiveView(progress, Console(file=out, width=160, force_terminal=False), TokenMeter())
    with view:
        progress.apply(ev.RunStarted(run_id="run-1", goal="g", team="t"))
        result_event = ev.RunFailed(run_id="run-1", error_type="X", message="boom", usage=usage)
        progress.apply(result_event)
    assert "713 tokens (prompt cache: 700 read, 3 written)" in out.getvalue()

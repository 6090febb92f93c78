"""A run whose synthesizer wrote nothing (also when asked again) printed a blank answer,
exit 0, and its progress lines ended 'run completed': the WARNING saying why goes to
stderr only with ``-v``. The command now says so after the answer, with where the steps'
outputs are."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .helpers import run_cli, write_team

pytestmark = pytest.mark.anyio

_SILENT = """
from regiment.models import ModelRequest, ModelResponse, text_response


def brain(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response('{"steps": [{"id": "s1", "description": "measure"}]}')
    if request.role == "worker":
        return text_response("42 cm")
    return text_response("  ")
"""

_REFUND = str(Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml")
_NOTE = "regiment: the answer is empty (the synthesizer wrote nothing; -v logs why); "


def _team(directory: Path) -> Path:
    (directory / "silent_brain.py").write_text(_SILENT, encoding="utf-8")
    team = directory / "team.toml"
    team.write_text(
        'name = "t"\nbrain = "silent_brain:brain"\n\n[[workers]]\nname = "w"\n'
        'description = "Measures."\n',
        encoding="utf-8",
    )
    return team


async def test_an_empty_answer_is_said_with_where_the_outputs_are(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    team = _team(tmp_path)
    code, out, err = await run_cli(
        "run", str(team), "measure", "--journal", str(journal), "--app-dir", str(tmp_path)
    )
    assert code == 0, err
    assert out.strip() == ""
    last = err.splitlines()[-1]
    found = re.fullmatch(
        re.escape(f"{_NOTE}the steps' outputs: regiment show --journal {journal} ") + r"(run-\S+)",
        last,
    )
    assert found, err
    # typed as printed, it shows them
    code, shown, err = await run_cli("show", "--journal", str(journal), found.group(1))
    assert code == 0, err
    assert "v1 s1 [committed] 42 cm" in shown


async def test_without_a_journal_it_points_to_the_events(tmp_path: Path) -> None:
    team = _team(tmp_path)
    code, _out, err = await run_cli(
        "run", str(team), "measure", "--no-journal", "--app-dir", str(tmp_path)
    )
    assert code == 0, err
    assert err.splitlines()[-1] == f"{_NOTE}the steps' outputs are in its events (--events jsonl)"


async def test_an_answer_gets_no_such_line(tmp_path: Path) -> None:
    team = write_team(tmp_path, "garbage")  # a run that fails: no answer, no note
    code, _out, err = await run_cli("run", str(team), "x", "--no-journal")
    assert code == 1
    assert "the answer is empty" not in err
    code, out, err = await run_cli("run", _REFUND, "For order 88213 check refund eligibility")
    assert code == 0, err
    assert out.strip()
    assert "the answer is empty" not in err

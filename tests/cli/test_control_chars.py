"""What a model wrote reaches the terminal as text: its escape sequences are shown, not
obeyed. A plan's step ids and descriptions, a step's output, an error, a failure's last
line went to stderr as written, so a model (or a page a tool fetched for it) could
retitle the terminal, clear it or write to its clipboard. A step id with escapes in it is
no id at all now (the plan parser keeps it as a label and the step is ``s1``), so only the
descriptions, outputs and errors carry them here, and the ids must come out bare."""

from __future__ import annotations

import io
import json
import logging
import uuid
from pathlib import Path

import pytest
from rich.console import Console

from regiment._logging import logging_to
from regiment.cli._live import LiveView
from regiment.cli._progress import RunProgress, TokenMeter
from regiment.config import load_team

from .helpers import run_cli

pytestmark = pytest.mark.anyio

ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b"
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x9b"

BRAIN = f"""
import json
from regiment.models import text_response

E = {ESCAPES!r}


def calm(request):
    if request.role == "planner":
        return json.dumps({{"steps": [{{"id": "s1" + E, "description": "look" + E}}]}})
    if request.role == "worker":
        return text_response("found it" + E)
    return text_response("the answer" + E)


def brain(request):
    if request.role == "synthesizer":
        raise RuntimeError("the synthesizer broke" + E)
    return calm(request)
"""


def _team(directory: Path, brain: str = "brain") -> Path:
    module = f"escaping_{uuid.uuid4().hex[:8]}"  # unique: imported modules are cached
    (directory / f"{module}.py").write_text(BRAIN, encoding="utf-8")
    team = directory / "team.toml"
    team.write_text(
        f'name = "t"\nmodel = "scripted"\nbrain = "{module}:{brain}"\n\n'
        '[[workers]]\nname = "w"\ndescription = "Looks."\n',
        encoding="utf-8",
    )
    return team


async def test_progress_lines_and_the_failure_line_show_escapes_as_text(tmp_path: Path) -> None:
    team = _team(tmp_path)
    argv = ["run", str(team), "go", "--app-dir", str(tmp_path), "--no-journal", "--plain"]
    code, _, err = await run_cli(*argv)
    assert code == 1
    assert "\x1b" not in err
    assert "\x07" not in err
    assert "\x9b" not in err
    assert f"plan v1: s1 [w] look{SHOWN}" in err
    assert "  <- s1 done by w" in err
    assert f": found it{SHOWN}" in err
    assert err.splitlines()[-1].endswith(f"the synthesizer broke{SHOWN}")


async def test_the_live_table_shows_escapes_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    result = await load_team(_team(tmp_path, "calm")).run("go")
    progress, screen = RunProgress(), io.StringIO()
    view = LiveView(progress, Console(file=screen, width=200, force_terminal=True), TokenMeter())
    with view:
        for event in result.events:
            progress.apply(event)
            view.tick()
    drawn = screen.getvalue()
    assert "\x1b]0;pwned" not in drawn
    assert "\x1b[2J" not in drawn
    assert "\x9b" not in drawn
    assert f"look{SHOWN}" in drawn


def test_log_lines_show_escapes_as_text() -> None:
    # `regiment run -v` and `regiment serve` log what SDKs and MCP servers wrote, too.
    stream = io.StringIO()
    with logging_to(stream, logging.INFO):
        logging.getLogger("mcp.client.stdio").warning("the server wrote %s", ESCAPES)
    line = stream.getvalue()
    assert "\x1b" not in line
    assert line.endswith(f"WARNING mcp.client.stdio: the server wrote {SHOWN}\n")


async def test_show_and_runs_show_escapes_as_text(tmp_path: Path) -> None:
    # `regiment show` printed a journaled run's plan, outputs and answer as written, and
    # `regiment runs` its goal: the terminal obeyed what a model (or a goal) held.
    journal = str(tmp_path / "runs.db")
    argv = ["run", str(_team(tmp_path, "calm")), "go" + ESCAPES, "--app-dir", str(tmp_path)]
    code, _, _ = await run_cli(*argv, "--journal", journal)
    assert code == 0
    code, listed, _ = await run_cli("runs", "--journal", journal)
    assert code == 0
    assert listed.rstrip("\n").endswith(f"  go{SHOWN}")
    run_id = listed.split()[0]
    code, shown, _ = await run_cli("show", run_id, "--journal", journal)
    assert code == 0
    assert f"goal: go{SHOWN}\n" in shown
    assert "plan v1: s1\n" in shown
    assert f"  v1 s1 [committed] found it{SHOWN}\n" in shown
    assert f"answer: the answer{SHOWN}" in shown
    assert not set("\x1b\x07\x9b") & set(shown + listed)
    code, as_json, _ = await run_cli("show", run_id, "--journal", journal, "--json")
    assert code == 0
    assert json.loads(as_json)["steps"][0]["output"] == "found it" + ESCAPES  # JSON: exact

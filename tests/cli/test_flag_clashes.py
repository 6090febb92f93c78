"""Options that do not go together are usage errors, said before the team file is read,
and ``--events-file`` never overwrites a file the command reads (the team file, a nested
team file, the journal)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli, write_team

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "T", "goal", "--events-file", "x.jsonl"], "--events-file needs --events jsonl"),
        (["run", "T", "goal", "--events-deltas"], "--events-deltas needs --events jsonl"),
        (["resume", "T", "run-1", "--events-deltas"], "--events-deltas needs --events jsonl"),
        (["run", "T", "goal", "--ray-address", "h:6379"], "--ray-address needs --workers ray"),
        (
            ["run", "T", "goal", "--workers", "ray", "--backend", "trio"],
            "--workers ray needs --backend asyncio (the default; Ray has no trio)",
        ),
        (
            ["mcp", "T", "--http", "8001", "--backend", "trio"],
            "--http needs --backend asyncio (uvicorn runs on asyncio)",
        ),
    ],
)
async def test_a_flag_clash_is_a_usage_error_before_the_team_file_is_read(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The team file is broken: the clash is said first (it was said only once the file
    # and its imports had loaded, without the usage and the pointer to --help).
    broken = tmp_path / "broken.toml"
    broken.write_text("name = \n", encoding="utf-8")
    argv = [str(broken) if a == "T" else a for a in argv]
    code, _out, err = await run_cli(*argv)
    printed = capsys.readouterr().err + err  # argparse writes to sys.stderr itself
    assert code == 2
    usage, last = printed.splitlines()[0], printed.splitlines()[-1]
    assert usage.startswith(f"usage: regiment {argv[0]} ")
    assert last == f"regiment: error: {message}; see `regiment {argv[0]} --help`"
    assert "broken.toml" not in printed


async def test_events_file_never_overwrites_the_team_file(tmp_path: Path) -> None:
    team = write_team(tmp_path, "idle")
    before = team.read_text(encoding="utf-8")
    code, _out, err = await run_cli(
        "run", str(team), "goal", "--events", "jsonl", "--events-file", "./team.toml"
    )
    assert code == 2
    assert err.splitlines()[-1] == (
        f"regiment: error: --events-file ./team.toml: that is the team file {team}, which "
        "writing the events there would overwrite; give the events a file of their own "
        "(events.jsonl, say)"
    )
    assert team.read_text(encoding="utf-8") == before


async def test_events_file_never_overwrites_a_nested_team_file(tmp_path: Path) -> None:
    inner = write_team(tmp_path, "idle")
    outer = tmp_path / "outer.toml"
    outer.write_text(
        'name = "outer"\nbrain = "' + _brain_of(inner) + '"\n\n[[workers]]\nname = "w"\n'
        'description = "A team."\nteam = "team.toml"\n',
        encoding="utf-8",
    )
    before = inner.read_text(encoding="utf-8")
    code, _out, err = await run_cli(
        "run", str(outer), "goal", "--no-journal", "--events", "jsonl", "--events-file", str(inner)
    )
    assert code == 2
    assert f"that is the team file {inner}, which writing the events there" in err
    assert inner.read_text(encoding="utf-8") == before


async def test_events_file_never_overwrites_the_journal(tmp_path: Path) -> None:
    team = write_team(tmp_path, "idle")
    journal = tmp_path / "runs.db"
    code, _out, err = await run_cli("run", str(team), "first", "--journal", str(journal))
    assert code == 0, err
    size = journal.stat().st_size
    # It truncated the journal: the next command found 'no tables', every run lost.
    code, _out, err = await run_cli(
        "run", str(team), "goal", "--journal", str(journal), "--events", "jsonl",
        "--events-file", str(journal),
    )  # fmt: skip
    assert code == 2
    assert f"--events-file {journal}: that is the journal {journal}, which writing" in err
    assert journal.stat().st_size == size
    code, out, err = await run_cli("runs", "--journal", str(journal))
    assert code == 0, err
    assert "first" in out


async def test_an_events_file_of_its_own_is_written(tmp_path: Path) -> None:
    team = write_team(tmp_path, "idle")
    events = tmp_path / "events.jsonl"
    code, out, err = await run_cli(
        "run", str(team), "goal", "--no-journal", "--events", "jsonl", "--events-file", str(events)
    )
    assert code == 0, err
    assert "RunCompleted" not in out  # the events went to the file, not to stdout
    assert events.read_text(encoding="utf-8").splitlines()[-1].startswith('{"type":"RunCompleted"')


def _brain_of(team: Path) -> str:
    line = next(x for x in team.read_text(encoding="utf-8").splitlines() if x.startswith("brain"))
    return line.split('"')[1]

"""Every command says an error the same way: its last line on stderr is ``regiment:
error: ...`` and it exits 2. ``approvals`` and ``approve`` said ``regiment: approvals:
...`` / ``regiment: approve: ...``, and argparse's usage errors ``regiment run: error:
...``, beside the ``regiment: error: ...`` of every other error."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
MISSING = "missing/runs.db"  # under the test's directory: never there

CASES = {
    "no command": [],
    "unknown command": ["bogus"],
    "run: no goal": ["run", "team.toml"],
    "runs: bad status": ["runs", "--status", "done"],
    "show: option of run": ["show", "run-1", "--no-journal"],
    "validate: no file": ["validate", "nofile.toml"],
    "mcp: no file": ["mcp", "nofile.toml"],
    "serve: bad port": ["serve", "team.toml", "--port", "99999"],
    "resume: no journal": ["resume", "run-1", "--journal", MISSING],
    "show: no journal": ["show", "run-1", "--journal", MISSING],
    "approvals: no journal": ["approvals", "--journal", MISSING],
    "approve: no journal": ["approve", "run-1", "apr-1", "--journal", MISSING],
    "approve: two decisions": ["approve", "run-1", "apr-1", "--deny", "no", "--edit", "{}"],
}


@pytest.mark.parametrize("argv", CASES.values(), ids=CASES.keys())
async def test_every_error_line_reads_regiment_error(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = await run_cli(*argv)
    said = capsys.readouterr().err + err  # argparse writes to sys.stderr itself
    assert (code, out) == (2, ""), said
    last = said.splitlines()[-1]
    assert last.startswith("regiment: error: "), said
    assert not [line for line in said.splitlines() if ": error:" in line and line != last]


TEAM = '''name = "t"
brain = "examples.refund.brain:refund_brain"

[[workers]]
name = "billing"
description = "Issues refunds."
system_prompt = """Be brief.
[[workers]]
name = "not a table: this is the prompt's text"
"""
tools = [
    "examples.refund.tools:check_eligibility",
    "examples.refund.tools:issue_refund",
]

[[workers]]
name = "comms"
description = "Writes e-mails."
tools = ["examples.refund.tools:email_customer"]
'''

MISTAKES = {  # the mistake, and the line the error names
    "unknown key": (('email_customer"]', 'email_customer"]\nmax_iteration = 3'), 20),
    "wrong type": (('e-mails."', 'e-mails."\nmax_iterations = 2.5'), 19),
    "cannot import": (("tools:issue_refund", "tools:refund"), 13),
    "unknown table": (('[[workers]]\nname = "comms"', '[[worker]]\nname = "comms"'), 16),
    "missing key": (('description = "Issues refunds."\n', ""), 4),
    # `[check.c]` opens the unknown table `check` too; it had no line: "team.toml: unknown
    # table `[check]` (did you mean `[checks.<name>]`?)"
    "unknown dotted table": (
        ('tools = [\n    "examples', '[check.c]\ntools = [\n    "examples'),
        11,
    ),
    # It had no key path, so no line: "team 't' has two workers named billing".
    "a name twice": (('name = "comms"', 'name = "billing"'), 17),
}


@pytest.mark.parametrize(("mistake", "line"), MISTAKES.values(), ids=MISTAKES.keys())
async def test_a_team_file_mistake_names_its_line(
    mistake: tuple[str, str], line: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It named the file and the key path, but not the line, which a long file needs.
    team = tmp_path / "team.toml"
    assert mistake[0] in TEAM
    team.write_text(TEAM.replace(*mistake), encoding="utf-8")
    code, _, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
    assert code == 2
    assert err.startswith(f"regiment: error: {team}:{line}: "), err


async def test_a_yaml_mistake_names_its_line(tmp_path: Path) -> None:
    team = tmp_path / "team.yaml"
    team.write_text(
        "name: t\nbrain: examples.refund.brain:refund_brain\nworkers:\n"
        "  - name: billing\n    description: x\n"
        "  - name: comms\n    description: y\n    max_iterations: '3'\n",
        encoding="utf-8",
    )
    code, _, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
    assert code == 2
    assert err.startswith(f"regiment: error: {team}:8: workers[1].max_iterations: "), err


async def test_an_error_without_a_key_path_is_left_as_it_is(tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    brain = "examples.refund.brain:refund_brain"
    team.write_text(f'name = "t"\nmodel = "scripted"\nbrain = "{brain}"\nworkers = []\n')
    code, _, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
    assert code == 2
    assert err.startswith(f"regiment: error: {team}: "), err
    assert err.endswith(": team 't' has no workers; give it at least one Worker\n"), err


@pytest.mark.parametrize("command", [["runs"], ["approvals"], ["show", "run-1"]])
async def test_a_journal_urls_password_is_never_shown(
    command: list[str], capsys: pytest.CaptureFixture[str], refused_port: int
) -> None:
    """``--journal URL: ...`` named the URL as given, password and all."""
    port = refused_port  # nothing listens there: the server is down
    url = f"postgresql://ops:s3cret-pw@127.0.0.1:{port}/runs"
    code, out, err = await run_cli(*command, "--journal", url)
    said = capsys.readouterr().err + err
    assert code == 2, said
    assert said.splitlines()[-1].startswith(
        f"regiment: error: --journal postgresql://ops@127.0.0.1:{port}/runs: "
    )
    assert "s3cret" not in said + out


@pytest.mark.parametrize("command", [["runs"], ["approvals"], ["show", "run-1"]])
async def test_a_journal_that_cannot_be_reached_is_named_once(
    command: list[str], capsys: pytest.CaptureFixture[str], refused_port: int
) -> None:
    """The line read ``--journal URL: journal URL: connecting failed ...``: the flag's
    prefix and the journal's own message both named it."""
    url = f"postgresql://ops:s3cret-pw@127.0.0.1:{refused_port}/runs"
    code, _, err = await run_cli(*command, "--journal", url)
    said = capsys.readouterr().err + err
    assert code == 2, said
    line = said.splitlines()[-1]
    shown = f"postgresql://ops@127.0.0.1:{refused_port}/runs"
    assert line.startswith(f"regiment: error: --journal {shown}: connecting failed: "), line
    assert line.count(shown) == 1, line


@pytest.mark.parametrize(
    ("query", "kept"),
    [
        ("?password=s3cret-pw", ""),  # libpq takes a password as a URL parameter too
        ("?sslmode=disable&sslpassword=s3cret-pw", "?sslmode=disable"),
        ("?PASSWORD=s3cret-pw&connect_timeout=3", "?connect_timeout=3"),
    ],
)
async def test_a_journal_urls_password_parameter_is_never_shown(
    query: str, kept: str, capsys: pytest.CaptureFixture[str], refused_port: int
) -> None:
    """``--journal URL: ...`` named a URL's ``password=`` (or ``sslpassword=``) parameter."""
    port = refused_port  # nothing listens there: the server is down
    code, out, err = await run_cli(
        "runs", "--journal", f"postgresql://ops@127.0.0.1:{port}/runs{query}"
    )
    said = capsys.readouterr().err + err
    assert code == 2, said
    assert said.splitlines()[-1].startswith(
        f"regiment: error: --journal postgresql://ops@127.0.0.1:{port}/runs{kept}: "
    ), said
    assert "s3cret" not in said + out

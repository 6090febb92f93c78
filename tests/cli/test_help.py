"""Every argument of every command says what it is in ``--help``, and the README's list
of commands shows every option. ``validate``'s ``TEAM_FILE`` and ``--app-dir``,
``serve --port``, ``mcp --backend``, ``show RUN_ID``, ``approve RUN_ID REQUEST_ID`` and
others had no help; the README left out ``run``'s ``-v``, ``--workers`` and
``--ray-address``, ``serve -v`` and ``approve --app-dir``."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import regiment
from regiment.cli import main
from regiment.cli._args import parser

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands() -> dict[str, argparse.ArgumentParser]:
    top = parser()
    (commands,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def _synopsis() -> dict[str, str]:
    """The README's usage line of each command (with its continuation lines)."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## The `regiment` command.*?```sh\n(.*?)```", text, re.DOTALL)
    assert block is not None
    lines: dict[str, str] = {}
    command = ""
    for line in block[1].splitlines():
        if line.startswith("regiment "):
            command = line.split()[1]
            lines[command] = line
        else:
            lines[command] += " " + line.strip()
    return lines


@pytest.mark.parametrize("command", _commands())
def test_every_argument_has_help(command: str) -> None:
    for action in _commands()[command]._actions:
        assert action.help, f"regiment {command}: {action.dest} has no help"


@pytest.mark.parametrize("command", _commands())
def test_the_readme_shows_every_option(command: str) -> None:
    synopsis = _synopsis()
    shown = synopsis[command] + (" " + synopsis["run"] if command == "resume" else "")
    for action in _commands()[command]._actions:
        if action.option_strings and action.dest != "help":
            written = action.option_strings[-1] if action.dest != "verbose" else "-v"
            assert re.search(rf"(?<![\w-]){re.escape(written)}(?![\w-])", shown), (
                f"README: regiment {command} does not show {written}"
            )


@pytest.mark.parametrize("command", _commands())
def test_every_command_s_help_says_what_it_does_and_what_its_exit_codes_mean(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # `regiment validate --help` showed its usage and options alone: neither what the
    # command does (only `regiment --help` said) nor what its exit codes mean.
    assert main([command, "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # unwrapped
    listed = {a.dest: a.help for a in _listing()}[command]
    assert listed is not None
    assert f"{listed[0].upper()}{listed[1:]}." in shown
    assert re.search(r"exit codes: 0 [^,]+, .*\b2 ", shown), shown


def test_validate_s_help_says_what_a_bad_file_exits_with(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["validate", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "Check a team file without running it." in shown
    assert shown.endswith(
        "exit codes: 0 the file is good (a summary of the team follows), 1 what it prints "
        "could not be written (a full disk, a closed stdout), 2 it is not (the error names "
        "the file, the line and the key), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM), "
        "141 its reader closed stdout (`| head`)"
    )


@pytest.mark.parametrize("command", ["run", "resume", "runs", "show", "approvals", "approve"])
def test_the_help_of_a_command_that_prints_names_its_output_exit_codes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The README lists 141 (`regiment runs | head -1`) and 1 (an output that could not be
    # written) for these; their --help named neither.
    assert main([command, "--help"]) == 0
    codes = " ".join(capsys.readouterr().out.split()).split("exit codes: ", 1)[1]
    assert "141 its reader closed stdout" in codes
    assert re.search(r"\b1 (run failed \(or its answer could not be written|what it prints)", codes)


def _listing() -> list[argparse.Action]:
    """The commands as ``regiment --help`` lists them, each with its one line."""
    top = parser()
    (commands,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return list(commands._choices_actions)


def test_version_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    # `regiment --version` was a usage error: "the following arguments are required: COMMAND".
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"regiment {regiment.__version__}\n"

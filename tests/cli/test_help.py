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

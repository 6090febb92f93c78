"""Each command's ``--help`` lists the exit codes it can end with, and only those.

``runs``, ``show``, ``approvals`` and ``approve`` leave at once on Ctrl-C or SIGTERM (130,
143: ``leave_on_signal``) but their help did not say so; ``mcp`` and ``serve`` exit 143
when a second signal that forces them out is a SIGTERM, and said only 130; ``validate``,
which watches no signal with an event loop, was killed by a SIGTERM without a word (the
shell's 143, a parent's -15) and now says ``regiment: interrupted`` and exits 143, as it
says and exits 130 for Ctrl-C.

Where each code is reached: 0/1/2 by the commands' own tests; 3, 4, 5 by
test_approvals_cli.py, test_taken_over.py and tests/ray; 130/143 by test_sigterm.py,
test_interrupt_waits.py (``approve``, ``runs``, ``show``, ``approvals``),
tests/mcp_tools/test_mcp_stdio_stop.py and tests/serve/test_sigterm.py (a second signal)
and below (``validate``); 141 by test_broken_pipe.py.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from regiment._script import EXIT_BROKEN_PIPE
from regiment._signals import EXIT_INTERRUPTED, EXIT_TERMINATED
from regiment.cli._args import parser
from regiment.cli._codes import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PAUSED,
    EXIT_RESUMABLE,
    EXIT_TAKEN_OVER,
    EXIT_USAGE,
)

OK, FAILED, USAGE = EXIT_OK, EXIT_FAILED, EXIT_USAGE
SIGNALLED = {EXIT_INTERRUPTED, EXIT_TERMINATED}
RUN = {OK, FAILED, USAGE, EXIT_PAUSED, EXIT_TAKEN_OVER, EXIT_RESUMABLE, EXIT_BROKEN_PIPE}
READ = {OK, FAILED, USAGE, EXIT_BROKEN_PIPE}  # what they print may not be writable (1, 141)
# What each command can end with, by cli/_main.py: a run's outcomes (exit_code, run_error),
# config_error's 2, printed()'s 1 and 141, leave_on_signal's and watch_signals' 130/143.
REACHABLE = {
    "run": RUN | SIGNALLED,
    "resume": RUN | SIGNALLED,
    "runs": READ | SIGNALLED,
    "show": READ | SIGNALLED,
    "approvals": READ | SIGNALLED,
    "approve": READ | SIGNALLED,
    "validate": READ | SIGNALLED,
    "mcp": {OK, FAILED, USAGE} | SIGNALLED,  # stdout is the client's: no 141
    "serve": {OK, USAGE} | SIGNALLED,  # a server that fails to serve is a config error
}


def _commands() -> dict[str, argparse.ArgumentParser]:
    top = parser()
    (commands,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def _listed(epilog: str | None) -> set[int]:
    """The codes an ``exit codes: 0 ..., 1 ...`` epilog lists (each starts an item)."""
    assert epilog is not None
    assert epilog.startswith("exit codes: ")
    text = re.sub(r"\([^)]*\)", "", epilog.removeprefix("exit codes: "))  # no asides
    return {int(item.split()[0]) for item in text.split(", ") if item.split()[0].isdigit()}


@pytest.mark.parametrize("command", sorted(REACHABLE))
def test_the_help_lists_the_codes_the_command_can_end_with(command: str) -> None:
    assert _listed(_commands()[command].epilog) == REACHABLE[command]


def test_every_command_is_covered() -> None:
    assert set(_commands()) == set(REACHABLE)


def test_the_top_help_lists_every_code_a_command_can_end_with() -> None:
    assert _listed(parser().epilog) == set().union(*REACHABLE.values())


_BLOCKING = """
from pathlib import Path
import time

Path("importing").write_text("yes")
time.sleep(120)

def brain(request):
    raise AssertionError("never asked")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="signals to a child need POSIX")
@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_validate_stopped_while_it_imports_says_so_with_the_signal_s_code(
    tmp_path: Path, sent: signal.Signals, code: int
) -> None:
    (tmp_path / "slow_brain.py").write_text(_BLOCKING, encoding="utf-8")
    team = tmp_path / "team.toml"
    team.write_text(
        'name = "t"\nbrain = "slow_brain:brain"\n\n[[workers]]\nname = "w"\n'
        'description = "Works."\n',
        encoding="utf-8",
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "regiment", "validate", str(team), "--app-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        while not (tmp_path / "importing").exists() and child.poll() is None:
            time.sleep(0.05)
        child.send_signal(sent)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == code, err
    assert err.splitlines()[-1] == "regiment: interrupted", err
    assert "Traceback" not in err
    assert out == ""

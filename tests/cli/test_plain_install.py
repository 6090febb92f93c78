"""``pip install regiment`` without extras: every command works, with plain lines.

The package is installed from a copy of this checkout into a fresh virtual
environment that sees nothing of this one (no ``--system-site-packages``), so
rich and pyyaml, the ``cli`` extra, are really absent there.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOAL = "For order 88213 check refund eligibility, issue the refund if eligible, then email the customer."
_NOT_COPIED = shutil.ignore_patterns(
    ".venv*",
    ".git",
    "build",
    "dist",
    "*.egg-info",
    ".*_cache",
    ".hypothesis",
    ".typecheck",
    "__pycache__",
)

# Building the environment installs the core dependencies (from pip's cache when warm).
pytestmark = pytest.mark.timeout(600)


@dataclass(frozen=True)
class PlainInstall:
    bin: Path
    source: Path  # the copy it was installed from; examples are imported from here

    def run(self, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "PYTHONPATH")}
        return subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            cwd=cwd or self.source,
            env=env,
            timeout=120,
            check=False,
        )


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> PlainInstall:
    base = tmp_path_factory.mktemp("plain-install")
    source = base / "src"
    shutil.copytree(ROOT, source, ignore=_NOT_COPIED)  # the build leaves nothing in the checkout
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # This environment's pip installs into the new one: no pip bootstrap to wait for.
    # --no-compile: byte-compiling every installed module (the SDKs' thousands) was half
    # the install's time; the few modules the commands import compile as they load.
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    install.append("--no-compile")
    done = subprocess.run([*install, str(source)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return PlainInstall(bin=venv / "bin", source=source)


def _clean(done: subprocess.CompletedProcess[str], code: int = 0) -> None:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == code, done.stderr


def test_the_extras_are_really_absent(plain: PlainInstall) -> None:
    for module in ("rich", "yaml"):
        done = plain.run("python", "-c", f"import {module}")
        assert f"No module named '{module}'" in done.stderr
    done = plain.run("python", "-c", "import regiment, sys; print(regiment.__file__)")
    assert str(plain.bin.parent) in done.stdout  # the installed copy, not this checkout


def test_help_and_validate(plain: PlainInstall) -> None:
    done = plain.run("regiment", "--help")
    _clean(done)
    assert "validate" in done.stdout
    done = plain.run("regiment", "validate", "examples/refund/team.toml")
    _clean(done)
    assert done.stdout.startswith("examples/refund/team.toml: ok, team 'refunds'")


def _refund_run(plain: PlainInstall, *extra: str) -> subprocess.CompletedProcess[str]:
    return plain.run("regiment", "run", "examples/refund/team.toml", GOAL, *extra)


@pytest.mark.parametrize("extra", [(), ("--plain",)])
def test_run_prints_plain_lines_and_the_answer(plain: PlainInstall, extra: Sequence[str]) -> None:
    done = _refund_run(plain, *extra)
    _clean(done)
    assert "s5 (Email the customer" in done.stdout  # the answer
    lines = done.stderr.splitlines()
    assert any(line.endswith("  -> s1 to billing (plan v1)") for line in lines)
    assert lines[-1].startswith("[")
    assert "run completed" in lines[-1]


def test_run_on_a_terminal_falls_back_to_plain_lines(plain: PlainInstall) -> None:
    # A terminal asks for the live view; without rich the command prints lines instead.
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "PYTHONPATH")}
    argv = [str(plain.bin / "regiment"), "run", "examples/refund/team.toml", GOAL]
    with subprocess.Popen(
        argv, cwd=plain.source, env=env, stdout=subprocess.PIPE, stderr=follower
    ) as child:
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        assert child.wait(timeout=120) == 0, seen
    os.close(leader)
    text = seen.decode()
    assert "Traceback" not in text
    assert "  -> s1 to billing (plan v1)" in text
    assert "run completed" in text


def test_events_jsonl_on_stdout(plain: PlainInstall) -> None:
    done = _refund_run(plain, "--events", "jsonl")
    _clean(done)
    lines = done.stdout.splitlines()
    assert lines[0].startswith('{"type":"RunStarted"')
    assert lines[-1].startswith('{"type":"RunCompleted"')


def test_a_yaml_team_file_says_what_to_install(plain: PlainInstall) -> None:
    team = plain.source / "team.yaml"
    team.write_text("name: t\n", encoding="utf-8")
    done = plain.run("regiment", "validate", str(team))
    _clean(done, code=2)
    assert done.stderr.strip().splitlines() == [
        f"regiment: error: {team}: reading YAML needs pyyaml, the cli extra: pip install "
        "'regiment[cli]' (or write the team file in TOML)"
    ]


def test_serve_without_the_serve_extra_says_what_to_install(plain: PlainInstall) -> None:
    team = str(plain.source / "examples" / "refund" / "team.toml")
    done = plain.run("regiment", "serve", team, "--model", "scripted")
    _clean(done, code=2)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("regiment: error: the service needs starlette")
    assert line.endswith("pip install 'regiment[serve]'")

"""Broken team files from a grammar of mistakes: ``regiment validate`` (and ``run``) always
exits 2 with one line on stderr that names the file and the key, and never a traceback."""

from __future__ import annotations

import functools
import io
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regiment.cli import run_async

from .broken_files import Broken, base, broken_files, put, render

REPO = Path(__file__).resolve().parents[2]


def _validate(team: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = list(sys.path)  # the command puts --app-dir on the import path
    try:
        run = functools.partial(
            run_async,
            ["validate", str(team), "--app-dir", str(REPO)],
            stdout=out,
            stderr=err,
            environ={},
        )
        code = anyio.run(run, backend="asyncio")
    finally:
        sys.path[:] = saved
    return code, out.getvalue(), err.getvalue()


def _assert_one_line_naming(
    code: int, out: str, err: str, team: Path, names: tuple[str, ...]
) -> None:
    assert code == 2, (code, out, err)
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert err.endswith("\n")
    assert lines[0].startswith(f"regiment: error: {team}"), lines[0]
    for name in names:
        assert name in lines[0], (name, lines[0])


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(broken=broken_files(), position=st.integers(min_value=0))
def test_every_broken_file_is_one_line_naming_the_file_and_the_key(
    broken: Broken, position: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        team = Path(directory) / f"team.{broken.fmt}"
        team.write_bytes(render(broken, position))
        # A nested file the parent may name, itself broken: bytes that are not UTF-8.
        (Path(directory) / "s.toml").write_bytes(b'name = "s"\n\xff\n')
        code, out, err = _validate(team)
    _assert_one_line_naming(code, out, err, team, broken.names)


def test_the_base_of_the_grammar_is_a_valid_team(tmp_path: Path) -> None:
    for fmt in ("toml", "yaml"):
        team = tmp_path / f"team.{fmt}"
        team.write_bytes(render(Broken(base(), fmt, ())))
        code, out, err = _validate(team)
        assert code == 0, err
        assert "ok, team 't'" in out


_DEEP = "__deep_nesting__"
SUBPROCESS_CASES = [
    ("validate", Broken(base(), "toml", ("line 2",), splice=b"\xff\xfe"), 12),
    (
        "validate",
        Broken(put(base(), ("budget", "tokens"), _DEEP), "toml", ("tokens",), depth=5000),
        0,
    ),
    ("run", Broken(put(base(), ("budget", "tokens"), _DEEP), "yaml", ("tokens",), depth=5000), 0),
    (
        "run",
        Broken(
            put(base(), ("workers", 0, "step_timeout"), -5), "toml", ("workers[0].step_timeout",)
        ),
        0,
    ),
]


@pytest.mark.parametrize(("command", "broken", "position"), SUBPROCESS_CASES)
def test_the_real_command_exits_2_with_one_line(
    tmp_path: Path, command: str, broken: Broken, position: int
) -> None:
    """A few real processes: the same one line from ``python -m regiment``, no traceback."""
    team = tmp_path / f"team.{broken.fmt}"
    team.write_bytes(render(broken, position))
    goal = ["a goal"] if command == "run" else []
    done = subprocess.run(
        [sys.executable, "-m", "regiment", command, str(team), *goal, "--app-dir", str(REPO)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    _assert_one_line_naming(done.returncode, done.stdout, done.stderr, team, broken.names)

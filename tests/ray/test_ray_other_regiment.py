"""A Ray replica that loads another regiment than its team's process (another
version, another wire format, or the same version with other code on the wire:
another checkout first on the nodes' PYTHONPATH) refuses to start: ``Team.start()``
fails at once with a ``ConfigError`` naming both regiments and what to do, rather than
a dead actor or an ``AttributeError`` at the first step. The same regiment from
another directory starts and runs as ever."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import regiment

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240)]  # each case starts a Ray of its own

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(regiment.__file__).resolve().parent
WIRE = "hierarchy/workers/_wire.py"
VERSION_LINE = f'__version__ = "{regiment.__version__}"'
HOW = (
    "a replica must run the same regiment as its caller: install this regiment on the "
    "cluster's nodes, or put its directory's parent first on their PYTHONPATH"
)


def _copy(tmp_path: Path) -> Path:
    """This regiment's package copied to ``tmp_path/other/regiment`` (its modules only)."""
    target = tmp_path / "other" / "regiment"
    shutil.copytree(
        PACKAGE,
        target,
        ignore=shutil.ignore_patterns(
            ".*", "tests", "bench", "examples", "docs", "__pycache__", "*.md"
        ),
    )
    return target


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path} no longer holds {old!r}: update this test"
    path.write_text(text.replace(old, new))


def _start(other: Path) -> dict[str, object]:
    """The child's start of a team whose replicas load ``other``'s regiment first."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.ray._other_regiment", str(other.parent)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, (done.stdout, done.stderr[-3000:])
    result: dict[str, object] = json.loads(lines[-1])
    return result


def test_a_replica_of_another_version_is_refused(tmp_path: Path) -> None:
    other = _copy(tmp_path)
    _edit(other / "_version.py", VERSION_LINE, '__version__ = "9.9.9"')
    error = _start(other)["error"]
    assert error == (
        "worker 'w': its Ray replicas did not start: the Ray replica runs regiment 9.9.9 "
        f"(wire format 1) from {other}, but the team's process runs regiment "
        f"{regiment.__version__} (wire format 1) from {PACKAGE}; {HOW} "
        "(ray.init(runtime_env={'env_vars': {'PYTHONPATH': ...}}))"
    )


def test_a_replica_of_a_regiment_without_the_check_is_refused(tmp_path: Path) -> None:
    # An older regiment: no wire format number (nor this check): the caller's check runs there.
    other = _copy(tmp_path)
    _edit(other / "_version.py", VERSION_LINE, '__version__ = "0.0.1"')
    (other / "hierarchy/workers/_ray_version.py").unlink()
    error = str(_start(other)["error"])
    assert (
        "the Ray replica runs regiment 0.0.1 (wire format 0, its Ray modules' sources differ "
        f"from the caller's) from {other}, but the team's process runs regiment "
        f"{regiment.__version__} (wire format 1) from {PACKAGE}; "
    ) in error
    assert HOW in error


def test_a_replica_of_a_regiment_without_a_step_host_is_refused(tmp_path: Path) -> None:
    # An older release still: no StepHost at all (its module absent). The actor class
    # failed to load there with Ray's own "ModuleNotFoundError: No module named
    # 'regiment.hierarchy.workers._ray_host'" before the check could run.
    other = _copy(tmp_path)
    _edit(other / "_version.py", VERSION_LINE, '__version__ = "0.0.1"')
    (other / "hierarchy/workers/_ray_version.py").unlink()
    (other / "hierarchy/workers/_ray_host.py").unlink()
    error = str(_start(other)["error"])
    assert error.startswith(
        "worker 'w': its Ray replicas did not start: the Ray replica runs regiment 0.0.1 "
        "(wire format 0, its Ray modules' sources differ from the caller's) "
        f"from {other}, but the team's process runs regiment {regiment.__version__} "
        f"(wire format 1) from {PACKAGE}; "
    ), error
    assert HOW in error
    assert "ModuleNotFoundError" not in error


def test_a_replica_of_the_same_version_with_other_wire_code_is_refused(tmp_path: Path) -> None:
    # Another checkout of the same version (a worktree's replicas finding main's tree).
    other = _copy(tmp_path)
    _edit(
        other / WIRE,
        "from __future__ import annotations",
        "from __future__ import annotations\n\nNEW_FIELD = 1",
    )
    error = str(_start(other)["error"])
    assert (
        f"the Ray replica runs regiment {regiment.__version__} (wire format 1, its Ray "
        f"modules' sources differ from the caller's) from {other}, but the team's process "
        f"runs regiment {regiment.__version__} (wire format 1) from {PACKAGE}; {HOW}"
    ) in error


def test_the_same_regiment_from_another_directory_starts_and_runs(tmp_path: Path) -> None:
    other = _copy(tmp_path)
    assert _start(other) == {"error": None, "answer": "hello from the replica"}

"""Code run in a fresh interpreter, for what it loads or prints: what this test process
has imported already cannot hide a module a change made load."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ("modules_after", "run_fresh")


def run_fresh(
    code: str,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> str:
    """What ``python -c code`` printed; it must exit 0 (its stderr's tail says why not)."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def modules_after(code: str, *, cwd: Path | None = None) -> tuple[set[str], str]:
    """The modules loaded once ``code`` has run in a fresh interpreter, and what it
    printed before them."""
    program = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    printed = run_fresh(program, cwd=cwd)
    *said, last = printed.splitlines(keepends=True)
    return set(json.loads(last)), "".join(said)

"""Instructions per unit of work, counted by valgrind's callgrind (exact, load-proof).

A benchmark script re-runs itself as a child under callgrind twice, doing
``small`` and ``large`` units of the same work after the same setup; the
difference over ``large - small`` is what one unit costs. Used by
``floor.py --instructions`` and ``actors_roundtrip.py --instructions``;
``instructions.py`` does the same for a whole plan step.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

__all__ = ("instructions_per_unit",)

_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def _count(argv: list[str]) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, *argv],
        capture_output=True,
        text=True,
        check=True,
    )
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no total for {argv}:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def instructions_per_unit(argv: list[str], small: int, large: int) -> float:
    """Instructions of one unit: ``argv + [str(n)]`` run for ``small`` and ``large`` units."""
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not on the PATH; install it (Debian: apt install valgrind)")
    with ThreadPoolExecutor(2) as pool:  # the two callgrind processes side by side
        low, high = pool.map(_count, ([*argv, str(small)], [*argv, str(large)]))
    return (high - low) / (large - small)

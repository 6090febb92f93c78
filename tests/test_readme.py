"""The README's quick start is a real program: run it as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quick_start_runs_as_written(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"## Quick start\n\n```python\n(.*?)```", text, re.S)
    assert match is not None, "README has no quick start code block"
    script = tmp_path / "quick_start.py"
    script.write_text(match.group(1), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It is snowing in Oslo (-3 C)."

"""``make bench``: make the peers' virtualenv if needed, then run the whole suite.

The peers (``bench/requirements-peers.txt``) go into ``bench/.venv-peers`` together
with an editable install of this repository, never into the project's own
environment. A stamp holding a hash of the requirement files skips the install
when nothing changed. Extra arguments go to ``bench/table.py`` (e.g. ``--only``).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

__all__ = ("ensure_peers_venv", "main")

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "bench" / ".venv-peers"
PYTHON = VENV / "bin" / "python"
REQUIREMENTS = ROOT / "bench" / "requirements-peers.txt"
STAMP = VENV / ".installed-stamp"


def _digest() -> str:
    text = REQUIREMENTS.read_bytes() + (ROOT / "pyproject.toml").read_bytes()
    return hashlib.sha256(text).hexdigest()


def ensure_peers_venv() -> None:
    """Create ``bench/.venv-peers`` and install regiment and the peers, unless up to date."""
    digest = _digest()
    if PYTHON.exists() and STAMP.exists() and STAMP.read_text().strip() == digest:
        return
    started = time.perf_counter()
    print(f"installing the peers into {VENV.relative_to(ROOT)} ...", flush=True)
    if not PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(PYTHON), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-e", f"{ROOT}[dev]", "-r", str(REQUIREMENTS)], check=True, cwd=ROOT)
    STAMP.write_text(digest + "\n")
    print(f"installed in {time.perf_counter() - started:.0f} s", flush=True)


def main() -> int:
    """Install if needed, then run the table with the peers' interpreter."""
    ensure_peers_venv()
    table = ROOT / "bench" / "table.py"
    return subprocess.run([str(PYTHON), str(table), *sys.argv[1:]], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())

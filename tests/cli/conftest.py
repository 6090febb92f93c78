"""Every CLI test runs in a temporary directory: ``regiment run`` journals by default
to ``.regiment/journal.db`` under the current directory, and tests never write into
the repository. The repository stays importable (``examples.refund...`` paths)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _in_a_temporary_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REGIMENT_JOURNAL", raising=False)

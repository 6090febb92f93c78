"""``regiment run --approve ask --workers ray``: a Ray-placed worker's calls that need
approval are asked on the terminal too, as an in-process worker's are (they paused
the run before, with a line that said to use ``--approve ask``)."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from regiment.cli import run_async
from tests.cli.helpers import terminal

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team_approval.toml")
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds --app-dir to it


async def test_approve_ask_decides_a_ray_workers_call(ray_session: ModuleType) -> None:
    address = ray_session.get_runtime_context().gcs_address
    argv = ["run", TEAM, GOAL, "--model", "scripted", "--approve", "ask", "--no-journal"]
    argv += ["--workers", "ray", "--ray-address", address, "--plain"]
    out, err = io.StringIO(), io.StringIO()
    with terminal(b"y\n") as stdin:
        code = await run_async(argv, stdout=out, stderr=err, environ={}, stdin=stdin)
    assert code == 0, err.getvalue()
    assert 'approval needed (step s2): issue_refund({"order_id": "77120"})' in err.getvalue()
    assert re.search(r"<- s2 done by billing, \d+ tokens: Done: ", err.getvalue())  # on a replica
    assert "on the way" in out.getvalue()  # then the e-mail

"""``regiment serve --lease-ttl S`` (``create_app(lease_ttl=...)``): how long a journaled run
stays the service's without a heartbeat, so another service sharing the journal takes a
dead one's runs over that much later."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

from regiment.cli import run_async
from regiment.errors import ConfigError, LeaseHeld
from regiment.journal import open_journal
from regiment.serve import create_app
from tests.cli.helpers import write_team

from .cli_serving import REFUND, served
from .teams import support_team

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # serve's --app-dir is put on it


async def test_a_served_run_is_leased_for_lease_ttl(tmp_path: Path) -> None:
    team, db = write_team(tmp_path, "stuck"), str(tmp_path / "runs.db")
    flags = ["--journal", db, "--app-dir", str(tmp_path), "--lease-ttl", "3"]
    async with served(flags, team=str(team)) as c:
        started = await c.post("/runs", json={"goal": "wait"})
        run_id = started.json()["run_id"]
        journal = await open_journal(db)  # as another service on this journal would
        try:
            with pytest.raises(LeaseHeld) as held:
                await journal.acquire(run_id, owner="elsewhere:1", ttl=30)
        finally:
            await journal.close()
    left = re.search(r"alive for another ([0-9.]+) s", str(held.value))
    assert left is not None, held.value
    assert 0 < float(left.group(1)) <= 3  # 30 s without --lease-ttl


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--lease-ttl", "0.5"], "0.5 s is too short: give at least 1"),
        (["--lease-ttl", "soon"], "not a number of seconds: 'soon'"),
        (["--lease-ttl", "10"], "--lease-ttl is how long a journaled run stays"),
    ],
)
async def test_serve_refuses_a_lease_ttl_it_cannot_use(
    flags: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = io.StringIO()
    argv = ["serve", REFUND, "--model", "scripted", *flags]
    assert await run_async(argv, stdout=io.StringIO(), stderr=err, environ={}) == 2
    told = err.getvalue() + capsys.readouterr().err  # argparse's own stderr, or ours
    assert says in told
    assert "Traceback" not in told


async def test_create_app_refuses_a_lease_ttl_it_cannot_use() -> None:
    with pytest.raises(ConfigError, match="lease_ttl must be a finite number of seconds > 0"):
        create_app(support_team(), lease_ttl=float("nan"))
    async with support_team().start() as running:
        with pytest.raises(ConfigError, match=r"Team.start\(journal=..., lease_ttl=...\)"):
            create_app(running, lease_ttl=10)

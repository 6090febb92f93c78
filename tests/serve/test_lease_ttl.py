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


@pytest.mark.parametrize(
    ("journal", "lease_ttl", "says"),
    [
        # regiment serve refused these; create_app took them (0.5 s: a lease that lapses in
        # a slow commit, so another service takes live runs over; no journal: unused)
        ("runs.db", 0.5, r"lease_ttl=0.5 s is too short: give at least 1"),
        (None, 10, r"it needs create_app\(team, journal=...\)"),
    ],
)
def test_create_app_refuses_what_serve_refuses(
    tmp_path: Path, journal: str | None, lease_ttl: float, says: str
) -> None:
    spec = None if journal is None else str(tmp_path / journal)
    with pytest.raises(ConfigError, match=says):
        create_app(support_team(), journal=spec, lease_ttl=lease_ttl)
    assert not (tmp_path / "runs.db").exists()  # refused before anything opened


def test_create_app_takes_a_lease_ttl_of_one_second_with_a_journal(tmp_path: Path) -> None:
    app = create_app(support_team(), journal=str(tmp_path / "runs.db"), lease_ttl=1)
    assert app.state.regiment_stop_runs is not None

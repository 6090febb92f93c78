"""``RunCreated.team_file`` (what ``regiment resume RUN_ID`` builds the team from) on every
backend, and a first record from before the field reads back with ``None``."""

from __future__ import annotations

import msgspec
import pytest

from regiment.journal import Journal, Record, RunCreated, TeamFile

from .records import created, new_id

pytestmark = pytest.mark.anyio


async def test_the_team_file_reads_back_from_the_first_record(journal: Journal) -> None:
    run_id = new_id()
    source = TeamFile(path="/srv/teams/refunds.toml", app_dir="/srv/app")
    first = msgspec.structs.replace(created(run_id), team_file=source)
    await journal.create_run(first, owner="w1", ttl=30.0)
    (entry,) = await journal.read(run_id)
    assert isinstance(entry.record, RunCreated)
    assert entry.record.team_file == source
    assert entry.record == first


def test_a_first_record_written_before_team_file_existed_has_none() -> None:
    old = (
        b'{"type":"run_created","run_id":"run-1","team":"support","config_hash":"c0ffee",'
        b'"goal":"refund 88213","session":null,"created_at":"2027-01-01T00:00:00Z"}'
    )
    record = msgspec.json.decode(old, type=Record)
    assert isinstance(record, RunCreated)
    assert record.team_file is None
    assert record.trace is None
    assert record.deps_hash is None  # (nor a hash of its deps: compared by goal and session)

"""``RunCreated.deps_hash``: a hash of a run's deps' canonical JSON, never the deps, written
by every journaled run (top-level and nested runs alike) and ``None`` for deps that do
not encode as JSON (a client object). (A first record from before it reads back ``None``:
tests/journal/test_team_file.py.)"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from regiment.journal import RunCreated, deps_hash, open_journal
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio


class Client:
    """Deps that are no JSON data: an object holding a connection, say."""


def test_the_hash_is_of_canonical_json() -> None:
    assert deps_hash(None) == hashlib.sha256(b"null").hexdigest()
    sorted_json = b'{"a":[1,2.5,null,true],"b":"x"}'
    assert deps_hash({"b": "x", "a": [1, 2.5, None, True]}) == (
        hashlib.sha256(sorted_json).hexdigest()
    )
    assert deps_hash({"a": {"d": 1, "c": 2}}) == deps_hash({"a": {"c": 2, "d": 1}})
    assert deps_hash({"a": 1}) != deps_hash({"a": 1.0})  # (what a client sent, as sent)
    for unencodable in (Client(), {"db": Client()}, {1: "int key"}, [Client()]):
        assert deps_hash(unencodable) is None


@pytest.mark.parametrize(
    ("deps", "expected"),
    [({"user": "ann"}, deps_hash({"user": "ann"})), (Client(), None), (None, deps_hash(None))],
    ids=["json", "object", "none"],
)
async def test_a_journaled_run_records_its_deps_hash(
    deps: object, expected: str | None, tmp_path: Path
) -> None:
    path = str(tmp_path / "runs.db")
    team = shop_team(Shop(), plan_json(step("s1", "billing", "credit 1 5")))
    async with team.start(journal=path) as running:
        result = await running.run("credit order 1", deps=deps)
    journal = await open_journal(path)
    try:
        first = (await journal.read(result.run_id))[0].record
    finally:
        await journal.close()
    assert isinstance(first, RunCreated)
    assert first.deps_hash == expected

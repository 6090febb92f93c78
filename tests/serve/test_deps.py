"""``POST /runs`` with ``deps``: the run's deps reach the tools as ``ctx.deps``."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app

from .teams import deps_team

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 77120?"


async def test_a_tool_reads_the_posted_deps() -> None:
    async with serving(create_app(deps_team())) as url, httpx.AsyncClient(base_url=url) as c:
        body = {"goal": GOAL, "deps": {"user_id": "u-42"}}
        done = (await c.post("/runs?wait=true", json=body)).json()
        assert done["status"] == "completed"
        assert done["answer"] == "order 77120: shipped 12 days ago (asked by u-42)"
        other = {"goal": GOAL, "deps": {"user_id": "u-7"}}  # each run has its own deps
        again = (await c.post("/runs?wait=true", json=other)).json()
        assert again["answer"] == "order 77120: shipped 12 days ago (asked by u-7)"


async def test_deps_of_the_wrong_type_are_422_and_start_no_run() -> None:
    # It said "must be a JSON object or null, not a string; send {...}; deps must be a
    # JSON object (tools read it as ctx.deps), or left out": twice what it takes.
    async with serving(create_app(deps_team())) as url, httpx.AsyncClient(base_url=url) as c:
        for deps, got in (([1, 2], "an array"), ("u-42", "a string"), (7, "a whole number")):
            response = await c.post("/runs", json={"goal": GOAL, "deps": deps})
            assert response.status_code == 422, deps
            assert response.json() == {
                "error": "invalid body",
                "detail": f"the field 'deps' (at $.deps) must be a JSON object, not {got} "
                "(tools read it as ctx.deps; leave it out for none); "
                'send {"goal": "...", "session": "..."?, "deps": {...}?}',
            }
        huge = await c.post("/runs", content=b'{"goal": "g", "deps": {"n": 1e999}}')
        assert huge.json()["detail"].startswith(  # it was msgspec's "Number out of range"
            "the field 'deps[...]' (at $.deps[...]) holds a number too large to read"
        )
        assert (await c.get("/runs")).json() == {"runs": []}

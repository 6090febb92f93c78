"""A body that names one of its fields twice is refused (422), not read as its last value.

``{"goal": "a", "goal": "b"}`` started a run on "b" (202), and ``{"decision": "deny",
"decision": "approve"}`` approved: which one the client meant is not known, as for a
query parameter given twice, which the routes refuse already."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app

from .teams import support_team

pytestmark = pytest.mark.anyio

RUN = '; send {"goal": "...", "session": "..."?, "deps": {...}?}'
DECISION = '; send {"decision": "approve" | "deny" | "edit", "reason"?, "arguments"?, "by"?}'


@pytest.mark.parametrize(
    ("path", "body", "detail"),
    [
        ("/runs", b'{"goal": "refund 1", "goal": "refund 2"}', "the body names the field 'goal' twice; name it once" + RUN),
        ("/runs", b'{"goal": "x", "session": "a", "deps": {}, "session": "b"}', "the body names the field 'session' twice; name it once" + RUN),
        ("/runs", b'{"goal": "x", "go\\u0061l": "y"}', "the body names the field 'goal' twice; name it once" + RUN),
        ("/approvals/r-1", b'{"decision": "deny", "reason": "no", "decision": "approve"}', "the body names the field 'decision' twice; name it once" + DECISION),
    ],
)  # fmt: skip
async def test_a_field_named_twice_is_422_and_starts_nothing(
    path: str, body: bytes, detail: str
) -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post(path, content=body)
        listed = (await c.get("/runs")).json()["runs"]
    assert response.status_code == 422
    assert response.json() == {"error": "invalid body", "detail": detail}
    assert listed == []


async def test_the_same_name_in_deps_is_the_callers() -> None:
    body = b'{"goal": "What is the status of order 88213?", "deps": {"goal": {"goal": 1}}}'
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post("/runs?wait=true", content=body)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "completed"

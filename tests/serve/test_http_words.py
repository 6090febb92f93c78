"""What the service's errors say: a body of the wrong shape and a method a route does not take."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app

from .teams import support_team

pytestmark = pytest.mark.anyio

DECISION = '; send {"decision": "approve" | "deny" | "edit", "reason"?, "arguments"?, "by"?}'


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        # each said msgspec's own text, e.g. "Invalid enum value 'maybe' - at `$.decision`"
        (b'{"decision": "maybe"}', "the field 'decision' (at $.decision) must be one of 'approve', 'deny', 'edit', not 'maybe'"),
        (b'{"decision": 3}', "the field 'decision' (at $.decision) must be a string, not a whole number"),
        (b"{}", "the field 'decision' (at $.decision) is required but missing"),
        (b'{"decision": "deny", "why": "no"}', "the field 'why' (at $.why) is not a field this route takes"),
        (b'{"decision": "edit", "arguments": [1]}', "the field 'arguments' (at $.arguments) must be a JSON object or null, not an array"),
        (b'{"decision": "deny", "reason": false}', "the field 'reason' (at $.reason) must be a string, not true or false"),
        (b'"approve"', "the body must be a JSON object, not a string"),
    ],
)  # fmt: skip
async def test_a_decision_of_the_wrong_shape_says_which_field_in_words(
    body: bytes, detail: str
) -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post("/approvals/r-1", content=body)
    assert response.status_code == 422
    assert response.json() == {"error": "invalid body", "detail": detail + DECISION}


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/runs", "GET, HEAD, POST"),  # two routes share the path: both are named
        ("DELETE", "/runs/run-1", "GET, HEAD"),
        ("GET", "/runs/run-1/cancel", "POST"),
        ("GET", "/approvals/r-1", "POST"),
        ("POST", "/health", "GET, HEAD"),
    ],
)
async def test_a_method_a_route_does_not_take_is_405_with_allow(
    method: str, path: str, allowed: str
) -> None:
    # It was {"error": "http error", "detail": "Method Not Allowed"}, with no Allow header.
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.json() == {
        "error": "method not allowed",
        "detail": f"{path} takes {allowed}, not {method}",
    }

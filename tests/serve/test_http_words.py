"""What the service's errors say: a body of the wrong shape and a method a route does not take."""

from __future__ import annotations

import gzip

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


NEW_RUN = '; send {"goal": "...", "session": "..."?, "deps": {...}?}'


@pytest.mark.parametrize(
    ("body", "sent_as", "detail"),
    [
        # each said "JSON is malformed: invalid character (byte 0)", and no more
        (b"goal=hello", "application/x-www-form-urlencoded", "JSON is malformed: invalid character (byte 0) (it came as application/x-www-form-urlencoded: the body must be JSON, whatever its content type says)"),
        ('{"goal": "g"}'.encode("utf-16"), "application/json", "JSON is malformed: invalid character (byte 0) (it looks like UTF-16 or UTF-32: JSON is sent as UTF-8)"),
        (gzip.compress(b'{"goal": "g"}', mtime=0), "application/json; gzip", "JSON is malformed: invalid character (byte 0) (it came gzip-encoded: send it unencoded)"),
    ],
)  # fmt: skip
async def test_a_body_that_is_not_json_says_why_it_may_not_be(
    body: bytes, sent_as: str, detail: str
) -> None:
    sent_as, _, encoded = sent_as.partition("; ")
    headers = {"content-type": sent_as} | ({"content-encoding": encoded} if encoded else {})
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post("/runs", content=body, headers=headers)
    assert response.status_code == 422
    assert response.json() == {"error": "invalid body", "detail": detail + NEW_RUN}


async def test_a_json_body_with_a_utf8_byte_order_mark_is_read() -> None:
    # It was 422 "JSON is malformed: invalid character (byte 0)": a file saved with one
    # (Windows editors do) and posted with `curl --data-binary @file`, say.
    body = b'\xef\xbb\xbf{"goal": "What is the status of order 77120?"}'
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        done = await c.post("/runs?wait=true", content=body, headers={"content-type": "text/plain"})
    assert done.status_code == 200, done.text
    assert done.json()["answer"] == "order 77120: shipped 12 days ago"

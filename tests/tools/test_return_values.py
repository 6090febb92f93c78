"""Tool return values that cannot become JSON data are error results, never a failed step."""

from __future__ import annotations

import json

import anyio
import pytest

from regiment import Planner, ScriptedModel, Team, Worker, text_response, tool_call_response
from regiment.models import ModelRequest, ModelResponse, ToolResultPart
from regiment.tools import tool

pytestmark = pytest.mark.anyio


def _self_holding() -> dict[str, object]:
    value: dict[str, object] = {}
    value["me"] = value
    return value


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (b"\xff\x00", "bytes"),  # was "a bytes"
        (object(), "an object"),  # was "a object"
        (_self_holding(), "a dict"),
        ([b"ok", b"\x80"], "a list"),
    ],
)
async def test_a_value_pydantic_cannot_encode_is_an_error_result(value: object, kind: str) -> None:
    @tool
    def odd() -> object:
        """Returns something awkward."""
        return value

    result = await odd.call({}, call_id="c")
    assert result.is_error
    assert result.error_type == "TypeError"
    assert result.content == (
        f"TypeError: tool 'odd' ran, but returned {kind}, not JSON data, so its result "
        "cannot be shown (a tool returns text, numbers, lists, dicts or pydantic models)"
    )


_PNG = (
    "TypeError: tool 'read_blob' ran, but returned bytes, not JSON data, so its result "
    "cannot be shown (a tool returns text, numbers, lists, dicts or pydantic models)"
)
# Was a failed step: the int passed as JSON data, then writing it as text raised.
_HUGE = (
    "TypeError: tool 'read_blob' ran, but its result cannot be written as text (Exceeds "
    "the limit (4300 digits) for integer string conversion"
)


@pytest.mark.parametrize(
    ("value", "told"), [(b"\x89PNG\xff", _PNG), (10**5000, _HUGE)], ids=["bytes", "huge_int"]
)
async def test_a_step_whose_tool_returns_what_cannot_be_shown_tells_the_model(
    value: object, told: str
) -> None:
    @tool
    def read_blob() -> object:
        """Reads a binary blob."""
        return value

    seen: list[ToolResultPart] = []

    def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return json.dumps({"steps": [{"description": "read the blob"}]})
        if request.role != "worker":
            return text_response("the blob is binary")
        results = [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]
        if not results:
            return tool_call_response("read_blob", {})
        seen.extend(results)
        return text_response("it is not text")

    model = ScriptedModel(brain)
    worker = Worker(name="reader", description="Reads blobs.", model=model, tools=[read_blob])
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    with anyio.fail_after(10):
        result = await team.run("read the blob")
    assert result.status == "completed"
    assert [(p.is_error, p.content[: len(told)]) for p in seen] == [(True, told)]


async def test_a_plain_tool_that_returns_a_coroutine_is_told_to_be_async() -> None:
    # It said only "returned a coroutine, not JSON data" (on trio: "Trio expected a sync
    # function, but 'TrioBackend.run_sync_in_worker_thread.<locals>.wrapper' appears to
    # be asynchronous"), and the coroutine, never closed, warned later, elsewhere.
    async def fetch(url: str) -> str:
        return url

    @tool
    def wrapper(url: str) -> object:
        """Fetches, but forgets to await."""
        return fetch(url)

    result = await wrapper.call({"url": "u"}, call_id="c")
    assert (result.is_error, result.error_type) == (True, "TypeError")
    assert str(result.content).endswith(
        "; it called an async function without awaiting it: make the tool async"
    )

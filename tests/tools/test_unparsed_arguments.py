"""Arguments a model adapter could not read as one JSON object never run a tool."""

from __future__ import annotations

import pytest

from regiment._json import UNPARSED_ARGUMENTS
from regiment.tools import Toolset, tool

pytestmark = pytest.mark.anyio


async def test_unreadable_arguments_are_an_invalid_arguments_result_the_body_never_sees() -> None:
    ran: list[str] = []

    @tool
    def list_notes(prefix: str = "") -> list[str]:
        """Lists notes."""
        ran.append(prefix)
        return ["groceries"]

    tools = Toolset("w", [list_notes])
    result = await tools.call("list_notes", {UNPARSED_ARGUMENTS: '{"prefix": "gro'}, call_id="c")
    assert ran == []
    assert (result.is_error, result.error_type, result.attempts) == (True, "invalid_arguments", 0)
    assert result.content == (
        "invalid arguments for tool 'list_notes': the arguments are not one JSON object "
        """(got {"prefix": "gro); send them as a JSON object"""
    )
    assert list_notes.validated({UNPARSED_ARGUMENTS: "[1, 2]"}) == (
        "the arguments are not one JSON object (got [1, 2]); send them as a JSON object"
    )

"""What the model receives from a ToolResult."""

from __future__ import annotations

import msgspec
import pytest

from regiment._json import JsonValue
from regiment.tools import ToolResult


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("plain text, as it is", "plain text, as it is"),
        ({"order_id": "88213", "eligible": False}, '{"order_id":"88213","eligible":false}'),
        ([1, 2.5, None], "[1,2.5,null]"),
        (None, "null"),
        ({"city": "Zürich"}, '{"city":"Zürich"}'),
    ],
)
def test_text_is_strings_as_they_are_and_compact_json_otherwise(
    content: JsonValue, text: str
) -> None:
    assert ToolResult(call_id="c", tool_name="t", content=content).text == text


def test_results_are_frozen_and_serialisable() -> None:
    result = ToolResult(
        call_id="c", tool_name="t", content={"a": 1}, attempts=1, arguments={"x": 1}
    )
    with pytest.raises(AttributeError):
        result.is_error = True  # type: ignore[misc]
    decoded = msgspec.json.decode(msgspec.json.encode(result), type=ToolResult)
    assert decoded == result

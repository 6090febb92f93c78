"""A tool parameter whose type cannot be described as JSON: the error names the
parameter, the tool and the type, and says what to use, not pydantic's advice to its
models' authors (``arbitrary_types_allowed``, ``__get_pydantic_core_schema__``)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import pytest

from regiment.errors import ConfigError
from regiment.tools import Tool


def _error(thing: object) -> str:
    def lookup(order_id: int, thing: int = 0) -> str:
        """Look an order up."""
        return ""

    lookup.__annotations__["thing"] = thing
    with pytest.raises(ConfigError) as raised:
        Tool(lookup)
    return str(raised.value)


@pytest.mark.parametrize(
    ("annotation", "shown"),
    [
        (threading.Lock, "_thread.allocate_lock"),
        (socket.socket, "socket.socket"),
        (list[socket.socket], "list[socket.socket]"),
        (Callable[[int], int], "collections.abc.Callable[[int], int]"),
    ],
)
def test_the_error_names_the_parameter_its_type_and_what_to_use(
    annotation: object, shown: str
) -> None:
    message = _error(annotation)
    assert message.startswith(
        f"parameter 'thing' of tool 'lookup' has type {shown}, which cannot be described as "
        "JSON for the model to send: annotate it with a JSON type (str, int, float, bool, "
    ), message
    assert "functools.partial" in message
    assert "arbitrary_types_allowed" not in message
    assert "__get_pydantic_core_schema__" not in message
    assert "\n" not in message  # one line, not pydantic's paragraphs and link

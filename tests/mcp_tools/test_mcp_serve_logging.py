"""``regiment mcp`` leaves the root logger as it was: the MCP SDK's server, made with a
log level, calls ``logging.basicConfig``, which put a RichHandler there, so regiment's own
warnings (a sync tool cut while it ran, say) came out wrapped over several lines of a
table, and the root logger's level changed under the program."""

from __future__ import annotations

import logging

import pytest

from regiment.cli._mcp_serve import team_server
from tests.serve.teams import support_team

pytestmark = pytest.mark.anyio


async def test_serving_a_team_adds_no_handler_to_the_root_logger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # as in `regiment mcp` (pytest adds its own)
    monkeypatch.setattr(root, "level", logging.ERROR)
    async with support_team().start() as running:
        team_server(running)
    assert root.handlers == []
    assert root.level == logging.ERROR

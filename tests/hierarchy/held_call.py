"""What the cut-call money tests share: a stand-in Messages API whose first call is never
answered (``api``), the official SDK's model on it (``held_model``), and a wait until that
call is held (``until_held``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from regiment.models import AnthropicModel, ModelSettings, Price

from ..models import messages_api
from ..models.standin import Reply, StandIn, serve

__all__ = ("CLAUDE", "FREE", "USD", "api", "held_model", "until_held")

CLAUDE = Price(input=3.0, output=15.0)
FREE = Price(input=0.0, output=0.0)  # the scripted roles cost nothing
USD = 0.05


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    async for server in serve(messages_api.message([{"type": "text", "text": "held"}])):
        server.queue(Reply(200, {}, hold=True))  # the first call is never answered
        yield server


def held_model(base_url: str, *, stream: bool = False) -> AnthropicModel:
    """Claude (at ``CLAUDE``'s price, ``max_tokens`` 200) on the stand-in at ``base_url``."""
    return AnthropicModel(
        "claude-test-1",
        api_key="k",
        base_url=base_url,
        stream=stream,
        max_retries=0,
        price=CLAUDE,
        settings=ModelSettings(max_tokens=200),
    )


async def until_held(api: StandIn, seconds: float = 30.0) -> None:
    """Until the stand-in holds the call (``seconds``: a hang guard)."""
    with anyio.fail_after(seconds):
        while not api.requests:
            api.received = anyio.Event()
            await api.received.wait()

"""A call that got no answer says how long it waited and which timeout to raise."""

from __future__ import annotations

import anyio
import pytest
from anyio.abc import SocketAttribute

from regiment.errors import ModelConnectionError
from regiment.models import Message, ModelRequest, ModelSettings

from .standin import Reply, StandIn
from .wires import Wire

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_a_call_that_timed_out_names_its_timeout(
    wire: Wire, api: StandIn, stream: bool
) -> None:
    # It said "did not answer in time ...; check the network and base_url, or raise
    # timeout / max_retries": not how long it waited, nor that a role's
    # ModelSettings.timeout (here the one that applied) is a timeout to raise.
    api.queue(Reply(200, {}, hold=True))
    request = ModelRequest(messages=(Message.user("hi"),), settings=ModelSettings(timeout=0.2))
    async with wire.make(api, stream, 0) as model:
        with pytest.raises(ModelConnectionError) as caught:
            await model.complete(request)
    said = str(caught.value)
    assert "did not answer in 0.2 s" in said
    assert "(not retried: max_retries=0)" in said
    assert said.endswith(
        "; raise the model's timeout (or the role's ModelSettings.timeout) if it is slow, "
        "or check the network and base_url"
    )


async def test_a_server_that_cannot_be_reached_is_not_told_to_raise_its_timeout(
    wire: Wire,
) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)
    await listener.aclose()  # nothing listens there now: every connection is refused
    closed = StandIn(base_url=f"http://127.0.0.1:{port}", no_reply=wire.no_reply)
    async with wire.make(closed, True, 0) as model:
        with pytest.raises(ModelConnectionError) as caught:
            await model.complete(ModelRequest(messages=(Message.user("hi"),)))
    said = str(caught.value)
    assert "could not be reached" in said
    assert said.endswith("; check the network and base_url (is the server running?)")

"""OpenAIModel over a ready ``AsyncAzureOpenAI`` client (Azure OpenAI), against the
Chat Completions stand-in: Azure serves a deployment at
``<endpoint>/openai/deployments/<name>/chat/completions``, with no ``/v1`` in it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
import pytest

from regiment.errors import ModelAPIError
from regiment.models import Message, ModelRequest, OpenAIModel

from .chat_api import completion, error
from .standin import StandIn, serve

pytestmark = pytest.mark.anyio


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    async for server in serve(error(500, "server_error", "none", **{"x-should-retry": "false"})):
        yield server


def azure(api: StandIn) -> openai.AsyncAzureOpenAI:
    return openai.AsyncAzureOpenAI(
        api_key="k", azure_endpoint=api.base_url, api_version="2024-10-21", max_retries=0
    )


def ask() -> ModelRequest:
    return ModelRequest(messages=(Message.user("Weather in Oslo?"),))


async def test_a_deployment_answers_through_the_azure_client(api: StandIn) -> None:
    api.queue(completion("Snow."))
    async with azure(api) as client:
        response = await OpenAIModel("weather-gpt", client=client).complete(ask())
    assert response.text == "Snow."
    assert api.requests[0].path.startswith("/openai/deployments/weather-gpt/chat/completions")


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (
            404,
            "check the deployment name (OpenAIModel's model), the client's azure_endpoint "
            "and its api_version",
        ),
        (
            401,
            "check the Azure OpenAI client's api_key (AZURE_OPENAI_API_KEY) or its token provider",
        ),
    ],
)
async def test_an_azure_error_says_what_to_check_there(
    api: StandIn, status: int, said: str
) -> None:
    # A 404 said to end base_url in /v1, which Azure has not; a 401 to check OPENAI_API_KEY.
    api.queue(error(status, "error", "no such thing"))
    async with azure(api) as client:
        with pytest.raises(ModelAPIError) as caught:
            await OpenAIModel("weather-gpt", client=client).complete(ask())
    assert str(caught.value).endswith(said)
    assert "/v1" not in str(caught.value)

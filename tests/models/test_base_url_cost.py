"""An SDK model's ``base_url`` (read on every traced model call, for its span's
``server.address``) is made showable once per client URL, not on every read (issue
#22): counted by the interpreter's profiler, never timed. A client whose ``base_url``
is set anew is shown anew."""

from __future__ import annotations

from types import FrameType

import anthropic
import openai
import pytest

from regiment.models import AnthropicModel, OpenAIModel
from regiment.models._api_errors import shown_url

from ..hierarchy.profiled import CallCounter


def _shown(frame: FrameType, event: str, arg: object) -> bool:
    return event == "call" and frame.f_code is shown_url.__code__


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_base_url_is_made_showable_once_per_client_url(kind: str) -> None:
    model: AnthropicModel | OpenAIModel
    if kind == "anthropic":
        client_a = anthropic.AsyncAnthropic(api_key="k", base_url="http://ann:secret@h.test:9/")
        model = AnthropicModel("claude-test-1", client=client_a)
        client: anthropic.AsyncAnthropic | openai.AsyncOpenAI = client_a
    else:
        client_o = openai.AsyncOpenAI(api_key="k", base_url="http://ann:secret@h.test:9/v1/")
        model = OpenAIModel("gpt-test-1", client=client_o)
        client = client_o
    counter = CallCounter(_shown)
    with counter:
        seen = [model.base_url for _ in range(5)]
    assert counter.count == 1
    assert len(set(seen)) == 1
    assert "secret" not in seen[0]
    assert "ann@h.test:9" in seen[0]
    client.base_url = "http://bob:other@elsewhere.test:10/"  # set anew: shown anew
    with counter:
        moved = model.base_url
    assert counter.count == 2
    assert moved == "http://bob@elsewhere.test:10/"

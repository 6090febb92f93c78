"""Models: the ``Model`` protocol, Claude via the Anthropic SDK, and a scripted model.

Every role in a team (planner, workers, critic, synthesizer) talks to its model
through ``Model.complete(ModelRequest) -> ModelResponse``, using the
provider-neutral message types defined here, so each role can use a different
model and tests can use ``ScriptedModel``.
"""

from typing import TYPE_CHECKING

from regiment.models._estimate import estimate_tokens
from regiment.models._messages import (
    Message,
    ModelRequest,
    ModelResponse,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    text_response,
    tool_call_response,
)
from regiment.models._protocol import Model
from regiment.models._scripted import Reply, ScriptedModel, ScriptFunction

__all__ = (
    "AnthropicModel",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "Part",
    "Reply",
    "ScriptFunction",
    "ScriptedModel",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "Usage",
    "estimate_tokens",
    "text_response",
    "tool_call_response",
)

if TYPE_CHECKING:
    from regiment.models._anthropic import AnthropicModel


def __getattr__(name: str) -> object:
    # The anthropic SDK takes seconds to import; load it only when asked for.
    if name == "AnthropicModel":
        from regiment.models._anthropic import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Models: the ``Model`` protocol, Claude via the Anthropic SDK, OpenAI and any
Chat Completions server via the ``openai`` SDK (an optional extra), and a scripted model.

Every role in a team (planner, workers, critic, compressor, synthesizer) talks to
its model through ``Model.complete(ModelRequest) -> ModelResponse``, using the
provider-neutral message types defined here, so each role can use a different
model and tests can use ``ScriptedModel``. A request says who asks
(``request.role``) and how the call is tuned (``ModelSettings``); a streaming
model also has ``stream(request, on_delta)``, and ``stream_response`` streams
any model.
"""

from typing import TYPE_CHECKING

from regiment.models._credentials import NoCredentials
from regiment.models._estimate import estimate_tokens
from regiment.models._messages import (
    STOPPED_EARLY,
    Message,
    ModelRequest,
    ModelResponse,
    Part,
    ResponsePart,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    structured_text,
    text_response,
    tool_call_response,
)
from regiment.models._price import (
    Price,
    least_cost,
    micro_usd,
    priced,
    reply_tokens,
    usd_text,
)
from regiment.models._protocol import Model, SelfTracingModel
from regiment.models._scripted import Reply, ScriptedModel, ScriptFunction
from regiment.models._settings import ModelSettings, effective_settings
from regiment.models._spec import model_from_spec, parse_model_spec
from regiment.models._stream import (
    DeltaHandler,
    PartDelta,
    StreamingModel,
    StreamRestart,
    TextPartDelta,
    ToolCallPartDelta,
    ToolCallPartStart,
    emit_response,
    stream_response,
)

__all__ = (
    "AnthropicModel",
    "DeltaHandler",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "NoCredentials",
    "OpenAIModel",
    "Part",
    "PartDelta",
    "Price",
    "Reply",
    "ResponsePart",
    "Role",
    "STOPPED_EARLY",
    "ScriptFunction",
    "ScriptedModel",
    "SelfTracingModel",
    "StreamRestart",
    "StreamingModel",
    "TextPart",
    "TextPartDelta",
    "ThinkingPart",
    "ToolCallPart",
    "ToolCallPartDelta",
    "ToolCallPartStart",
    "ToolResultPart",
    "Usage",
    "effective_settings",
    "emit_response",
    "estimate_tokens",
    "least_cost",
    "micro_usd",
    "model_from_spec",
    "parse_model_spec",
    "priced",
    "reply_tokens",
    "stream_response",
    "structured_text",
    "text_response",
    "tool_call_response",
    "usd_text",
)

if TYPE_CHECKING:
    from regiment.models._anthropic import AnthropicModel
    from regiment.models._openai import OpenAIModel


def __getattr__(name: str) -> object:
    # The SDKs take seconds to import; load them only when asked for. The openai
    # SDK is an optional extra: _openai says how to install it when it is missing.
    if name == "AnthropicModel":
        from regiment.models._anthropic import AnthropicModel

        return AnthropicModel
    if name == "OpenAIModel":
        from regiment.models._openai import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

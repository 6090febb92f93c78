"""Provider-neutral request and response values for one model call.

These are our own types, not any SDK's, so a provider adapter maps them to its
wire format and back, and the rest of regiment never sees a provider type.
"""

from __future__ import annotations

import uuid
from typing import Literal, TypeAlias

import msgspec

from regiment._json import JsonObject
from regiment._misuse import WrongType, a_kind
from regiment.errors import ConfigError
from regiment.models._settings import ModelSettings
from regiment.tools import ToolDefinition

__all__ = (
    "Message",
    "ModelRequest",
    "ModelResponse",
    "Part",
    "ResponsePart",
    "Role",
    "ThinkingPart",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "Usage",
    "structured_text",
    "text_response",
    "tool_call_response",
)


class TextPart(msgspec.Struct, frozen=True, kw_only=True, tag="text"):
    """Plain text in a message.

    Attributes:
        text: the text.
    """

    text: str


class ToolCallPart(msgspec.Struct, frozen=True, kw_only=True, tag="tool_call"):
    """The model asks for a tool to be called (an assistant part).

    Attributes:
        id: the provider's id for this call; the matching result quotes it.
        name: the tool's name.
        arguments: the arguments the model chose, a JSON object (not yet validated).
    """

    id: str
    name: str
    arguments: JsonObject


class ToolResultPart(msgspec.Struct, frozen=True, kw_only=True, tag="tool_result"):
    """The result of a tool call, sent back to the model (a user part).

    Attributes:
        call_id: the ``id`` of the ``ToolCallPart`` this answers.
        content: the result as text.
        is_error: ``True`` when the tool failed and ``content`` says why, so the
            model can correct itself.
    """

    call_id: str
    content: str
    is_error: bool = False


class ThinkingPart(msgspec.Struct, frozen=True, kw_only=True, tag="thinking"):
    """The model's reasoning before it answered (Claude's extended thinking).

    It is kept in the reply and sent back as it came in the next request,
    as the API requires when thinking and tool use mix.

    Attributes:
        thinking: the reasoning text (empty when redacted).
        signature: the provider's signature over it.
        redacted: the encrypted reasoning, when the provider redacted it.
    """

    thinking: str = ""
    signature: str = ""
    redacted: str | None = None


Part: TypeAlias = TextPart | ToolCallPart | ToolResultPart | ThinkingPart
"""Any part of a message."""

ResponsePart: TypeAlias = TextPart | ToolCallPart | ThinkingPart
"""A part a model can reply with."""


class Message(msgspec.Struct, frozen=True, kw_only=True):
    """One turn of a conversation.

    Attributes:
        role: ``"user"`` (our side: prompts and tool results) or ``"assistant"``
            (the model: text and tool calls).
        parts: the contents, in order.
    """

    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message holding one text part."""
        return cls(role="user", parts=(TextPart(text=text),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant message holding one text part."""
        return cls(role="assistant", parts=(TextPart(text=text),))

    @classmethod
    def tool_results(cls, results: tuple[ToolResultPart, ...]) -> Message:
        """A user message that answers the tool calls of the previous reply."""
        return cls(role="user", parts=results)

    @property
    def text(self) -> str:
        """The text parts joined together (tool calls and results left out)."""
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))


Role: TypeAlias = Literal["planner", "replanner", "worker", "critic", "compressor", "synthesizer"]
"""Who in a team makes a model call: the planner (first plan), the replanner (a
replan or a new round's tail), a worker (a step's tool loop), the critic, the
compressor (working memory) or the synthesizer (the answer)."""


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Everything one model call needs.

    The team sets ``role`` (and, for a worker, ``worker`` and ``step_id``) on
    every request it makes, so a ``ScriptedModel`` function can tell the calls
    apart by ``request.role`` rather than by the text of the prompts.

    Attributes:
        system: the system prompt (empty for none).
        messages: the conversation so far; it should end with a user message.
        tools: the tools the model may call.
        max_tokens: the most tokens the reply may have.
        temperature: sampling temperature; ``None`` sends none, leaving the
            provider default. AnthropicModel sends it in the body, as SDK 2.x has
            no argument for it.
        stop_sequences: strings that end the reply when the model writes them.
        tool_choice: ``"auto"`` (model decides), ``"any"`` (must call some tool),
            ``"none"`` (must not call tools); ``None`` leaves the provider default.
        settings: the role's settings; they win over the model's own settings,
            which win over ``max_tokens``, ``temperature`` and ``stop_sequences``
            above (see ``effective_settings``).
        role: who makes the call; ``None`` for a request made outside a team.
        worker: the worker's name, for ``role="worker"``.
        step_id: the plan step the worker is on, for ``role="worker"``.
        output: a structured answer: the reply must be one JSON object matching
            ``output.input_schema``. Providers ask for it natively (Anthropic:
            a forced call of a tool named ``output.name``; Chat Completions: a
            JSON-schema ``response_format``); read it with
            :func:`~regiment.models.structured_text`.
    """

    system: str = ""
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    max_tokens: int = 4096
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    tool_choice: Literal["auto", "any", "none"] | None = None
    settings: ModelSettings | None = None
    role: Role | None = None
    worker: str | None = None
    step_id: str | None = None
    output: ToolDefinition | None = None


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens spent by one or more model calls.

    ``input_tokens`` counts the uncached input only, as the Anthropic API
    reports it; cached input is in ``cache_read_tokens`` (read from the prompt
    cache) and ``cache_write_tokens`` (written to it). Usages add up with ``+``.

    Attributes:
        input_tokens: uncached input tokens.
        output_tokens: generated tokens.
        cache_read_tokens: input tokens served from the prompt cache.
        cache_write_tokens: input tokens written to the prompt cache.
        micro_usd: what the calls cost in millionths of a US dollar, at their models'
            ``Price`` (0 for a model with none); ``usd`` gives it in dollars.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    micro_usd: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            micro_usd=self.micro_usd + other.micro_usd,
        )

    @property
    def usd(self) -> float:
        """What the calls cost in US dollars (``micro_usd`` / 1e6)."""
        return self.micro_usd / 1_000_000

    @property
    def whole_input_tokens(self) -> int:
        """Every input token: uncached, read from the prompt cache and written to it
        (what OpenTelemetry's ``gen_ai.usage.input_tokens`` and a ``Budget`` count)."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def total_tokens(self) -> int:
        """Every token processed: input of all kinds plus output."""
        return self.whole_input_tokens + self.output_tokens


# Stop reasons that say a reply reached a length limit before the model finished it.
_CUT_OFF = frozenset({"max_tokens", "length", "model_context_window_exceeded"})
# Stop reasons that say the model (or the provider's filter) declined to answer.
_REFUSED = frozenset({"refusal", "content_filter"})

STOPPED_EARLY: frozenset[str | None] = _CUT_OFF | _REFUSED
"""Stop reasons after which a reply is not a whole answer: it was cut off at a length
limit (``ModelResponse.cut_off``) or refused (``ModelResponse.refused``). One look-up
tells the usual reply from both."""


class ModelResponse(msgspec.Struct, frozen=True, kw_only=True):
    """What one model call returned.

    Attributes:
        parts: text, tool calls (and thinking, when asked for), in the order
            the model wrote them.
        stop_reason: why the model stopped, in the provider's words (for
            Anthropic: ``end_turn``, ``tool_use``, ``max_tokens``,
            ``stop_sequence``, ``refusal``, ...).
        usage: the tokens this call spent.
        model: the model that answered (as the provider names it).
        response_id: the provider's id for the response, if it gives one.
        usage_estimated: ``usage`` is partly or wholly an estimate (``estimate_tokens``):
            the server reported none, or an attempt whose stream broke before it
            said its usage was charged one (``regiment.usage.estimated`` on spans).
    """

    parts: tuple[ResponsePart, ...]
    stop_reason: str
    usage: Usage = msgspec.field(default_factory=Usage)
    model: str
    response_id: str | None = None
    usage_estimated: bool = False

    @property
    def text(self) -> str:
        """The text parts joined together."""
        # Read on every model call: a plain loop, no generator (whose every step is a call).
        text = ""
        for part in self.parts:
            if isinstance(part, TextPart):
                text += part.text
        return text

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The tool calls, in order."""
        calls: list[ToolCallPart] = []
        for part in self.parts:
            if isinstance(part, ToolCallPart):
                calls.append(part)
        return tuple(calls)

    @property
    def cut_off(self) -> bool:
        """Whether the reply stopped at a length limit (Anthropic's ``max_tokens``,
        Chat Completions' ``length``) before the model finished it: its last part
        may be incomplete, a tool call's arguments too."""
        return self.stop_reason in _CUT_OFF

    @property
    def refused(self) -> bool:
        """Whether the model declined to answer (Anthropic's ``refusal``) or the
        provider's filter cut the reply (``content_filter``): what text it has is
        no answer."""
        return self.stop_reason in _REFUSED

    def to_message(self) -> Message:
        """This reply as the assistant turn to append to the conversation."""
        return Message(role="assistant", parts=self.parts)


def structured_text(response: ModelResponse, output: ToolDefinition) -> str:
    """The JSON text of a structured answer to a request with ``output``.

    That is the arguments of the reply's call of ``output.name`` (how Claude
    answers, its tool being forced), else the reply's text (a JSON-schema
    response format, or a scripted model that writes the JSON).
    """
    for part in response.parts:
        if isinstance(part, ToolCallPart) and part.name == output.name:
            return msgspec.json.encode(part.arguments).decode()
    return response.text


def text_response(text: str, *, usage: Usage | None = None, model: str = "") -> ModelResponse:
    """A reply holding only ``text``, for scripts and tests.

    Args:
        text: the reply text.
        usage: the usage to report; ``None`` leaves it empty, and a
            ``ScriptedModel`` then fills in an estimate.
        model: the model name to report; empty lets a ``ScriptedModel`` fill in its own.

    Raises:
        ConfigError: ``text`` is not a ``str`` (the reply would carry it as its text).
    """
    if not isinstance(text, str):
        raise ConfigError(
            f"text_response(text) takes the reply's text (a str); got {type(text).__name__}"
        )
    return ModelResponse(
        parts=(TextPart(text=text),),
        stop_reason="end_turn",
        usage=usage or Usage(),
        model=model,
    )


# Left out: refused, saying to give them (Python's own words would not say how).
_NO_ARGUMENTS: JsonObject = {}


def tool_call_response(
    name: str,
    arguments: JsonObject = _NO_ARGUMENTS,
    *,
    call_id: str | None = None,
    text: str = "",
    usage: Usage | None = None,
    model: str = "",
) -> ModelResponse:
    """A reply that calls one tool, for scripts and tests.

    Args:
        name: the tool to call.
        arguments: the arguments to call it with.
        call_id: the call's id; ``None`` makes a fresh unique one.
        text: text the model "says" before the call (left out when empty).
        usage: as for ``text_response``.
        model: as for ``text_response``.

    Raises:
        ConfigError: ``name`` is not a ``str``, or ``arguments`` is left out or is not a
            dict (JSON text, say), which the tool would only refuse later, as invalid
            arguments. It is also a ``TypeError``.
    """
    if not isinstance(name, str):
        raise WrongType(
            f"tool_call_response(name, arguments) takes the tool's name (a str) first; "
            f"got {a_kind(name)}"
        )
    if arguments is _NO_ARGUMENTS:
        raise WrongType(
            f"tool_call_response({name!r}) needs the call's arguments too, a dict: "
            f"tool_call_response({name!r}, {{...}}) ({{}} for a tool that takes none)"
        )
    if not isinstance(arguments, dict):
        raise WrongType(
            f"tool_call_response({name!r}, ...): arguments must be a dict of the tool's "
            f"arguments, got a {type(arguments).__name__}; for JSON text, give json.loads(text)"
        )
    call_id = call_id or f"call_{uuid.uuid4().hex[:16]}"
    call = ToolCallPart(id=call_id, name=name, arguments=arguments)
    parts: tuple[TextPart | ToolCallPart, ...] = (TextPart(text=text), call) if text else (call,)
    return ModelResponse(parts=parts, stop_reason="tool_use", usage=usage or Usage(), model=model)

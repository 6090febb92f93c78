"""Our request and response types to and from the Chat Completions API."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, TypedDict, assert_never, cast, final

import msgspec
from openai import NotGiven, Omit, not_given, omit
from openai.types import CompletionUsage
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionToolChoiceOptionParam,
)
from openai.types.shared_params import ResponseFormatJSONSchema
from openai.types.shared_params.response_format_json_schema import JSONSchema

from regiment._json import UNPARSED_ARGUMENTS, JsonObject
from regiment.models._api_errors import transient_error
from regiment.models._messages import (
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from regiment.models._openai_lenient import ContentPart, arguments_text, content_text
from regiment.models._settings import ModelSettings, extra_tools
from regiment.models._stream import PartDelta, TextPartDelta, ToolCallPartDelta, ToolCallPartStart
from regiment.tools import ToolDefinition

__all__ = (
    "CallParams",
    "ChunkReader",
    "StreamErrorEvent",
    "call_params",
    "response_from_completion",
)


class CallParams(TypedDict):
    """The keyword arguments of one ``chat.completions.create`` call (``stream`` aside)."""

    model: str
    messages: list[ChatCompletionMessageParam]
    tools: list[ChatCompletionFunctionToolParam] | Omit
    tool_choice: ChatCompletionToolChoiceOptionParam | Omit
    max_completion_tokens: int | Omit
    max_tokens: int | Omit
    temperature: float | Omit
    top_p: float | Omit
    stop: list[str] | Omit
    response_format: ResponseFormatJSONSchema | Omit
    extra_body: dict[str, object] | None
    timeout: float | NotGiven


def call_params(
    model: str, request: ModelRequest, settings: ModelSettings, *, compatible: bool
) -> CallParams:
    """The SDK call for ``request`` with ``settings`` applied.

    OpenAI itself takes the reply limit as ``max_completion_tokens`` (its
    reasoning models refuse ``max_tokens``); other Chat Completions servers
    (``compatible``) mostly know only ``max_tokens``. ``thinking_budget`` is
    Anthropic's and is not sent.
    """
    most = settings.max_tokens
    stops = settings.stop_sequences
    added, extra_body = extra_tools(settings)  # sent after the request's own tools
    given = [_tool_param(t.name, t.description, t.input_schema) for t in request.tools]
    return {
        "model": model,
        "messages": message_params(request),
        "tools": cast("list[ChatCompletionFunctionToolParam]", [*given, *added]) or omit,
        "tool_choice": _tool_choice(request.tool_choice) if request.tool_choice else omit,
        "max_completion_tokens": most if most is not None and not compatible else omit,
        "max_tokens": most if most is not None and compatible else omit,
        "temperature": omit if settings.temperature is None else settings.temperature,
        "top_p": omit if settings.top_p is None else settings.top_p,
        "stop": list(stops) if stops else omit,
        "response_format": _response_format(request.output) if request.output else omit,
        "extra_body": extra_body,
        "timeout": not_given if settings.timeout is None else settings.timeout,
    }


def _response_format(output: ToolDefinition) -> ResponseFormatJSONSchema:
    """A structured answer as Chat Completions asks for one: a JSON-schema response format."""
    schema: JSONSchema = {"name": output.name, "schema": dict(output.input_schema)}
    if output.description:
        schema["description"] = output.description
    return {"type": "json_schema", "json_schema": schema}


def message_params(request: ModelRequest) -> list[ChatCompletionMessageParam]:
    """The system prompt and conversation as Chat Completions ``messages``."""
    params: list[ChatCompletionMessageParam] = []
    if request.system:
        params.append({"role": "system", "content": request.system})
    for message in request.messages:
        params += _message_params(message)
    return params


def _message_params(message: Message) -> list[ChatCompletionMessageParam]:
    text = message.text
    calls = [part for part in message.parts if isinstance(part, ToolCallPart)]
    if message.role == "assistant":
        assistant: ChatCompletionAssistantMessageParam = {
            "role": "assistant",
            "content": text or None,
        }
        if calls:
            assistant["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments_text(call)},
                }
                for call in calls
            ]
        return [assistant]
    # Tool results are messages of their own, and must follow the assistant's calls.
    params: list[ChatCompletionMessageParam] = [
        {"role": "tool", "tool_call_id": part.call_id, "content": _result_text(part)}
        for part in message.parts
        if isinstance(part, ToolResultPart)
    ]
    if text:
        params.append({"role": "user", "content": text})
    return params


def _arguments_text(call: ToolCallPart) -> str:
    """A call's arguments as the model sent them: text that was no JSON object goes
    back as it came, not wrapped in the key it is kept under, which the model never wrote."""
    raw = call.arguments.get(UNPARSED_ARGUMENTS)
    if isinstance(raw, str) and len(call.arguments) == 1:
        return raw
    return json.dumps(call.arguments)


def _result_text(part: ToolResultPart) -> str:
    # Chat Completions has no error flag on a tool result; say it in the content.
    return f"Error: {part.content}" if part.is_error else part.content


def _tool_param(name: str, description: str, schema: JsonObject) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": dict(schema)},
    }


def _tool_choice(choice: Literal["auto", "any", "none"]) -> ChatCompletionToolChoiceOptionParam:
    match choice:
        case "auto":
            return "auto"
        case "any":
            return "required"
        case "none":
            return "none"
        case _:
            assert_never(choice)


# The stop reason a reply with a ``refusal`` gets, so the team never acts on it
# (``ModelResponse.refused``); Chat Completions itself says only ``stop``.
REFUSAL = "refusal"


def parse_arguments(raw: str) -> JsonObject:
    """A tool call's JSON arguments; text that is not a JSON object is kept for the model."""
    if not raw.strip():
        return {}  # some servers send nothing for a call without arguments
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested thousands deep
        parsed = None
    return parsed if isinstance(parsed, dict) else {UNPARSED_ARGUMENTS: raw}


def usage_from(usage: CompletionUsage | None) -> Usage:
    """Chat Completions usage as ours: its prompt tokens include the cached ones."""
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    return _usage(usage.prompt_tokens, usage.completion_tokens, cached)


def _usage(prompt: int, completion: int, cached: int) -> Usage:
    return Usage(input_tokens=prompt - cached, output_tokens=completion, cache_read_tokens=cached)


def response_from_completion(completion: ChatCompletion) -> ModelResponse:
    """A whole Chat Completions reply as our ``ModelResponse`` (the first choice)."""
    choice = completion.choices[0]
    message = choice.message
    text = content_text(message.content)  # text, or (some servers) a list of parts
    parts: list[TextPart | ToolCallPart] = [TextPart(text=text)] if text else []
    stop_reason = cast("str | None", choice.finish_reason) or ""
    if message.refusal:  # the model declined (structured outputs): its reason, as Claude's
        parts, stop_reason = [TextPart(text=message.refusal), *parts], REFUSAL
    for number, call in enumerate(message.tool_calls or ()):
        if (function := getattr(call, "function", None)) is not None:  # "type" may be absent
            arguments = parse_arguments(arguments_text(function.arguments))  # null, an object
            call_id = call.id or f"call_{number}"  # from some servers; as in a stream, call_<n>
            parts.append(ToolCallPart(id=call_id, name=function.name, arguments=arguments))
    return ModelResponse(
        parts=tuple(parts),
        stop_reason=stop_reason,  # typed as always there, but some servers send null
        usage=usage_from(completion.usage),
        model=completion.model,
        response_id=completion.id,
    )


# The fields of a streamed chunk this reader uses. Decoded leniently (unknown
# fields ignored, most fields optional), as compatible servers differ in the rest.
class _FunctionDelta(msgspec.Struct, frozen=True):
    name: str | None = None
    arguments: str | dict[str, object] | None = None


class _ToolCallDelta(msgspec.Struct, frozen=True):
    index: int | None = None  # required by the API, left out by some compatible servers
    id: str | None = None
    function: _FunctionDelta | None = None


class _Delta(msgspec.Struct, frozen=True):
    content: str | list[ContentPart] | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class _Choice(msgspec.Struct, frozen=True):
    delta: _Delta = msgspec.field(default_factory=_Delta)
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct, frozen=True):
    cached_tokens: int | None = None


class _ChunkUsage(msgspec.Struct, frozen=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_details: _PromptDetails | None = None


class _StreamError(msgspec.Struct, frozen=True):
    message: str = "an error occurred during streaming"
    type: str | None = None
    code: str | int | None = None  # vLLM and others: the HTTP status it stands for


class _Chunk(msgspec.Struct, frozen=True):
    id: str | None = None
    model: str | None = None
    choices: list[_Choice] = msgspec.field(default_factory=list)
    usage: _ChunkUsage | None = None
    error: _StreamError | None = None


_decode_chunk = msgspec.json.Decoder(_Chunk).decode


class StreamErrorEvent(Exception):
    """The server sent an error inside a stream that had begun with 200."""

    def __init__(self, message: str, error_type: str | None, code: str | int | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.transient = transient_error(error_type, code)


@final
@dataclass(slots=True)
class _Call:
    index: int
    id: str
    name: str
    arguments: str = ""
    named_by_server: bool = True  # its id is the server's, not one made up here


@final
@dataclass(slots=True)
class ChunkReader:
    """Builds the reply from streamed chunks, and says what each chunk adds.

    Parts are numbered in the order they first appear; a call's pieces are
    matched by the index the server gives it.
    """

    parts: list[TextPart | _Call] = field(default_factory=list)
    text_index: int | None = None
    calls: dict[int, _Call] = field(default_factory=dict)  # by the server's index
    last: _Call | None = None  # the call the last tool-call piece went to
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    response_id: str | None = None
    refusal: str = ""  # why the model declined, if it did (not handed out as deltas)
    chose: bool = False  # a chunk had a choice (a stream of "choices": [] is no answer)
    done: bool = False  # the server said [DONE]

    def line(self, line: str) -> list[PartDelta]:
        """Take in one line of the event stream; the deltas it carries, in order.

        Raises:
            StreamErrorEvent: the line is an error the server sent mid-stream.
            msgspec.DecodeError: the line is not a chunk this reader can read.
        """
        if not line.startswith("data:"):
            return []  # blank lines between events, comments, event names
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return []
        return self.add(_decode_chunk(data))

    def add(self, chunk: _Chunk) -> list[PartDelta]:
        """Take in one chunk; the deltas it carries, in order."""
        if chunk.error is not None:
            raise StreamErrorEvent(chunk.error.message, chunk.error.type, chunk.error.code)
        self.model, self.response_id = chunk.model or self.model, chunk.id or self.response_id
        if (usage := chunk.usage) is not None:
            details = usage.prompt_tokens_details
            cached = (details.cached_tokens or 0) if details is not None else 0
            self.usage = _usage(usage.prompt_tokens, usage.completion_tokens, cached)
        deltas: list[PartDelta] = []
        self.chose = self.chose or bool(chunk.choices)
        for choice in chunk.choices[:1]:
            if text := content_text(choice.delta.content):
                deltas.append(self._text(text))
            if choice.delta.refusal:
                self.refusal += choice.delta.refusal
            for piece in choice.delta.tool_calls or ():
                deltas += self._call(piece)
            if choice.finish_reason is not None:
                self.stop_reason = choice.finish_reason
        return deltas

    def _text(self, text: str) -> PartDelta:
        if self.text_index is None:
            self.text_index = len(self.parts)
            self.parts.append(TextPart(text=""))
        part = self.parts[self.text_index]
        assert isinstance(part, TextPart)
        self.parts[self.text_index] = TextPart(text=part.text + text)
        return TextPartDelta(index=self.text_index, text=text)

    def _call(self, piece: _ToolCallDelta) -> list[PartDelta]:
        key, function = piece.index, piece.function or _FunctionDelta()
        name, fragment = function.name or "", arguments_text(function.arguments)
        deltas: list[PartDelta] = []
        # A call's first piece carries its id, the rest none. Some servers leave the
        # index out, or give every call index 0: a piece with a new id is a new call.
        call = self.last if key is None else self.calls.get(key)
        if call is None or (piece.id and piece.id != call.id and call.named_by_server):
            number = len(self.parts) if key is None else key
            call = _Call(len(self.parts), piece.id or f"call_{number}", name, "", bool(piece.id))
            if key is not None:
                self.calls[key] = call
            self.parts.append(call)
            deltas.append(ToolCallPartStart(index=call.index, id=call.id, name=call.name))
        self.last = call
        if fragment:
            call.arguments += fragment
            deltas.append(ToolCallPartDelta(index=call.index, arguments=fragment))
        return deltas

    def response(self) -> ModelResponse:
        """The whole reply, once the stream has finished."""
        parts = tuple(
            part
            if isinstance(part, TextPart)
            else ToolCallPart(id=part.id, name=part.name, arguments=parse_arguments(part.arguments))
            for part in self.parts
        )
        stop_reason = self.stop_reason or ""
        if self.refusal:  # as response_from_completion
            parts, stop_reason = (TextPart(text=self.refusal), *parts), REFUSAL
        return ModelResponse(
            parts=parts,
            stop_reason=stop_reason,
            usage=self.usage,
            model=self.model,
            response_id=self.response_id,
        )

"""A deterministic model for tests and offline runs."""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeAlias, final

import msgspec

from regiment.errors import ConfigError, ScriptExhausted
from regiment.models._estimate import estimate_tokens
from regiment.models._messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, Usage
from regiment.models._price import Price, checked_price
from regiment.models._stream import (
    DeltaHandler,
    TextPartDelta,
    ToolCallPartDelta,
    ToolCallPartStart,
)

__all__ = ("Reply", "ScriptFunction", "ScriptedModel")

Reply: TypeAlias = ModelResponse | str
"""What a script gives for one call: a full response, or just the reply text."""

ScriptFunction: TypeAlias = Callable[[ModelRequest], Reply | Awaitable[Reply]]
"""A script that decides each reply from the request (sync or async)."""

_NO_USAGE = Usage()  # a reply that says nothing of its usage
# A space followed by a word: the next piece starts right after the space.
_WORD_START = re.compile(r"\s(?=\S)")


@final
class ScriptedModel:
    """A model whose replies are scripted, for tests and offline examples.

    Give it a list of replies, handed out one per call in order, or a
    function of the request (sync or async) that decides each reply, e.g. a
    small rule-based "brain" that looks at ``request.role`` (planner, worker,
    synthesizer, ...) and picks a reply. A reply is a ``ModelResponse`` or a
    plain string (a text reply that ends the turn).

    It streams too: ``stream(request, on_delta)`` hands the reply's text out
    in pieces that end at word ends, each at least ``delta_size`` characters
    (``delta_size=1``: a word at a time), and each tool call as a start and its
    arguments, so streaming consumers can be tested offline.

    So budgets see tokens, a reply with empty usage gets an estimated one
    (``estimate_tokens`` of the request and of the reply), and a reply with
    an empty ``model`` gets this model's name.

    It records every request it is given (the latest ``keep_requests`` of them, when
    given: a long-lived service on a scripted brain, such as ``regiment serve
    --model scripted``, keeps a bounded number), so tests can assert on prompts::

        model = ScriptedModel([tool_call_response("lookup", {"key": "a"}), "done"])
        ...
        assert "refund" in model.requests[0].messages[0].text

    Args:
        script: the replies in order, or a function of the request.
        name: the model name it reports.
        delta_size: the least number of characters in a streamed text piece.
        keep_requests: how many of the latest requests ``requests`` keeps
            (``None``: every one).
        price: what its tokens cost, for a ``Budget(usd=...)``.

    Raises:
        regiment.errors.ConfigError: ``script`` is a bare string, or a list with an
            item that is no reply; ``delta_size`` is below 1, or ``keep_requests`` is below 0.
    """

    def __init__(
        self,
        script: Sequence[Reply] | ScriptFunction,
        *,
        name: str = "scripted",
        delta_size: int = 32,
        keep_requests: int | None = None,
        price: Price | None = None,
    ) -> None:
        self.price = checked_price(price, "ScriptedModel")
        if isinstance(script, str):
            raise ConfigError(
                f"ScriptedModel got the string {script[:40]!r} as its script; "
                "pass a list of replies, e.g. ScriptedModel([...])"
            )
        if not (callable(script) or isinstance(script, Sequence)):
            raise ConfigError(
                f"ScriptedModel's script must be a list of replies or a function of the "
                f"request; got {type(script).__name__}: e.g. ScriptedModel(['the answer'])"
            )
        if delta_size < 1:
            raise ConfigError(f"ScriptedModel: delta_size must be at least 1, got {delta_size}")
        if keep_requests is not None and keep_requests < 0:
            raise ConfigError(
                f"ScriptedModel: keep_requests must be at least 0 (or None), got {keep_requests}"
            )
        self._script = script if callable(script) else tuple(script)
        for n, reply in enumerate(() if callable(script) else script):
            if not isinstance(reply, ModelResponse | str):  # its call would fail, unnamed
                raise ConfigError(
                    f"ScriptedModel: script[{n}] is the {type(reply).__name__} {reply!r:.60}, "
                    "not a reply; give a str or a ModelResponse (text_response(...), "
                    "tool_call_response(...)) for each call"
                )
        self._name = name
        self._delta_size = delta_size
        self._requests: deque[ModelRequest] = deque(maxlen=keep_requests)
        self._calls = 0

    @property
    def name(self) -> str:
        """The model name it reports (``"scripted"`` unless given)."""
        return self._name

    @property
    def provider(self) -> str:
        """Always ``"scripted"``."""
        return "scripted"

    @property
    def requests(self) -> list[ModelRequest]:
        """Every request seen so far (the latest ``keep_requests``), in order (a copy)."""
        return list(self._requests)

    @property
    def calls(self) -> int:
        """How many times ``complete`` has been called."""
        return self._calls

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Record ``request`` and return the next scripted reply.

        Raises:
            regiment.errors.ScriptExhausted: a list script has no reply left.
        """
        self._requests.append(request)
        number = self._calls = self._calls + 1
        script = self._script
        if isinstance(script, tuple):
            if number > len(script):
                raise ScriptExhausted(self._exhausted_message(number, len(script), request))
            reply: Reply = script[number - 1]
        else:
            produced = script(request)
            # A reply as it is; anything else is the awaitable of an async script.
            if isinstance(produced, (ModelResponse, str)):  # a tuple: no union made per call
                reply = produced
            elif hasattr(produced, "__await__"):
                reply = await produced
            else:
                raise self._not_a_reply(produced, request)
            if not isinstance(reply, (ModelResponse, str)):
                raise self._not_a_reply(reply, request)
        return self._finish(reply, request)

    def _not_a_reply(self, got: object, request: ModelRequest) -> ConfigError:
        return ConfigError(
            f"ScriptedModel {self._name!r}: its script returned {got!r} for a "
            f"{request.role} request; return the reply, a str or a ModelResponse "
            "(text_response(...), tool_call_response(...)), for every request it gets"
        )

    async def stream(self, request: ModelRequest, on_delta: DeltaHandler) -> ModelResponse:
        """As ``complete``, handing the reply to ``on_delta`` piece by piece first:
        text in pieces of ``delta_size`` characters or more that end at word
        ends, a tool call as its start and then its arguments.

        Raises:
            regiment.errors.ScriptExhausted: a list script has no reply left.
        """
        response = await self.complete(request)
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                for piece in _pieces(part.text, self._delta_size):
                    await on_delta(TextPartDelta(index=index, text=piece))
            elif isinstance(part, ToolCallPart):
                await on_delta(ToolCallPartStart(index=index, id=part.id, name=part.name))
                encoded = msgspec.json.encode(part.arguments).decode()
                await on_delta(ToolCallPartDelta(index=index, arguments=encoded))
        return response

    def _finish(self, reply: Reply, request: ModelRequest) -> ModelResponse:
        response = (
            ModelResponse(parts=(TextPart(text=reply),), stop_reason="end_turn", model=self._name)
            if isinstance(reply, str)
            else reply
        )
        if not response.model:
            response = msgspec.structs.replace(response, model=self._name)
        if response.usage == _NO_USAGE:
            estimated = Usage(
                input_tokens=estimate_tokens(request), output_tokens=estimate_tokens(response)
            )
            response = msgspec.structs.replace(response, usage=estimated)
        return response

    def _exhausted_message(self, number: int, scripted: int, request: ModelRequest) -> str:
        last = request.messages[-1].text if request.messages else ""
        return (
            f"ScriptedModel {self._name!r} has {scripted} scripted "
            f"{'response' if scripted == 1 else 'responses'} and was called a "
            f"{_ordinal(number)} time; add a reply for this call to its script, or "
            f"find out why the caller made another model call (its last message "
            f"began: {last[:80]!r})"
        )

    def __repr__(self) -> str:
        script = self._script
        given = (
            getattr(script, "__name__", "a function")
            if callable(script)
            else f"{len(script)} replies"
        )
        return f"ScriptedModel({self._name!r}, script={given}, calls={self._calls})"


@functools.lru_cache(maxsize=256)  # scripts repeat their replies; cutting is pure
def _pieces(text: str, size: int) -> tuple[str, ...]:
    """``text`` cut at word ends (after a word's trailing spaces) into pieces of at
    least ``size`` characters; the last piece may be shorter."""
    pieces: list[str] = []
    start, length = 0, len(text)
    while start < length:
        found = _WORD_START.search(text, start + size - 1)
        end = found.end() if found else length
        pieces.append(text[start:end])
        start = end
    return tuple(pieces)


def _ordinal(number: int) -> str:
    if 10 <= number % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"

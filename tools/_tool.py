"""A typed Python callable, made safe to hand to a model."""

from __future__ import annotations

import copy
import functools
import inspect
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Generic, ParamSpec, TypeVar, Unpack, assert_never, cast, final

import msgspec

from regiment._json import JsonObject, JsonValue
from regiment.errors import ConfigError
from regiment.tools._approval import ApprovalRequest, Approve, Approver, Deny, EditArguments
from regiment.tools._definition import ToolDefinition
from regiment.tools._docstring import parse_docstring
from regiment.tools._idempotency import check_key_names, derive_key
from regiment.tools._policy import ToolOptions, ToolPolicy
from regiment.tools._result import ToolResult
from regiment.tools._run import (
    LoopLimiter,
    TimedOut,
    describe_failure,
    request_approval,
    run_attempts,
)
from regiment.tools._schema import ArgumentSpec, BoundArguments
from regiment.tools._thread import run_sync_abandonable
from regiment.tools._validator import ArgumentValidator

__all__ = ("Tool",)

P = ParamSpec("P")
R_co = TypeVar("R_co", covariant=True)
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_log = logging.getLogger("regiment.tools")


@final
class Tool(Generic[P, R_co]):
    """A function a model may call: its definition, its validator and its policy.

    ``Tool(fn, ...)`` takes the same options as ``@tool(...)``.

    Args:
        fn: the function, sync or async, with annotated parameters. Sync functions
            run in a worker thread. Its docstring is the description (text before
            the first section); its ``Args:`` entries describe parameters that
            ``Annotated[..., Field(description=...)]`` does not.
        name: the name the model uses; defaults to the function's name.
        description: overrides the docstring.
        validator: checks the arguments instead of ``fn``'s signature (MCP tools pass
            a JSON Schema validator); ``fn`` then gets the validated arguments as keywords.
        **options: the ``ToolPolicy`` fields (``timeout``, ``retries``, ``retry_on``,
            ``backoff``, ``max_backoff``, ``max_concurrency``, ``requires_approval``,
            ``idempotency_key``, ``sleep``, ``on_tool_error``).

    Raises:
        ConfigError: the name is not valid for a model API, a parameter cannot be
            described, or an option is out of range.
    """

    # Set by ``update_wrapper``: a tool looks like the function it wraps.
    __name__: str
    __qualname__: str
    __wrapped__: Callable[..., object]

    def __init__(
        self,
        fn: Callable[P, R_co],
        *,
        name: str | None = None,
        description: str | None = None,
        validator: ArgumentValidator | None = None,
        **options: Unpack[ToolOptions],
    ) -> None:
        target = fn.func if isinstance(fn, functools.partial) else fn
        name = name if name is not None else getattr(target, "__name__", None)
        if name is None or not _NAME.match(name):
            raise ConfigError(
                f"tool name {name!r} is not usable: a model API needs 1-64 letters, digits, "
                "'_' or '-'; pass name=... to Tool() or @tool()"
            )
        docs = parse_docstring(getattr(target, "__doc__", None))
        self._fn = fn
        self._is_async = _is_async(fn)
        self._name = name
        self._key_name = name  # stays when the tool is renamed, so keys name the side effect
        self._policy = ToolPolicy(**options)
        self._spec: ArgumentValidator = (
            validator if validator is not None else ArgumentSpec.of(fn, name, docs.params)
        )
        self._description = description if description is not None else docs.description
        self._definition = ToolDefinition(
            name=name, description=self._description, input_schema=self._spec.schema
        )
        self._limiters = _own_limiters(self._policy)
        check_key_names(self._policy.idempotency_key, self._spec.names, name)
        # Look like the function (name, docstring, ``__wrapped__`` for inspect.signature).
        functools.update_wrapper(self, target, updated=())

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co:
        """Call the function itself, as if it were not a tool (to unit test it, say).

        No validation, policy or approval: ``await tool.call(...)`` is the model's way
        in. An async function returns its coroutine, so ``await my_tool(...)`` works.
        """
        return self._fn(*args, **kwargs)

    @property
    def name(self) -> str:
        """The name the model calls this tool by."""
        return self._name

    @property
    def description(self) -> str:
        """What the model is told the tool does."""
        return self._description

    @property
    def definition(self) -> ToolDefinition:
        """Name, description and input schema, as a model is told them."""
        return self._definition

    @property
    def policy(self) -> ToolPolicy:
        """Timeout, retries, limits and approval rules."""
        return self._policy

    @property
    def requires_approval(self) -> bool:
        """Whether every call goes through an approver first."""
        return self._policy.requires_approval

    @property
    def function(self) -> Callable[P, R_co]:
        """The wrapped function, for calling it directly (in tests, say)."""
        return self._fn

    def renamed(self, name: str) -> Tool[P, R_co]:
        """The same tool under another name; it shares this one's concurrency limit.

        Idempotency keys keep the original name: they identify the side effect.
        """
        if not _NAME.match(name):
            raise ConfigError(f"tool name {name!r} is not usable: 1-64 letters, digits, '_' or '-'")
        clone = copy.copy(self)
        clone._name = name
        clone._definition = msgspec.structs.replace(self._definition, name=name)
        return clone

    async def call(
        self, arguments: Mapping[str, JsonValue], *, call_id: str, approver: Approver | None = None
    ) -> ToolResult:
        """Validate ``arguments``, ask for approval if needed, and run the tool.

        Never raises for a problem the model caused or the tool body hit: invalid
        arguments, a denial, a timeout or an exception come back as an error result.
        Cancellation propagates; so does an exception from ``approver``.
        """
        return await self._call_limited(arguments, call_id=call_id, approver=approver, limiters=())

    async def _call_limited(
        self,
        arguments: Mapping[str, JsonValue],
        *,
        call_id: str,
        approver: Approver | None,
        limiters: Sequence[LoopLimiter],
    ) -> ToolResult:
        """``call``, also holding a token of each of ``limiters`` while the body runs.

        ``Toolset`` uses this for its shared limit.
        """
        started = time.perf_counter()
        result = await self._outcome(arguments, call_id, approver, limiters)
        return msgspec.structs.replace(result, duration_s=time.perf_counter() - started)

    async def _outcome(
        self,
        arguments: Mapping[str, JsonValue],
        call_id: str,
        approver: Approver | None,
        limiters: Sequence[LoopLimiter],
    ) -> ToolResult:
        bound = self._spec.validate(arguments)
        if isinstance(bound, str):
            message = f"invalid arguments for tool {self._name!r}: {bound}"
            return _error(self._name, call_id, message, "invalid_arguments", _raw(arguments))
        if self._policy.requires_approval:
            gated = await self._gate(bound, call_id, approver)
            if isinstance(gated, ToolResult):
                return gated
            bound = gated
        return await self._execute(bound, call_id, limiters)

    async def _gate(
        self, bound: BoundArguments, call_id: str, approver: Approver | None
    ) -> BoundArguments | ToolResult:
        key = derive_key(self._policy.idempotency_key, self._key_name, bound.as_json)
        if approver is None:
            message = (
                f"tool {self._name!r} needs approval before it runs, but no approver is "
                "configured, so it was not run"
            )
            return _error(self._name, call_id, message, "approval_unavailable", bound.sent, key)
        request = ApprovalRequest(
            tool_name=self._name,
            call_id=call_id,
            arguments=bound.as_json,
            description=self._description,
            idempotency_key=key,
        )
        decision = await request_approval(approver, request)
        match decision:
            case Approve():
                return bound
            case Deny(reason=reason):
                message = f"the call to tool {self._name!r} was denied: {reason}"
                return _error(self._name, call_id, message, "approval_denied", bound.sent, key)
            case EditArguments(arguments=edited):
                rebound = self._spec.validate(edited)
                if isinstance(rebound, str):
                    message = (
                        f"invalid arguments for tool {self._name!r} "
                        f"as edited by the approver: {rebound}"
                    )
                    return _error(self._name, call_id, message, "invalid_arguments", _raw(edited))
                return rebound
            case _:
                assert_never(decision)

    async def _execute(
        self, bound: BoundArguments, call_id: str, limiters: Sequence[LoopLimiter]
    ) -> ToolResult:
        key = derive_key(self._policy.idempotency_key, self._key_name, bound.as_json)
        invoke = functools.partial(self._invoke, bound)
        # The tool's own limit first: a call waiting for it must not sit on a slot of
        # the set's shared limit that another tool's call could be using.
        attempted = await run_attempts(invoke, self._policy, (*self._limiters, *limiters))
        if attempted.error is not None:
            if not isinstance(attempted.error, TimedOut):
                # The traceback is only here; the worker logs the failure with its step.
                _log.debug("tool %r raised", self._name, exc_info=attempted.error)
            message, error_type = describe_failure(attempted.error, attempted.attempts)
            return _error(
                self._name, call_id, message, error_type, bound.sent, key, attempted.attempts
            )
        try:
            content = _jsonable(attempted.value)
        except _NotJson:
            kind = type(attempted.value).__name__
            message = f"TypeError: tool {self._name!r} returned a {kind}, not JSON data"
            n = attempted.attempts
            return _error(self._name, call_id, message, "TypeError", bound.sent, key, n)
        return ToolResult(
            call_id=call_id,
            tool_name=self._name,
            content=content,
            attempts=attempted.attempts,
            idempotency_key=key,
            arguments=bound.sent,
        )

    async def _invoke(self, bound: BoundArguments) -> object:
        target = cast(Callable[..., object], self._fn)
        if self._is_async:
            return await cast(Awaitable[object], target(*bound.args, **bound.kwargs))
        # A timeout or a cancelled caller gets control back at once; a body that had
        # not started by then never starts (one already running finishes unseen).
        return await run_sync_abandonable(functools.partial(target, *bound.args, **bound.kwargs))

    def __repr__(self) -> str:
        return f"Tool({self._name!r})"


def _is_async(fn: Callable[..., object]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    )


def _own_limiters(policy: ToolPolicy) -> tuple[LoopLimiter, ...]:
    if policy.max_concurrency is None:
        return ()
    return (LoopLimiter(policy.max_concurrency),)


class _NotJson(Exception):
    """A tool's return value that cannot be turned into JSON data."""


def _jsonable(value: object) -> JsonValue:
    if isinstance(value, str):  # the common case needs no pydantic
        return value
    # pydantic costs ~40 ms to import; a tool built by @tool has loaded it already.
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        return cast(JsonValue, to_jsonable_python(value))
    except PydanticSerializationError as exc:
        raise _NotJson(str(exc)) from exc


def _raw(arguments: object) -> JsonObject:
    """Arguments that did not validate, kept for the record as far as they are an object."""
    if isinstance(arguments, Mapping):
        return {str(k): cast(JsonValue, v) for k, v in arguments.items()}
    return {}


def _error(
    tool_name: str,
    call_id: str,
    message: str,
    error_type: str,
    arguments: JsonObject,
    key: str | None = None,
    attempts: int = 0,
) -> ToolResult:
    return ToolResult(
        call_id=call_id,
        tool_name=tool_name,
        content=message,
        is_error=True,
        error_type=error_type,
        attempts=attempts,
        idempotency_key=key,
        arguments=arguments,
    )

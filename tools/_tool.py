"""A typed Python callable, made safe to hand to a model."""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, ParamSpec, TypeVar, Unpack, assert_never, cast, final

import msgspec

from regiment._json import JsonObject, JsonValue
from regiment.errors import ConfigError
from regiment.tools._approval import ApprovalRequest, Approve, Approver, Deny, EditArguments
from regiment.tools._context import RunContext
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
        """Whether calls may need an approver first (always, or when its predicate says so)."""
        return self._policy.requires_approval is not False

    def requiring_approval(self) -> Tool[P, R_co]:
        """The same tool with every call needing approval (a worker's ``require_approval``)."""
        clone = copy.copy(self)
        clone._policy = dataclasses.replace(self._policy, requires_approval=True)
        return clone

    def check_arguments(self, arguments: Mapping[str, JsonValue]) -> str | None:
        """What is wrong with ``arguments`` for this tool's schema, or ``None`` if they validate."""
        bound = self._spec.validate(arguments)
        return bound if isinstance(bound, str) else None

    def validated(self, arguments: Mapping[str, JsonValue]) -> JsonObject | str:
        """``arguments`` as this tool's schema reads them (typed values as JSON, defaults
        filled in, numbers and dates normalised), or what is wrong with them."""
        bound = self._spec.validate(arguments)
        return bound if isinstance(bound, str) else bound.as_json

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

    def key_for(self, arguments: Mapping[str, JsonValue]) -> str | None:
        """The declared idempotency key of a call (``None``: none declared, or bad arguments)."""
        spec = self._policy.idempotency_key
        if spec is None:  # the usual tool: no key, so no need to validate the arguments here
            return None
        bound = self._spec.validate(arguments)
        return None if isinstance(bound, str) else derive_key(spec, self._key_name, bound.as_json)

    async def call(
        self,
        arguments: Mapping[str, JsonValue],
        *,
        call_id: str,
        approver: Approver | None = None,
        context: RunContext[object] | None = None,
    ) -> ToolResult:
        """Validate ``arguments``, ask for approval if needed, and run the tool.

        Never raises for a problem the model caused or the tool body hit: invalid
        arguments, a denial, a timeout or an exception come back as an error result.
        Cancellation propagates; so does an exception from ``approver``. A tool with
        a ``RunContext`` parameter gets ``context`` (a worker's tool loop passes it).
        """
        return await self._call_limited(
            arguments, call_id=call_id, approver=approver, limiters=(), context=context
        )

    async def _call_limited(
        self,
        arguments: Mapping[str, JsonValue],
        *,
        call_id: str,
        approver: Approver | None,
        limiters: Sequence[LoopLimiter],
        context: RunContext[object] | None = None,
    ) -> ToolResult:
        """``call``, also holding a token of each of ``limiters`` while the body runs.

        ``Toolset`` uses this for its shared limit.
        """
        started = time.perf_counter()
        result = await self._outcome(arguments, call_id, approver, limiters, context)
        return msgspec.structs.replace(result, duration_s=time.perf_counter() - started)

    async def _outcome(
        self,
        arguments: Mapping[str, JsonValue],
        call_id: str,
        approver: Approver | None,
        limiters: Sequence[LoopLimiter],
        context: RunContext[object] | None,
    ) -> ToolResult:
        bound = self._spec.validate(arguments)
        if isinstance(bound, str):
            message = f"invalid arguments for tool {self._name!r}: {bound}"
            return _error(self._name, call_id, message, "invalid_arguments", _raw(arguments))
        policy = self._policy
        if policy.requires_approval is not False and policy.needs_approval(bound.as_json):
            gated = await _gate(self, bound, call_id, approver)
            if isinstance(gated, ToolResult):
                return gated
            bound = gated
        if context is None and getattr(self._spec, "context", None) is not None:
            return _no_context(self._name, call_id, bound.sent)
        return await self._execute(bound, call_id, limiters, context)

    async def _execute(
        self,
        bound: BoundArguments,
        call_id: str,
        limiters: Sequence[LoopLimiter],
        context: RunContext[object] | None,
    ) -> ToolResult:
        key = derive_key(self._policy.idempotency_key, self._key_name, bound.as_json)
        invoke = functools.partial(_invoke, self._fn, self._is_async, self._spec, bound, context)
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

    def __repr__(self) -> str:
        return f"Tool({self._name!r})"


async def _invoke(
    fn: Callable[..., object],
    is_async: bool,
    spec: ArgumentValidator,
    bound: BoundArguments,
    context: RunContext[object] | None,
) -> object:
    args, kwargs = (
        spec.call_arguments(bound, context)
        if isinstance(spec, ArgumentSpec)
        else (bound.args, bound.kwargs)
    )
    if is_async:
        return await fn(*args, **kwargs)  # type: ignore[misc]  # is_async: it is a coroutine
    # A timeout or a cancelled caller gets control back at once; a body that had
    # not started by then never starts (one already running finishes unseen).
    return await run_sync_abandonable(functools.partial(fn, *args, **kwargs))


def _no_context(tool_name: str, call_id: str, sent: JsonObject) -> ToolResult:
    message = (
        f"tool {tool_name!r} takes a RunContext, so it runs only inside a run "
        "(a worker's tool loop) or with call(..., context=RunContext(...))"
    )
    return _error(tool_name, call_id, message, "no_run_context", sent)


async def _gate(
    tool: Tool[..., object], bound: BoundArguments, call_id: str, approver: Approver | None
) -> BoundArguments | ToolResult:
    """Ask ``approver`` about a call that needs approval: the arguments to run it with
    (edited ones validated again), or the error result the model gets instead."""
    key = derive_key(tool._policy.idempotency_key, tool._key_name, bound.as_json)
    if approver is None:
        message = (
            f"tool {tool._name!r} needs approval before it runs, but no approver is "
            "configured, so it was not run"
        )
        return _error(tool._name, call_id, message, "approval_unavailable", bound.sent, key)
    request = ApprovalRequest(
        tool_name=tool._name,
        call_id=call_id,
        arguments=bound.as_json,
        description=tool._description,
        idempotency_key=key,
    )
    decision = await request_approval(approver, request)
    match decision:
        case Approve():
            return bound
        case Deny(reason=reason):
            message = f"denied: {reason}"
            return _error(tool._name, call_id, message, "approval_denied", bound.sent, key)
        case EditArguments(arguments=edited):
            rebound = tool._spec.validate(edited)
            if isinstance(rebound, str):
                message = (
                    f"invalid arguments for tool {tool._name!r} "
                    f"as edited by the approver: {rebound}"
                )
                return _error(tool._name, call_id, message, "invalid_arguments", _raw(edited))
            return rebound
        case _:
            assert_never(decision)


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

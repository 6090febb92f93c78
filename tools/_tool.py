"""A typed Python callable, made safe to hand to a model."""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import logging
import re
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Generic, ParamSpec, TypeVar, Unpack, assert_never, final

import msgspec

from regiment._json import UNPARSED_ARGUMENTS, JsonObject, JsonValue
from regiment._stray import stray
from regiment.errors import ConfigError
from regiment.tools._approval import ApprovalRequest, Approve, Approver, Deny, EditArguments
from regiment.tools._context import RunContext
from regiment.tools._cut import DEFAULT_MAX_RESULT_CHARS, fitted
from regiment.tools._definition import ToolDefinition
from regiment.tools._docstring import parse_docstring
from regiment.tools._idempotency import check_key_names, derive_key
from regiment.tools._made_of import check_made_of
from regiment.tools._outcome import (
    error_result,
    no_context,
    not_an_object,
    raw_arguments,
)
from regiment.tools._policy import ToolOptions, ToolPolicy, policy_of
from regiment.tools._result import ToolResult
from regiment.tools._run import (
    Attempted,
    LoopLimiter,
    ToolExited,
    ToolRaisedBase,
    call_result,
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
            ``idempotency_key``, ``sleep``, ``on_tool_error``, ``max_result_chars``).

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
        target = check_made_of(fn, name, description, maker="Tool()")
        name = name if name is not None else getattr(target, "__name__", None)
        if name is None or not _NAME.match(name):
            raise ConfigError(
                f"tool name {name!r} is not usable: a model API needs 1-64 letters, digits, "
                "'_' or '-'; pass name=... to Tool() or @tool()"
            )
        docs = parse_docstring(getattr(target, "__doc__", None))
        self._fn, self._is_async = fn, _is_async(fn)
        self._name = name
        self._key_name = name  # stays when the tool is renamed, so keys name the side effect
        self._policy = policy_of(name, options)
        self._spec: ArgumentValidator = (
            validator if validator is not None else ArgumentSpec.of(fn, name, docs.params)
        )
        self._takes_context = getattr(self._spec, "context", None) is not None  # asked per call
        own = type(self._spec) is ArgumentSpec and not self._takes_context  # called as bound
        self._as_bound, self._no_arguments = own, own and not self._spec.names  # (#22)
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
        bound = self._bind(arguments)
        return bound if isinstance(bound, str) else None

    def _bind(self, arguments: Mapping[str, JsonValue]) -> BoundArguments | str:
        plain = type(arguments) is dict  # as every model adapter makes them: no ABC check
        if (plain or isinstance(arguments, Mapping)) and UNPARSED_ARGUMENTS in arguments:
            # What the model's adapter could not read as an object: never run on it.
            return not_an_object(arguments[UNPARSED_ARGUMENTS])
        if self._no_arguments and plain and not arguments:
            return BoundArguments((), {}, {}, {})  # as ArgumentSpec.validate binds it
        return self._spec.validate(arguments)

    def validated(self, arguments: Mapping[str, JsonValue]) -> JsonObject | str:
        """``arguments`` as this tool's schema reads them (typed values as JSON, defaults
        filled in, numbers and dates normalised), or what is wrong with them."""
        bound = self._bind(arguments)
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
        bound = self._bind(arguments)
        return None if isinstance(bound, str) else derive_key(spec, self._key_name, bound.as_json)

    def call(
        self,
        arguments: Mapping[str, JsonValue],
        *,
        call_id: str,
        approver: Approver | None = None,
        context: RunContext[object] | None = None,
    ) -> Coroutine[object, object, ToolResult]:
        """Validate ``arguments``, ask for approval if needed, and run the tool (await it).

        Never raises for a problem the model caused or the tool body hit: invalid
        arguments, a denial, a timeout or an exception come back as an error result.
        Cancellation propagates; so does an exception from ``approver``. A tool with
        a ``RunContext`` parameter gets ``context`` (a worker's tool loop passes it).
        """
        return self._call_limited(
            arguments,
            call_id=call_id,
            approver=approver,
            limiters=(),
            context=context,
            max_result_chars=DEFAULT_MAX_RESULT_CHARS,
        )

    @property
    def takes_context(self) -> bool:
        """Whether the function has a ``RunContext`` parameter (a call needs one)."""
        return self._takes_context

    async def _call_limited(
        self,
        arguments: Mapping[str, JsonValue],
        *,
        call_id: str,
        approver: Approver | None,
        limiters: Sequence[LoopLimiter],
        context: RunContext[object] | None = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> ToolResult:
        """``call``, also holding a token of each of ``limiters`` while the body runs;
        ``Toolset`` uses this for its shared limit, and its result limit (``max_result_chars``,
        for a tool that sets none of its own)."""
        started, waited = time.perf_counter(), 0.0  # waited: for an approval decision
        bound = self._bind(arguments)
        if isinstance(bound, str):
            message = f"invalid arguments for tool {self._name!r}: {bound}"
            result = error_result(
                self._name, call_id, message, "invalid_arguments", raw_arguments(arguments)
            )
        else:
            policy = self._policy
            if policy.requires_approval is not False and policy.needs_approval(
                bound.as_json, self._name
            ):
                asked = time.perf_counter()  # waited: the wait for a decision, not the tool's
                gated = await _gate(self, bound, call_id, approver, context)
                waited = time.perf_counter() - asked
            else:
                gated = bound
            if isinstance(gated, ToolResult):
                result = gated
            elif context is None and self._takes_context:
                result = no_context(self._name, call_id, gated.sent)
            else:
                result = await _execute(self, gated, call_id, limiters, context)
        limit, content = self._policy.max_result_chars or max_result_chars, result.content
        # Short ASCII text, the usual result, is as the model may read it already.
        if not (isinstance(content, str) and len(content) <= limit and content.isascii()):
            result = fitted(result, limit)
        return msgspec.structs.replace(result, duration_s=time.perf_counter() - started - waited)

    def __repr__(self) -> str:
        return f"Tool({self._name!r})"


async def _execute(
    tool: Tool[..., object],
    bound: BoundArguments,
    call_id: str,
    limiters: Sequence[LoopLimiter],
    context: RunContext[object] | None,
) -> ToolResult:
    policy, spec = tool._policy, tool._policy.idempotency_key  # (the usual tool: no key)
    key = None if spec is None else derive_key(spec, tool._key_name, bound.as_json)
    if tool._is_async and not (limiters or tool._limiters or policy.timeout is not None):
        # The usual tool: nothing to hold, no deadline, so no frames in between.
        args, kwargs = bound.args, bound.kwargs
        if not tool._as_bound:  # a context to put in, an MCP tool's way
            args, kwargs = tool._spec.call_arguments(bound, context)
        try:  # (a cast() would build two generic aliases at every call)
            value = await tool._fn(*args, **kwargs)  # type: ignore[misc]
        except Exception as exc:
            if policy.retries == 0 or not policy.is_retryable(exc):
                attempted = Attempted(None, exc, 1)
            else:  # a retryable failure: the attempt loop takes it from the second
                attempted = await _attempts(tool, bound, limiters, context, after=1)
        except SystemExit as exc:
            attempted = Attempted(None, ToolExited(exc), 1)
        except BaseException as exc:  # a cancellation or an interrupt, as a rule
            if not stray(exc):
                raise
            attempted = Attempted(None, ToolRaisedBase(exc), 1)
        else:
            attempted = Attempted(value, None, 1)
    else:
        attempted = await _attempts(tool, bound, limiters, context)
    try:
        return call_result(tool._name, attempted, call_id, bound.sent, key)
    finally:  # a failure's traceback holds this frame: no cycle left for the collector
        del attempted


def _attempts(
    tool: Tool[..., object],
    bound: BoundArguments,
    limiters: Sequence[LoopLimiter],
    context: RunContext[object] | None,
    after: int = 0,
) -> Coroutine[object, object, Attempted]:
    invoke = functools.partial(_invoke, tool._fn, tool._is_async, tool._spec, bound, context)
    # The tool's own limit first: a call waiting for it must not sit on a slot of
    # the set's shared limit that another tool's call could be using.
    return run_attempts(invoke, tool._policy, (*tool._limiters, *limiters), after=after)


async def _invoke(
    fn: Callable[..., object],
    is_async: bool,
    spec: ArgumentValidator,
    bound: BoundArguments,
    context: RunContext[object] | None,
) -> object:
    args, kwargs = spec.call_arguments(bound, context)
    if is_async:
        return await fn(*args, **kwargs)  # type: ignore[misc]  # is_async: it is a coroutine
    # A timeout or a cancelled caller gets control back at once; a body that had
    # not started by then never starts (one already running finishes unseen).
    return await run_sync_abandonable(functools.partial(fn, *args, **kwargs))


async def _gate(
    tool: Tool[..., object],
    bound: BoundArguments,
    call_id: str,
    approver: Approver | None,
    context: RunContext[object] | None,
) -> BoundArguments | ToolResult:
    """Ask ``approver`` about a call that needs approval: the arguments to run it with
    (edited ones validated again), or the error result the model gets instead. The
    request names the key the call runs with: ``context``'s, in a run (the declared
    one, else the one the run derives), so a pending call of a tool that declares none
    is recognisable by the key its side effect will carry."""
    key = derive_key(tool._policy.idempotency_key, tool._key_name, bound.as_json)
    if approver is None:
        message = f"tool {tool._name!r} needs approval before it runs, but no approver is "
        message += "configured, so it was not run"
        return error_result(tool._name, call_id, message, "approval_unavailable", bound.sent, key)
    request = ApprovalRequest(
        tool_name=tool._name,
        call_id=call_id,
        arguments=bound.as_json,
        description=tool._description,
        idempotency_key=key if context is None else context.idempotency_key,
    )
    decision = await request_approval(approver, request)
    match decision:
        case Approve():
            return bound
        case Deny(reason=reason):
            message = f"denied: {reason}"
            return error_result(tool._name, call_id, message, "approval_denied", bound.sent, key)
        case EditArguments(arguments=edited):
            rebound = tool._bind(edited)
            if isinstance(rebound, str):
                message = (
                    f"invalid arguments for tool {tool._name!r} "
                    f"as edited by the approver: {rebound}"
                )
                return error_result(
                    tool._name, call_id, message, "invalid_arguments", raw_arguments(edited)
                )
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

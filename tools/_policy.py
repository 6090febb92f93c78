"""How a tool may be called: timeout, retries, concurrency, approval, idempotency."""

from __future__ import annotations

import difflib
import inspect
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias, TypedDict, get_args

import anyio

from regiment._json import JsonObject
from regiment._stray import raised, users_failure
from regiment.errors import ConfigError, RetryableToolError, ToolError

__all__ = (
    "ApprovalRule",
    "IdempotencyKey",
    "OnToolError",
    "ToolOptions",
    "ToolPolicy",
    "policy_of",
    "result_limit",
)

ApprovalRule: TypeAlias = bool | Callable[[JsonObject], bool]
"""Whether a call needs approval: always (``True``), never, or when a predicate over
the validated arguments says so (``lambda a: a["amount"] > 100``)."""

IdempotencyKey: TypeAlias = tuple[str, ...] | Callable[[JsonObject], str]
"""Argument names to derive the key from, or a function of the validated arguments."""

OnToolError: TypeAlias = Literal["tell_model", "raise"]
"""What an exception raised by a tool body does: the model is told (``"tell_model"``,
and may try something else), or the step fails (``"raise"``)."""


@dataclass(frozen=True, kw_only=True)
class ToolPolicy:
    """The rules one tool is called under.

    Attributes:
        timeout: seconds one attempt may take; ``None`` for no limit. A timed-out
            attempt counts as a ``TimeoutError`` for ``retry_on``.
        retries: how many more attempts after the first, for retryable failures.
        retry_on: exception types worth another attempt (``RetryableToolError`` always is).
        backoff: seconds before the first retry; each further retry waits twice as long.
        max_backoff: the longest wait between attempts.
        max_concurrency: how many calls of this tool may run at once; ``None`` for no limit.
        requires_approval: route a call through an approver before it runs: every
            call (``True``), or those a predicate over the validated arguments picks.
        idempotency_key: argument names (``("order_id",)`` gives
            ``"issue_refund:order_id=88213"``) or a function of the validated
            arguments returning the whole key.
        sleep: how to wait between attempts; tests pass a recorder here.
        on_tool_error: ``"raise"`` makes an exception from the body (after the
            retries) fail the step that called it; ``"tell_model"`` hands it to the
            model as an error result; ``None`` leaves it to the worker's setting.
        max_result_chars: the longest result (or error message) the model gets, in
            characters of ``ToolResult.text``; a longer one is cut there, with a note
            saying so. ``None``: its tool set's (``Worker(max_tool_result_chars=...)``,
            100,000 by default).
    """

    timeout: float | None = None
    retries: int = 0
    retry_on: tuple[type[Exception], ...] = ()
    backoff: float = 0.5
    max_backoff: float = 30.0
    max_concurrency: int | None = None
    requires_approval: ApprovalRule = False
    idempotency_key: IdempotencyKey | None = None
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep
    on_tool_error: OnToolError | None = None
    max_result_chars: int | None = None

    def __post_init__(self) -> None:
        self._check_types()
        if self.on_tool_error not in (None, *get_args(OnToolError)):
            raise ConfigError(
                f"on_tool_error must be 'tell_model', 'raise' or None, not {self.on_tool_error!r}"
            )
        if self.timeout is not None and not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ConfigError(
                "timeout must be a finite number of seconds > 0, or None for no limit, "
                f"not {self.timeout!r}"
            )
        if self.retries < 0:
            raise ConfigError(f"retries must be 0 or more, not {self.retries!r}")
        if self.backoff < 0 or self.max_backoff < 0:
            raise ConfigError("backoff and max_backoff must be 0 or more seconds")
        if self.max_result_chars is not None:
            result_limit("max_result_chars", self.max_result_chars)
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be 1 or more, not {self.max_concurrency!r}")
        if not (isinstance(self.requires_approval, bool) or callable(self.requires_approval)):
            raise ConfigError(
                "requires_approval takes True, False or a predicate over the arguments, "
                f"not {self.requires_approval!r}"
            )
        for option in ("requires_approval", "idempotency_key"):
            function = getattr(self, option)
            if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
                getattr(function, "__call__", None)  # noqa: B004 - an object with an async __call__
            ):
                raise ConfigError(
                    f"{option} takes a plain (sync) function of the call's arguments, not the "
                    f"async function {getattr(function, '__name__', function)!r}: it is called, "
                    "not awaited, before each call"
                )
        for kind in self.retry_on:
            if not (isinstance(kind, type) and issubclass(kind, Exception)):
                raise ConfigError(
                    f"retry_on takes Exception subclasses, not {kind!r} "
                    "(cancellation and other BaseExceptions are never retried)"
                )

    def _check_types(self) -> None:
        """Refuse an option of the wrong type with what to give (``retries="2"`` used to
        be a ``TypeError`` from a comparison; ``idempotency_key="order_id"`` named each
        of its letters as a parameter)."""
        if self.timeout is not None and not _is_number(self.timeout):
            raise ConfigError(
                "timeout must be a finite number of seconds > 0, or None for no limit, "
                f"not {self.timeout!r}"
            )
        if not _is_whole(self.retries):
            raise ConfigError(f"retries must be a whole number, 0 or more, not {self.retries!r}")
        for option in ("backoff", "max_backoff"):
            if not _is_number(getattr(self, option)):
                raise ConfigError(
                    f"{option} must be a number of seconds, 0 or more, "
                    f"not {getattr(self, option)!r}"
                )
        if self.max_concurrency is not None and not _is_whole(self.max_concurrency):
            raise ConfigError(
                "max_concurrency must be a whole number, 1 or more, or None for no limit, "
                f"not {self.max_concurrency!r}"
            )
        retry_on: object = self.retry_on  # typed a tuple, but given by hand
        if not isinstance(retry_on, (tuple, list)):
            hint = f" (write retry_on=({retry_on.__name__},))" if isinstance(retry_on, type) else ""
            raise ConfigError(
                f"retry_on takes a tuple of Exception subclasses, not {retry_on!r}{hint}"
            )
        object.__setattr__(self, "retry_on", tuple(retry_on))
        key: object = self.idempotency_key
        if key is None or callable(key):
            return
        if isinstance(key, (tuple, list)) and all(isinstance(name, str) for name in key):
            object.__setattr__(self, "idempotency_key", tuple(key))  # a team file's list
            return
        shown = (
            f"the str {key!r} (write idempotency_key=({key!r},))"
            if isinstance(key, str)
            else repr(key)
        )
        raise ConfigError(
            "idempotency_key takes a tuple of parameter names or a function of the "
            f"arguments, not {shown}"
        )

    def needs_approval(self, arguments: JsonObject, tool_name: str = "") -> bool:
        """Whether a call with these validated arguments must be approved first.

        Raises:
            ToolError: the ``requires_approval`` predicate raised, or returned no bool.
        """
        rule = self.requires_approval
        if not callable(rule):
            return bool(rule)
        try:
            needed: object = rule(arguments)
        except BaseException as exc:  # its bug fails the step, saying whose code raised
            if not users_failure(exc):
                raise  # a real cancellation, or an interrupt
            raise ToolError(
                f"the requires_approval predicate of tool {tool_name!r} {raised(exc)}; fix "
                "it to return True or False for the call's arguments",
                fatal=True,
            ) from exc
        if not isinstance(needed, bool):  # a def that forgot its return gives None: no approval
            raise ToolError(
                f"the requires_approval predicate of tool {tool_name!r} returned the "
                f"{type(needed).__name__} {needed!r:.100}, not True or False, so the call did "
                "not run; fix it to return True or False for the call's arguments",
                fatal=True,
            )
        return needed

    def is_retryable(self, exc: Exception) -> bool:
        """Whether a failed attempt that raised ``exc`` is worth another try."""
        return isinstance(exc, (RetryableToolError, *self.retry_on))

    def backoff_delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))


class ToolOptions(TypedDict, total=False):
    """The policy options ``@tool(...)`` and ``Tool(...)`` accept; see ``ToolPolicy``."""

    timeout: float | None
    retries: int
    retry_on: tuple[type[Exception], ...]
    backoff: float
    max_backoff: float
    max_concurrency: int | None
    requires_approval: ApprovalRule
    idempotency_key: IdempotencyKey | None
    sleep: Callable[[float], Awaitable[None]]
    on_tool_error: OnToolError | None
    max_result_chars: int | None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def result_limit(name: str, chars: object) -> int:
    """``chars`` as a result limit (a whole number of characters, 1 or more).

    Raises:
        ConfigError: it is not.
    """
    if isinstance(chars, bool) or not isinstance(chars, int) or chars < 1:
        raise ConfigError(
            f"{name} must be a whole number of characters, 1 or more, not {chars!r} "
            "(a longer tool result is cut there, with a note saying so)"
        )
    return chars


def policy_of(tool_name: str, options: ToolOptions) -> ToolPolicy:
    """The ``ToolPolicy`` that ``@tool(...)`` or ``Tool(...)`` options ask for.

    Raises:
        ConfigError: an option is not one (``timout=5``), or is out of range.
    """
    known = ToolOptions.__annotations__
    for key in options:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = (
                f"did you mean {close[0]!r}?" if close else f"the options are: {', '.join(known)}"
            )
            raise ConfigError(f"tool {tool_name!r}: {key!r} is not a tool option ({hint})")
    return ToolPolicy(**options)

"""``BaseException`` s that user code (a tool body, a model) raises on its own.

asyncio's ``CancelledError`` is an ordinary class any code may raise, and libraries
do (one giving up on its own timeout, say). With no cancel requested of the task,
letting it through ends the actor task it passes as if that had been cancelled: a
worker gone for every later run. On trio it is no cancellation at all (trio's
``Cancelled`` cannot be made outside trio), nor is ``GeneratorExit`` anywhere: either
would leave the team's task group. Such an exception is the failure of the call that
raised it.
"""

from __future__ import annotations

import anyio
import sniffio

__all__ = ("raise_stray", "raised", "stray", "stray_reason", "users_failure")


def stray(exc: BaseException) -> bool:
    """Whether ``exc``, a ``BaseException`` but no ``Exception`` (those pass on as they
    are), is the failure of the code that raised it, not a cancellation of its task or
    an interrupt (``KeyboardInterrupt``), which must pass on."""
    if isinstance(exc, Exception):
        return False
    if isinstance(exc, BaseExceptionGroup):
        return all(stray(inner) for inner in exc.exceptions)
    if isinstance(exc, KeyboardInterrupt):
        return False
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return True  # no event loop (code called on its own): nothing cancels it
    if not isinstance(exc, anyio.get_cancelled_exc_class()):
        return True
    if library != "asyncio":
        return False
    import asyncio  # loaded already: this is asyncio

    task = asyncio.current_task()
    return task is not None and task.cancelling() == 0


def stray_reason(exc: BaseException) -> str:
    """Why ``exc`` (one :func:`stray` says yes to) failed the call: ``"raised X ..."``."""
    kind = type(exc).__name__
    why = (
        "while nothing had cancelled its call"
        if kind == "CancelledError"
        else "(a BaseException, as only interrupts and cancellations are)"
    )
    return f"raised {kind} {why}"


def raise_stray(exc: BaseException, what: str, instead: str) -> None:
    """Raise a ``RuntimeError`` for ``exc``, raised by ``what`` (a function of the user's
    the library called), if :func:`stray` says it is that call's failure; return
    otherwise, for the caller to re-raise ``exc`` as it is. ``instead``: what ``what``
    must do (``"decide, or raise an Exception"``)."""
    if isinstance(exc, Exception) or not stray(exc):
        return
    raise RuntimeError(f"{what} {stray_reason(exc)}; it must {instead}") from exc


def users_failure(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a function of the user's the library called, is that
    function's failure: any ``Exception``, or a ``BaseException`` :func:`stray` says is
    one. ``False`` for a real cancellation or an interrupt, which must pass on."""
    return isinstance(exc, Exception) or stray(exc)


def raised(exc: BaseException) -> str:
    """What a user's function that failed with ``exc`` (:func:`users_failure`) did:
    ``"raised KeyError: 'id'"``, or :func:`stray_reason`'s words for a ``BaseException``."""
    if isinstance(exc, Exception):
        return f"raised {type(exc).__name__}: {exc}"
    return stray_reason(exc)

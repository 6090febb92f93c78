"""Running an async ``main`` as a command-line program that a reader may stop early:
``python my_program.py | head -3``. Shared by the ``regiment`` command and the examples.

When the reader closes the pipe, the next write raises ``BrokenPipeError``, and Python
ends with a traceback (and, as it flushes stdout on its way out, a second one). A
command killed by SIGPIPE leaves quietly with exit 141; these do the same.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar, TypeVarTuple

import anyio

from regiment._misuse import WrongType, a_kind

__all__ = ("EXIT_BROKEN_PIPE", "all_of", "reader_left", "run_main", "stdout_closed")

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of stdout went away

T = TypeVar("T")
PosArgsT = TypeVarTuple("PosArgsT")


def all_of(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` is a ``kind`` (alone, or every exception of an exception group, as
    a task group raises what its tasks did)."""
    if isinstance(exc, BaseExceptionGroup):
        rest = exc.split(kind)[1]
        return rest is None
    return isinstance(exc, kind)


def reader_left(exc: BaseException) -> bool:
    """Whether ``exc`` is a closed stdout (alone, or all of an exception group)."""
    return all_of(exc, BrokenPipeError)


def stdout_closed() -> int:
    """`regiment runs | head -1`: the reader closed stdout. Quietly stop, as a command
    killed by SIGPIPE would (exit 141); stdout goes to /dev/null so that the
    interpreter's last flush of it does not complain again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def run_main(
    main: Callable[[*PosArgsT], Awaitable[T]],
    *args: *PosArgsT,
    backend: str = "asyncio",
) -> T:
    """``anyio.run(main, *args, backend=backend)`` for a program's ``__main__``, which
    ends quietly with exit 141 (as a command killed by SIGPIPE) when the reader of its
    stdout goes away (``python my_program.py | head -3``), instead of with a
    ``BrokenPipeError`` traceback.

    Raises:
        SystemExit: 141, once stdout's reader is gone.
        ConfigError: ``main`` is no async function (a coroutine already made, say:
            ``run_main(main)``, not ``run_main(main())``), or returned no awaitable.
    """
    if not callable(main):
        raise WrongType(_not_callable(main))
    try:
        result = anyio.run(_awaited, main, *args, backend=backend)
        sys.stdout.flush()  # here, not at the interpreter's exit, where it cannot be caught
    except BaseException as exc:
        if not reader_left(exc):
            raise
        sys.exit(stdout_closed())
    return result


async def _awaited(main: Callable[[*PosArgsT], Awaitable[T]], *args: *PosArgsT) -> T:
    made = main(*args)
    checked: object = made  # typed an awaitable; a plain function's value is not
    if not inspect.isawaitable(checked):
        name = getattr(main, "__name__", "")
        name = name if name.isidentifier() else "main"
        raise WrongType(
            f"run_main({name}): {name}() returned {a_kind(checked)}, not an awaitable: "
            f"give run_main an async function (async def {name}(): ...)"
        )
    return await made


def _not_callable(main: object) -> str:
    if inspect.iscoroutine(main):
        name = main.__name__
        main.close()  # never run: no "was never awaited" warning on top of this error
        return (
            f"run_main takes the async function, not a call of it: run_main({name}), "
            f"not run_main({name}())"
        )
    return f"run_main(main) takes an async function (async def main(): ...); got {a_kind(main)}"

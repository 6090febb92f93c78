"""``regiment runs`` and ``regiment show``: what they print, out on stdout or an error."""

from __future__ import annotations

import argparse
import errno
import io
from collections.abc import Awaitable, Callable
from typing import TextIO

from regiment.cli._exit import was_closed

__all__ = ("printed",)

Command = Callable[[argparse.Namespace, str, TextIO], Awaitable[int]]


async def printed(
    command: Command, args: argparse.Namespace, spec: str, stdout: TextIO, stderr: TextIO
) -> int:
    """Run ``command`` (``runs_command``, ``show_command``) and write what it prints to
    ``stdout``. A stdout the command was started without (``>&-``) or one that fails (a
    full disk) is not a success: a line on stderr says so, and the code is 1 (printed
    into /dev/null, the listing was lost and the command said 0). A reader that left
    (``BrokenPipeError``) ends the command quietly, as elsewhere."""
    text = io.StringIO()
    code = await command(args, spec, text)
    try:
        if was_closed(stdout):
            raise OSError(errno.EBADF, "stdout is closed")
        stdout.write(text.getvalue())
        stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        why = exc.strerror or str(exc)
        print(
            f"regiment: error: the {args.command} output could not be written to stdout "
            f"({why}); run it again with a stdout that can be written",
            file=stderr,
        )
        return 1
    return code

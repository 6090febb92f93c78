"""What ``regiment runs``, ``show``, ``approvals``, ``approve`` and ``validate`` print:
out on stdout, or an error that says it is not."""

from __future__ import annotations

import errno
import io
from collections.abc import Awaitable, Callable
from typing import TextIO

from regiment.cli._exit import was_closed

__all__ = ("printed", "put_out")


_AGAIN = "run it again with a stdout that can be written"
_DONE = {"approve": "the decision was recorded all the same (regiment approvals lists what waits)"}


async def printed(
    command: Callable[[TextIO], Awaitable[int]], name: str, stdout: TextIO, stderr: TextIO
) -> int:
    """Run ``command`` (given where to print) and write what it printed to ``stdout``
    (``put_out``); its code, or 1 if that failed."""
    text = io.StringIO()
    code = await command(text)
    return put_out(text.getvalue(), name, stdout, stderr) or code


def put_out(text: str, name: str, stdout: TextIO, stderr: TextIO) -> int:
    """Write ``text``, what the command ``name`` printed, to ``stdout``: 0, or 1 with a
    line on stderr if it could not be (a stdout the command was started without, ``>&-``,
    printed into /dev/null and said 0; a full disk ended it with a traceback). A reader
    that left (``BrokenPipeError``) ends the command quietly, as elsewhere."""
    if not text:  # nothing to lose (a command that failed, say, and said why on stderr)
        return 0
    try:
        if was_closed(stdout):
            raise OSError(errno.EBADF, "stdout is closed")
        stdout.write(text)
        stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        why = exc.strerror or str(exc)
        print(
            f"regiment: error: the {name} output could not be written to stdout "
            f"({why}); {_DONE.get(name, _AGAIN)}",
            file=stderr,
        )
        return 1
    return 0

"""A stdio MCP server that outlives the process that started it is stopped.

The SDK stops a server by closing its stdin, then signalling its process group; a
process killed outright (SIGKILL, the OOM killer, a Ray replica killed) does none of
that, and a server that ignores the end of its stdin ran on, orphaned. On Linux each
server is therefore started through a small guard: ``python -I -S -c GUARD OWNER
COMMAND ARGS...``. The guard forks a watchdog and execs the server in its own place
(same process id, same process group, the SDK's pipes), so the server is what the SDK
started. The watchdog, in the server's process group, waits on two process file
descriptors, the owner's and the server's: when the owner ends first, it sends the group
SIGTERM, then SIGKILL 2 s later, as the SDK's own stop would have. When the server ends
first (its stdin closed, a crash), whatever it left running in its group (a child it
started and did not stop) gets the same: the SDK signals the group only for a server
still running 2 s after its stdin closed, so such a child ran on as long as this process
did. No polling for the owner, and no parent-death signal (``PR_SET_PDEATHSIG``
follows the thread that forked, and trio spawns from worker threads that come and go).

Elsewhere (no ``os.pidfd_open``: another system, or a kernel before 5.3) the server is
started as it is, unguarded.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from mcp.client import Transport

    from regiment.tools._mcp_server import StdioTransport

__all__ = ("find_command", "guarded", "stdio_transport")

# Runs with -I -S (no site, no user paths): a few milliseconds, whatever the
# environment. argv: OWNER_PID EXECUTABLE ARGV0 ARGS...
_GUARD = """
import os, select, signal, sys, time
owner, executable, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
try:
    watched = os.pidfd_open(owner)
except ProcessLookupError:
    os._exit(1)
if os.getppid() != owner:
    os._exit(1)
server = os.getpid()
def others():
    me, group = os.getpid(), os.getpgrp()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False
if os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.closerange(0, 2)
    try:
        mine = os.pidfd_open(server)
    except ProcessLookupError:
        os._exit(0)
    ready = select.select([watched, mine], [], [])[0]
    if watched in ready and mine not in ready:
        os.killpg(0, signal.SIGTERM)
        select.select([mine], [], [], 2.0)
        os.killpg(0, signal.SIGKILL)
    elif others():
        os.killpg(0, signal.SIGTERM)
        end = time.monotonic() + 2.0
        while others() and time.monotonic() < end:
            time.sleep(0.05)
        if others():
            os.killpg(0, signal.SIGKILL)
    os._exit(0)
os.close(watched)
try:
    os.execv(executable, argv)
except OSError as exc:
    print(f"cannot run {executable}: {exc}", file=sys.stderr, flush=True)
    os._exit(127)
"""


def guarded(
    command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None
) -> tuple[str, list[str]]:
    """The command line that runs ``command args`` guarded (see the module's docstring),
    or as it is where guarding is not possible.

    Raises:
        FileNotFoundError: ``command`` is not found (on ``env``'s ``PATH``, or at its path).
        PermissionError: ``command`` is a file that cannot be executed.
    """
    if not _can_guard():
        return command, list(args)
    executable = find_command(command, env, cwd)
    owner = str(os.getpid())
    return sys.executable, ["-I", "-S", "-c", _GUARD, owner, executable, command, *args]


@functools.cache
def _can_guard() -> bool:
    if sys.platform != "linux" or not hasattr(os, "pidfd_open") or not sys.executable:
        return False  # (an embedded interpreter may have no executable to run the guard)
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # a kernel before 5.3, or a sandbox that refuses it
        return False
    return True


def find_command(command: str, env: Mapping[str, str], cwd: str | None) -> str:
    """Where ``command`` is, as the SDK's own start would find it (on ``env``'s ``PATH``,
    or, with a path separator in it, relative to ``cwd``, else to this process's
    directory); its error otherwise (a ``FileNotFoundError`` or ``PermissionError``)."""
    if os.sep in command:
        path = os.path.join(cwd or os.getcwd(), command)
        if not os.path.isfile(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
        if not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
        return path
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:  # the words say where it was looked for
        raise FileNotFoundError(errno.ENOENT, "No such command on PATH", command)
    return found


def stdio_transport(transport: StdioTransport) -> Transport:
    """The SDK's stdio transport, the server guarded against outliving this process."""
    from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

    env = None if transport.env is None else dict(transport.env)
    command, args = guarded(
        transport.command, transport.args, get_default_environment() | (env or {}), transport.cwd
    )
    params = StdioServerParameters(command=command, args=args, env=env, cwd=transport.cwd)
    return stdio_client(params, errlog=_errlog())


def _errlog() -> TextIO:
    """Where a stdio server's stderr goes: ours, or the process's own when ours is no file
    (a notebook's, or a test's capture): a child process can only write to a file."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ or sys.stderr
    return sys.stderr

"""A local Ray that this process started ends with it, even when it is killed outright.

At a normal exit (or a SIGTERM, or a second Ctrl-C) the join's exit hooks stop the
local Ray and wait for its processes. A process killed outright (SIGKILL, the OOM
killer) runs none of that: its head (the GCS server and the raylet) dies with it
(the parent-death signal of the thread that started it), and so do the replicas'
workers a moment later, but the head's agents (``ray::DashboardAgent``,
``ray::RuntimeEnvAgent``) ran on, orphaned, holding their memory until someone
stopped them by hand. So on Linux a small watchdog is started with the local Ray:
``python -I -S -c WATCH OWNER PIDS...``, detached (its own session, not a child of
this process). It holds process file descriptors of this process and of the local
Ray's processes; when this process ends, it sends those still running SIGTERM, and
SIGKILL 2 s later. No polling; a process file descriptor never names a later process
that reused a pid. Elsewhere (no ``os.pidfd_open``) there is no watchdog.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence

__all__ = ("watch_local_ray",)

_log = logging.getLogger("regiment.ray")

# Runs with -I -S (no site, no user paths). argv: OWNER_PID PID... Forks: the parent
# exits once the child holds its descriptors, so the watchdog is nobody's child here.
_WATCH = """
import os, select, signal, sys
owner, pids = int(sys.argv[1]), [int(p) for p in sys.argv[2:]]
if os.fork():
    os._exit(0)
os.setsid()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
try:
    watched = os.pidfd_open(owner)
except ProcessLookupError:
    watched = None
ray = []
for pid in pids:
    try:
        ray.append(os.pidfd_open(pid))
    except OSError:
        pass
sys.stdout.write("watching\\n")
sys.stdout.flush()
os.closerange(0, 3)
if watched is not None:
    select.select([watched], [], [])
for number, sent in enumerate((signal.SIGTERM, signal.SIGKILL)):
    for fd in ray:
        try:
            signal.pidfd_send_signal(fd, sent)
        except OSError:
            pass
    if number == 0:
        left = list(ray)
        while left:
            ended = select.select(left, [], [], 2.0)[0]
            if not ended:
                break
            left = [fd for fd in left if fd not in ended]
        ray = left
os._exit(0)
"""


def watch_local_ray(pids: Sequence[int]) -> None:
    """Start the watchdog of the local Ray processes ``pids`` (none: a Ray this process
    joined, which is not its to stop), and return once it holds them."""
    if not pids or not hasattr(os, "pidfd_open"):
        return
    argv = [sys.executable, "-I", "-S", "-c", _WATCH, str(os.getpid()), *map(str, pids)]
    try:
        # The forked watchdog says "watching" once it holds the descriptors; its
        # parent, this process's child, has exited by the time the pipe is read out.
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=30,
            check=False,
            start_new_session=True,
        )
        if done.stdout != b"watching\n":
            raise RuntimeError(f"it exited {done.returncode} and said {done.stdout!r}")
    except Exception as exc:  # the Ray still runs; only a kill of this process leaks it
        _log.warning(
            "could not start the watchdog that stops the local Ray this process started if "
            "the process is killed outright (%s: %s); its agents would outlive a SIGKILL",
            type(exc).__name__,
            exc,
        )

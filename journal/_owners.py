"""Lease owners: how this process names itself, and whether a named owner has provably died.

An owner is ``host:pid:stamp``. The stamp (Linux only) says which process that pid was:
``BOOT.PIDNS.START``, the first 8 characters of the kernel's boot id, the inode of the
process's pid namespace and its start time in clock ticks since boot
(``/proc/PID/stat``, field 22). With it, a process on the same machine, in the same pid
namespace, can tell that the owner is gone: its pid no longer runs, is a zombie, or now
belongs to a process started at another time (the pid was reused). A resume then need
not wait out the dead owner's lease.

Anything it cannot prove counts as alive, and the lease is waited out as before: an
owner on another host, another boot or another pid namespace (a container that shares
the host's name), a process that still runs, no ``/proc``, and the ``host:pid`` owners
that journals written before the stamp hold (still read, shown and compared as they are).
"""

from __future__ import annotations

import functools
import logging
import os
import socket
from collections.abc import Iterable
from pathlib import Path

__all__ = ("describe_owner", "local_owner", "owners_gone", "process_owner")

_log = logging.getLogger("regiment.journal")
_PROC = Path("/proc")


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:  # no /proc (not Linux), or the process is gone
        return None


def _start_and_state(pid: int) -> tuple[str, str] | None:
    """The process's start time (ticks since boot) and state letter, if it exists."""
    stat = _read(_PROC / str(pid) / "stat")
    if stat is None:
        return None
    # "pid (comm) state ..." where comm may hold spaces and parentheses: cut at the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19], fields[0]  # field 22 and field 3 of the whole line


def _machine() -> str | None:
    """This kernel boot and pid namespace, as a stamp's first two parts; None off Linux."""
    boot = _read(_PROC / "sys" / "kernel" / "random" / "boot_id")
    try:
        namespace = os.stat(_PROC / "self" / "ns" / "pid").st_ino
    except OSError:
        return None
    return None if boot is None else f"{boot.strip()[:8]}.{namespace}"


def process_owner() -> str:
    """This process, as a lease owner: ``host:pid:stamp`` (``host:pid`` where there is no
    ``/proc`` to stamp it from)."""
    pid = os.getpid()
    stamp = _own_stamp(pid)
    name = f"{socket.gethostname()}:{pid}"
    return name if stamp is None else f"{name}:{stamp}"


@functools.cache  # what a live process's pid names never changes; a fork asks with its own
def _own_stamp(pid: int) -> str | None:
    """The stamp of this process (``pid`` is ``os.getpid()``): read once, not per run, as
    the three reads of ``/proc`` take about 60 us."""
    machine, process = _machine(), _start_and_state(pid)
    return None if machine is None or process is None else f"{machine}.{process[0]}"


def local_owner(owner: str) -> tuple[int, bool] | None:
    """``(pid, gone)`` when ``owner`` (as :func:`process_owner` named it) is a process of
    this machine and pid namespace, ``gone`` if it no longer runs; ``None`` when that
    cannot be told (another host, boot or pid namespace, or an owner without a stamp)."""
    local = _local(owner)
    if local is not None and local[1]:
        _log.info(
            "lease owner %r is gone (process %s no longer runs on %s); its lease counts as lapsed",
            owner,
            local[0],
            socket.gethostname(),
        )
    return local


def owners_gone(owners: Iterable[str]) -> set[str]:
    """Which of ``owners`` are processes of this machine that are gone (see
    :func:`local_owner`): a run listing asks once per owner, not per run, and logs nothing."""
    gone = set()
    for owner in set(owners):
        local = _local(owner)
        if local is not None and local[1]:
            gone.add(owner)
    return gone


def _local(owner: str) -> tuple[int, bool] | None:
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return None
    _, pid, stamp = parts
    machine, _, start = stamp.rpartition(".")
    if not machine or machine != _machine():
        return None  # its pids are not ours to look up
    now = _start_and_state(int(pid))
    return int(pid), now is None or now[1] in ("Z", "X") or now[0] != start


def describe_owner(owner: str) -> str:
    """An owner (``host:pid:stamp``, or ``host:pid`` in older journals) as people say it."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    return f"pid {pid} on {host} ({owner})" if pid.isdigit() else repr(owner)

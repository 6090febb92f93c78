"""A Ray replica runs the regiment its team's process runs, or refuses to start.

The replica's actor class is the caller's :class:`StepHost` under a subclass made in
:func:`checked_host`: defined inside a function, Ray's cloudpickle ships its code by
value, so the check runs first on the replica whatever regiment the replica's node
has (an older one that has no such check, nor this module, included). The replica
compares its own regiment (version, :data:`WIRE_FORMAT`, and a digest of the sources of
the modules on both ends of the Ray wire) with the caller's :func:`caller_stamp`, and a
mismatch fails its start with a ``ConfigError`` naming both regiments and what to do,
rather than an ``AttributeError`` or a dead actor at the first step.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from pathlib import Path
from typing import Any, NamedTuple

from regiment._version import __version__
from regiment.errors import ConfigError

__all__ = ("WIRE_FORMAT", "Stamp", "caller_stamp", "checked_host", "mismatch")

WIRE_FORMAT = 1
"""What crosses between a caller and its replicas (the calls, the bytes); raised
whenever it changes. A regiment that predates the number counts as ``0``."""

_HERE = "regiment.hierarchy.workers._ray_version"  # (by name: the replica's own, if any)
_WIRE_GLOBS = ("_ray*.py", "_wire.py")  # in hierarchy/workers: both ends of the wire


class Stamp(NamedTuple):
    """Which regiment a process runs: its version, wire format, the digest of its Ray
    wire modules' sources (``""``: not readable), and the directory it is loaded from."""

    version: str
    wire: int
    digest: str
    path: str


def wire_digest(package: Path) -> str:
    """The digest of ``package``'s Ray wire modules' sources (``""`` if unreadable)."""
    found = sorted(p for g in _WIRE_GLOBS for p in (package / "hierarchy" / "workers").glob(g))
    digest = hashlib.sha256()
    try:
        for path in found:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    except OSError:
        return ""
    return digest.hexdigest()[:16] if found else ""


@functools.cache
def caller_stamp() -> Stamp:
    """This process's regiment."""
    package = Path(__file__).resolve().parents[2]
    return Stamp(__version__, WIRE_FORMAT, wire_digest(package), str(package))


def mismatch(caller: Stamp, replica: Stamp) -> str | None:
    """Why a replica running ``replica`` cannot serve ``caller`` (``None``: it can)."""
    same_code = not caller.digest or not replica.digest or caller.digest == replica.digest
    if (caller.version, caller.wire) == (replica.version, replica.wire) and same_code:
        return None
    differ = "" if same_code else ", its Ray modules' sources differ from the caller's"

    def named(stamp: Stamp, extra: str = "") -> str:
        return f"regiment {stamp.version} (wire format {stamp.wire}{extra}) from {stamp.path}"

    return (
        f"the Ray replica runs {named(replica, differ)}, but the team's process runs "
        f"{named(caller)}; a replica must run the same regiment as its caller: install "
        "this regiment on the cluster's nodes, or put its directory's parent first on their "
        "PYTHONPATH (ray.init(runtime_env={'env_vars': {'PYTHONPATH': ...}}))"
    )


@functools.cache
def checked_host(ray: Any, host: type) -> type:
    """``host`` (:class:`StepHost`) under a subclass whose ``__init__`` takes the caller's
    stamp first and refuses, before building anything, a replica running another regiment.
    This module's code goes to the replicas by value (``ray``'s cloudpickle): a replica
    whose regiment lacks it, or has another, runs the caller's check."""
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

    def replica_stamp() -> Stamp:  # the replica's own regiment (this code runs there)
        import importlib

        import regiment

        package = Path(regiment.__file__).resolve().parent
        try:
            wire = int(importlib.import_module(_HERE).WIRE_FORMAT)
        except (ImportError, AttributeError):
            wire = 0
        return Stamp(str(regiment.__version__), wire, wire_digest(package), str(package))

    class CheckedHost(host):  # type: ignore[misc]
        def __init__(self, caller: tuple[str, int, str, str], *args: Any) -> None:
            why = mismatch(Stamp(*caller), replica_stamp())
            if why is not None:
                raise ConfigError(why)
            super().__init__(*args)

    CheckedHost.__name__ = CheckedHost.__qualname__ = host.__name__
    return CheckedHost

"""A Ray replica runs the regiment its team's process runs, or refuses to start.

The replica's actor class, made in :func:`checked_host`, stands for the caller's
:class:`StepHost`: defined inside a function, Ray's cloudpickle ships its code by value,
so the check runs first on the replica whatever regiment the replica's node has (an
older one that has no such check, nor this module, nor ``StepHost`` at all, included:
the class names ``StepHost`` only by its module's name and its own, and imports it once
the check has passed, so its absence cannot fail the class's load with Ray's own
``ModuleNotFoundError``). The replica compares its own regiment (version,
:data:`WIRE_FORMAT`, and a digest of the sources of the modules on both ends of the Ray
wire) with the caller's :func:`caller_stamp`, and a mismatch fails its start with a
``ConfigError`` naming both regiments and what to do, rather than an ``AttributeError``
or a dead actor at the first step.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
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
    """An actor class for ``host`` (:class:`StepHost`) whose ``__init__`` takes the caller's
    stamp first and refuses, before building anything, a replica running another regiment;
    then it builds ``host`` (imported there by name) and hands each of ``host``'s public
    methods to it. This module's code goes to the replicas by value (``ray``'s
    cloudpickle): a replica whose regiment lacks it, or has another, or has no ``host``,
    runs the caller's check."""
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    where, name = host.__module__, host.__qualname__  # (by name: the class is the replica's)

    def replica_stamp() -> Stamp:  # the replica's own regiment (this code runs there)
        import regiment

        package = Path(regiment.__file__).resolve().parent
        try:
            wire = int(importlib.import_module(_HERE).WIRE_FORMAT)
        except (ImportError, AttributeError):
            wire = 0
        return Stamp(str(regiment.__version__), wire, wire_digest(package), str(package))

    class CheckedHost:
        def __init__(self, caller: tuple[str, int, str, str], *args: Any) -> None:
            why = mismatch(Stamp(*caller), replica_stamp())
            if why is not None:
                raise ConfigError(why)
            self._host = getattr(importlib.import_module(where), name)(*args)

    for method, function in inspect.getmembers(host, inspect.isfunction):
        if not method.startswith("_"):
            setattr(CheckedHost, method, _handed(method, function))
    CheckedHost.__name__ = CheckedHost.__qualname__ = host.__name__
    return CheckedHost


def _handed(method: str, function: Any) -> Any:
    """A method of the actor class that calls ``method`` of its ``_host`` (as ``function``
    is: an async generator, a coroutine or a plain function, which Ray reads to call it)."""
    if inspect.isasyncgenfunction(function):

        async def handed(self: Any, *args: Any, **kwargs: Any) -> Any:
            # (closed here, not left to the garbage collector, when Ray cancels or closes it)
            async with contextlib.aclosing(getattr(self._host, method)(*args, **kwargs)) as it:
                async for item in it:
                    yield item

    elif inspect.iscoroutinefunction(function):

        async def handed(self: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            return await getattr(self._host, method)(*args, **kwargs)

    else:

        def handed(self: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(self._host, method)(*args, **kwargs)

    handed.__name__ = handed.__qualname__ = method
    handed.__doc__ = function.__doc__
    return handed

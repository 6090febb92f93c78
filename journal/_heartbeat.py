"""The heartbeat that keeps a lease alive while its owner works on the run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from regiment.errors import ConfigError
from regiment.journal._protocol import Journal
from regiment.journal._views import Lease

__all__ = ("heartbeat",)


async def heartbeat(
    journal: Journal,
    lease: Lease,
    *,
    ttl: float,
    every: float | None = None,
    sleep: Callable[[float], Awaitable[object]] = anyio.sleep,
    commit_every: float | None = None,
) -> None:
    """Renew ``lease`` every ``every`` seconds (default ``ttl / 3``) until cancelled.

    Start it next to the run's work in the same task group and cancel it when the
    run ends. It returns only by raising: ``LeaseLost`` when another owner took the
    run over (the work must stop: its writes are refused anyway), or another
    ``JournalError`` when the journal cannot be written.

    Args:
        journal: where the run is.
        lease: the lease ``create_run`` or ``acquire`` returned.
        ttl: how long each renewal keeps the lease alive.
        every: seconds between renewals; must be shorter than ``ttl``.
        sleep: what waits between renewals (tests pass one that moves a fake clock).
        commit_every: also commit what the journal holds uncommitted (``flush``) every
            so many seconds between renewals: records appended without ``durable``
            wait in the journal's buffer for the next commit, and a crash of the
            process loses those still there (``None``: only the renewals commit).

    Raises:
        ConfigError: ``every`` is not between 0 and ``ttl``, or ``commit_every`` is not above 0.
    """
    interval = ttl / 3 if every is None else every
    if not 0 < interval < ttl:
        raise ConfigError(f"heartbeat every={interval} s must be above 0 and below ttl={ttl} s")
    if commit_every is not None and not 0 < commit_every < float("inf"):
        raise ConfigError(f"heartbeat commit_every={commit_every} s must be a number above 0")
    tick = interval if commit_every is None else min(interval, commit_every)
    ticks = max(1, round(interval / tick))  # a renewal every so many ticks
    tick = interval / ticks
    n = 0
    while True:
        await sleep(tick)
        n += 1
        if n % ticks == 0:
            lease = await journal.renew(lease, ttl=ttl)
        else:
            await journal.flush()

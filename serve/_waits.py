"""A ``?wait=true`` request's wait for its run's end, wherever the run runs.

A run this process drives is waited for on its record (``Runs.wait``). A run another
process runs (one sharing the journal: a keyed retry of a post that process took, or a
run it took over from this one) tells this process nothing as it goes: its status is
read from the journal (every ``POLL`` s, one read for all the waits and followers of it
here: ``Watch``) until it no longer goes on (ended; paused, once its pause's
``RunCompleted`` is journaled; or stalled: its process stopped, see ``going``), or this
process runs it now (a resume here), or the client hangs up: that ends the wait, never
the run (it is not this process's to cancel).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping

import anyio

from regiment.errors import JournalError

from ._polls import going
from ._registry import RunRecord
from ._service import Service

__all__ = ("waited",)

log = logging.getLogger("regiment.serve")

Receive = Callable[[], Awaitable[MutableMapping[str, object]]]


async def waited(s: Service, record: RunRecord, receive: Receive, *, cancels: bool) -> RunRecord:
    """The run of ``record`` once it has ended (or paused, or stalled), or as it is once the
    request's client has left (``cancels``: that cancels a run this process drives)."""
    runs = s.live()
    await runs.wait(record, receive, cancels=cancels)
    latest = await s.latest(record)
    while _elsewhere(s, latest) and await _watched(s, latest, receive):
        latest = await s.find(latest.run_id) or latest
        await runs.wait(latest, receive, cancels=False)  # resumed here since: not this post's
        latest = await s.latest(latest)
    return latest


def _elsewhere(s: Service, record: RunRecord) -> bool:
    """Whether ``record`` is the journal's view of a run another process runs now."""
    return (
        s.watches is not None
        and going(record)
        and s.store.get(record.run_id) is not record
        and (s.runs is None or s.runs.resuming(record.run_id) is None)
    )


async def _watched(s: Service, record: RunRecord, receive: Receive) -> bool:
    """Wait, on the run's ``Watch``, until the run of ``record`` (the journal's view) does
    not go on elsewhere any more: ``True``; or until the client hangs up: ``False``.

    Raises:
        JournalError: the journal could not be read meanwhile.
    """
    assert s.watches is not None
    left, run_id = False, record.run_id
    log.debug("a request waits for a run another process runs", extra={"run_id": run_id})
    watch = s.watches.join(record)
    try:
        async with anyio.create_task_group() as tg:

            async def hang_up() -> None:
                nonlocal left
                while (await receive())["type"] != "http.disconnect":
                    pass
                left = True
                tg.cancel_scope.cancel()

            tg.start_soon(hang_up)
            while not watch.over:
                await watch.changed.wait()
            tg.cancel_scope.cancel()
    finally:
        s.watches.leave(watch)
    if left:
        log.debug("a waiting request's client left; the run goes on", extra={"run_id": run_id})
    elif watch.failed is not None:  # (one error for each wait: they all read it)
        raise JournalError(str(watch.failed)) from watch.failed
    return not left

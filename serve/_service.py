"""What the app's routes share: its runs (while the lifespan is up), its journal, its token."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from starlette.requests import Request

from regiment._text import shown
from regiment.errors import UnknownRun
from regiment.journal import Journal, top_run_id

from ._http import ApiError, ticketed, under
from ._journaled import journaled_record, journaled_runs
from ._keys import Keys
from ._registry import RunRecord, RunStore
from ._runs import Runs
from ._views import run_view

if TYPE_CHECKING:
    from ._polls import Watches

__all__ = ("Service",)

_FINAL = frozenset(("completed", "partial", "failed", "cancelled"))
"""The statuses of a run that has ended for good (a resume refuses it)."""


@final
class Service:
    """What the routes share: the runs (while the lifespan is up), the token."""

    def __init__(self, store: RunStore, token: str | None, keepalive: float) -> None:
        self.store = store
        self.token = token
        self.keepalive = keepalive
        self.runs: Runs | None = None
        self.journal: Journal | None = None  # open while the lifespan is up, if given
        self.watches: Watches | None = None  # with the journal: runs read there (``_polls``)
        self.keys = Keys()  # the Idempotency-Keys of POST /runs (see ``_keys``)

    def stop_runs(self) -> int:
        """Cancel every live run now, as the app's shutdown would: requests waiting on
        them answer, followers get their last event (a server waits for its open
        requests before it runs the app's shutdown). How many there were."""
        return 0 if self.runs is None else self.runs.cancel_all()

    def starting(self) -> Runs:
        """The runs, to start one; 503 once the server has begun to stop."""
        runs = self.live()
        if runs.stopping:  # else a ?wait=true run started now held the stop until it ended
            detail = (
                "the service is stopping and starts no more runs: post it again once it is back"
            )
            raise ApiError(503, "stopping", detail)
        return runs

    def live(self) -> Runs:
        if self.runs is None:
            raise ApiError(
                503,
                "not started",
                "the team is not started: run the app's lifespan (when mounting it, "
                "pass lifespan=app.router.lifespan_context to the outer app)",
            )
        return self.runs

    async def record(self, request: Request, *, as_followed: bool = False) -> RunRecord:
        """The run this process drives or drove, else the journal's; 404 if neither has it
        (see ``find``)."""
        run_id = request.path_params["run_id"]
        record = await self.find(run_id, as_followed=as_followed)
        if record is None:
            raise self.unknown(request, run_id)
        return record

    async def find(self, run_id: str, *, as_followed: bool = False) -> RunRecord | None:
        """The run this process drives or drove, else the journal's (``None``: neither has it).

        A run whose resume this process is starting is ``running``, with the events its
        journal had (its lease's write may wait for the journal a long while, and
        the journal's view meanwhile said ``stalled``, or ``running`` "in another process").
        A run another process took over from this one is the journal's view of it, but
        ``as_followed``: this process's record, whose events its followers got, ending with
        the ``RunFailed`` (``LeaseLost``) that says who took it over.
        """
        resuming = None if self.runs is None else self.runs.resuming(run_id)
        if resuming is not None and resuming.record is not None:
            return resuming.record
        record = self.store.get(run_id)
        if record is not None:
            return record if as_followed else await self.latest(record)
        return None if self.journal is None else await journaled_record(self.journal, run_id)

    async def known(self, run_id: str) -> bool:
        """Whether this process or the journal has the run (lighter than ``find``)."""
        if self.store.get(run_id) is not None:
            return True
        if self.runs is not None and self.runs.resuming(run_id) is not None:
            return True
        if self.journal is None:
            return False
        try:
            await self.journal.get_run(run_id)
        except UnknownRun:
            return False
        return True

    def here(self, run_id: str) -> bool:
        """Whether this process runs the run now, or is resuming it (or ran it, and another
        process took it over: its followers here get the end this process gave it)."""
        resuming = self.runs is not None and self.runs.resuming(run_id) is not None
        return resuming or self.store.get(run_id) is not None

    def unknown(self, request: Request, run_id: str) -> ApiError:
        """The 404 for a run neither this process nor the journal has."""
        detail = f"no run {shown(run_id)}; GET {under(request, '/runs')} lists them"
        if self.journal is None:  # it may have ended long ago and been forgotten
            detail += (
                " (without a journal the app keeps only its latest ended runs: "
                "serve with a journal to answer about every run)"
            )
        return ApiError(404, "unknown run", detail)

    def over(self, record: RunRecord) -> bool:
        """Whether ``record``'s run has ended for good: no event will ever follow its last
        (not paused or stalled, which a resume goes on with; not taken over, nor resuming)."""
        return (
            record.status in _FINAL
            and record.ended.is_set()
            and record.taken_over is None
            and (self.runs is None or self.runs.resuming(record.run_id) is None)
        )

    def top_here(self, run_id: str) -> str | None:
        """The top run of ``run_id``, a nested team's run, if this process runs it now."""
        top = top_run_id(run_id)
        record = None if top is None else self.store.get(top)
        if record is None or record.ended.is_set() or record.taken_over is not None:
            return None
        return top

    async def cancel_paused(self, run_id: str) -> bool:
        """Cancel a run paused for approvals (``RunningTeam.cancel_paused``); this process's
        record of it ends as the journal's does. Whether it was paused (and is cancelled)."""
        ended = await self.live().running.cancel_paused(run_id)
        if ended is not None and self.store.get(run_id) is not None:
            self.store.append(run_id, ended)
        return ended is not None

    async def latest(self, record: RunRecord) -> RunRecord:
        """``record``, or, if another process took its run over from this one, the run as
        the journal has it (as its new owner runs it)."""
        if record.taken_over is None or self.journal is None:
            return record
        return await journaled_record(self.journal, record.run_id) or record

    async def view(self, record: RunRecord, root: str) -> dict[str, object]:
        """``run_view``, with the requests a paused run waits for now (a stalled one's too:
        its process may have died before it got to its pause)."""
        paused = record.status in ("paused", "stalled") and self.runs is not None
        pending = await self.live().running.pending_approvals(record.run_id) if paused else ()
        return ticketed(run_view(record, root, pending), self.token, record.run_id)

    async def records(self, status: str | None, limit: int) -> list[RunRecord]:
        """At most ``limit`` runs: this process's (the one started or resumed last first),
        then, with a journal, the journal's others, newest first (one query). A run
        another process took over from this one is listed as the journal has it; one whose
        resume is starting here, ``running``, first (see ``find``)."""
        resumes = [] if self.runs is None else self.runs.resumes()
        starting = {r.run_id for r in resumes}
        own = [r for r in resumes if status in (None, r.status)] + [
            r for r in self.store.list(status) if r.taken_over is None and r.run_id not in starting
        ]
        own = own[:limit]
        if self.journal is None or len(own) == limit:
            return own
        seen = {r.run_id for r in self.store.list() if r.taken_over is None} | starting
        left = limit - len(own)
        journaled = await journaled_runs(self.journal, status, left + len(seen))
        return own + [r for r in journaled if r.run_id not in seen][:left]

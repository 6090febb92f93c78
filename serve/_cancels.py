"""``POST /runs/{run_id}/cancel``: what it does to each kind of run, and what it answers.

A live run here is cancelled (its cancel scope); one whose end has come is not (its end
is being journaled: it ends as it did, and the answer says so); a paused one is ended
``cancelled`` in the journal (``RunningTeam.cancel_paused``), and so is one stalled
mid-work (its process died), from its journal alone, nothing of it run again. ``"cancelling": false``
always comes with a ``detail`` saying why, and what to do if anything.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from regiment.errors import LeaseHeld
from regiment.hierarchy import RunCompleted, RunFailed
from regiment.journal import top_run_id

from ._http import ApiError, json_response, under
from ._registry import RunRecord
from ._service import Service

__all__ = ("cancel_run",)


async def cancel_run(s: Service, request: Request) -> Response:
    """The route: 202 with ``cancelling`` (and, when false, a ``detail``)."""
    record = await s.record(request)
    run_id, runs = record.run_id, s.live()
    cancelled = runs.cancel(run_id)
    ending = None if cancelled else runs.closing(run_id)
    if isinstance(ending, RunCompleted) and ending.result.status == "paused":
        # It paused just now: once the pause is journaled, it is cancelled as a paused run.
        await record.ended.wait()
        ending = None
    # No task to cancel: paused (waits for approvals), or stalled (maybe paused, its
    # requests decided since, not resumed: cancel_paused tells). Its lease's write waits
    # for the journal's lock at most the journal's own timeout, then a 503 (logged).
    if not cancelled and ending is None and record.status in ("paused", "stalled"):
        try:  # (stalled mid-work: ended from its journal alone, nothing of it run again)
            cancelled = await s.cancel_paused(run_id)
        except LeaseHeld as exc:  # stalled mid-work, and another process took it up since
            raise ApiError(409, "cannot cancel", _taken_up(run_id, exc)) from exc
        # A resume here that took the run's lease first: it is live now, cancel it
        cancelled = cancelled or runs.cancel(run_id)
    body: dict[str, object] = {"run_id": run_id, "cancelling": cancelled}
    if not cancelled:  # its record read again: a cancel posted with this one ended it, say
        now = record if ending is not None else await s.find(run_id) or record
        body |= _why_not(s, request, now, ending)
    return json_response(body, 202)


def _why_not(
    s: Service, request: Request, record: RunRecord, ending: RunCompleted | RunFailed | None
) -> dict[str, object]:
    """Why a run was not cancelled: a ``detail``, and the run's ``status`` if it ended."""
    run_id, shows = record.run_id, f"GET {under(request, f'/runs/{record.run_id}')} shows it"
    if ending is not None:
        status = _outcome(ending)
        detail = (
            f"run {run_id} has already ended ({status}): its end came before the cancel, "
            f"and is being journaled; the cancel changes nothing. {shows}"
        )
        return {"status": status, "detail": detail}
    if (top := s.top_here(run_id)) is not None:
        detail = (
            f"run {run_id} is the run of a nested team in run {top}, which this service "
            f"runs: it is cancelled with that run (POST {under(request, f'/runs/{top}/cancel')})"
        )
        return {"detail": detail}
    if s.over(record):
        detail = f"run {run_id} has already ended ({record.status}): nothing to cancel. {shows}"
        return {"status": record.status, "detail": detail}
    if (top := top_run_id(run_id)) is not None:  # its top run is not live here
        detail = (
            f"run {run_id} is the run of a nested team in run {top}: it ends with that run "
            f"(POST {under(request, f'/runs/{top}/cancel')} if it is paused or runs here)"
        )
        return {"detail": detail}
    paused = record.result is not None and record.result.status == "paused"
    if record.status == "paused" or (record.status == "stalled" and paused):
        detail = (  # cancel_paused could not take its lease: held by a decision or a resume
            f"run {run_id} is paused, and another process holds it now (resuming it, or "
            f"recording a decision on it): post the cancel again, here if the run is still "
            f"paused, else to the service of the process that resumed it. {shows}"
        )
        raise ApiError(409, "cannot cancel", detail)
    if record.status == "stalled":  # not paused, and not ended by cancel_paused: taken up
        detail = (
            f"run {run_id} was stalled mid-work, and another process took it up as the "
            f"cancel came: post the cancel again, to the service of that process if it runs "
            f"the run now, else here. {shows}"
        )
        raise ApiError(409, "cannot cancel", detail)
    detail = (
        f"run {run_id} is {record.status} in another process that shares this service's "
        f"journal: post the cancel to the service of that process. {shows}"
    )
    return {"detail": detail}


def _taken_up(run_id: str, held: LeaseHeld) -> str:
    """What a cancel of a stalled run that another process took up as it came says: who
    holds it (the journal's words before its advice, which is a resume's: wait or retry)
    and the one thing to do."""
    holder = str(held).partition(": ")[0]  # (run ids and owners have no ": ")
    return (
        f"run {run_id} is no longer stalled: another process took it up just as this cancel "
        f"came ({holder}); to cancel it, post the cancel to the service of that process"
    )


def _outcome(ending: RunCompleted | RunFailed) -> str:
    """The status a run's last event gives it, as ``GET /runs/{id}`` lists it."""
    if isinstance(ending, RunCompleted):
        return ending.result.status
    return "cancelled" if ending.error_type == "RunCancelled" else "failed"

"""``create_app``: the team as a Starlette app (runs, live events, cancel)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, get_args

import anyio
import msgspec
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from regiment._text import shown
from regiment.errors import (
    AlreadyFinished,
    ApprovalError,
    ConfigError,
    JournalError,
    LeaseHeld,
    LeaseLost,
    UnknownRun,
)
from regiment.hierarchy import RunningTeam, Team, to_json
from regiment.journal import (
    Journal,
    JournalSpec,
    not_resumable_alone,
    open_journal,
    top_run_id,
)
from regiment.telemetry import joined_trace

from ._cancels import cancel_run
from ._checks import checked_args
from ._follow import Following
from ._http import (
    ApiError,
    Decision,
    NewRun,
    check_query,
    check_token,
    count,
    flag,
    json_response,
    last_event_id,
    on_api_error,
    on_http_exception,
    on_journal_error,
    read_json,
    ticketed,
    under,
)
from ._keys import Keyed, check_same, idempotency_key, keyed_run_id
from ._live import LiveTap
from ._polls import open_watches
from ._registry import MemoryRunStore, RunRecord, RunState, RunStore
from ._runs import open_runs
from ._service import Service
from ._views import approval_view, decided_view, not_decided, run_listed
from ._waits import waited

__all__ = ("LIST_LIMIT", "create_app")

LIST_LIMIT = 1_000  # GET /runs: the journal's newest runs it lists beside this process's

Handler = Callable[["Service", Request], Coroutine[Any, Any, Response]]


def create_app(
    team: Team | RunningTeam,
    *,
    journal: JournalSpec = None,
    token: str | None = None,
    keepalive: float = 15.0,
    store: RunStore | None = None,
    lease_ttl: float | None = None,
) -> Starlette:
    """The team as a Starlette app to serve or mount under any prefix.

    The app's lifespan starts the team (a ``Team``) and stops it, cancelling
    runs still going; a ``RunningTeam`` is used as it is and left running.

    Args:
        team: the team whose runs the app serves.
        journal: where runs are journaled (a SQLite file path, a ``postgresql://``
            URL, or a ``Journal``, left open for its owner to close): the app answers ``GET
            /runs``, ``/runs/{id}`` and its events from it too, so runs from before a restart
            are listed and replayed (a ``RunningTeam``'s app: from the team's own journal).
        token: if set, every route but ``/health`` needs ``Authorization: Bearer <token>``.
        keepalive: seconds between keep-alive comments on an idle event stream.
        store: where runs are recorded (default: this process's memory, ``MemoryRunStore()``,
            which keeps every live run and the latest 1,000 ended ones; ``keep=n``: ``n``).
        lease_ttl: seconds a journaled run stays this app's without a heartbeat
            (``Team.start(lease_ttl=...)``, 30 by default); only for a ``Team``.

    Raises:
        ConfigError: the token is empty; ``keepalive`` is not a finite number > 0;
            ``lease_ttl`` is under 1 s, has no ``journal``, or comes with a ``RunningTeam``;
            a ``journal`` that is not the one the ``RunningTeam`` journals its runs in.
    """
    journal = checked_args(team, token, keepalive, lease_ttl, journal)
    service = Service(store or MemoryRunStore(), token, keepalive)

    @asynccontextmanager
    async def lifespan(_app: object) -> AsyncIterator[None]:
        async with (
            _journal(journal) as opened,
            open_runs(team, service.store, opened, lease_ttl) as runs,
            open_watches(opened, service.here) as watches,
        ):
            service.runs, service.journal, service.watches = runs, opened, watches
            try:
                yield
            finally:
                service.runs = service.journal = service.watches = None

    app = Starlette(
        routes=_routes(service),
        lifespan=lifespan,
        exception_handlers={
            HTTPException: on_http_exception,
            ApiError: on_api_error,
            JournalError: on_journal_error,  # the journal failed under a route: 503
        },
    )
    app.state.regiment_stop_runs = service.stop_runs  # `regiment serve` calls it as it stops
    app.state.regiment_service = service  # what its routes share (tests watch its runs)
    return app


@asynccontextmanager
async def _journal(spec: JournalSpec) -> AsyncIterator[Journal | None]:
    """The journal ``spec`` names, open for the lifespan (closed after, if opened here)."""
    if spec is None:
        yield None
        return
    opened = await open_journal(spec)
    try:
        yield opened
    finally:
        if opened is not spec:
            with anyio.CancelScope(shield=True):
                await opened.close()


def _routes(s: Service) -> list[Route]:
    def guarded(method: str, path: str, endpoint: Handler, takes: tuple[str, ...]) -> Route:
        said = path.replace("{run_id}", "{id}").replace("{request_id}", "{id}")

        async def call(request: Request) -> Response:
            check_token(request, s.token, ticket="ticket" in takes)
            check_query(request, said, takes)  # a typo is refused, not ignored
            for run_id in (request.path_params.get("run_id"), request.query_params.get("run_id")):
                if run_id is not None and "\x00" in run_id:  # PostgreSQL cannot read it: a 503
                    raise s.unknown(request, run_id)  # (no run has one: the runs refuse NUL)
            return await endpoint(s, request)

        return Route(path, call, methods=[method])

    async def health(request: Request) -> Response:
        try:  # a mount without the lifespan, or a server stopping: not ready for runs
            s.starting()
        except ApiError as exc:
            return json_response({"status": exc.error, "detail": exc.detail}, 503)
        return json_response({"status": "ok"})

    # (``_GUARDED``, below the handlers: every route but /health)
    return [Route("/health", health, methods=["GET"])] + [guarded(*r) for r in _GUARDED]


async def _post_run(s: Service, request: Request) -> Response:
    wait = flag(request, "wait")  # a bad ?wait is refused before a run starts
    key = idempotency_key(request)  # so is a bad Idempotency-Key
    body = await _new_run(request)
    if key is not None:
        return await _post_keyed(s, request, body, key, wait)
    return await _answer(s, request, await _start(s, request, body), wait)


async def _start(
    s: Service, request: Request, body: NewRun, run_id: str | None = None
) -> RunRecord:
    runs = s.starting()
    try:
        with joined_trace(request.headers):  # a caller's traceparent: the run joins its trace
            return await runs.start(body.goal, body.session, body.deps, run_id)
    except JournalError as exc:  # the run could not be journaled: it never started
        if run_id is not None and (found := await s.find(run_id)) is not None:
            return found  # another process sharing the journal started it just now
        detail = f"{exc}; the run was not started: post it again once the journal is back"
        raise ApiError(503, "journal unavailable", detail) from exc
    except ConfigError as exc:  # the team refuses this run (its check says why)
        raise ApiError(422, "cannot start the run", str(exc)) from exc


async def _post_keyed(s: Service, request: Request, body: NewRun, key: str, wait: bool) -> Response:
    """``POST /runs`` with an ``Idempotency-Key``: the run the key names (its body checked
    against the key's first), else a new one under the key's id (see ``_keys``)."""
    run_id, mine = keyed_run_id(key), await s.keys.hold(key)  # (one request of a key at once)
    try:
        keyed, record = s.keys.get(key), await s.find(run_id)
        if keyed is None and record is not None:  # started before a restart, or elsewhere
            keyed = Keyed(run_id, record.goal, record.session, record.deps_hash)
        if keyed is not None:
            check_same(key, keyed, body, under(request, f"/runs/{run_id}"))
        replayed = keyed is not None
        if record is None and not replayed:
            record = await _start(s, request, body, run_id)
            keyed = Keyed.posted(run_id, body)
            if replayed := s.store.get(run_id) is not record:  # another process's, just now
                keyed = Keyed(run_id, record.goal, record.session, record.deps_hash)
                check_same(key, keyed, body, under(request, f"/runs/{run_id}"))
            s.keys.remember(key, keyed)
    finally:
        s.keys.let_go(key, mine)
    if record is None:  # ended long ago, and forgotten (no journal): its id is all there is
        said = {"run_id": run_id, "replayed": True, "detail": s.unknown(request, run_id).detail}
        return json_response(said, 200, {"Idempotent-Replayed": "true"})
    return await _answer(s, request, record, wait, replayed)


async def _resume(s: Service, request: Request) -> Response:
    """``POST /runs/{run_id}/resume``: finish a journaled run that stopped or paused (in the
    run's trace); 202 with its id, or with ``?wait=true`` its view once it has ended."""
    run_id, runs, wait = request.path_params["run_id"], s.starting(), flag(request, "wait")
    if s.journal is None:  # the library's "Team.start(journal=...)" is not this user's door
        detail = (
            "this service keeps no journal, so it cannot resume a run: serve with "
            "--journal PATH_OR_URL (or create_app(team, journal=...))"
        )
        raise ApiError(409, "cannot resume", detail)
    if (top := top_run_id(run_id)) is not None and not await s.known(run_id):
        raise s.unknown(request, run_id)  # not a nested run's 409: there is no such run
    if top is not None:  # the library's words offered running.resume
        how = f"POST {under(request, f'/runs/{top}/resume')}"
        raise ApiError(409, "cannot resume", not_resumable_alone(run_id, how=how) or "")
    try:
        with joined_trace(request.headers):  # the resumed root links to the caller's span
            record = await runs.resume(run_id, follow=under(request, f"/runs/{run_id}/events"))
    except UnknownRun as exc:
        raise s.unknown(request, run_id) from exc
    except AlreadyFinished as exc:  # its words named `regiment show --journal <our path>`
        shows = f"GET {under(request, f'/runs/{run_id}')} shows it"
        detail = f"run {run_id!r} has already finished ({exc.status}); there is nothing to "
        raise ApiError(409, "cannot resume", f"{detail}resume: {shows}") from exc
    except (ConfigError, LeaseHeld, LeaseLost) as exc:  # a changed team, leased elsewhere
        raise ApiError(409, "cannot resume", str(exc)) from exc
    except msgspec.ValidationError as exc:  # read before its lease is taken: nothing changed
        detail = (
            f"run {run_id}'s journal holds a record this regiment cannot read ({exc}): "
            "another program, or a newer regiment, wrote it, so this one cannot go on with "
            f"the run safely; resume it with the regiment that wrote it (GET "
            f"{under(request, f'/runs/{run_id}')} shows what can be read)"
        )
        raise ApiError(409, "cannot resume", detail) from exc
    # any other JournalError (a journal that is down): on_journal_error's 503, logged
    return await _answer(s, request, record, wait)


async def _answer(
    s: Service, request: Request, record: RunRecord, wait: bool, replayed: bool | None = None
) -> Response:
    """A run started (or resumed): 202 with its id and where it is (``Location``), or
    with ``wait`` the run once it has ended (or as it is, once its client has left).
    ``replayed``: posted with an ``Idempotency-Key`` (its client's leaving does not cancel
    the run: it retries), and a retry's answer (200, ``Idempotent-Replayed: true``)."""
    at, said = under(request, ""), {"Idempotent-Replayed": "true"} if replayed else {}
    if not wait:
        headers = {"Location": f"{at}/runs/{record.run_id}"} | said
        view: dict[str, object] = {
            "run_id": record.run_id,
            **({"replayed": True} if replayed else {}),
        }
        return json_response(
            ticketed(view, s.token, record.run_id), 200 if replayed else 202, headers
        )
    record = await waited(s, record, request.receive, cancels=replayed is None)
    return json_response(await s.view(record, at), 200, said or None)


async def _new_run(request: Request) -> NewRun:
    """The body of ``POST /runs``; 422 for an empty goal or deps that are not an object."""
    body = await read_json(request, NewRun)
    if not body.goal.strip():
        raise ApiError(422, "invalid body", "the goal is empty; say what the team should do")
    return body


async def _list_runs(s: Service, request: Request) -> Response:
    status = request.query_params.get("status")
    if status == "awaiting_approval":  # what `regiment runs` called a paused run before
        status = "paused"
    if status is not None and status not in get_args(RunState):
        known = ", ".join(get_args(RunState))
        raise ApiError(422, "invalid ?status", f"?status={shown(status)}: use one of {known}")
    limit = count(request, "limit", LIST_LIMIT)
    return json_response({"runs": [run_listed(r) for r in await s.records(status, limit)]})


async def _get_run(s: Service, request: Request) -> Response:
    return json_response(await s.view(await s.record(request), under(request, "")))


async def _events(s: Service, request: Request) -> Response:
    record = await s.record(request, as_followed=True)  # a late follower gets the same end
    last = last_event_id(request, len(record.events))  # 422 here, not a stream cut short
    if last == len(record.events) and s.over(record):  # a reconnect after its last event:
        return Response(status_code=204)  # EventSource stops (an empty stream: it came again)
    # ?live: also the live run's progress, unnumbered, through a tap of its own
    following = Following(s, record, LiveTap(), progress=flag(request, "live"))

    async def frames() -> AsyncIterator[ServerSentEvent]:
        async for seq, event in following.events(last):
            data, name = to_json(event).decode(), type(event).__name__
            # Progress has no id: a reconnect's Last-Event-ID stays the last numbered event's.
            yield ServerSentEvent(data=data, event=name, id=None if seq is None else str(seq))
            # One loop turn between frames: a client that hung up mid-burst is seen
            # (the server drops writes to it, the stream is cancelled) before the next
            # frame; else every frame of the burst went to the dead socket, and asyncio
            # logged 'socket.send() raised exception.' for each past the fourth.
            await anyio.lowlevel.checkpoint()
        if (end := following.end(under(request, ""))) is not None:
            yield end  # the run goes on (or waits) where no one here runs it: says so

    async def done() -> None:  # also when the client hung up, its generator left open
        following.done()

    return EventSourceResponse(frames(), ping=s.keepalive, background=BackgroundTask(done))


async def _list_approvals(s: Service, request: Request) -> Response:
    run_id = request.query_params.get("run_id")
    pending = await s.live().running.pending_approvals(run_id)
    if run_id is not None and not pending and not await s.known(run_id):
        raise s.unknown(request, run_id)  # not "none pending": a typo'd id never has any
    return json_response({"approvals": [approval_view(r) for r in pending]})


async def _decide(s: Service, request: Request) -> Response:
    """``POST /approvals/{request_id}``: a live run goes on with the decision at once."""
    body = await read_json(request, Decision)
    request_id = request.path_params["request_id"]
    decision = body.decision()
    try:
        decided = await s.live().running.approve(request_id, decision, by=body.by)
    except ApprovalError as exc:
        listed = under(request, "/approvals")
        raise not_decided(exc, request_id, body.kind, listed) from exc
    except LeaseHeld as exc:  # its run is live in another process (the journal is fine)
        raise ApiError(
            409,
            f"cannot {body.kind}",
            f"{exc} (a run live in another process takes its decisions there)",
        ) from exc
    await _all_decided(s, decided.run_id)
    record = s.store.get(top_run_id(decided.run_id) or decided.run_id)  # (a nested run's top)
    live = record is not None and not record.ended.is_set()  # else it goes on at its resume
    events = under(request, f"/runs/{decided.run_id}/events")
    return json_response(decided_view(decided, decision, body.kind, body.by, events, live))


async def _all_decided(s: Service, run_id: str) -> None:
    """A paused run of this process's whose last pending request was just decided lists
    as the journal lists it, ``stalled``: it waits for a resume (``GET /runs/{id}`` says
    so), no longer for approvals."""
    record = s.store.get(run_id)
    if record is None or record.status != "paused" or s.journal is None:
        return  # without a journal a paused run cannot be resumed: it stays as it ended
    if not await s.live().running.pending_approvals(run_id):
        record.status = "stalled"


_GUARDED: tuple[tuple[str, str, Handler, tuple[str, ...]], ...] = (
    # method, path, handler, the query parameters it takes (any other is a 422)
    ("POST", "/runs", _post_run, ("wait",)),
    ("GET", "/runs", _list_runs, ("status", "limit")),
    ("GET", "/runs/{run_id}", _get_run, ()),
    # ?lastEventId: EventSource polyfills; ?ticket: EventSource cannot send a token
    # ?live: the run's progress too (TextDelta, ToolCallStarted, ToolCallFinished)
    ("GET", "/runs/{run_id}/events", _events, ("lastEventId", "ticket", "live")),
    ("POST", "/runs/{run_id}/cancel", cancel_run, ()),
    ("POST", "/runs/{run_id}/resume", _resume, ("wait",)),
    ("GET", "/approvals", _list_approvals, ("run_id",)),
    ("POST", "/approvals/{request_id}", _decide, ()),
)

"""Request and response pieces shared by the routes: JSON errors, body limit, auth."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Literal, TypeVar

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Match, Route

from regiment._json import JsonValue
from regiment._text import shown, shown_text
from regiment.errors import JournalError
from regiment.tools import ApprovalDecision, Approve, Deny, EditArguments

from ._plain import plain_problem

__all__ = (
    "MAX_BODY",
    "ApiError",
    "Decision",
    "NewRun",
    "check_query",
    "check_token",
    "count",
    "error_response",
    "events_ticket",
    "flag",
    "json_response",
    "last_event_id",
    "on_api_error",
    "on_http_exception",
    "on_journal_error",
    "read_json",
    "ticketed",
    "under",
)

log = logging.getLogger("regiment.serve")

MAX_BODY = 1024 * 1024  # 1 MiB
T = TypeVar("T")


class ApiError(Exception):
    """An error answered as ``{"error": ..., "detail": ...}`` with ``status``."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail


class NewRun(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The body of ``POST /runs``."""

    goal: str
    session: str | None = None
    deps: dict[str, JsonValue] | None = None


class Decision(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The body of ``POST /approvals/{request_id}``."""

    kind: Literal["approve", "deny", "edit"] = msgspec.field(name="decision")
    reason: str = ""
    arguments: dict[str, JsonValue] | None = None
    by: str = ""

    def decision(self) -> ApprovalDecision:
        """The library's decision; 422 for a deny without a reason or an edit without arguments."""
        match self.kind:
            case "approve":
                return Approve()
            case "deny":
                if not self.reason.strip():
                    raise ApiError(422, "invalid body", _NO_REASON)
                return Deny(reason=self.reason)
            case "edit":
                if self.arguments is None:
                    raise ApiError(422, "invalid body", _NO_ARGUMENTS)
                return EditArguments(arguments=self.arguments, reason=self.reason)


_NO_REASON = (
    "a denial needs a reason (the worker's model is told `denied: <reason>`); the request "
    'stays pending: send {"decision": "deny", "reason": "..."}'
)
_NO_ARGUMENTS = (
    "an edit needs the arguments the tool runs with; the request stays pending: send "
    '{"decision": "edit", "arguments": {...}}'
)

_SHAPES: dict[type, str] = {
    NewRun: '{"goal": "...", "session": "..."?, "deps": {...}?}',
    Decision: '{"decision": "approve" | "deny" | "edit", "reason"?, "arguments"?, "by"?}',
}


_WANTS: dict[type, dict[str, tuple[str, str]]] = {  # a field's type in better words
    NewRun: {"$.deps": ("a JSON object", " (tools read it as ctx.deps; leave it out for none)")},
}


def json_response(
    value: object, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(
        msgspec.json.encode(value), status, headers=headers, media_type="application/json"
    )


def under(request: Request, path: str) -> str:
    """``path`` (one of the app's, such as ``/runs``) as a client reaches it: under the
    prefix the app is mounted at (or served under, ``--root-path``)."""
    return f"{request.scope.get('root_path', '')}{path}"


def error_response(status: int, error: str, detail: str) -> Response:
    return json_response({"error": error, "detail": detail}, status)


async def read_json(request: Request, kind: type[T]) -> T:
    """The body decoded as ``kind``: 413 past ``MAX_BODY``, 422 if it is not that JSON."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > MAX_BODY:
        raise _too_large()
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY:
                raise _too_large()
            chunks.append(chunk)
    except ClientDisconnect as exc:  # else uvicorn logged an ERROR with a traceback for it
        log.info(
            "the client hung up before it had sent its body (%d bytes came); nothing was done",
            size,
            extra={"path": request.url.path},
        )
        raise ApiError(400, "client left", "the client hung up before its body came") from exc
    body = b"".join(chunks).removeprefix(_BOM)  # as RFC 8259 lets a reader do
    if not body.strip():
        raise ApiError(422, "invalid body", f"the body is empty; send {_shape(kind)}")
    try:
        decoded = msgspec.json.decode(body, type=kind)
        _check_unique(body, kind)
        return decoded
    except msgspec.ValidationError as exc:  # JSON, but not of the shape the route takes
        problem = plain_problem(exc, kind, _WANTS.get(kind, {}))
        detail = f"{problem}; send {_shape(kind)}"
        raise ApiError(422, "invalid body", detail) from exc
    except msgspec.DecodeError as exc:
        detail = f"{_decode_problem(body, exc)}{_sent_as(request, body)}; send {_shape(kind)}"
        raise ApiError(422, "invalid body", detail) from exc
    except RecursionError as exc:  # arrays or objects nested thousands deep
        detail = "the body's JSON nests too deep to read; send flatter JSON"
        raise ApiError(422, "invalid body", detail) from exc


_NAMES: dict[type, list[bytes]] = {}  # a body kind's field names, as JSON strings


def _check_unique(body: bytes, kind: type) -> None:
    """422 for a body that names one of its fields twice (``{"goal": "a", "goal": "b"}``):
    msgspec keeps the last one, so a run started on a goal its client may not have meant.
    (What ``deps`` holds is the caller's to name.) The standard library's slower parse
    runs only when a field's name is there twice, or an escape could spell one."""
    names = _NAMES.get(kind) or _NAMES.setdefault(
        kind, [msgspec.json.encode(f.encode_name) for f in msgspec.structs.fields(kind)]
    )
    if b"\\u" not in body and all(body.count(name) < 2 for name in names):
        return  # (a 1 MiB body parsed again took 0.3 s of the event loop)
    top: list[str] = []  # the names the last object parsed (the body itself) has twice

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        top.clear()
        seen: set[str] = set()
        for name, _ in items:
            if name in seen:
                top.append(name)
            seen.add(name)
        return dict(items)

    try:
        json.loads(body, object_pairs_hook=pairs)
    except (ValueError, RecursionError):  # what msgspec read, the standard library may not
        return
    if top:
        detail = f"the body names the field {top[0]!r} twice; name it once"
        raise ApiError(422, "invalid body", f"{detail}; send {_shape(kind)}")


_BOM = b"\xef\xbb\xbf"  # UTF-8's byte order mark, which some Windows tools put first


def _shape(kind: type) -> str:
    return _SHAPES.get(kind, "JSON")


def _sent_as(request: Request, body: bytes) -> str:
    """Why a body that is not JSON may be so: not UTF-8, or sent as something else (a
    form, say: ``curl -d`` sends one unless told ``-H 'content-type: application/json'``)."""
    encoded = request.headers.get("content-encoding", "identity").strip().lower()
    if encoded != "identity":  # gzip, say: the app reads no encoded body
        return f" (it came {encoded}-encoded: send it unencoded)"
    if body[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in body[:4]:
        return " (it looks like UTF-16 or UTF-32: JSON is sent as UTF-8)"
    sent = request.headers.get("content-type", "").partition(";")[0].strip()
    if sent and "json" not in sent:
        return f" (it came as {sent}: the body must be JSON, whatever its content type says)"
    return ""


def _decode_problem(body: bytes, exc: msgspec.DecodeError) -> str:
    """What is wrong with a body msgspec would not decode. It calls a lone UTF-16
    surrogate escape (such as ``\\ud800``, not a character) "truncated": say what it is."""
    if str(exc) == "Input data was truncated":
        try:  # the standard library reads such an escape; UTF-8 cannot hold what it gives
            json.dumps(json.loads(body), ensure_ascii=False).encode()
        except UnicodeEncodeError:
            return (
                "the body has a lone UTF-16 surrogate escape (such as \\ud800), which is "
                "not a character; send text that is valid Unicode"
            )
        except (ValueError, RecursionError):  # it is not JSON, and what there is ends early
            return "the body's JSON is cut short (Input data was truncated): send all of it"
    return str(exc)


def flag(request: Request, name: str) -> bool:
    """A true/false query parameter (absent: false); 422 for anything else."""
    value = request.query_params.get(name)
    if value is None or value in ("false", "0"):
        return False
    if value in ("true", "1"):
        return True
    raise ApiError(422, f"invalid ?{name}", f"?{name}={shown(value)}: use true or false (or 1, 0)")


def check_query(request: Request, path: str, takes: tuple[str, ...]) -> None:
    """422 for a query parameter the route at ``path`` does not take (a typo such as
    ``?wiat=true`` read as no parameter at all) or one given twice (which value was meant?)."""
    params = request.query_params
    for name in params:
        if name not in takes:
            route = f"{request.method} {under(request, path)}"
            known = ", ".join(f"?{t}" for t in takes)
            detail = f"{route} takes no query parameter {shown(name)}; " + (
                f"it takes {known}" if takes else "it takes none"
            )
            raise ApiError(422, f"unknown ?{shown_text(name)}", detail)
        if len(params.getlist(name)) > 1:
            detail = f"?{name} is given {len(params.getlist(name))} times; give it once"
            raise ApiError(422, f"invalid ?{name}", detail)


def count(request: Request, name: str, default: int) -> int:
    """A whole-number query parameter of at least 1 (absent: ``default``); 422 for anything else."""
    value = request.query_params.get(name)
    if value is None:
        return default
    number = _whole(value)
    if number is None or number < 1:
        raise ApiError(
            422, f"invalid ?{name}", f"?{name}={shown(value)}: use a whole number of 1 or more"
        )
    return number


def last_event_id(request: Request, known: int) -> int:
    """The ``Last-Event-ID`` header's event number, or else the ``?lastEventId=`` that
    EventSource polyfills send on a reconnect (absent or blank: 0); 422 for anything else,
    and for a number past ``known``, the run's events so far (no stream gave it: an empty
    stream would end as a cut one does, and its client reconnected with it again)."""
    value = request.headers.get("last-event-id", "").strip()
    value = value or request.query_params.get("lastEventId", "").strip() or "0"
    number = _whole(value)
    if number is None:
        raise ApiError(422, "invalid Last-Event-ID", f"{shown(value)} is not an event number")
    if number > known:
        shown_id = value if len(value) <= 30 else f"{value[:30]}…"
        detail = (
            f"Last-Event-ID {shown_id} is past the run's last event, {known}: send the id of "
            "the last event the stream gave you (or none, for all of it)"
        )
        raise ApiError(422, "invalid Last-Event-ID", detail)
    return number


_BEYOND = 10**30
"""A whole number with more digits stands for this one: past any run's events and any
list, and ``int()`` refuses a number of more than 4,300 digits."""


def _whole(value: str) -> int | None:
    """``value`` as a whole number, or ``None`` unless it is ASCII digits alone (``'²'``
    is a digit to ``str.isdigit``, not to ``int``)."""
    if not (value.isascii() and value.isdigit()):
        return None
    digits = value.lstrip("0")
    return _BEYOND if len(digits) > 30 else int(digits or "0")


def _too_large() -> ApiError:
    return ApiError(413, "body too large", f"the body is over {MAX_BODY} bytes; send less")


def check_token(request: Request, token: str | None, *, ticket: bool = False) -> None:
    """Without a ``Bearer`` header equal to ``token`` (constant-time), answer 401; a
    route that takes a ``ticket`` (a run's events) takes that run's instead."""
    if token is None:
        return
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    value = value.lstrip(" ")  # (one space or more after the scheme; a token has none)
    if scheme.lower() == "bearer" and hmac.compare_digest(value.encode(), token.encode()):
        return
    if ticket and "ticket" in request.query_params:
        given = request.query_params["ticket"].encode()
        if hmac.compare_digest(given, events_ticket(token, request.path_params["run_id"]).encode()):
            return
        raise ApiError(
            401,
            "unauthorized",
            "the ticket is not this run's: take its events_ticket from POST /runs or "
            "GET /runs/{id}, or send the header 'Authorization: Bearer <token>'",
        )
    raise ApiError(401, "unauthorized", "send the header 'Authorization: Bearer <token>'")


def events_ticket(token: str, run_id: str) -> str:
    """What lets a client that cannot send headers (a browser's ``EventSource``) read
    one run's events, and nothing else: ``?ticket=``, a MAC of the run's id under the
    token (so the token itself never goes into a URL, where logs and history keep it)."""
    return hmac.new(token.encode(), f"events {run_id}".encode(), hashlib.sha256).hexdigest()


def ticketed(view: dict[str, object], token: str | None, run_id: str) -> dict[str, object]:
    """A run's ``view``, with its ``events_ticket`` when the routes need ``token``."""
    return view if token is None else view | {"events_ticket": events_ticket(token, run_id)}


async def on_http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (unknown route, wrong method) as JSON."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        return _not_allowed(request)
    if exc.status_code == 404:  # Starlette's detail was "Not Found", naming no way on
        paths = dict.fromkeys(r.path for r in request.app.router.routes if isinstance(r, Route))
        served = ", ".join(under(request, path) for path in paths)
        return error_response(
            404, "not found", f"no route {shown_text(request.url.path)}; this app serves {served}"
        )
    return error_response(exc.status_code, "http error", str(exc.detail))


def _not_allowed(request: Request) -> Response:
    """405 with the ``Allow`` header (RFC 9110) naming every method the path takes:
    Starlette's own names only the first route's, and the JSON handler dropped it."""
    allowed: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.matches(request.scope)[0] is not Match.NONE:
            allowed |= route.methods or set()
    methods = sorted(allowed)
    detail = f"{shown_text(request.url.path)} takes {', '.join(methods)}, not {request.method}"
    response = error_response(405, "method not allowed", detail)
    response.headers["Allow"] = ", ".join(methods)
    return response


async def on_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    if exc.status == 401:  # (a 401 names its scheme: RFC 9110, 15.5.2)
        body = {"error": exc.error, "detail": exc.detail}
        return json_response(body, 401, {"WWW-Authenticate": 'Bearer realm="regiment"'})
    return error_response(exc.status, exc.error, exc.detail)


async def on_journal_error(request: Request, exc: Exception) -> Response:
    """The journal failed (closed, unreachable, a record unreadable) under any route: 503."""
    assert isinstance(exc, JournalError)
    log.error("journal unavailable: %s", exc, extra={"path": request.url.path})
    return error_response(503, "journal unavailable", f"{exc}; try again once it is back")

"""``Idempotency-Key`` on ``POST /runs``: a retried post answers the run the first one
started, and starts nothing.

A keyed run's id is derived from its key (``keyed_run_id``), so the journal holds the key
with the run's creation, in the same durable write: after a crash, a restart, or in another
process sharing the journal, the key still finds its run (the journal refuses a second run
under that id). What a key was used for (the goal, the session and a hash of the deps)
is kept in memory for the service's life (the latest ``KEPT_KEYS`` keys), and in the
journal with the run (``RunCreated``: the goal, the session and ``deps_hash``, never the
deps): after a restart, or in another process, a retry is compared with all three (a run
from a journal older than ``deps_hash``: with its goal and session)."""

from __future__ import annotations

import hashlib
from typing import final

import anyio
import msgspec
from starlette.requests import Request

from regiment._text import shown
from regiment.journal import deps_hash

from ._http import ApiError, NewRun

__all__ = (
    "KEPT_KEYS",
    "KEY_CHARS",
    "Keyed",
    "Keys",
    "check_same",
    "idempotency_key",
    "keyed_run_id",
)

KEY_HEADER = "idempotency-key"
KEY_MAX = 255
KEY_CHARS = "visible ASCII characters (letters, digits, punctuation; no spaces)"
KEPT_KEYS = 100_000  # the keys a service remembers what they were used for, the latest


def idempotency_key(request: Request) -> str | None:
    """The request's ``Idempotency-Key`` (``None``: none); 400 for one that is not
    1 to 255 visible ASCII characters, or given twice."""
    given = request.headers.getlist(KEY_HEADER)
    if not given:
        return None
    key = given[0]
    if len(given) > 1 or not 0 < len(key) <= KEY_MAX or not all("!" <= c <= "~" for c in key):
        detail = (
            f"Idempotency-Key {shown(key)}{' (given twice)' if len(given) > 1 else ''} is not "
            f"a key: send one header of 1 to {KEY_MAX} {KEY_CHARS}, such as a UUID, the same "
            "for every retry of one request and new for each new request"
        )
        raise ApiError(400, "invalid Idempotency-Key", detail)
    return key


def keyed_run_id(key: str) -> str:
    """The id of the run posted with ``key`` (the same in every process and after a restart)."""
    return f"run-key-{hashlib.sha256(key.encode()).hexdigest()[:32]}"


@final
class Keyed(msgspec.Struct, frozen=True):
    """What a key was first used for."""

    run_id: str
    goal: str
    session: str | None
    deps: str | None  # ``deps_hash``; ``None``: not known (a journal older than it)

    @classmethod
    def posted(cls, run_id: str, body: NewRun) -> Keyed:
        return cls(run_id, body.goal, body.session, deps_hash(body.deps))


@final
class Keys:
    """The keys this service has seen, and the ones whose run is starting now."""

    def __init__(self) -> None:
        self._used: dict[str, Keyed] = {}
        self._starting: dict[str, anyio.Event] = {}

    def get(self, key: str) -> Keyed | None:
        return self._used.get(key)

    def remember(self, key: str, keyed: Keyed) -> None:
        self._used.pop(key, None)
        self._used[key] = keyed
        if len(self._used) > KEPT_KEYS:
            del self._used[next(iter(self._used))]

    async def hold(self, key: str) -> anyio.Event:
        """Wait until no request with ``key`` is starting its run, then be that request:
        set the returned event once its run is started (or not)."""
        while (other := self._starting.get(key)) is not None:
            await other.wait()
        self._starting[key] = mine = anyio.Event()
        return mine

    def let_go(self, key: str, mine: anyio.Event) -> None:
        if self._starting.get(key) is mine:
            del self._starting[key]
        mine.set()


def check_same(key: str, keyed: Keyed, body: NewRun, listed: str) -> None:
    """422 if ``body`` is not the request ``key`` was first used for (``listed``: where
    its run is read)."""
    differs = [
        name
        for name, same in (
            ("goal", keyed.goal == body.goal),
            ("session", keyed.session == body.session),
            ("deps", keyed.deps is None or keyed.deps == deps_hash(body.deps)),
        )
        if not same
    ]
    if differs:
        detail = (
            f"Idempotency-Key {shown(key)} was used for another request (run {keyed.run_id}, "
            f"with another {' and '.join(differs)}): send a new key for a new request, or "
            f"the same body to get that run (GET {listed})"
        )
        raise ApiError(422, "Idempotency-Key reused", detail)

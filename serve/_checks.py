"""``create_app``'s arguments that need no started team, checked before anything starts."""

from __future__ import annotations

import math
import os
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from regiment._shown import shown_spec
from regiment.errors import ConfigError
from regiment.hierarchy import RunningTeam, Team
from regiment.journal import Journal, JournalSpec

__all__ = (
    "check_lease_ttl",
    "check_same_database",
    "check_seconds",
    "check_token_text",
    "checked_args",
    "served_journal",
)


def check_lease_ttl(
    team: Team | RunningTeam, lease_ttl: float | None, journal: object = None
) -> None:
    """Refuse a ``lease_ttl`` the app cannot use, before anything starts, as ``regiment
    serve --lease-ttl`` does (under 1 s, a lease lapses in an ordinary slow commit).

    Raises:
        ConfigError: a started team (it keeps the lease it was started with), no
            ``journal``, or not a finite number of seconds >= 1.
    """
    if lease_ttl is None:
        return
    if isinstance(team, RunningTeam):
        raise ConfigError(
            "lease_ttl is for a Team the app starts; a RunningTeam keeps the one it was "
            "started with: start it with Team.start(journal=..., lease_ttl=...)"
        )
    check_seconds("lease_ttl", lease_ttl)
    if lease_ttl < 1:
        raise ConfigError(
            f"lease_ttl={lease_ttl!r} s is too short: give at least 1 (a shorter lease lapses "
            "in an ordinary slow commit, and another service would take this one's runs over)"
        )
    if journal is None:
        raise ConfigError(
            "lease_ttl is how long a journaled run stays this app's; it needs "
            "create_app(team, journal=...) (an SQLite file or a postgresql:// URL)"
        )


def check_seconds(name: str, seconds: object) -> None:
    """Refuse ``seconds`` unless it is a finite number > 0 (``name`` says which argument).

    Raises:
        ConfigError: a bool, not a number, not finite, or not above 0.
    """
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or seconds <= 0
    ):
        raise ConfigError(f"{name} must be a finite number of seconds > 0; got {seconds!r}")


def check_token_text(token: str | None, given: str) -> None:
    """Refuse a token no request can send (``given``: how it was given, for the message).

    An ``Authorization`` header carries visible ASCII and inner spaces only, and servers
    strip what surrounds it: with a token ending in a newline (read from a file), or one
    with a non-ASCII letter, every request was refused 401, and nothing said why.

    Raises:
        ConfigError: the token is blank, has whitespace around it, or a character
            outside visible ASCII.
    """
    if token is None:
        return
    if not token.strip():
        raise ConfigError(f"{given} is empty; give a secret, or leave it out to serve without one")
    if token != token.strip():
        raise ConfigError(
            f"{given} has whitespace around it ({token!r}), which an HTTP header cannot "
            "carry, so every request would be refused: strip it (a token read from a "
            "file ends with its newline: .read_text().strip())"
        )
    bad = next((c for c in token if not " " <= c <= "~"), None)
    if bad is not None:
        raise ConfigError(
            f"{given} holds {bad!r}: a token travels in an HTTP header, which carries only "
            "visible ASCII characters and spaces; use a secret made of those (e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe())')"
        )


def served_journal(team: Team | RunningTeam, journal: JournalSpec) -> JournalSpec:
    """The journal the app answers from: ``journal``, or, for a ``RunningTeam`` given none,
    the one its runs are journaled in (the app then finds them after a restart too: a
    keyed retry answered 503 "journal unavailable" for ever, its run's id taken there).

    Raises:
        ConfigError: a ``RunningTeam`` started without a journal, given one (its runs
            are not journaled there: a keyed retry after a restart ran again), or given
            another ``Journal`` object than its own, or a path or URL that names another
            database than its own (see ``check_same_database``).
    """
    if not isinstance(team, RunningTeam):
        return journal
    if journal is None:
        return team.journal
    if team.journal is None:
        raise ConfigError(
            "create_app(running, journal=...): the RunningTeam was started without a "
            "journal, so its runs are not journaled there and the app would not find them "
            "after a restart; start it with Team.start(journal=...) and leave journal= out"
        )
    if isinstance(journal, str | Path):
        check_same_database(team.journal, journal)
    elif journal is not team.journal:
        raise ConfigError(
            "create_app(running, journal=...) got another Journal than the one the "
            "RunningTeam journals its runs in: leave journal= out (the app answers from "
            "running.journal)"
        )
    return journal


def check_same_database(journal: Journal, spec: str | Path) -> None:
    """Refuse ``spec``, a file path or a ``postgresql://`` URL given beside a
    ``RunningTeam``, unless it names the database ``journal`` (the team's) is: the same
    SQLite file (however the path is spelt), or the same server, port, database, user and
    parameters (the schema in ``options``; passwords aside). The app answered from the
    other one: the team's runs were missing from it, and a keyed retry ran again.

    Raises:
        ConfigError: they differ (or cannot be told the same: two spellings of one host),
            naming both (without passwords) and the fix, which always works: leave
            ``journal=`` out.
    """
    where, given = journal.where, str(spec)
    if _is_url(where) or _is_url(given):
        same = _is_url(where) and _is_url(given) and _server(where) == _server(given)
    else:
        same = _same_file(where, given)
    if not same:
        raise ConfigError(
            f"create_app(running, journal={shown_spec(given)!r}): the RunningTeam journals its "
            f"runs in {where}, not there, so the app would list and replay runs from another "
            "journal than its runs are in: leave journal= out (the app answers from "
            "running.journal), or start the team with Team.start(journal=...) of that one"
        )


def _is_url(spec: str) -> bool:
    return spec.startswith(("postgresql://", "postgres://"))


def _server(url: str) -> tuple[object, ...]:
    """What names a PostgreSQL database in ``url`` (its password left out)."""
    parts = urlsplit(shown_spec(url))
    try:
        port: object = parts.port or 5432
    except ValueError:  # not a number: as the URL has it (psycopg refuses it anyway)
        port = parts.netloc.rpartition(":")[2]
    host = (parts.hostname or "").lower()
    kept = sorted(p for p in parse_qsl(parts.query, keep_blank_values=True))
    return host, port, parts.path, parts.username, tuple(kept)


def _same_file(where: str, given: str) -> bool:
    """Whether the paths name one file (a link, or a relative path, to it too)."""
    try:
        return os.path.samefile(where, given)
    except OSError:  # one of them is missing: not the team's file, which exists
        return False


def checked_args(
    team: Team | RunningTeam,
    token: str | None,
    keepalive: float,
    lease_ttl: float | None,
    journal: JournalSpec,
) -> JournalSpec:
    """``create_app``'s arguments, checked before anything starts (see its Raises); the
    journal the app answers from (a ``RunningTeam``'s own, if none is given)."""
    check_token_text(token, "the token")
    check_seconds("keepalive", keepalive)  # else every event stream failed with a 500
    check_lease_ttl(team, lease_ttl, journal)
    return served_journal(team, journal)

"""``create_app``'s arguments that need no started team, checked before anything starts."""

from __future__ import annotations

import math

from regiment.errors import ConfigError
from regiment.hierarchy import RunningTeam, Team

__all__ = ("check_lease_ttl", "check_seconds")


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

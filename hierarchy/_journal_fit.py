"""Whether a journal can record a team's runs: one written to the older ``Journal``
protocol has no ``above=`` on ``create_run`` and ``acquire``, which nested runs need.

A team without nested teams never passes ``above=`` (its runs are top-level runs), so
such a journal serves it as it is. A team with one would fail deep inside its first
nested step with a ``TypeError`` (and replan in vain): it is refused as it starts, with
what to add.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import TYPE_CHECKING

from regiment.errors import ConfigError

if TYPE_CHECKING:
    from regiment.hierarchy._team import Team
    from regiment.journal import Journal

__all__ = ("check_journal_fits",)

_NEEDS_ABOVE = ("create_run", "acquire")


def check_journal_fits(journal: Journal, team: Team) -> None:
    """Refuse ``journal`` for ``team`` when the team has a nested team and the journal's
    ``create_run`` or ``acquire`` takes no ``above`` keyword (``ConfigError`` saying what
    to add)."""
    nested = next(_nested_teams(team), None)
    if nested is None:
        return
    missing = [name for name in _NEEDS_ABOVE if not _takes_above(getattr(journal, name, None))]
    if not missing:
        return
    kind = type(journal).__name__
    raise ConfigError(
        f"team '{team.name}' has a nested team (worker '{nested}'), whose runs are journaled "
        f"under the run they serve, but journal {kind} (a Journal of your own, written to an older "
        f"protocol) has no `above` parameter on {' and '.join(missing)}: add the keyword "
        "parameter `above: Lease | None = None` (from regiment.journal import Lease) to "
        f"{' and '.join(f'{kind}.{name}' for name in missing)}; it is the caller's lease of "
        "the top run, given for nested runs only: refuse a nested run with LeaseLost when "
        "the top run's fencing token is no longer that lease's (see Journal.create_run). "
        "A team without nested teams can use the journal as it is"
    )


def _nested_teams(team: Team) -> Iterator[str]:
    """The names of the nested teams' workers in ``team``, at any depth."""
    for worker in team.workers:
        child = getattr(worker, "team", None)
        if child is not None and hasattr(type(worker), "step_model_calls"):
            yield worker.name
            yield from _nested_teams(child)


def _takes_above(method: object) -> bool:
    if not callable(method):
        return False
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): trust it
        return True
    return any(
        p.kind is p.VAR_KEYWORD or (p.name == "above" and p.kind is not p.POSITIONAL_ONLY)
        for p in parameters
    )

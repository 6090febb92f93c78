"""Team files that name other team files as workers (``team = "other.toml"``): reading
the tree, and saying in every error of a nested file how it was reached."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

from regiment.config._imports import IncludeChain, nested_team_file
from regiment.config._schema import TeamConfig, load_config
from regiment.errors import ConfigError

__all__ = ("load_nested", "root_chain", "team_files", "within")

_T = TypeVar("_T")


def team_files(config: TeamConfig, *, source: str = "<config>") -> list[tuple[str, TeamConfig]]:
    """This file and every team file it nests, outermost first, as ``(name, config)``.

    A file nested twice appears twice. Nothing is imported and no model is
    made: this is for looking at a tree (which models it wants, which files
    have a ``brain``) before building it.

    Raises:
        ConfigError: a nested file is missing or wrong, or a file includes itself.
    """
    found: list[tuple[str, TeamConfig]] = []

    def visit(config: TeamConfig, source: str, chain: IncludeChain) -> None:
        found.append((source, config))
        for index, worker in enumerate(config.workers):
            if worker.team is not None:
                nested = load_nested(worker.team, index, source, chain)
                within(worker.team, index, source, partial(visit, *nested))

    visit(config, source, root_chain(source))
    return found


def load_nested(
    spec: str, index: int, source: str, chain: IncludeChain
) -> tuple[TeamConfig, str, IncludeChain]:
    """The team file ``workers[index].team = spec`` of ``source`` names: its config,
    its name for messages, and the include chain that leads to it."""
    where = f"{source}: workers[{index}].team"
    path = nested_team_file(spec, source=source, where=where, chain=chain)
    nested_source = str(path)
    nested = within(spec, index, source, lambda: load_config(path))
    return nested, nested_source, (*chain, (path.resolve(), nested_source))


def within(spec: str, index: int, source: str, make: Callable[[], _T]) -> _T:
    """Run ``make``, which reads or builds the team file ``workers[index].team = spec`` of
    ``source`` names; its ``ConfigError`` (which names that file) gets the file and key
    that led there at its end, so a mistake in a nested file says how it was reached."""
    try:
        return make()
    except ConfigError as exc:
        named = f"(the team file named by {source}: workers[{index}].team = {spec!r})"
        raise ConfigError(f"{exc} {named}") from exc


def root_chain(source: str) -> IncludeChain:
    path = Path(source)
    return ((path.resolve(), source),) if path.is_file() else ()

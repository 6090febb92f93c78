"""``regiment resume [TEAM_FILE] RUN_ID``: which run, and which team file builds it again.

``regiment run`` records where its team came from (the team file's absolute path
and ``--app-dir``) in the run's first journal record, so ``regiment resume
RUN_ID`` finds the file itself. ``regiment resume TEAM_FILE RUN_ID`` names it,
for a run started from code or by the service (nothing recorded), or whose file
moved.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from regiment.cli._hints import journal_flag
from regiment.cli._journal_cmds import (
    journal_exists,
    journal_source,
    journal_spec,
    no_run,
    open_cli_journal,
    said,
)
from regiment.errors import ConfigError, JournalError, UnknownRun
from regiment.journal import Journal, RunCreated, TeamFile, not_resumable_alone

__all__ = (
    "add_import_root",
    "created_record",
    "fill_in_team_file",
    "finished_already",
    "recorded_team_file",
    "resumable",
    "team_file_of",
)

RESUMABLE = ("stalled", "running", "paused")


def team_file_of(path: str, app_dir: str | None) -> TeamFile:
    """What ``regiment run`` journals about its team: the file and the import root, absolute."""
    return TeamFile(path=str(Path(path).resolve()), app_dir=str(Path(app_dir or ".").resolve()))


def add_import_root(app_dir: str | None) -> None:
    """Make a team file's ``module:attribute`` paths importable from ``app_dir`` (default:
    the current directory), as uvicorn does; a ``ConfigError`` if it is not a directory."""
    if app_dir is not None and Path(app_dir).exists() and not Path(app_dir).is_dir():
        raise ConfigError(
            f"--app-dir {app_dir}: that is a file, not a directory; give the directory the "
            "team file's module:attribute paths are imported from"
        )
    if app_dir is not None and not Path(app_dir).is_dir():
        raise ConfigError(
            f"--app-dir {app_dir}: no such directory; give the directory the team file's "
            "module:attribute paths are imported from (default: the current one)"
        )
    root = str(Path(app_dir or ".").resolve())
    if root not in sys.path:
        sys.path.insert(0, root)


async def resumable(journal: Journal, run_id: str, spec: str, flag: str) -> None:
    """Raise a ``ConfigError`` (a usage error) unless ``journal`` (``spec``) has ``run_id``,
    unfinished and top-level (a nested team's run is resumed with the run it serves); the
    commands it suggests add ``flag`` (`` --journal J``) to read that journal."""
    try:  # first: an id the journal does not have is said so (cut if long), nested or not
        info = await journal.get_run(run_id)
    except UnknownRun as exc:
        raise no_run(spec, run_id, flag) from exc
    except JournalError as exc:
        raise ConfigError(str(exc)) from exc
    nested = not_resumable_alone(run_id, journal_flag=flag)
    if nested is not None:
        raise ConfigError(nested)
    if info.status not in RESUMABLE:
        raise finished_already(run_id, info.status, flag)


def finished_already(run_id: str, status: str, flag: str) -> ConfigError:
    """The usage error of ``regiment resume`` for a run that has finished: the same whether
    the check before the resume saw it, or a resume that raced this one finished it since
    (``flag``: what the ``regiment show`` it suggests adds, `` --journal J``)."""
    return ConfigError(
        f"run {run_id!r} has already finished ({status}); `regiment show{flag} {run_id}` shows it"
    )


async def created_record(journal: Journal, run_id: str) -> RunCreated | None:
    """The run's first record (``None`` if the journal has no such run)."""
    try:
        entries = await journal.read(run_id)
    except JournalError as exc:  # (a lock held past lock_timeout, the server gone)
        raise ConfigError(str(exc)) from exc
    first = entries[0].record if entries else None
    return first if isinstance(first, RunCreated) else None


def recorded_team_file(created: RunCreated | None, run_id: str) -> TeamFile:
    """The team file run ``run_id`` (``created``: its first record) was started from,
    when it is on record and still there.

    Raises:
        ConfigError: nothing is on record, or the file is gone; it says to name the file.
    """
    hint = f"pass its team file: regiment resume TEAM_FILE {run_id}"
    if created is None or created.team_file is None:
        raise ConfigError(
            f"run {run_id!r} has no team file on record (it was not started by "
            f"`regiment run`, or by an older regiment); {hint}"
        )
    path = created.team_file.path
    if not Path(path).is_file():
        raise ConfigError(
            f"run {run_id!r} was started from the team file {path}, which is gone; {hint}"
        )
    return created.team_file


async def fill_in_team_file(args: argparse.Namespace, environ: Mapping[str, str]) -> None:
    """For ``regiment resume RUN_ID`` (no team file given): set ``args.team_file`` to the
    file the run recorded, and ``args.app_dir`` to its import root unless given.

    Raises:
        ConfigError: no journal, no such run, a finished run, or no usable file on record.
    """
    if args.command != "resume" or args.team_file is not None:
        return
    spec = journal_spec(args, environ)
    if args.run_id.endswith((".toml", ".yaml", ".yml")):
        flag = "" if spec is None else journal_flag(spec, environ)
        raise ConfigError(
            f"regiment resume {args.run_id}: that is a team file; give the run too: "
            f"regiment resume [TEAM_FILE] RUN_ID (`regiment runs{flag}` lists the runs)"
        )
    if spec is None:
        raise ConfigError("regiment resume continues a journaled run: drop --no-journal")
    if not journal_exists(spec):
        raise ConfigError(f"no journal at {spec}, so no run {said(args.run_id)}")
    journal = await open_cli_journal(spec, source=journal_source(args, environ))
    try:
        await resumable(journal, args.run_id, spec, journal_flag(spec, environ))
        created = await created_record(journal, args.run_id)
    finally:
        await journal.close()
    recorded = recorded_team_file(created, args.run_id)
    args.team_file = recorded.path
    if args.app_dir is None:
        args.app_dir = recorded.app_dir

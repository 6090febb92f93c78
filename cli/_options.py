"""What ``regiment run`` and ``regiment resume`` were asked to do: their flags checked
together, the model chosen (the offline fallback included), the terminal's approver."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

from regiment.cli._args import session_of
from regiment.cli._codes import typeable
from regiment.cli._hints import journal_flag
from regiment.cli._journal_cmds import journal_source, journal_spec
from regiment.cli._resume import team_file_of
from regiment.errors import ConfigError

if TYPE_CHECKING:
    from regiment.cli._ask import TerminalApprover
    from regiment.cli._run import RunOptions
    from regiment.config import TeamConfig

__all__ = ("choose_model", "placed", "run_options")


def run_options(
    args: argparse.Namespace,
    config: TeamConfig,
    stdin: TextIO,
    stderr: TextIO,
    environ: Mapping[str, str],
) -> RunOptions:
    """What ``run`` or ``resume`` was asked to do (a ``ConfigError`` for a usage error)."""
    # `run` alone needs the OpenTelemetry SDK (its trace report); validate stays lean.
    from regiment.cli._run import RunOptions

    # Every usage error before the model's note: one line, the error's alone.
    session = session_of(args)
    resume = getattr(args, "run_id", None)
    goal: str = getattr(args, "goal", "")
    if resume is None:
        from regiment.hierarchy import check_goal  # loaded already: the team file was read

        check_goal(goal, session)  # what the run would refuse once started
    journal = journal_spec(args, environ)
    flag = "" if journal is None else journal_flag(journal, environ)
    events_file = _events_file(args.events_file, config, args.team_file, journal)
    ask = _asker(args, stdin, stderr, flag, journaled=journal is not None)
    notes: list[str] = []  # said as the run starts, after any usage error of the team's build
    return RunOptions(
        team_file=args.team_file,
        goal=goal,
        model=choose_model(config, args.team_file, args.model, environ, stderr, notes),
        trace=args.trace,
        events_jsonl=args.events == "jsonl",
        events_file=events_file,
        live=not args.plain and stderr.isatty() and not args.verbose and ask is None,
        journal=journal,
        journal_flag=flag,
        journal_source=journal_source(args, environ),
        session=session,
        resume=resume,
        force=getattr(args, "force", False),
        events_deltas=args.events_deltas,
        ask=ask,
        source=team_file_of(args.team_file, args.app_dir) if resume is None else None,
        note="\n".join(notes),
    )


def _asker(
    args: argparse.Namespace, stdin: TextIO, stderr: TextIO, flag: str, *, journaled: bool
) -> TerminalApprover | None:
    """With ``--approve ask``, the terminal's approver (a usage error without a terminal,
    whose commands add ``flag``, `` --journal J``; ``journaled``: not ``--no-journal``)."""
    if getattr(args, "approve", "pause") != "ask":
        return None
    from regiment.cli._ask import TerminalApprover, check_terminal

    try:
        check_terminal(stdin, journaled=journaled)
    except ConfigError as exc:
        raise ConfigError(typeable(str(exc), flag)) from exc
    return TerminalApprover(stdin, stderr)


def _events_file(
    path: str | None, config: TeamConfig, team_file: str, journal: str | None
) -> str | None:
    """``--events-file PATH``, refused when it is a file the command reads: writing the
    events there truncated it (a team file lost, or every run of the journal)."""
    if path is None:
        return None
    from regiment.config import team_files  # loaded already: the config was read

    needed = [(f"the team file {name}", name) for name, _ in team_files(config, source=team_file)]
    if journal is not None:
        needed.append((f"the journal {journal}", journal))
    for what, name in needed:
        if _same_file(path, name):
            raise ConfigError(
                f"--events-file {path}: that is {what}, which writing the events there would "
                "overwrite; give the events a file of their own (events.jsonl, say)"
            )
    return path


def _same_file(path: str, other: str) -> bool:
    try:
        return os.path.samefile(path, other)
    except (OSError, ValueError):  # one is not there (yet), or is no path (a URL)
        return False


def placed(args: argparse.Namespace, config: TeamConfig) -> TeamConfig:
    """The team file with every worker on Ray when ``--workers ray`` asks for it."""
    if args.workers != "ray":
        return config
    from regiment.config import place_on_ray  # loaded already: the config was read

    return place_on_ray(config, address=args.ray_address)


# The providers that need an API key, and its variable (an openai-compatible server needs none).
_API_KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def choose_model(
    config: TeamConfig,
    source: str,
    option: str | None,
    environ: Mapping[str, str],
    stderr: TextIO,
    notes: list[str] | None = None,
) -> str | None:
    """``--model`` if given; the files' brains when the tree wants a provider whose
    API key is not set (Claude, OpenAI), saying so on ``stderr`` (or adding the line
    to ``notes``, for the caller to say once nothing can refuse the command).

    The fallback needs a brain in every file of the tree (nested team files
    included), since ``scripted`` makes each file answer with its own.
    """
    if option:
        return option
    from regiment.config import team_files  # loaded already: the config was read

    files = team_files(config, source=source)
    wanted = {spec.partition(":")[0] for _, c in files for spec in c.model_specs().values()}
    missing = [key for name, key in _API_KEYS.items() if name in wanted and not environ.get(key)]
    if missing and all(c.brain for _, c in files):
        brains = ", ".join(f"{name}: {c.brain}" for name, c in files)
        note = (
            f"regiment: no {' or '.join(missing)} and no --model, so running offline on the "
            f"team's scripted brain ({brains})"
        )
        if notes is None:
            print(note, file=stderr)
        else:
            notes.append(note)
        return "scripted"
    return None

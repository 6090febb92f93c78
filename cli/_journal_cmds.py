"""``regiment runs``, the parsers of ``runs`` and ``show`` (``show`` itself: ``_show``), and the
``--journal`` option every run command takes.

The journal is ``--journal PATH_OR_URL``, else ``$REGIMENT_JOURNAL``, else
``.regiment/journal.db`` under the current directory (created on first use by a
run); ``--no-journal`` turns it off. An empty ``--journal`` is a usage error (a script's
unset variable, most likely); an empty ``$REGIMENT_JOURNAL`` is the same as none. An
error names where the journal came from: ``--journal``, ``$REGIMENT_JOURNAL`` or the
default. A file that is not a journal, or is damaged,
is a usage error naming the file, and is never written.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from regiment._shown import shown_spec
from regiment._text import shown, visible
from regiment.errors import ConfigError, JournalError
from regiment.journal import Journal, RunInfo

__all__ = (
    "NewerNotes",
    "add_journal_commands",
    "add_journal_option",
    "journal_exists",
    "journal_flag_error",
    "journal_read",
    "journal_source",
    "journal_spec",
    "journal_value",
    "limit_count",
    "no_run",
    "open_cli_journal",
    "whole_number",
    "resume_hint",
    "runs_command",
    "said",
    "shown_spec",
)

DEFAULT = Path(".regiment") / "journal.db"
STATUSES = ("running", "stalled", "paused", "completed", "partial", "failed", "cancelled")


def add_journal_option(parser: argparse.ArgumentParser, *, can_turn_off: bool = False) -> None:
    """``--journal PATH_OR_URL``, and ``--no-journal`` for a command that can run without."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--journal",
        metavar="PATH_OR_URL",
        type=journal_value,
        help="an SQLite file or a postgresql:// URL (default: $REGIMENT_JOURNAL, "
        "else .regiment/journal.db here)",
    )
    if can_turn_off:
        group.add_argument("--no-journal", action="store_true", help="do not journal the run")


def add_service_journal(
    parser: argparse.ArgumentParser, *, what: str, once: type[argparse.Action]
) -> None:
    """``--journal J`` and ``--no-journal`` of ``serve`` and ``mcp``: a journal named, else
    ``$REGIMENT_JOURNAL``, else none (their runs are kept in memory); ``what`` says what a
    journal gives the command (``once``: the option is refused when given twice)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--journal",
        metavar="J",
        type=_service_journal_value,
        help=f"journal runs here (SQLite file or postgresql:// URL){what}; default: "
        "$REGIMENT_JOURNAL, else none (runs are kept in memory)",
        action=once,
    )
    group.add_argument(
        "--no-journal", action="store_true", help="journal nothing, even with $REGIMENT_JOURNAL set"
    )


def service_journal(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """The journal ``serve`` or ``mcp`` uses (``None``: none) and where it was named, for
    its errors: ``--journal``, else ``$REGIMENT_JOURNAL`` (an empty one is unset), unless
    ``--no-journal``."""
    if args.journal is not None:
        return args.journal, "--journal"
    if args.no_journal:
        return None, "--no-journal"
    return environ.get("REGIMENT_JOURNAL") or None, "$REGIMENT_JOURNAL"


def _service_journal_value(text: str) -> str:
    """A ``serve`` / ``mcp`` ``--journal``: not blank, and the error says what leaving it
    out does there."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "it is blank; give an SQLite file or a postgresql:// URL, or leave --journal out "
            "to use $REGIMENT_JOURNAL, else no journal (--no-journal: none either way)"
        )
    return text


def journal_value(text: str) -> str:
    """A ``--journal``: not empty (``--journal "$J"`` with ``J`` unset would otherwise read
    or write a journal the user did not name)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "it is blank; give an SQLite file or a postgresql:// URL, or leave --journal out "
            "to use $REGIMENT_JOURNAL, else .regiment/journal.db here"
        )
    return text


def _status(word: str) -> str:
    """A ``--status``; ``awaiting_approval``, a paused run's name before, is ``paused``."""
    return "paused" if word == "awaiting_approval" else word


def limit_count(text: str) -> int:
    """A ``--limit``: a whole number of at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return int(text)


def whole_number(text: str) -> int:
    """A count given as a whole number (``--keep-runs``; its range is checked later)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def add_journal_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``regiment runs`` and ``regiment show``."""
    runs = commands.add_parser("runs", help="list the journal's runs, newest first")
    runs.add_argument(
        "--status",
        type=_status,
        choices=STATUSES,
        help="only runs with this status (awaiting_approval: the same as paused)",
    )
    runs.add_argument("--json", action="store_true", help="one JSON object per line")
    runs.add_argument("--limit", metavar="N", type=limit_count, help="only the N newest runs")
    add_journal_option(runs)
    show = commands.add_parser(
        "show", help="one run: plan versions, steps, answer, usage, model and tool calls"
    )
    show.add_argument("run_id", metavar="RUN_ID", help="as `regiment runs` lists it")
    show.add_argument("--json", action="store_true", help="one JSON object")
    add_journal_option(show)


def journal_spec(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    """The journal the command uses, or ``None`` for ``--no-journal``."""
    return None if getattr(args, "no_journal", False) else journal_read(args, environ)


def journal_read(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    """The journal a command reads (they take no ``--no-journal``): ``--journal``, else
    ``$REGIMENT_JOURNAL``, else the default file here."""
    spec: str | None = getattr(args, "journal", None) or environ.get("REGIMENT_JOURNAL")
    return spec or str(Path.cwd() / DEFAULT)


def journal_source(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    """Where ``journal_read``'s journal came from, as an error names it: ``--journal``,
    ``$REGIMENT_JOURNAL``, or ``journal`` (the default file)."""
    if getattr(args, "journal", None):
        return "--journal"
    return "$REGIMENT_JOURNAL" if environ.get("REGIMENT_JOURNAL") else "journal"


async def open_cli_journal(
    spec: str, *, read_only: bool = False, source: str = "--journal"
) -> Journal:
    """Open the journal; a file or database that cannot be used is a usage error naming it
    (``source``: where it came from, as ``journal_source`` says). A command that only reads
    opens it ``read_only``: it reads a file it may not write."""
    from regiment.journal import open_journal  # the backends: only when one is opened

    try:
        return await open_journal(spec, read_only=read_only)
    except (JournalError, ConfigError) as exc:  # ConfigError: a URL no journal takes
        raise journal_flag_error(spec, exc, source) from exc


def journal_flag_error(
    spec: str, exc: JournalError | ConfigError, source: str = "--journal"
) -> ConfigError:
    """``--journal SPEC: why`` (``source`` in place of ``--journal``: where SPEC came
    from), with a URL's password left out (it is not the user's to see in a log, a
    terminal's scroll-back or a CI page). A journal's own message that names the journal
    first (``journal URL: connecting failed ...``) is not named twice."""
    where, why = shown_spec(spec), str(exc)
    if why.startswith(lead := f"journal {where}: "):
        why = why[len(lead) :]
    return ConfigError(f"{source} {where}: {why}")


def said(value: str) -> str:
    """A value given on the command line (a RUN_ID, a REQUEST_ID), as an error names it,
    quoted: a 5,000-character one is not written back whole (its start, its end, how long),
    as the service names a value a client sent."""
    return shown(value)


def no_run(spec: str, run_id: str, flag: str) -> ConfigError:
    """The usage error for a run the journal ``spec`` does not have (``flag``: what the
    ``regiment runs`` it suggests adds to list that journal's runs, `` --journal J``)."""
    where = shown_spec(spec)
    return ConfigError(
        f"journal {where} has no run {said(run_id)}; `regiment runs{flag}` lists them"
    )


def journal_exists(spec: str) -> bool:
    """Whether ``spec`` names a journal that may hold runs (a URL, or a file that exists).
    Any URL counts: opening one no journal takes (``sqlite:///x.db``) says so, where "no
    journal there; run a goal with it first" would send the user to a run it refuses."""
    return "://" in spec or Path(spec).exists()


async def runs_command(
    args: argparse.Namespace, spec: str, stdout: TextIO, *, source: str = "--journal"
) -> int:
    """``regiment runs``: one line (or JSON object) per run, newest first (``source``:
    where ``spec`` came from, as ``journal_source`` says)."""
    if not journal_exists(spec):
        if args.journal is not None:  # asked for by name: a typo, most likely
            raise ConfigError(
                f"--journal {shown_spec(spec)}: no journal there (reading never creates one); check the "
                "path, or run a goal with it first"
            )
        return 0  # the default journal, not made yet: no runs
    notes = NewerNotes()  # the journal holds kinds of record a newer regiment wrote: said below
    logging.getLogger("regiment.journal").addHandler(notes)
    try:
        journal = await open_cli_journal(spec, read_only=True, source=source)
    finally:
        logging.getLogger("regiment.journal").removeHandler(notes)
    try:
        found = await journal.list_runs(status=args.status, limit=args.limit)
    except JournalError as exc:  # (the server went away, a lock held past lock_timeout)
        raise ConfigError(str(exc)) from exc
    finally:
        await journal.close()
    for info in found:
        # A goal is anyone's text: its control characters as \xNN (JSON escapes them).
        print(_run_json(info) if args.json else visible(_run_line(info)), file=stdout)
    for note in [] if args.json else notes.notes:  # (JSON lines are runs only)
        print(f"note: {visible(note)}", file=stdout)
    return 0


class NewerNotes(logging.Handler):
    """The journal's warnings (as it opens, or as a read leaves records out) that it holds
    records a newer regiment wrote: on the ``regiment.journal`` logger while a command reads."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.notes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "newer_kinds", None):
            self.notes.append(record.getMessage())


def _run_line(info: RunInfo) -> str:
    """A run on one line (a goal or session with line breaks in it too: ``| head -1`` and
    ``| wc -l`` count runs), its goal cut to 60 characters."""
    started = info.started_at.strftime("%Y-%m-%d %H:%M:%S")
    session = f"  [{' '.join(info.session.split())}]" if info.session else ""
    goal = " ".join(info.goal.split())
    goal = goal if len(goal) <= 60 else goal[:57] + "..."
    return f"{info.run_id}  {info.status:<9}  {started}  {info.team}{session}  {goal}"


def _run_json(info: RunInfo) -> str:
    return json.dumps(
        {
            "run_id": info.run_id,
            "team": info.team,
            "goal": info.goal,
            "status": info.status,
            "started_at": info.started_at.isoformat(),
            "updated_at": info.updated_at.isoformat(),
            "session": info.session,
        }
    )


def resume_hint(team_file: object, run_id: str, flag: str = "") -> str:
    """How run ``run_id``, started from ``team_file`` (``None``: not by ``regiment run``),
    goes on: ``regiment resume RUN_ID`` works only with its team file on record and there.
    ``flag`` is what the command needs to find the journal (`` --journal J``)."""
    if team_file is None:  # a service started it (or code)
        return (
            f"POST /runs/{run_id}/resume to the service that started it, "
            f"or regiment resume{flag} TEAM_FILE {run_id}"
        )
    if not Path(str(team_file)).is_file():
        return f"regiment resume{flag} TEAM_FILE {run_id} (its team file {team_file} is gone)"
    return f"regiment resume{flag} {run_id}"

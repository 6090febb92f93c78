"""The ``regiment`` command's exit codes, and the last line that goes with each."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TextIO

from regiment._text import visible
from regiment.cli._exit import EXIT_INTERRUPTED
from regiment.cli._lines import with_line
from regiment.cli._resume import finished_already
from regiment.errors import AlreadyFinished, ConfigError, LeaseHeld, LeaseLost, RegimentError
from regiment.hierarchy import stopped_resumably

if TYPE_CHECKING:
    from regiment.cli._run import Outcome
    from regiment.hierarchy.events import RunFailed

__all__ = (
    "ERROR",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_PAUSED",
    "EXIT_RESUMABLE",
    "EXIT_TAKEN_OVER",
    "EXIT_USAGE",
    "config_error",
    "ended_early",
    "exit_code",
    "run_error",
    "typeable",
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PAUSED, EXIT_TAKEN_OVER = 0, 1, 2, 3, 4
EXIT_RESUMABLE = 5  # stopped unfinished, journaled: `regiment resume` once its cause is fixed

ERROR = "regiment: error:"  # how every error line of the command starts (see ``_args``)


def config_error(exc: RegimentError, stderr: TextIO, *, code: int = EXIT_USAGE) -> int:
    """A usage or config error (or another error of the command itself, with its
    ``code``): one line, ``regiment: error: ...``, as every command and argparse's usage
    errors say it, whatever a user's module put in the message it raised while importing;
    a team file's key path gets its line (``team.toml:14: workers[1].tools[0]: ...``)."""
    print(f"{ERROR} " + visible(" ".join(with_line(str(exc)).splitlines())), file=stderr)
    return code


_SUGGESTED = re.compile(r"`regiment (runs|show|resume|approvals|approve)\b(?! --journal)")


def typeable(message: str, flag: str) -> str:
    """``message`` (a run's words: it knows no command line) with ``flag`` (`` --journal
    J``) in each ``regiment`` command it suggests, so that typed as printed it reads the
    journal this command used."""
    return _SUGGESTED.sub(lambda m: f"`regiment {m[1]}{flag}", message) if flag else message


def run_error(exc: RegimentError, resume: str | None, stderr: TextIO, flag: str = "") -> int:
    """The exit code (and last line) of a ``run`` or ``resume`` (of run ``resume``) that
    raised ``exc`` (``flag``: what a command it suggests adds, `` --journal J``)."""
    if isinstance(exc, ConfigError):
        return config_error(exc, stderr)
    if isinstance(exc, LeaseHeld):  # nothing ran: the run is someone else's for now
        return config_error(ConfigError(typeable(str(exc), flag)), stderr)
    if isinstance(exc, AlreadyFinished):  # a resume that raced this one finished it meanwhile
        return config_error(finished_already(resume or "", exc.status, flag), stderr)
    if isinstance(exc.__cause__, LeaseLost):  # not a failure: the run goes on over there
        print(f"regiment: run goes on elsewhere: {typeable(str(exc), flag)}", file=stderr)
        return EXIT_TAKEN_OVER
    said = typeable(str(exc), flag)
    print(visible(f"regiment: run failed: {type(exc).__name__}: {said}"), file=stderr)
    return EXIT_FAILED


def exit_code(outcome: Outcome) -> int:
    """The exit code of a run that ended with ``outcome``."""
    match outcome:
        case "done":
            return EXIT_OK
        case "failed":
            return EXIT_FAILED
        case "paused":
            return EXIT_PAUSED
        case "interrupted":
            return EXIT_INTERRUPTED
        case "taken_over":
            return EXIT_TAKEN_OVER
        case "stopped":
            return EXIT_RESUMABLE


def ended_early(
    failure: RunFailed | None, journaled: bool, stderr: TextIO, flag: str = ""
) -> Outcome:
    """The outcome (and last line) of a run that ended without a result: taken over by
    another process, stopped unfinished where a resume finishes it (its Ray cluster
    went away: ``ClusterLost``, in a journaled run), or failed."""
    if failure is not None and failure.error_type == "LeaseLost":
        print(f"regiment: run goes on elsewhere: {typeable(failure.message, flag)}", file=stderr)
        return "taken_over"
    if failure is not None and stopped_resumably(failure, journaled=journaled):
        line = f"regiment: run stopped, resumable: {failure.error_type}: {typeable(failure.message, flag)}"
        print(visible(line), file=stderr)
        return "stopped"
    why = (
        f"{failure.error_type}: {typeable(failure.message, flag)}"
        if failure
        else "it ended without a result"
    )
    print(visible(f"regiment: run failed: {why}"), file=stderr)  # a model's words, maybe
    return "failed"

"""What a journaled run's errors tell the user to do next, from code and from a terminal.

A resume, a run taken over or one that could not be journaled is met by a program (through
``RunningTeam``) as often as at a terminal: the message says both, and the command it
suggests reads the journal the run is in (``--journal J``), so that typed as printed it
works wherever it is typed (``regiment`` alone reads the default journal of the directory
it is run in). The CLI leaves a command that names its journal as it is.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from regiment.errors import LeaseLost
    from regiment.journal import Journal

__all__ = ("list_advice", "nested_refusal", "resume_advice", "show_advice", "taken_over")


def _command(journal: Journal, command: str, run_id: str = "") -> str | None:
    """`` `regiment COMMAND --journal J [RUN_ID]` ``; ``None`` for an in-memory journal,
    which no other process (and so no command) can read."""
    from regiment.journal import MemoryJournal  # an error's path: loaded only then

    if isinstance(journal, MemoryJournal):
        return None
    tail = f" {run_id}" if run_id else ""
    return f"`regiment {command} --journal {shlex.quote(journal.where)}{tail}`"


def resume_advice(journal: Journal, run_id: str) -> str:
    """How to resume run ``run_id`` of ``journal``: ``running.resume(...)`` on a team started
    with that journal, or the command (which builds the team from the file ``regiment run``
    recorded, or is given one: ``regiment resume TEAM_FILE RUN_ID``)."""
    in_code = f"running.resume({run_id!r}) on a team started with that journal"
    command = _command(journal, "resume", run_id)
    return in_code if command is None else f"{in_code}, or {command}"


def show_advice(journal: Journal, run_id: str) -> str:
    """Where run ``run_id`` is seen: ``regiment show`` at a terminal, ``journal.get_run``
    (its status) or ``journal.read`` (its records) in code."""
    in_code = f"in code, journal.get_run({run_id!r}) and journal.read({run_id!r})"
    command = _command(journal, "show", run_id)
    return in_code if command is None else f"{command} shows it; {in_code}"


def list_advice(journal: Journal) -> str:
    """Where the runs of ``journal`` are listed: ``regiment runs``, ``journal.list_runs()``."""
    command = _command(journal, "runs")
    in_code = "in code, journal.list_runs()"
    return in_code if command is None else f"{command} lists them; {in_code}"


def taken_over(run_id: str, lost: LeaseLost, journal: Journal) -> str:
    """What the old owner of a run that another process took over says: the same in
    ``run()``'s ``JournalError``, a stream's last event and the CLI's last line."""
    if lost.owner is None:  # the lease was let go, not taken: the journal's words say how
        who = f"another process ({lost})"
    else:  # loaded only now: a run that is never taken over does not load the owners module
        from regiment.journal import describe_owner

        who = f"another process, {describe_owner(lost.owner)}, which runs it now"
    return (
        f"run {run_id} was taken over by {who}; nothing this process did after that was "
        f"kept: the new owner finishes it ({show_advice(journal, run_id)})"
    )


def nested_refusal(journal: Journal, run_id: str) -> str | None:
    """Why a resume of ``run_id``, the run of a nested team, is refused: it is resumed
    with the top run it belongs to, which the message says how to resume (``None``: a
    top-level run)."""
    from regiment.journal import not_resumable_alone, top_run_id

    top = top_run_id(run_id)
    if top is None:
        return None
    return not_resumable_alone(run_id, how=resume_advice(journal, top))

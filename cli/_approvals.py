"""``regiment approvals`` and ``regiment approve``: a paused run's requests, over its journal.

::

    regiment approvals [RUN_ID] [--json] [--limit N] [--journal PATH_OR_URL]
    regiment approve RUN_ID REQUEST_ID [--deny REASON | --edit JSON_OBJECT] [--by NAME]
                     [--team TEAM_FILE] [--journal PATH_OR_URL]

An edit is checked against the tool's schema (in ``--team``, else in the team file
the run was started from; without either it is refused) before it is recorded; an
invalid one leaves the request pending.

The journal is the one ``regiment run`` writes: ``--journal``, else
``$REGIMENT_JOURNAL``, else ``.regiment/journal.db`` under the current directory.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

import msgspec

from regiment._text import counted, visible
from regiment.cli._hints import journal_flag
from regiment.cli._journal_cmds import (
    add_journal_option,
    journal_exists,
    journal_read,
    journal_source,
    limit_count,
    open_cli_journal,
    resume_hint,
    said,
    shown_spec,
)
from regiment.cli._resume import (
    add_import_root,
    created_record,
    recorded_team_file,
)
from regiment.errors import ApprovalError, ConfigError, JournalError, LeaseHeld, UnknownRun
from regiment.journal import Journal, RunCreated, TeamFile
from regiment.tools import ApprovalDecision, ApprovalRequest, Approve, Deny, EditArguments

if TYPE_CHECKING:
    from regiment.hierarchy import Team

__all__ = ("add_approval_commands", "approval_command")


def _named(text: str) -> str:
    """A ``--by``: not blank (``--by "$REVIEWER"`` with the variable unset would record the
    decision as nobody's, without a word)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("it is blank; give who decided, or leave --by out")
    return text


def add_approval_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``approvals`` and ``approve`` subcommands."""
    listing = commands.add_parser("approvals", help="list the approval requests runs wait for")
    listing.add_argument("run_id", metavar="RUN_ID", nargs="?", help="only this run's")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.add_argument(
        "--limit",
        metavar="N",
        type=limit_count,
        help="only the first N (stderr says how many more)",
    )
    add_journal_option(listing)
    decide = commands.add_parser("approve", help="approve, deny or edit a pending request")
    decide.add_argument(
        "run_id", metavar="RUN_ID", help="the run, as `regiment approvals` lists it"
    )
    decide.add_argument(
        "request_id", metavar="REQUEST_ID", help="its request, as `regiment approvals` lists it"
    )
    how = decide.add_mutually_exclusive_group()
    how.add_argument("--deny", metavar="REASON", help="deny it; the worker is told the reason")
    how.add_argument("--edit", metavar="JSON_OBJECT", help="approve with these arguments")
    decide.add_argument("--by", metavar="NAME", type=_named, help="who decided, for the record")
    decide.add_argument(
        "--team",
        metavar="TEAM_FILE",
        help="validate --edit against the tool's schema in this team file (default: the "
        "file the run was started from, when `regiment run` recorded it)",
    )
    add_journal_option(decide)
    decide.add_argument(
        "--app-dir",
        metavar="DIR",
        default=".",
        help="where --team's module:attribute paths are imported from (default: .)",
    )


async def approval_command(
    args: argparse.Namespace,
    team: Team | None,
    stdout: TextIO,
    environ: Mapping[str, str],
    stderr: TextIO,
) -> None:
    """Run ``approvals`` or ``approve``.

    Raises:
        ConfigError: a bad ``--edit``.
        ApprovalError: the request cannot be decided.
        JournalError: the journal cannot be opened or has no such run.
    """
    location = journal_read(args, environ)
    if not journal_exists(location):
        if args.command == "approvals" and args.run_id is None and args.journal is None:
            return  # the default journal, not made yet: nothing waits (as `regiment runs`)
        raise JournalError(
            f"no journal at {location}; `regiment run` journals there (or pass --journal, "
            "or set $REGIMENT_JOURNAL), then list and decide its approvals here"
        )
    reads, source = args.command == "approvals", journal_source(args, environ)
    journal = await open_cli_journal(location, read_only=reads, source=source)
    flag = journal_flag(location, environ)
    try:
        if args.run_id is not None:
            await _known_run(journal, args.run_id, location, flag)
        if args.command == "approvals":
            await _list(journal, args, stdout, stderr)
        else:
            await _decide(journal, args, team, stdout, flag)
    finally:
        await journal.close()


async def _list(journal: Journal, args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
    pending = await journal.pending_approvals(args.run_id)
    shown = pending if args.limit is None else pending[: args.limit]
    for record in shown:
        r = record.request
        if args.json:
            print(json.dumps(_row(r), sort_keys=True), file=stdout)
        else:
            arguments = json.dumps(r.arguments, sort_keys=True)
            line = (
                f"{r.request_id}  {r.run_id}  {r.worker}  {r.step_id}  {r.tool_name}({arguments})"
            )
            print(visible(line), file=stdout)  # a model chose the arguments
    if len(pending) > len(shown):  # not on stdout, which a script may read
        more = len(pending) - len(shown)
        print(
            f"regiment: {counted(more, 'more pending request')} not listed; raise --limit to see them",
            file=stderr,
        )


async def _known_run(journal: Journal, run_id: str, location: str, flag: str) -> None:
    """Nothing if ``journal`` (``location``) has run ``run_id``; else a ``JournalError``
    saying the run id is wrong and where the right ones are (the command to list them adds
    ``flag``, `` --journal J``, to read this journal)."""
    try:
        await journal.get_run(run_id)
    except UnknownRun as exc:
        raise UnknownRun(
            f"RUN_ID is wrong: journal {shown_spec(location)} has no run {said(run_id)}; "
            f"`regiment approvals{flag}` lists each pending request with its run"
        ) from exc


def _row(r: ApprovalRequest) -> dict[str, object]:
    return {
        "request_id": r.request_id,
        "run_id": r.run_id,
        "worker": r.worker,
        "step_id": r.step_id,
        "tool": r.tool_name,
        "arguments": r.arguments,
        "idempotency_key": r.idempotency_key,
        "expires_at": r.expires_at,
    }


async def _decide(
    journal: Journal, args: argparse.Namespace, team: Team | None, stdout: TextIO, flag: str
) -> None:
    decision = _decision(args.deny, args.edit)
    created = await created_record(journal, args.run_id)
    recorded = _recorded(created, args.run_id)
    if team is None and isinstance(decision, EditArguments):
        # Edited arguments are checked against the tool's schema before they are recorded.
        if recorded is None:
            raise ConfigError(
                f"--edit: run {args.run_id!r} has no team file on record to check the edited "
                "arguments against (it was not started by `regiment run`, or the file is "
                "gone); pass --team TEAM_FILE"
            )
        team = _team_of(recorded)
    # The engine's approval path: only when a decision is taken (`validate` and the
    # other commands build their parsers from this module without it, issue #22).
    from regiment.hierarchy import decide_in_journal

    try:
        request = await decide_in_journal(
            journal, args.request_id, decision, args.by or "", run_id=args.run_id, team=team
        )
    except ApprovalError as exc:
        if exc.kind != "unknown":
            raise
        raise await _wrong_request(journal, args.run_id, args.request_id, flag) from exc
    except LeaseHeld as held:
        raise LeaseHeld(
            f"run {args.run_id!r} is live in another process and takes no decision from "
            "here while it runs; it pauses once nothing else of it can go on: decide then "
            "(or where it runs: at its terminal with `regiment run --approve ask`, or its "
            f"service's POST /approvals/{args.request_id}). The journal says: {held}"
        ) from held
    what = type(decision).__name__.lower().replace("editarguments", "edit")
    on_record = None if created is None or created.team_file is None else created.team_file.path
    print(
        f"{what}: {request.tool_name} in run {request.run_id} "
        f"({request.request_id}); continue with: {resume_hint(on_record, request.run_id, flag)}",
        file=stdout,
    )


async def _wrong_request(
    journal: Journal, run_id: str, request_id: str, flag: str
) -> ApprovalError:
    """What to say of a request run ``run_id`` does not have: whose it is, if another
    run's, and how to list the right ones (``flag``: the commands' `` --journal J``)."""
    others = [r.request for r in await journal.pending_approvals() if r.request.run_id != run_id]
    if (found := next((r for r in others if r.request_id == request_id), None)) is not None:
        return ApprovalError(
            f"REQUEST_ID {request_id} is of run {found.run_id}, not of run {run_id}: decide "
            f"it with `regiment approve{flag} {found.run_id} {request_id}`; `regiment approvals"
            f"{flag} {run_id}` lists the requests of run {run_id}",
            kind="unknown",
        )
    return ApprovalError(
        f"REQUEST_ID is wrong: run {run_id} has no approval request {said(request_id)}; "
        f"`regiment approvals{flag} {run_id}` lists its pending ones",
        kind="unknown",
    )


def _recorded(created: RunCreated | None, run_id: str) -> TeamFile | None:
    """The run's team file, if ``regiment run`` recorded it and it is still there."""
    try:
        return recorded_team_file(created, run_id)
    except ConfigError:
        return None


def _team_of(source: TeamFile) -> Team:
    """The team ``source`` describes, built with a stand-in model (no model is called)."""
    add_import_root(source.app_dir)
    from regiment.config import build_team, load_config  # only to check an --edit

    return build_team(load_config(source.path), model="scripted", source=source.path)


def _decision(deny: str | None, edit: str | None) -> ApprovalDecision:
    if deny is not None:
        return Deny(reason=deny)
    if edit is None:
        return Approve()
    try:
        arguments = msgspec.json.decode(edit)
    except (msgspec.DecodeError, RecursionError) as exc:  # RecursionError: nested deep
        raise ConfigError(f"--edit is not JSON ({exc}); give a JSON object") from exc
    if not isinstance(arguments, dict):
        raise ConfigError(f"--edit needs a JSON object of arguments, not {said(edit)}")
    return EditArguments(arguments=arguments)

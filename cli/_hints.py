"""The commands a message tells the user to type next, complete for the journal in use."""

from __future__ import annotations

import argparse
import functools
import shlex
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TextIO

from regiment.cli._journal_cmds import (
    DEFAULT,
    journal_read,
    journal_source,
    runs_command,
    shown_spec,
)
from regiment.cli._show import show_command

__all__ = ("journal_flag", "journal_reader")


def journal_flag(spec: str, environ: Mapping[str, str]) -> str:
    """``" --journal SPEC"`` for a command a message suggests, so that it reads the journal
    ``spec`` (a URL without its password); ``""`` when that command, typed here as it is,
    reads ``spec`` already: it is ``$REGIMENT_JOURNAL``, or the default file here."""
    default = environ.get("REGIMENT_JOURNAL") or str(Path.cwd() / DEFAULT)
    if spec == default or (
        "://" not in spec + default and Path(spec).resolve() == Path(default).resolve()
    ):
        return ""
    return f" --journal {shlex.quote(shown_spec(spec))}"


def journal_reader(
    args: argparse.Namespace, environ: Mapping[str, str]
) -> Callable[[TextIO], Awaitable[int]]:
    """``regiment runs`` or ``regiment show``, given where to print; what ``show`` suggests
    (``regiment resume ...``) names the journal it read."""
    spec, source = journal_read(args, environ), journal_source(args, environ)
    if args.command == "show":
        flag = journal_flag(spec, environ)
        return functools.partial(show_command, args, spec, flag=flag, source=source)
    return functools.partial(runs_command, args, spec, source=source)

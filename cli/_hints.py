"""The commands a message tells the user to type next, complete for the journal in use."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from regiment.cli._journal_cmds import DEFAULT, shown_spec

__all__ = ("journal_flag",)


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

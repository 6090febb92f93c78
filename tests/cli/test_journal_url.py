"""A journal given as a URL of a database regiment has no journal for (``sqlite:///x.db``,
``mysql://...``) was taken for a file name: ``regiment run`` made a directory ``sqlite:``
with an SQLite file ``x.db`` in it, and journaled there without a word.

The commands that read (``runs``, ``show``, ``approvals``, ``approve``, ``resume RUN_ID``)
said of such a URL ``no journal there ...; run a goal with it first`` (a goal run with it is
refused), or listed nothing at all, and wrote a URL's password back whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.errors import ConfigError
from regiment.journal import open_journal

from .helpers import run_cli, write_team

pytestmark = pytest.mark.anyio

REFUSED = (
    "URL, which no journal takes; give a file name (an SQLite file, runs.db) or a postgresql:// URL"
)


@pytest.mark.parametrize("url", ["sqlite:///runs.db", "mysql://ana:s3cret@db.example/runs"])
async def test_a_url_no_journal_takes_is_refused_and_nothing_is_made(
    tmp_path: Path, url: str
) -> None:
    team = write_team(tmp_path, "idle")
    scheme = url.partition("://")[0]
    code, out, err = await run_cli("run", str(team), "goal", "--journal", url)
    assert code == 2
    assert out == ""
    assert err.splitlines()[-1] == (
        f"regiment: error: --journal {_shown(url)}: the journal is a {scheme}:// {REFUSED}"
    )
    assert "s3cret" not in err
    assert _made(tmp_path) == ["team.toml"]


READERS = [
    ["runs"],
    ["runs", "--json"],
    ["show", "run-1"],
    ["approvals"],
    ["approvals", "run-1"],
    ["approve", "run-1", "apr-1"],
    ["resume", "run-1"],
]


@pytest.mark.parametrize("argv", READERS, ids=" ".join)
@pytest.mark.parametrize("url", ["sqlite:///runs.db", "mysql://ana:s3cret@db.example/runs"])
async def test_every_command_that_reads_refuses_it_as_run_does(
    tmp_path: Path, argv: list[str], url: str
) -> None:
    scheme = url.partition("://")[0]
    code, out, err = await run_cli(*argv, "--journal", url)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"regiment: error: --journal {_shown(url)}: the journal is a {scheme}:// {REFUSED}"
    )
    assert "s3cret" not in err
    assert _made(tmp_path) == []


@pytest.mark.parametrize("argv", READERS, ids=" ".join)
async def test_from_the_environment_too(tmp_path: Path, argv: list[str]) -> None:
    url = "mysql://ana:s3cret@db.example/runs"
    code, out, err = await run_cli(*argv, environ={"REGIMENT_JOURNAL": url})
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"regiment: error: $REGIMENT_JOURNAL {_shown(url)}: the journal is a mysql:// {REFUSED}"
    )
    assert "s3cret" not in err


async def test_open_journal_refuses_such_a_url_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^the journal is a sqlite:// URL, which no journal"):
        await open_journal(f"sqlite:///{tmp_path}/runs.db")
    assert _made(tmp_path) == []


def _shown(url: str) -> str:
    """``url`` as an error shows it: without its password."""
    return url.replace(":s3cret@", "@")


def _made(directory: Path) -> list[str]:
    """What is in ``directory`` but the brains' modules."""
    return sorted(p.name for p in directory.iterdir() if not p.name.endswith(".py"))

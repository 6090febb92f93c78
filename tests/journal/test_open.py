"""``open_journal`` picks the backend from what it is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.errors import ConfigError
from regiment.journal import (
    Journal,
    MemoryJournal,
    PostgresJournal,
    SqliteJournal,
    open_journal,
)

pytestmark = pytest.mark.anyio


async def test_none_is_in_memory_and_a_journal_passes_through() -> None:
    journal = await open_journal(None)
    assert isinstance(journal, MemoryJournal)
    assert isinstance(journal, Journal)
    assert await open_journal(journal) is journal
    await journal.close()


async def test_a_path_or_a_string_is_an_sqlite_file(tmp_path: Path) -> None:
    for spec in (tmp_path / "a.db", str(tmp_path / "b.db")):
        journal = await open_journal(spec)
        assert isinstance(journal, SqliteJournal)
        assert journal.where == str(spec)
        await journal.close()


async def test_a_postgresql_url_is_postgres(postgres_url: str) -> None:
    for spec in (postgres_url, postgres_url.replace("postgresql://", "postgres://")):
        journal = await open_journal(spec)
        assert isinstance(journal, PostgresJournal)
        await journal.close()


async def test_anything_else_is_refused_with_what_to_pass() -> None:
    with pytest.raises(ConfigError, match=r"journal=42 is not a journal: pass None"):
        await open_journal(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="the journal path is empty"):
        await open_journal("")

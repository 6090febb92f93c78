"""``logging.makeLogRecord`` works with ``regiment`` imported: it calls the record
factory with no name (``None``) and sets the name after, and regiment's factory,
chained in front of it, raised ``AttributeError: 'NoneType' object has no attribute
'startswith'`` (a socket log receiver rebuilds records so; Ray replicas' records
are rebuilt so in the team's process)."""

from __future__ import annotations

import logging

import regiment  # installs the factory

assert regiment


def test_make_log_record_works_and_keeps_what_it_is_given() -> None:
    record = logging.makeLogRecord({"name": "regiment.run", "msg": "hi", "trace_id": "ab" * 16})
    assert (record.name, record.getMessage()) == ("regiment.run", "hi")
    assert record.trace_id == "ab" * 16  # type: ignore[attr-defined]
    assert logging.makeLogRecord({}).name is None

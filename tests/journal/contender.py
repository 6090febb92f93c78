"""A separate process that works on a shared journal, driven line by line over stdin/stdout.

    python contender.py LOCATION ROLE RUN_ID ANYIO_BACKEND

It prints ``ready`` once the journal is open, waits for ``go``, then:

- ``acquire``: tries to take RUN_ID over; prints ``won TOKEN`` (then appends 20
  events, waits for ``release``, releases) or ``held``.
- ``zombie``: has created RUN_ID before ``ready``; after ``go`` appends one
  event durably and prints ``ok`` or ``lost``.
- ``writer``: creates five runs named RUN_ID-PID-0..4 and appends 100 events to each.
Finally it prints ``done``.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime

import anyio

from regiment.journal import EventRecorded, Journal, LeaseHeld, LeaseLost, RunCreated, open_journal

OWNER = f"pid:{os.getpid()}"


def say(line: str) -> None:
    print(line, flush=True)


def created(run_id: str) -> RunCreated:
    return RunCreated(
        run_id=run_id, team="t", config_hash="h", goal="g", created_at=datetime.now(UTC)
    )


def event(run_id: str, index: int) -> EventRecorded:
    return EventRecorded(run_id=run_id, kind="Tick", event={"owner": OWNER, "index": index})


async def acquire(journal: Journal, run_id: str) -> None:
    try:
        lease = await journal.acquire(run_id, owner=OWNER, ttl=60)
    except LeaseHeld:
        say("held")
        return
    say(f"won {lease.token}")
    for index in range(20):
        await journal.append(lease, event(run_id, index), durable=index % 5 == 4)
    await anyio.to_thread.run_sync(sys.stdin.readline)  # "release"
    await journal.release(lease)


async def writer(journal: Journal, run_id: str) -> None:
    for number in range(5):
        name = f"{run_id}-{os.getpid()}-{number}"
        lease = await journal.create_run(created(name), owner=OWNER, ttl=60)
        for index in range(100):
            await journal.append(lease, event(name, index), durable=index % 10 == 0)
        await journal.release(lease)


async def main(location: str, role: str, run_id: str) -> None:
    journal = await open_journal(location)
    zombie = (
        await journal.create_run(created(run_id), owner=OWNER, ttl=60) if role == "zombie" else None
    )
    say("ready")
    await anyio.to_thread.run_sync(sys.stdin.readline)  # "go"
    if role == "acquire":
        await acquire(journal, run_id)
    elif role == "writer":
        await writer(journal, run_id)
    else:
        assert zombie is not None
        try:
            await journal.append(zombie, event(run_id, 0), durable=True)
            say("ok")
        except LeaseLost:
            say("lost")
    await journal.close()
    say("done")


if __name__ == "__main__":
    location, role, run_id, backend = sys.argv[1:5]
    anyio.run(main, location, role, run_id, backend=backend)

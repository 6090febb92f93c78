"""Kill a run with SIGKILL in the middle of a refund, resume it, and pay nobody twice.

Run it with ``.venv/bin/python examples/durable/main.py``. Offline (a scripted
model), it starts the run in a child process journaled to an SQLite file; the
child stops inside the second refund, right after the bank paid, and this
process kills it (``kill -9``: no cleanup). Then it resumes the run from the
journal: the first refund is replayed from the journal, the second runs again
with the same idempotency key (so the bank pays it once), the third runs live.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from regiment import Planner, RunContext, ScriptedModel, Team, Worker, run_main, tool
from regiment.journal import SqliteJournal
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, tool_call_response

LEASE_TTL = 1.0  # seconds a dead owner's lease outlives it (the default is 30)
ORDERS = {"s1": ("1001", 20), "s2": ("1002", 35), "s3": ("1003", 15)}
PLAN = json.dumps(
    {
        "steps": [
            {"id": "s1", "description": "refund order 1001"},
            {"id": "s2", "description": "refund order 1002", "depends_on": ["s1"]},
            {"id": "s3", "description": "refund order 1003", "depends_on": ["s2"]},
        ]
    }
)


@dataclass(frozen=True)
class Bank:
    """The run's deps: a bank that pays each idempotency key once (a file, for the demo)."""

    folder: Path
    crash_on: str | None = None  # the order whose refund the child dies in

    def pay(self, key: str, order: str, amount: int) -> str:
        ledger = self.folder / "bank.jsonl"
        paid = (
            [json.loads(line) for line in ledger.read_text().splitlines()]
            if ledger.exists()
            else []
        )
        with (self.folder / "bodies.jsonl").open("a") as bodies:
            bodies.write(json.dumps(order) + "\n")
        if not any(entry["key"] == key for entry in paid):  # a key seen before: no new payment
            with ledger.open("a") as f:
                f.write(json.dumps({"key": key, "order": order, "amount": amount}) + "\n")
        return f"order {order}: refunded {amount}"


@tool
async def issue_refund(order_id: str, amount: int, ctx: RunContext[Bank]) -> str:
    """Refund an order (the bank deduplicates by the call's idempotency key)."""
    bank = ctx.deps
    receipt = bank.pay(ctx.idempotency_key, order_id, amount)
    if order_id == bank.crash_on:
        print(f"crash {order_id}", flush=True)  # the parent kills us here
        await anyio.sleep_forever()
    return receipt


async def brain(request: ModelRequest) -> ModelResponse | str:
    if request.role == "planner":
        return PLAN
    if request.role == "worker":
        step = re.search(r"Your step \((\w+)\)", request.messages[0].text)
        assert step is not None
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if results:
            return str(results[0].content)
        order, amount = ORDERS[step.group(1)]
        return tool_call_response("issue_refund", {"order_id": order, "amount": amount})
    return "Refunds done: " + "; ".join(
        sorted(re.findall(r"order \d+: refunded \d+", request.messages[-1].text))
    )


def make_team() -> Team:
    model = ScriptedModel(brain)
    return Team(
        name="refund-desk",
        planner=Planner(model=model),
        workers=[
            Worker(name="billing", description="refunds orders", model=model, tools=[issue_refund])
        ],
        concurrency=1,
    )


async def child(folder: str) -> None:
    """The process that crashes: it runs the goal until the refund of order 1002."""
    bank = Bank(Path(folder), crash_on="1002")
    journal = Path(folder) / "runs.db"
    async with (
        make_team().start(journal=journal, lease_ttl=LEASE_TTL) as running,
        running.stream("refund the three orders", deps=bank) as events,
    ):
        async for event in events:
            print(f"event {type(event).__name__} {event.run_id}", flush=True)


async def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="regiment-durable-"))
    process = await anyio.open_process(
        [sys.executable, __file__, "--child", str(folder)], stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    lines = BufferedByteReceiveStream(process.stdout)
    run_id = ""
    while True:
        line = (await lines.receive_until(b"\n", 10_000)).decode()
        if line.startswith("event RunStarted"):
            run_id = line.split()[-1]
            print(f"run {run_id} started in a child process")
        if line.startswith("crash"):
            process.kill()  # SIGKILL, in the middle of the refund of order 1002
            await process.wait()
            await process.aclose()
            print(f"killed the child (exit {process.returncode}) inside the refund of order 1002")
            break
    await _wait_for_the_lease(folder / "runs.db", run_id)
    async with make_team().start(journal=folder / "runs.db", lease_ttl=LEASE_TTL) as running:
        result = await running.resume(run_id, deps=Bank(folder))
    print(f"resumed: {result.status}")
    print(f"answer: {result.answer}")
    paid = [json.loads(line) for line in (folder / "bank.jsonl").read_text().splitlines()]
    print("bank paid: " + ", ".join(f"{p['order']} ({p['amount']})" for p in paid))
    bodies = [json.loads(line) for line in (folder / "bodies.jsonl").read_text().splitlines()]
    print("refund tool bodies ran for: " + ", ".join(bodies))
    shutil.rmtree(folder)


async def _wait_for_the_lease(path: Path, run_id: str) -> None:
    """A dead owner's lease runs out at most ``lease_ttl`` seconds after its death;
    until then a resume is refused with ``LeaseHeld`` (the owner might be alive)."""
    await anyio.sleep(LEASE_TTL)
    journal = await SqliteJournal.open(path)
    try:
        print(f"the journal lists the run as {(await journal.get_run(run_id)).status}")
    finally:
        await journal.close()


if __name__ == "__main__":
    # It takes no arguments (--child FOLDER is how it starts its own child process):
    # -h says what it does; any other is a usage error (exit 2).
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", metavar="FOLDER", help=argparse.SUPPRESS)
    folder = parser.parse_args().child
    if folder is not None:
        anyio.run(child, folder)
    else:
        run_main(main)  # anyio.run(main), quiet when piped into `head`

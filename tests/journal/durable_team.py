"""A small offline team whose tool has a side effect, for kill-and-resume tests.

The planner's first plan charges three accounts one after another; the third
step carries a check that always fails, so the run replans and charges a fourth
instead. Every model reply is a function of the request (its role and step),
never of call order, so a process that resumes the run gives the same replies
to the calls that were not journaled. The ``charge`` tool appends every body run
to ``bodies.jsonl`` and, once per idempotency key, the side effect to
``effects.jsonl``.

``stop_at`` names where the team stops and says so on ``ready`` (a handshake for
a test that kills the process there): ``tool:STEP`` inside the tool body after
its side effect, ``model:STEP:N`` at the step's N-th model call, ``replan`` at
the replanner's call.

Run as a script (``python durable_team.py JOURNAL FOLDER STOP_AT [nested] [ttl=SECONDS]``)
it is the child process of the crash tests: it prints ``run RUN_ID`` when the run starts
and ``ready WHERE`` when it reaches ``STOP_AT``, then waits there to be killed
(``nested``: the office runs, the team as its worker; ``ttl``: the run's lease time).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from regiment import Check, Planner, RunContext, ScriptedModel, Team, TeamWorker, Worker, tool
from regiment.hierarchy import RunStarted, StepReport
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.models import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolResultPart,
    text_response,
    tool_call_response,
)

GOAL = "settle the accounts"

PLAN = json.dumps(
    {
        "steps": [
            {"id": "s1", "description": "charge acme 10"},
            {"id": "s2", "description": "charge bolt 20", "depends_on": ["s1"]},
            {"id": "s3", "description": "charge zeta 5", "depends_on": ["s2"], "check": "never"},
        ]
    }
)
REPLAN = json.dumps({"steps": [{"id": "s4", "description": "charge omni 7", "depends_on": ["s2"]}]})
KILL_POINTS = ("model:s1:1", "tool:s1", "model:s2:2", "model:s3:1", "tool:s4", "replan")


@dataclass(frozen=True)
class Ledger:
    """The run's deps: where the tool records what it did."""

    folder: Path

    @property
    def bodies(self) -> Path:
        return self.folder / "bodies.jsonl"

    @property
    def effects(self) -> Path:
        return self.folder / "effects.jsonl"

    def lines(self, path: Path) -> list[list[object]]:
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def body_runs(self) -> dict[str, int]:
        """How many times the tool's body ran, per idempotency key."""
        runs: dict[str, int] = {}
        for key, _, _ in self.lines(self.bodies):
            runs[str(key)] = runs.get(str(key), 0) + 1
        return runs


Stop = Callable[[str], Awaitable[None]]


async def _go_on(where: str) -> None:
    return None


def stopper(stop_at: str | None, ready: Callable[[str], Awaitable[None]]) -> Stop:
    """A hook that, at ``stop_at``, says ``ready`` and then waits forever."""

    async def stop(where: str) -> None:
        if where == stop_at:
            await ready(where)
            await anyio.sleep_forever()

    return stop


def _step(request: ModelRequest) -> tuple[str, str]:
    first = "\n".join(p.text for p in request.messages[0].parts if isinstance(p, TextPart))
    found = re.search(r"Your step \((\w+)\): (.*)", first)
    assert found is not None, first
    return found.group(1), found.group(2)


def brain(
    stop: Stop, plan: str, replan: str
) -> Callable[[ModelRequest], Awaitable[ModelResponse | str]]:
    async def reply(request: ModelRequest) -> ModelResponse | str:
        match request.role:
            case "planner":
                await stop("plan")
                return plan
            case "replanner":
                await stop("replan")
                return replan
            case "worker":
                step_id, description = _step(request)
                calls = sum(1 for m in request.messages if m.role == "assistant") + 1
                await stop(f"model:{step_id}:{calls}")
                results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
                if not results:
                    _, account, amount = description.split()
                    return tool_call_response("charge", {"account": account, "amount": int(amount)})
                return f"{step_id}: {results[0].content}"
            case "synthesizer":
                await stop("synthesis")
                # Sorted: parallel steps commit in either order, the answer must not.
                lines = sorted(request.messages[-1].text.splitlines())
                return text_response("answer: " + " | ".join(lines)[-600:])
            case _:
                raise AssertionError(f"unexpected role {request.role!r}")

    return reply


def make_team(
    stop: Stop = _go_on,
    *,
    plan: str = PLAN,
    replan: str = REPLAN,
    concurrency: int = 1,
    ledger: Ledger | None = None,
    approve: str | None = None,
) -> Team:
    """The team (``ledger``: the tool's when the run has no deps, as a nested team's
    run has none; ``approve``: the account whose charge needs approval)."""

    async def charge(account: str, amount: int, ctx: RunContext[Ledger | None]) -> str:
        """Charge an account (once per idempotency key)."""
        used = ctx.deps or ledger
        assert used is not None
        with used.bodies.open("a") as f:
            f.write(json.dumps([ctx.idempotency_key, account, amount]) + "\n")
        done = {line[0] for line in used.lines(used.effects)}
        if ctx.idempotency_key not in done:
            with used.effects.open("a") as f:
                f.write(json.dumps([ctx.idempotency_key, account, amount]) + "\n")
                f.flush()
        await stop(f"tool:{ctx.step_id}")
        return f"charged {amount} to {account}"

    needs = None if approve is None else (lambda args: args["account"] == approve)
    charging = tool(charge) if needs is None else tool(requires_approval=needs)(charge)
    model = ScriptedModel(brain(stop, plan, replan))
    return Team(
        name="billing-desk",
        planner=Planner(model=model),
        workers=[
            Worker(name="billing", description="charges accounts", model=model, tools=[charging])
        ],
        checks={"never": Check(description="never passes", predicate=_never)},
        concurrency=concurrency,
    )


def _never(report: StepReport) -> bool:
    return False


def _office_brain(stop: Stop) -> Callable[[ModelRequest], Awaitable[ModelResponse | str]]:
    async def reply(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return json.dumps({"steps": [{"id": "t1", "description": GOAL, "worker": "desk"}]})
        await stop("office:synthesis")
        return text_response("office: " + request.messages[-1].text[-300:])

    return reply


def make_office(
    stop: Stop = _go_on, *, ledger: Ledger | None = None, approve: str | None = None
) -> Team:
    """The durable team nested as the one worker of a team ``office``: each run of the
    office gives its one step (``t1``) to the billing desk's team (``ledger``, where its
    tool writes, and ``approve`` are as for ``make_team``; ``stop`` is the desk's and, at
    ``office:synthesis``, the office's own answer's)."""
    desk = make_team(stop, ledger=ledger, approve=approve)
    worker = TeamWorker(name="desk", description="a billing team", team=desk)
    model = ScriptedModel(_office_brain(stop))
    return Team(name="office", planner=Planner(model=model), workers=[worker])


def check_resumed(
    *,
    answer: str,
    baseline_answer: str,
    ledger: Ledger,
    baseline: Ledger,
    run_id: str,
    stop_at: str,
    in_flight: set[str] | None = None,
) -> None:
    """The invariants of a run that was killed at ``stop_at`` and resumed.

    The same answer as an uninterrupted run; every side effect once per
    idempotency key, the same effects as the uninterrupted run; and a tool body
    that ran twice only if the kill was inside it (``in_flight``: the calls the
    journal shows as started and not finished; without it, only the stopped one).
    """
    assert answer == baseline_answer
    effects = ledger.lines(ledger.effects)
    keys = [line[0] for line in effects]
    assert len(keys) == len(set(keys)), f"a side effect was repeated: {effects}"
    assert all(str(key).startswith(f"{run_id}/") for key in keys), keys
    expected = sorted((a, n) for _, a, n in baseline.lines(baseline.effects))
    assert sorted((a, n) for _, a, n in effects) == expected
    runs = ledger.body_runs()
    again = sorted(key for key, n in runs.items() if n > 1)
    assert all(n <= 2 for n in runs.values()), runs
    if in_flight is not None:  # the calls with an intent but no result at the kill
        assert set(again) <= in_flight, (stop_at, runs, in_flight)
    if stop_at.startswith("tool:"):
        step = stop_at.split(":")[1]
        assert any(f"/{step}/" in key for key in again), (stop_at, runs)
        if in_flight is None:
            assert len(again) == 1, (stop_at, runs)
    else:
        assert in_flight is not None or again == [], (stop_at, runs)


async def child(journal: str, folder: str, stop_at: str, *options: str) -> None:
    """The crash tests' child process: run the team (``nested`` in ``options``: the office,
    with the team as its worker; ``ttl=SECONDS``: its lease time) until ``stop_at``, then
    wait."""
    nested = "nested" in options
    ttl = next((float(o.removeprefix("ttl=")) for o in options if o.startswith("ttl=")), LEASE_TTL)

    async def ready(where: str) -> None:
        print("ready", where, flush=True)

    stop = stopper(stop_at, ready)
    team = make_office(stop, ledger=Ledger(Path(folder))) if nested else make_team(stop)
    if os.environ.get("DURABLE_TEAM_TRACED"):  # spans recorded (exported nowhere): a real trace id
        from opentelemetry.sdk.trace import TracerProvider

        from regiment.telemetry import Telemetry

        team = dataclasses.replace(team, telemetry=Telemetry(TracerProvider()))
    async with (
        team.start(journal=journal, lease_ttl=ttl) as running,
        running.stream(GOAL, deps=Ledger(Path(folder))) as events,
    ):
        async for event in events:
            if isinstance(event, RunStarted):
                print("run", event.run_id, flush=True)
    print("finished", flush=True)  # the stop point was never reached


if __name__ == "__main__":
    anyio.run(child, sys.argv[1], sys.argv[2], sys.argv[3], *sys.argv[4:])

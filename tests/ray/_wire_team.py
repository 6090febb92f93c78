"""What the Ray wire tests' replicas build, and the child process of the crash test.

``payer``: its step calls ``pay`` (a side effect with NO declared idempotency
key, written to a ledger file with the process id), then ``hold`` (which, when
``block`` is set, tells a probe actor it started and waits to be killed the
first time its idempotency key is asked), then answers with both results.
``stamper`` reads its run's deps; ``refunder`` has a tool that needs approval.

Run as a script (``python _wire_team.py ADDRESS NAMESPACE JOURNAL LEDGER PROBE``)
it joins the Ray at ``ADDRESS``, starts a journaled run of the payer team, prints
``run RUN_ID`` and goes on until the test kills it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

from regiment.errors import ModelAPIError  # noqa: E402
from regiment.hierarchy import Budget, Planner, Ray, RunStarted, Team, Worker  # noqa: E402
from regiment.models import (  # noqa: E402
    ModelRequest,
    ModelResponse,
    Price,
    ScriptedModel,
    ToolCallPart,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.tools import RunContext, tool  # noqa: E402

__all__ = (
    "Stamp",
    "paid",
    "payer_team",
    "refunder_team",
    "refused_team",
    "stamper_team",
)

GOAL = "pay and hold order 88213"
WHOLE = Price(input=1.0, output=2.0)  # whole micro-dollars a token: input + 2 x output


def _results(request: ModelRequest) -> list[str]:
    """Every tool result the step has seen so far, in order."""
    return [
        str(part.content)
        for message in request.messages
        for part in message.parts
        if isinstance(part, ToolResultPart)
    ]


def _planner(worker: str, description: str, price: Price | None = None) -> ScriptedModel:
    plan = json.dumps({"steps": [{"id": "s1", "description": description, "worker": worker}]})

    def reply(request: ModelRequest) -> ModelResponse:
        if request.role in ("planner", "replanner"):
            return text_response(plan)
        return text_response("settled")  # the synthesizer

    return ScriptedModel(reply, price=price)


def _payer_brain(request: ModelRequest) -> ModelResponse:
    seen = _results(request)
    if not seen:
        return tool_call_response("pay", {"order_id": "88213"})
    if len(seen) == 1:
        return tool_call_response("hold", {"order_id": "88213"})
    return text_response("; ".join(seen))


def _probe(name: str, namespace: str | None) -> Any:
    import ray

    return ray.get_actor(name, namespace=namespace)


def payer(
    ledger: str, probe: str, namespace: str, *, block: bool = True, price: Price | None = None
) -> Worker:
    """The payer worker (see the module's docstring); ``price``: its model's."""

    @tool
    def pay(order_id: str) -> str:
        """Pay for an order (no idempotency key: a second run pays twice)."""
        with open(ledger, "a", encoding="utf-8") as file:
            file.write(json.dumps({"paid": order_id, "pid": os.getpid()}) + "\n")
        return f"paid {order_id}"

    @tool
    async def hold(order_id: str, ctx: RunContext[object]) -> str:
        """Hold an order; the first time (per key) it may wait to be killed."""
        actor = _probe(probe, namespace)
        if await actor.effect.remote(ctx.idempotency_key) == 1 and block:
            await actor.start.remote(os.getpid())
            await anyio.sleep_forever()
        return f"held {order_id}"

    return Worker(
        name="payer",
        description="Pays and holds orders.",
        model=ScriptedModel(_payer_brain, price=price),
        tools=[pay, hold],
    )


def payer_team(
    ledger: str,
    probe: str,
    namespace: str,
    *,
    block: bool = True,
    usd: float | None = None,
    **placement: Any,
) -> Team:
    """A one-step team whose payer is on Ray (its replicas build it by this recipe).
    ``usd``: the run's money budget, every model priced at :data:`WHOLE`."""
    price = None if usd is None else WHOLE
    build = functools.partial(payer, ledger, probe, namespace, block=block, price=price)
    worker = dataclasses.replace(build(), placement=Ray(build=build, **placement))
    return Team(
        name="paying",
        planner=Planner(model=_planner("payer", GOAL, price)),
        workers=[worker],
        budget=Budget() if usd is None else Budget(usd=usd),
    )


def paid(ledger: str | Path) -> list[dict[str, Any]]:
    """The ledger's ``pay`` side effects, in order."""
    file = Path(ledger)
    return [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []


@dataclass(frozen=True)
class Stamp:
    """A run's deps: what the stamper's tool reads."""

    colour: str


@tool
def stamp(ctx: RunContext[Stamp]) -> str:
    """Stamp with the run's colour."""
    return f"{ctx.deps.colour} stamp by {os.getpid()}" if ctx.deps else "no deps"


def _stamper_brain(request: ModelRequest) -> ModelResponse:
    seen = _results(request)
    return text_response(seen[0]) if seen else tool_call_response("stamp", {})


def stamper() -> Worker:
    return Worker(
        name="stamper",
        description="Stamps.",
        model=ScriptedModel(_stamper_brain),
        tools=[stamp],
    )


def stamper_team() -> Team:
    worker = dataclasses.replace(stamper(), placement=Ray(build=stamper, num_cpus=0))
    return Team(
        name="stamping", planner=Planner(model=_planner("stamper", "stamp")), workers=[worker]
    )


def _refuse(request: ModelRequest) -> ModelResponse:
    raise ModelAPIError("the gateway refused the key; set GATEWAY_KEY", status_code=401)


def refused() -> Worker:
    """A worker whose model refuses every call for good (a bad key)."""
    return Worker(name="lookup", description="Looks things up.", model=ScriptedModel(_refuse))


def refused_team() -> Team:
    worker = dataclasses.replace(refused(), placement=Ray(build=refused, num_cpus=0))
    return Team(
        name="looking", planner=Planner(model=_planner("lookup", "look it up")), workers=[worker]
    )


def _refunder_brain(request: ModelRequest) -> ModelResponse:
    seen = _results(request)
    if seen:
        return text_response(f"billing: {seen[0]}")
    return tool_call_response("refund", {"order_id": "88213", "amount": 40})


def _pair_brain(request: ModelRequest) -> ModelResponse:
    """Two refunds in one reply, then an answer with both results."""
    seen = _results(request)
    if seen:
        return text_response("billing: " + "; ".join(seen))
    calls = tuple(
        ToolCallPart(id=f"c{order}", name="refund", arguments={"order_id": order, "amount": 40})
        for order in ("88213", "88214")
    )
    return ModelResponse(parts=calls, stop_reason="tool_use", model="scripted")


def refunder(ledger: str, probe: str | None = None) -> Worker:
    """A worker whose one tool, ``refund``, needs approval for every call. With a
    ``probe`` (a :class:`~tests.ray._ray_team.Probe` actor's name), its step asks for two
    refunds at once, and each body waits in ``Probe.call`` (until the probe releases it)
    between its ``started`` line in the ledger and its ``refund`` line."""

    @tool(requires_approval=True, idempotency_key=("order_id",))
    async def refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        if probe is not None:
            _write(ledger, {"started": order_id})
            await _probe(probe, None).call.remote(os.getpid())
        _write(ledger, {"refund": order_id, "amount": amount, "pid": os.getpid()})
        return f"refunded {amount} on {order_id}"

    brain = _refunder_brain if probe is None else _pair_brain
    return Worker(
        name="refunder",
        description="Refunds orders.",
        model=ScriptedModel(brain),
        tools=[refund],
    )


def _write(ledger: str, line: dict[str, Any]) -> None:
    with open(ledger, "a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")


def refunder_team(ledger: str, release: anyio.Event, probe: str | None = None) -> Team:
    """The Ray-placed refunder (step s1; ``probe``: see :func:`refunder`) and an in-process
    ``slow`` worker whose step (s2) waits for ``release``, so the run does not pause while
    s1 waits for a decision."""

    async def slow_brain(request: ModelRequest) -> str:
        await release.wait()
        return "slow done"

    plan = json.dumps(
        {
            "steps": [
                {"id": "s1", "description": "refund 88213", "worker": "refunder"},
                {"id": "s2", "description": "slow work", "worker": "slow"},
            ]
        }
    )

    def planner(request: ModelRequest) -> ModelResponse:
        return text_response(plan if request.role in ("planner", "replanner") else "settled")

    build = functools.partial(refunder, ledger, probe)
    remote = dataclasses.replace(build(), placement=Ray(build=build, num_cpus=0))
    slow = Worker(name="slow", description="Works slowly.", model=ScriptedModel(slow_brain))
    return Team(
        name="refunding", planner=Planner(model=ScriptedModel(planner)), workers=[remote, slow]
    )


async def _child(
    address: str, namespace: str, journal_path: str, ledger: str, probe: str, usd: float | None
) -> None:
    from regiment.journal import open_journal

    # By its package name: the replicas import the worker's recipe, not this __main__.
    from tests.ray._wire_team import payer_team as by_name

    journal = await open_journal(journal_path)
    team = by_name(ledger, probe, namespace, usd=usd, num_cpus=0)
    async with team.start(journal=journal) as running, running.stream(GOAL) as events:
        async for event in events:
            if isinstance(event, RunStarted):
                print(f"run {event.run_id}", flush=True)


def main() -> None:
    import ray

    address, namespace, journal_path, ledger, probe = sys.argv[1:6]
    paths = (str(ROOT), os.environ.get("PYTHONPATH", ""))
    ray.init(
        address=address,
        namespace=namespace,
        log_to_driver=False,
        # as the test session's Ray has it (its PYTHONPATH may put another regiment first)
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, paths))}},
    )
    usd = float(sys.argv[6]) if len(sys.argv) > 6 else None  # the run's money budget
    anyio.run(_child, address, namespace, journal_path, ledger, probe, usd, backend="asyncio")


if __name__ == "__main__":
    main()

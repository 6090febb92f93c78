"""A small shop team whose refunds need approval, for the approval tests."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from regiment.hierarchy import Planner, Team, TeamWorker, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, tool_call_response
from regiment.telemetry import Telemetry
from regiment.tools import Tool, tool

from .brains import Brain, plan_json, step_of, tool_results


@dataclass
class Shop:
    """What the tools did, and a gate that holds the ``slow`` worker's steps."""

    refunds: list[tuple[str, int]] = field(default_factory=list)
    release: anyio.Event = field(default_factory=anyio.Event)
    seen: list[str] = field(default_factory=list)  # the tool results the billing worker got
    slow_done: list[str] = field(default_factory=list)  # the ``slow`` steps that finished

    def tools(self) -> list[Tool[..., object]]:
        @tool(requires_approval=True, idempotency_key=("order_id",))
        def issue_refund(order_id: str, amount: int) -> str:
            """Refund an order."""
            self.refunds.append((order_id, amount))
            return f"refunded {amount} on {order_id}"

        @tool(requires_approval=lambda args: int(str(args["amount"])) > 100)
        def credit(order_id: str, amount: int) -> str:
            """Give store credit; above 100 it needs approval."""
            self.refunds.append((f"credit:{order_id}", amount))
            return f"credited {amount} on {order_id}"

        return [issue_refund, credit]

    async def work(self, request: ModelRequest) -> ModelResponse | str:
        """Billing: ``refund ORDER AMOUNT`` / ``credit ORDER AMOUNT`` calls the tool once,
        then answers with its result; ``slow`` waits for ``release``, and so does
        ``stubborn``, which a cancel does not stop either (its run winds down meanwhile)."""
        _, description = step_of(request)
        words = description.split()
        if words[0] in ("slow", "stubborn"):
            with anyio.CancelScope(shield=words[0] == "stubborn"):
                await self.release.wait()
            self.slow_done.append(description)
            return "slow done"
        results = tool_results(request)
        if not results:
            name = "issue_refund" if words[0] == "refund" else "credit"
            return tool_call_response(name, {"order_id": words[1], "amount": int(words[2])})
        self.seen.append(results[0].content)
        return f"billing: {results[0].content}"


def step(sid: str, worker: str, text: str) -> dict[str, object]:
    return {"id": sid, "description": text, "worker": worker}


def shop_team(
    shop: Shop,
    *plans: str,
    approval_timeout: float | None = None,
    telemetry: Telemetry | None = None,
) -> Team:
    """The shop: ``billing`` (refund tools) and ``slow`` (holds a step until released)."""

    async def work(description: str, results: object, request: ModelRequest) -> ModelResponse | str:
        return await shop.work(request)

    model = ScriptedModel(Brain(plans=list(plans), work=work))
    return Team(
        name="shop",
        planner=Planner(model=model),
        workers=[
            Worker(
                name="billing",
                description="refunds",
                model=model,
                tools=shop.tools(),
                approval_timeout=approval_timeout,
            ),
            Worker(name="slow", description="takes its time", model=model),
        ],
        telemetry=telemetry,
    )


def nested_team(
    shop: Shop,
    *top_plans: str,
    child_plans: tuple[str, ...] = (),
    telemetry: Telemetry | None = None,
    child_first: str | None = None,
) -> Team:
    """A top team whose ``desk`` worker is the shop team: its first run plans
    ``child_first`` (by default one refund step, ``c1``), its later ones ``child_plans``."""
    first = child_first or plan_json(step("c1", "billing", "refund 5 30"))
    child = shop_team(shop, first, *child_plans)

    async def work(description: str, results: object, request: ModelRequest) -> ModelResponse | str:
        return await shop.work(request)

    model = ScriptedModel(Brain(plans=list(top_plans), work=work))
    return Team(
        name="top",
        planner=Planner(model=model),
        workers=[
            TeamWorker(name="desk", description="the shop team", team=child),
            Worker(name="slow", description="takes its time", model=model),
        ],
        telemetry=telemetry,
    )


__all__ = ("Shop", "nested_team", "plan_json", "shop_team", "step")

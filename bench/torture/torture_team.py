"""The team the kill/resume torture (``bench/crash_torture.py``) runs from a team file.

A billing desk settles five accounts and mails a summary, over two plan versions and
two critique rounds, with parallel steps and side effects outside the journal:

- plan v1: s1 charges acme and bolt (two tool calls in one model reply) in parallel with
  s2 (zeta); s3 (kilo) after both carries the check ``never``, so the run replans;
- plan v2: s4 (omni) and s5 (yarn) in parallel, then s6 mails the summary to ops;
- the critic's first verdict asks for an audit (``AUDIT-NEEDED``); round 2's plan has one
  step, s7, that runs ``audit``; the second verdict passes;
- the synthesizer answers with the committed outputs, sorted (parallel steps commit in
  either order, the answer must not depend on it).

Every reply is a function of the request, never of call order or time, so a process
that resumes the run gives the same replies to the calls that were not journaled. Each
reply and tool body sleeps a few random milliseconds so a kill at a random moment lands
anywhere in the run.

``$TORTURE_HOLD`` names a role whose first call never answers (it says so on stdout),
for a test that kills the process there.

The tools write to the folder ``$TORTURE_LEDGER``: every body run is a line of
``bodies.jsonl`` (key, tool, arguments, pid); the side effect is a line of
``effects.jsonl``, written once per idempotency key (the tool deduplicates, as
README's ``RunContext`` example does with its bank): a key that changed between two
runs of one call would show as the effect twice.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import re
from pathlib import Path

import anyio

from regiment import RunContext, tool
from regiment.hierarchy import StepReport
from regiment.models import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    text_response,
)

__all__ = ("audit", "brain", "charge", "charge_approved", "never", "office_brain", "send_mail")

PLAN_V1 = {
    "steps": [
        {"id": "s1", "description": "charge acme 10 and bolt 20"},
        {"id": "s2", "description": "charge zeta 5"},
        {"id": "s3", "description": "charge kilo 3", "depends_on": ["s1", "s2"], "check": "never"},
    ]
}
PLAN_V2 = {
    "steps": [
        {"id": "s4", "description": "charge omni 7", "depends_on": ["s1"]},
        {"id": "s5", "description": "charge yarn 4", "depends_on": ["s2"]},
        {"id": "s6", "description": "mail ops the summary", "depends_on": ["s4", "s5"]},
    ]
}
ROUND_2 = {"steps": [{"id": "s7", "description": "audit the ledger"}]}
JITTER = float(os.environ.get("TORTURE_JITTER", "0.004"))


async def _jitter() -> None:
    await anyio.sleep(random.random() * JITTER)  # timing only, never the reply


def _all_text(request: ModelRequest) -> str:
    return "\n".join(
        part.text for m in request.messages for part in m.parts if isinstance(part, TextPart)
    )


def _step(request: ModelRequest) -> tuple[str, str]:
    found = re.search(r"Your step \((\w+)\): (.*)", _all_text(request))
    assert found is not None, _all_text(request)
    return found.group(1), found.group(2)


def _calls(description: str) -> list[ToolCallPart]:
    if description.startswith("audit"):
        return [ToolCallPart(id="c0", name="audit", arguments={})]
    if description.startswith("mail"):
        return [ToolCallPart(id="c0", name="send_mail", arguments={"to": "ops", "body": "settled"})]
    charges = re.findall(r"(\w+) (\d+)", description.removeprefix("charge "))
    return [
        ToolCallPart(id=f"c{i}", name="charge", arguments={"account": a, "amount": int(n)})
        for i, (a, n) in enumerate(charges)
        if a != "and"
    ]


def _worker(request: ModelRequest) -> ModelResponse | str:
    step_id, description = _step(request)
    results = [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]
    if not results:
        calls = [
            ToolCallPart(id=f"{step_id}-{c.id}", name=c.name, arguments=c.arguments)
            for c in _calls(description)
        ]
        return ModelResponse(parts=tuple(calls), stop_reason="tool_use", model="scripted")
    return f"{step_id}: " + "; ".join(sorted(str(r.content) for r in results))


def _critic(request: ModelRequest) -> str:
    if "audited" in _all_text(request):
        return json.dumps({"passed": True, "feedback": "all settled"})
    return json.dumps({"passed": False, "feedback": "AUDIT-NEEDED: audit the ledger"})


async def brain(request: ModelRequest) -> ModelResponse | str:
    await _jitter()
    if request.role == os.environ.get("TORTURE_HOLD"):  # a test kills the process here
        print(f"holding at {request.role}", flush=True)
        await anyio.sleep_forever()
    match request.role:
        case "planner" | "replanner" if "AUDIT-NEEDED" in _all_text(request):
            return json.dumps(ROUND_2)
        case "planner":
            return json.dumps(PLAN_V1)
        case "replanner":
            return json.dumps(PLAN_V2)
        case "worker":
            return _worker(request)
        case "critic":
            return _critic(request)
        case "synthesizer":
            lines = sorted(request.messages[-1].text.splitlines())
            return text_response("answer: " + " | ".join(lines)[-900:])
        case _:
            raise AssertionError(f"unexpected role {request.role!r}")


async def office_brain(request: ModelRequest) -> ModelResponse | str:
    """The office of ``team_nested.toml``: one step for its desk (a nested team), then the
    desk's report as its answer."""
    await _jitter()
    match request.role:
        case "planner":
            return json.dumps({"steps": [{"id": "t1", "description": "settle the accounts"}]})
        case "synthesizer":
            return text_response("office: " + request.messages[-1].text[-900:])
        case _:
            raise AssertionError(f"unexpected role {request.role!r} in the office")


def never(report: StepReport) -> bool:
    return False


def _ledger() -> Path:
    return Path(os.environ["TORTURE_LEDGER"])


async def _act(key: str, tool_name: str, arguments: dict[str, object]) -> None:
    """One body run: recorded, then the side effect once per key (under a lock, as a
    service that deduplicates would), with jitter between them."""
    folder = _ledger()
    line = json.dumps([key, tool_name, arguments, os.getpid()]) + "\n"
    with (folder / "bodies.jsonl").open("a") as f:
        f.write(line)
    await _jitter()
    with (folder / "effects.jsonl").open("a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        done = {json.loads(x)[0] for x in f.read().splitlines()}
        if key not in done:
            f.write(line)
            f.flush()
    await _jitter()


@tool
async def charge(account: str, amount: int, ctx: RunContext[None]) -> str:
    """Charge an account (once per idempotency key)."""
    await _act(ctx.idempotency_key, "charge", {"account": account, "amount": amount})
    return f"charged {amount} to {account}"


@tool(name="charge", requires_approval=lambda args: args["account"] == "omni")
async def charge_approved(account: str, amount: int, ctx: RunContext[None]) -> str:
    """Charge an account (once per idempotency key); omni's charge waits for approval."""
    await _act(ctx.idempotency_key, "charge", {"account": account, "amount": amount})
    return f"charged {amount} to {account}"


@tool(idempotency_key=("to",))
async def send_mail(to: str, body: str, ctx: RunContext[None]) -> str:
    """Mail someone (once per recipient: the tool's declared key)."""
    await _act(ctx.idempotency_key, "send_mail", {"to": to, "body": body})
    return f"mailed {to}"


@tool
async def audit(ctx: RunContext[None]) -> str:
    """Audit the ledger (no side effect)."""
    await _jitter()
    return "audited: 5 charges"

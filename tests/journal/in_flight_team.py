"""A team whose one step loops on a tool until its money runs out, and whose model bills
each call as it gets it, for kill-and-resume tests of a model call in flight at a crash.

The model (a stand-in provider) appends what each call costs to a bill file when the
call arrives, before it answers, as a provider bills a request however it ends. Its
reply's usage is the request's estimated input and up to 40 output tokens (held to its
``max_tokens``, as a real model keeps to it). In the child process (``slow``), the
worker's third call is billed and then never answered: the child says ``in flight``
and waits there to be killed (or, told so, the worker answers at its third call and the
synthesis is left in flight; ``reask``: its first reply is empty and the second ask is
left in flight; ``judge``: the judge its answer guard asks is left in flight).

Run as a script (``python in_flight_team.py JOURNAL BILL USD SLOW NESTED BACKEND [CALLS]``;
``NESTED`` ``nested`` or ``flat``; ``USD`` 0: no money limit; ``CALLS``: a
``Budget.model_calls``) it is the crash test's child: it prints ``run RUN_ID`` when the
run starts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import msgspec

from regiment import Budget, Planner, Price, ScriptedModel, Team, TeamWorker, Worker, tool
from regiment.hierarchy import RunStarted
from regiment.hierarchy.guard import AnswerSubject, Guardrail, Outcome, Pass, guardrail, judge
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    TextPart,
    Usage,
    effective_settings,
    estimate_tokens,
    priced,
    tool_call_response,
)

GOAL = "take notes"
WHOLE = Price(input=1.0, output=2.0)  # whole micro-dollars a token: input + 2 x output
SLOW_CALL = 3  # the worker's call left in flight in the child
ANSWERING = ("synthesizer", "reask", "judge")  # the worker answers at its SLOW_CALL-th


@tool
def note(text: str) -> str:
    """Write a note down."""
    return "noted"


def bill_of(path: Path) -> int:
    """What the model billed, in micro-dollars: every call it got, answered or not."""
    if not path.exists():
        return 0
    return sum(int(line.split()[1]) for line in path.read_text().splitlines())


def brain(bill: Path, *, slow: str, answers: str = "") -> ScriptedModel:
    """The team's model, billing each call to ``bill``. ``slow`` ``worker``: the worker
    calls its tool until the budget stops it, and its ``SLOW_CALL``-th call is never
    answered; ``synthesizer``: the worker answers at its ``SLOW_CALL``-th call and the
    synthesis is never answered; ``""``: every call is answered (``synthesizer`` there:
    the worker answers as it would have)."""
    worker_calls = synthesis = 0

    async def reply(request: ModelRequest) -> ModelResponse:
        nonlocal worker_calls, synthesis
        role = request.role or "judge"  # a judge asks with no role
        limit = effective_settings(None, request).max_tokens or request.max_tokens
        if request.role == "planner":
            response: ModelResponse = ModelResponse(
                parts=(TextPart(text='{"steps": [{"id": "s1", "description": "notes"}]}'),),
                stop_reason="end_turn",
                model="stand-in",
            )
        elif role in ("synthesizer", "judge"):
            synthesis += role == "synthesizer"
            empty = slow == "reask" and synthesis == 1  # asked again, once
            text = "" if empty else "the notes" if role == "synthesizer" else "fine"
            response = ModelResponse(
                parts=(TextPart(text=text),), stop_reason="end_turn", model="stand-in"
            )
        else:
            worker_calls += 1
            if (slow in ANSWERING or answers in ANSWERING) and worker_calls == SLOW_CALL:
                response = ModelResponse(
                    parts=(TextPart(text="noted all"),), stop_reason="end_turn", model="stand-in"
                )
            else:
                response = tool_call_response("note", {"text": f"n{worker_calls}"})
        usage = Usage(input_tokens=estimate_tokens(request), output_tokens=min(limit, 40))
        cost = priced(usage, WHOLE).micro_usd
        with bill.open("a") as out:  # billed as it arrives
            out.write(f"{role} {cost}\n")
        if _in_flight(slow, role, worker_calls, synthesis):
            print("in flight", flush=True)
            await anyio.sleep_forever()
        return msgspec.structs.replace(response, usage=usage, model="stand-in")

    return ScriptedModel(reply, price=WHOLE)


def _in_flight(slow: str, role: str, worker_calls: int, synthesis: int) -> bool:
    """Whether the call is the one ``slow`` leaves in flight."""
    if slow == "reask":
        return role == "synthesizer" and synthesis == 2
    if slow in ("judge", "synthesizer"):
        return role == slow
    return role == slow == "worker" and worker_calls == SLOW_CALL


def _judged(model: ScriptedModel) -> list[Guardrail]:
    """An answer guard that asks ``model`` (as a judge) whether the answer is fine."""

    @guardrail("answer", model=model)
    async def checked(subject: AnswerSubject) -> Outcome:
        asked = ModelRequest(messages=(Message.user("are the notes fine?"),), max_tokens=40)
        await judge(model, asked)
        return Pass()

    return [checked]


def make_team(
    bill: Path,
    usd: float | None,
    *,
    slow: str = "",
    answers: str = "",
    nested: bool = False,
    calls: int | None = None,
) -> Team:
    """The team (``nested``: a team whose one worker is it, as a ``TeamWorker``, under the
    budget; the inner team has none of its own, its step's share holds it); ``calls``:
    its budget's ``model_calls``."""
    if nested:
        inner = make_team(bill, None, slow=slow, answers=answers)
        return Team(
            name="desk",
            planner=Planner(model=brain(bill, slow="")),
            workers=[TeamWorker(name="notes", description="takes notes", team=inner)],
            budget=Budget(usd=usd, model_calls=calls),
            settings=ModelSettings(max_tokens=60),
        )
    model = brain(bill, slow=slow, answers=answers)
    guards = _judged(model) if "judge" in (slow, answers) else []
    return Team(
        name="notes",
        planner=Planner(model=model, synthesizer_guardrails=guards),
        workers=[
            Worker(
                name="w",
                description="notes",
                model=model,
                tools=[note],
                max_iterations=60,
            )
        ],
        budget=Budget(usd=usd, model_calls=calls),
        settings=ModelSettings(max_tokens=60),
    )


async def child(journal: str, bill: str, usd: str, slow: str, nested: str, calls: str) -> None:
    team = make_team(
        Path(bill),
        float(usd) or None,
        slow=slow,
        nested=nested == "nested",
        calls=int(calls) or None,
    )
    async with team.start(journal=journal) as running, running.stream(GOAL) as events:
        async for event in events:
            if isinstance(event, RunStarted):
                print("run", event.run_id, flush=True)
    print("finished", flush=True)  # the slow call never let it


if __name__ == "__main__":
    journal, bill, usd, slow, nested, backend = sys.argv[1:7]
    calls = sys.argv[7] if len(sys.argv) > 7 else "0"
    anyio.run(child, journal, bill, usd, slow, nested, calls, backend=backend)

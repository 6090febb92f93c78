"""A team whose synthesizer answers empty, for kill-and-resume tests of how such a run ends.

Its one step answers ``done``; the synthesizer's first reply is empty and writes all
it is let (its ``max_tokens``, as a real model stops at it); asked again (the run's
budget paying for it), it answers ``the answer`` (``again``) or empty once more. An
answer guard, a plain function, lets every answer through; in the child process it first
says ``ready`` and waits there to be killed, after the synthesis' reply was journaled and
before the run's end was.

Run as a script (``python empty_answer_team.py JOURNAL USD MODE``; ``USD`` 0 for no money
limit; ``MODE`` ``empty`` or ``again``) it is the crash test's child: it prints
``run RUN_ID`` when the run starts and ``ready`` from the guard.
"""

from __future__ import annotations

import sys
import threading

import anyio

from regiment import Budget, Pass, Planner, Price, ScriptedModel, Team, Worker
from regiment.hierarchy import AnswerSubject, RunStarted
from regiment.models import (
    ModelRequest,
    ModelResponse,
    TextPart,
    Usage,
    effective_settings,
    estimate_tokens,
)

GOAL = "write the answer"
WHOLE = Price(input=1.0, output=2.0)  # whole micro-dollars a token: input + 2 x output
_HOLD = threading.Event()  # set in the child: the answer guard waits there to be killed
_ASKED_AGAIN = "Your reply was empty"  # the synthesis' second ask says so


def _asked_again(request: ModelRequest) -> bool:
    return any(
        isinstance(p, TextPart) and _ASKED_AGAIN in p.text
        for m in request.messages
        for p in m.parts
    )


def brain(again: bool) -> ScriptedModel:
    """The team's model (``again``: the synthesizer's second ask gets an answer)."""

    def reply(request: ModelRequest) -> ModelResponse:
        limit = effective_settings(None, request).max_tokens or request.max_tokens
        if request.role == "planner":
            text, wants = '{"steps": [{"id": "s1", "description": "part"}]}', 20
        elif request.role != "synthesizer":
            text, wants = "done", 20
        elif again and _asked_again(request):
            text, wants = "the answer", 30
        else:
            text, wants = "", 10_000
        written = min(limit, wants)
        return ModelResponse(
            parts=(TextPart(text=text),) if text else (),
            usage=Usage(input_tokens=estimate_tokens(request), output_tokens=written),
            stop_reason="end_turn" if written == wants else "max_tokens",
            model="synth",
        )

    return ScriptedModel(reply, price=WHOLE)


def hold_answer(answer: AnswerSubject) -> Pass:
    """Lets the answer through (in the child, once the test has killed it: never)."""
    if _HOLD.is_set():
        print("ready", flush=True)
        threading.Event().wait()
    return Pass()


def make_team(usd: float | None, *, again: bool = False) -> Team:
    return Team(
        name="writers",
        planner=Planner(model=brain(again), synthesizer_guardrails=[hold_answer]),
        workers=[Worker(name="w", description="works", model=brain(again))],
        budget=Budget(usd=usd),
    )


async def child(journal: str, usd: str, mode: str) -> None:
    _HOLD.set()
    team = make_team(float(usd) or None, again=mode == "again")
    async with team.start(journal=journal) as running, running.stream(GOAL) as events:
        async for event in events:
            if isinstance(event, RunStarted):
                print("run", event.run_id, flush=True)
    print("finished", flush=True)  # the guard never held it


if __name__ == "__main__":
    anyio.run(child, sys.argv[1], sys.argv[2], sys.argv[3])

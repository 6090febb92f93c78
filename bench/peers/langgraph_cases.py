# mypy: ignore-errors
"""LangGraph's side of rows 2 and 4: graphs of the same shape as regiment's runs.

Row 2: planner node -> executor node looping over the plan (one instant model
call per step) -> synthesize node. Row 4: planner node -> ``Send`` fan-out to a
worker node per step (each a 50 ms model call) -> synthesize node.
"""

from __future__ import annotations

import asyncio
import json
import operator
import time
from typing import Annotated, TypedDict

from bench_util import (
    OVERLAP_DELAY,
    OVERLAP_REPEATS,
    REPEATS,
    SEQ_RUNS,
    SEQ_STEPS,
    median,
)
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from regiment_cases import plan_reply


async def _model(role: str, text: str, delay: float = 0.0) -> str:
    """The same instant "model" for every role (a coroutine, like a real client)."""
    if delay:
        await asyncio.sleep(delay)
    return text


class SeqState(TypedDict, total=False):
    goal: str
    plan: list[dict]
    index: int
    outputs: list[str]
    answer: str


def sequential_graph(steps: int):
    reply = plan_reply(steps, sequential=True)

    async def planner(state: SeqState) -> SeqState:
        text = await _model("planner", reply)
        return {"plan": json.loads(text)["steps"], "index": 0, "outputs": []}

    async def execute(state: SeqState) -> SeqState:
        step = state["plan"][state["index"]]
        output = await _model("worker", f"done {step['id']}")
        return {"index": state["index"] + 1, "outputs": [*state["outputs"], output]}

    def next_node(state: SeqState) -> str:
        return "execute" if state["index"] < len(state["plan"]) else "synthesize"

    async def synthesize(state: SeqState) -> SeqState:
        return {"answer": await _model("synthesizer", "answer")}

    graph = StateGraph(SeqState)
    graph.add_node("planner", planner)
    graph.add_node("execute", execute)
    graph.add_node("synthesize", synthesize)
    graph.add_edge(START, "planner")
    graph.add_edge("planner", "execute")
    graph.add_conditional_edges("execute", next_node, ["execute", "synthesize"])
    graph.add_edge("synthesize", END)
    return graph.compile()


class FanState(TypedDict, total=False):
    goal: str
    plan: list[dict]
    outputs: Annotated[list[str], operator.add]
    answer: str


class StepState(TypedDict):
    step: dict


def fan_out_graph(steps: int, delay: float):
    reply = plan_reply(steps, sequential=False)

    async def planner(state: FanState) -> FanState:
        return {"plan": json.loads(await _model("planner", reply))["steps"]}

    def fan_out(state: FanState) -> list[Send]:
        return [Send("work", {"step": step}) for step in state["plan"]]

    async def work(state: StepState) -> FanState:
        return {"outputs": [await _model("worker", f"done {state['step']['id']}", delay)]}

    async def synthesize(state: FanState) -> FanState:
        assert len(state["outputs"]) == steps
        return {"answer": await _model("synthesizer", "answer")}

    graph = StateGraph(FanState)
    graph.add_node("planner", planner)
    graph.add_node("work", work)
    graph.add_node("synthesize", synthesize)
    graph.add_edge(START, "planner")
    graph.add_conditional_edges("planner", fan_out, ["work"])
    graph.add_edge("work", "synthesize")
    graph.add_edge("synthesize", END)
    return graph.compile()


def per_step():
    graph = sequential_graph(SEQ_STEPS)

    async def measure() -> float:
        start = time.perf_counter()
        for _ in range(SEQ_RUNS):
            state = await graph.ainvoke({"goal": "do the steps"})
            assert len(state["outputs"]) == SEQ_STEPS
        return (time.perf_counter() - start) / SEQ_RUNS

    async def main() -> float:
        await measure()
        return median([await measure() for _ in range(REPEATS)])

    run_s = asyncio.run(main())
    return {"run_us": run_s * 1e6, "step_us": run_s * 1e6 / SEQ_STEPS}


def overlap(steps: int):
    graph = fan_out_graph(steps, OVERLAP_DELAY)

    async def main() -> list[float]:
        await graph.ainvoke({"goal": "warm up"})
        samples = []
        for _ in range(OVERLAP_REPEATS):
            start = time.perf_counter()
            await graph.ainvoke({"goal": "do the steps at once"})
            samples.append(time.perf_counter() - start)
        return samples

    return {"wall_ms": median(asyncio.run(main())) * 1e3, "ideal_ms": OVERLAP_DELAY * 1e3}


CASES = {
    "per_step": per_step,
    "overlap.10": lambda: overlap(10),
    "overlap.100": lambda: overlap(100),
}

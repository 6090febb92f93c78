"""A worker for the Ray log tests whose tools make ``regiment`` log records on the
replica: one's result is cut to its limit (the library's warning, on the step's task),
the other, sync, logs a warning of its own from the replica's worker thread.
Module-level, so a replica imports it as ``tests.ray._ray_logged``."""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Any

from regiment.hierarchy import Budget, Planner, Ray, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import tool

from ..hierarchy.brains import Brain, plan_json

__all__ = ("logged_team",)

# Made as a replica imports this module (unpickling its worker's build), outside a step.
logging.getLogger("regiment.tests").warning("tool module imported")


@tool(max_result_chars=100)
async def wordy(n: int) -> str:
    """A result of ``n`` characters (over its limit of 100 from 101 on)."""
    return "x" * n


@tool
def noisy(word: str) -> str:
    """Logs a warning under ``regiment.tests`` in its worker thread, then echoes."""
    logging.getLogger("regiment.tests").warning("noisy was told %r", word)
    logging.getLogger("httpx").warning("an SDK's warning in %r's step", word)
    logging.getLogger("anthropic").info("an SDK's retry line: not sent")
    return word


@tool
def aside(word: str) -> str:
    """Logs a warning from a thread of its own (no step's context: made outside a step)."""
    said = threading.Thread(
        target=logging.getLogger("regiment.tests").warning, args=("aside said %r", word)
    )
    said.start()
    said.join()
    return word


@tool
def later(word: str) -> str:
    """Starts a thread of its own that logs a warning once the test's probe actor (named
    ``word``) is told to (:meth:`Probe.cancel`): after the step, on an idle replica."""

    def wait_then_log() -> None:
        import ray

        probe: Any = ray.get_actor(word)
        ray.get(probe.wait_cancelled.remote())
        logging.getLogger("regiment.tests").warning("later said %r", word)

    threading.Thread(target=wait_then_log, daemon=True).start()
    return word


async def _work(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    if results:
        return f"done: {len(results[0].content)} characters"
    if description.startswith(("noisy", "aside", "later")):
        name, word = description.split()
        return tool_call_response(name, {"word": word})
    return tool_call_response("wordy", {"n": int(description.split()[-1])})


def _worker() -> Worker:
    logging.getLogger("regiment.tests").warning("building the worker")
    logging.getLogger("openai").warning("an SDK's warning as the worker is built")
    logging.getLogger("regiment.tests").info("a build's INFO line")
    model = ScriptedModel(Brain([], work=_work))
    return Worker(name="w", description="calls", model=model, tools=[wordy, noisy, aside, later])


def logged_team(*descriptions: str) -> Team:
    """One worker on a Ray replica, given a one-step plan per run, one of ``descriptions``
    each ("wordy N", "noisy WORD", "aside WORD", "later PROBE"); the planner and synthesizer run here."""
    worker = dataclasses.replace(_worker(), placement=Ray(build=_worker, num_cpus=0))
    plans = [plan_json({"description": text}) for text in descriptions]
    return Team(
        name="t",
        planner=Planner(model=ScriptedModel(Brain(plans))),
        workers=[worker],
        budget=Budget(replans=0),
    )

"""A Ray-placed worker whose model is the Anthropic SDK against the test's stand-in
Messages API, under a money budget with a journal: the crash test of a replica's model
call in flight (see ``test_ray_in_flight``).

Run as a script (``python _in_flight.py ADDRESS NAMESPACE JOURNAL BASE_URL``) it joins
the Ray at ``ADDRESS``, starts a journaled run of the team, prints ``run RUN_ID`` and
goes on until the test kills it (its worker's third call is never answered).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

from regiment.hierarchy import Budget, Planner, Ray, RunStarted, Team, Worker  # noqa: E402
from regiment.models import (  # noqa: E402
    AnthropicModel,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Price,
    ScriptedModel,
    text_response,
)
from regiment.tools import tool  # noqa: E402

__all__ = ("CLAUDE", "GOAL", "USD", "noting_team")

GOAL = "take notes"
CLAUDE = Price(input=3.0, output=15.0)
USD = 0.05  # far more than the run spends: the resumed run completes


@tool
def note(text: str) -> str:
    """Write a note down."""
    return f"noted in {os.getpid()}"  # the replica's process: a test kills it


def noter(base_url: str) -> Worker:
    """The worker: its model is the Messages API at ``base_url`` (the test's stand-in)."""
    model = AnthropicModel(
        "claude-test-1",
        api_key="k",
        base_url=base_url,
        stream=False,
        max_retries=0,
        price=CLAUDE,
        settings=ModelSettings(max_tokens=60),
    )
    return Worker(name="w", description="notes", model=model, tools=[note])


def _planner(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response(json.dumps({"steps": [{"id": "s1", "description": "notes"}]}))
    return text_response("the notes")


def noting_team(base_url: str, replicas: int = 1) -> Team:
    """One step, on a Ray replica of ``w``; ``Budget(usd=USD)``, every model priced."""
    build = functools.partial(noter, base_url)
    placement = Ray(build=build, num_cpus=0, replicas=replicas)
    worker = dataclasses.replace(build(), placement=placement)
    return Team(
        name="noting",
        planner=Planner(model=ScriptedModel(_planner, price=Price(input=0.0, output=0.0))),
        workers=[worker],
        budget=Budget(usd=USD),
    )


async def _child(journal_path: str, base_url: str) -> None:
    from regiment.journal import open_journal

    # By its package name: the replicas import the worker's recipe, not this __main__.
    from tests.ray._in_flight import noting_team as by_name

    journal = await open_journal(journal_path)
    async with by_name(base_url).start(journal=journal) as running, running.stream(GOAL) as events:
        async for event in events:
            if isinstance(event, RunStarted):
                print(f"run {event.run_id}", flush=True)


def main() -> None:
    import ray

    address, namespace, journal_path, base_url = sys.argv[1:5]
    paths = (str(ROOT), os.environ.get("PYTHONPATH", ""))
    ray.init(
        address=address,
        namespace=namespace,
        log_to_driver=False,
        # as the test session's Ray has it (its PYTHONPATH may put another regiment first)
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, paths))}},
    )
    anyio.run(_child, journal_path, base_url, backend="asyncio")


if __name__ == "__main__":
    main()

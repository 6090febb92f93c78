"""The service, exercised in-process: three clients at once, one of which leaves early.

Run it with ``.venv/bin/python examples/service/main.py [asyncio|trio]``. To serve
it for real, hand ``App(build_team(model))`` to any ASGI server (e.g.
``uvicorn examples.service.main:app`` after ``pip install uvicorn``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

if __package__ in (None, ""):  # run as a script: load this folder as its package
    # (sys.path is left alone: regiment comes from the installed package, and the
    # repository's own tools/ or telemetry/ never shadow a module of yours).
    import importlib.util

    _folder = Path(__file__).resolve().parent
    _spec = importlib.util.spec_from_file_location(
        "examples.service", _folder / "__init__.py", submodule_search_locations=[str(_folder)]
    )
    assert _spec is not None
    assert _spec.loader is not None
    sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_spec.name])
    __package__ = _spec.name

from regiment.hierarchy import Event, RunStarted, StepDispatched
from regiment.models import ScriptedModel

from .app import App
from .asgi import Response, lifespan, request
from .team import build_team, support_brain

GOALS = {
    "ana": "What is the status of order 88213?",
    "li": "What is the status of order 77120?",
    "sam": "Please scan the warehouse for order 55001.",  # slow; sam hangs up
}


async def main() -> None:
    sam_is_waiting = anyio.Event()
    cancelled: list[int] = []
    sams: set[int] = set()

    def on_event(number: int, event: Event) -> None:
        if isinstance(event, RunStarted) and event.goal == GOALS["sam"]:
            sams.add(number)
        if isinstance(event, StepDispatched) and number in sams:  # the slow scan has started
            sam_is_waiting.set()

    app = App(
        build_team(ScriptedModel(support_brain)), on_event=on_event, on_cancel=cancelled.append
    )
    answers: dict[str, Response] = {}
    async with lifespan(app), anyio.create_task_group() as tg:

        async def client(name: str, leave: anyio.Event | None = None) -> None:
            goal = GOALS[name].encode()
            answers[name] = await request(app, "POST", "/runs", goal, leave=leave)

        # All three run at once on the one team; sam hangs up once the slow scan started.
        tg.start_soon(client, "ana")
        tg.start_soon(client, "li")
        tg.start_soon(client, "sam", sam_is_waiting)
    for name in GOALS:
        response = answers[name]
        if response.status is None:
            print(f"{name}: left before the answer; the run was cancelled")
        else:
            print(f"{name}: {response.status} {response.body.decode()}")
    print(f"runs cancelled because the client left: {len(cancelled)}")


app = App(build_team(ScriptedModel(support_brain)))  # for an ASGI server

if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")

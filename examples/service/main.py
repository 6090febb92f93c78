"""The service over real HTTP: three clients at once, one of which hangs up early.

Run it with ``.venv/bin/python examples/service/main.py``. It serves
``examples.service.app`` with uvicorn on a free local port and talks to it
with an HTTP client: ana and li wait for their answers (``POST
/agents/runs?wait=true``); sam asks for a slow warehouse scan and hangs up
once it started, which cancels his run.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import anyio
import httpx2 as httpx

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

from regiment import run_main
from regiment.models import ScriptedModel

from .app import build_app
from .serving import serving
from .team import build_team, support_brain

GOALS = {
    "ana": "What is the status of order 88213?",
    "li": "What is the status of order 77120?",
    "sam": "Please scan the warehouse for order 55001.",  # slow; sam hangs up
}


async def main() -> None:
    scan_started = anyio.Event()
    app = build_app(build_team(ScriptedModel(support_brain), scan_started=scan_started))
    async with serving(app) as url, httpx.AsyncClient(base_url=f"{url}/agents") as client:
        answers: dict[str, httpx.Response] = {}

        async def ask(name: str) -> None:
            body = {"goal": GOALS[name], "session": name}
            answers[name] = await client.post("/runs?wait=true", json=body)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "ana")
            tg.start_soon(ask, "li")
            async with anyio.create_task_group() as sam:
                sam.start_soon(functools.partial(ask, "sam"))
                await scan_started.wait()
                sam.cancel_scope.cancel()  # sam hangs up
        for name in ("ana", "li"):
            run = answers[name].json()
            print(f"{name}: {answers[name].status_code} {run['status']}: {run['answer']}")
        (sams,) = [r for r in (await client.get("/runs")).json()["runs"] if r["session"] == "sam"]
        async with client.stream("GET", f"/runs/{sams['run_id']}/events") as events:
            async for _ in events.aiter_lines():  # the stream ends with the run's last event
                pass
        status = (await client.get(f"/runs/{sams['run_id']}")).json()["status"]
        print(f"sam: hung up before the answer; his run ended {status}")


if __name__ == "__main__":
    # It takes no arguments: -h says what it does; any other is a usage error (exit 2).
    argparse.ArgumentParser(description=__doc__).parse_args()
    run_main(main)  # anyio.run(main), quiet when piped into `head`

"""What the service adds per request: ``POST /runs?wait=true`` beside a bare endpoint.

    .venv/bin/python bench/serve.py

One process serves, with uvicorn on a free local port, a Starlette app that has
both a bare ``POST /bare`` endpoint (reads the JSON body, answers JSON) and the
team mounted by ``regiment.serve.create_app`` under ``/agents``. The team's
model answers instantly (one step, no tools), so a run costs only the library.
One keep-alive HTTP/1.1 connection sends the requests one after another. Printed per request, the
median of 5 measurements of 200 requests after a warm-up:

- ``bare endpoint``: HTTP + Starlette + JSON, nothing else;
- ``run in process``: ``running.run(goal)`` without HTTP (the run itself);
- ``run in an endpoint`` and ``stream in an endpoint``: the bare endpoint that
  also does ``running.run(goal)``, or reads the run through ``running.stream(goal)``
  (as the service drives every run), inside the request;
- ``POST /runs?wait=true``: the whole service request;
- the ratio of the service request to the bare endpoint, and the adapter: what
  the service request costs beyond the stream in an endpoint (the run store, the
  task per run, the wait, the JSON view of the result).

The same run costs more inside a request than alone (``run in an endpoint``
less ``bare endpoint`` against ``run in process``): the request's own work
between its steps leaves the CPU's caches colder for the run's. So the adapter
is measured against the endpoint that streams the run, not the run alone.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.abc
import h11
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for examples.service

from examples.service.serving import serving
from regiment.hierarchy import Planner, RunCompleted, RunningTeam, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, text_response
from regiment.serve import create_app

REQUESTS = 200
REPEATS = 5
GOAL = "Say hello."


def instant(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        return text_response('{"steps": [{"id": "s1", "description": "Say hello"}]}')
    return text_response("hello")


def team() -> Team:
    model = ScriptedModel(instant)
    worker = Worker(name="w", description="Says hello.", model=model)
    return Team(name="bench", planner=Planner(model=model), workers=[worker])


async def per_request_us(call: object) -> float:
    async def batch() -> float:
        started = time.perf_counter()
        for _ in range(REQUESTS):
            await call()  # type: ignore[operator]
        return (time.perf_counter() - started) / REQUESTS * 1e6

    await batch()
    return statistics.median([await batch() for _ in range(REPEATS)])


async def measure() -> dict[str, float]:
    """The figures, µs per request (``run_in_process_us``: per run)."""

    async def bare(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"answer": f"did: {body['goal']}", "status": "completed"})

    async with team().start() as running:

        async def run_in_endpoint(request: Request) -> JSONResponse:
            body = await request.json()
            result = await running.run(body["goal"])
            return JSONResponse({"answer": result.answer, "status": result.status})

        async def stream_in_endpoint(request: Request) -> JSONResponse:
            body = await request.json()
            async with running.stream(body["goal"]) as events:
                async for event in events:
                    last = event
            assert isinstance(last, RunCompleted), last
            return JSONResponse({"answer": last.result.answer, "status": last.result.status})

        agents = create_app(running)
        routes = [
            Route("/bare", bare, methods=["POST"]),
            Route("/run", run_in_endpoint, methods=["POST"]),
            Route("/stream", stream_in_endpoint, methods=["POST"]),
            Mount("/agents", app=agents),
        ]
        app = Starlette(routes=routes, lifespan=agents.router.lifespan_context)
        async with serving(app) as url, await _Client.connect(url) as client:

            async def post_bare() -> None:
                status, _ = await client.post("/bare", {"goal": GOAL})
                assert status == 200

            def post(path: str) -> Callable[[], Awaitable[None]]:
                async def call() -> None:
                    status, body = await client.post(path, {"goal": GOAL})
                    assert status == 200, body
                    assert json.loads(body)["status"] == "completed", body

                return call

            async def run_in_process() -> None:
                await _run(running)

            bare_us = await per_request_us(post_bare)
            direct_us = await per_request_us(run_in_process)
            run_us = await per_request_us(post("/run"))
            stream_us = await per_request_us(post("/stream"))
            service_us = await per_request_us(post("/agents/runs?wait=true"))
    return {
        "bare_us": bare_us,
        "run_in_process_us": direct_us,
        "run_in_endpoint_us": run_us,
        "stream_in_endpoint_us": stream_us,
        "service_us": service_us,
        "adapter_us": service_us - stream_us,
    }


async def main() -> None:
    figures = await measure()
    bare_us, direct_us, run_us = (
        figures["bare_us"],
        figures["run_in_process_us"],
        figures["run_in_endpoint_us"],
    )
    stream_us, service_us = figures["stream_in_endpoint_us"], figures["service_us"]
    print(f"bare endpoint            {bare_us:9.0f} us/request")
    print(f"run in process           {direct_us:9.0f} us/run")
    print(f"run in an endpoint       {run_us:9.0f} us/request (the run: {run_us - bare_us:.0f})")
    print(
        f"stream in an endpoint    {stream_us:9.0f} us/request (the run: {stream_us - bare_us:.0f})"
    )
    print(f"POST /runs?wait=true     {service_us:9.0f} us/request")
    print(f"ratio service / bare     {service_us / bare_us:9.1f} x")
    print(f"adapter (service - stream in an endpoint) {service_us - stream_us:6.0f} us/request")


class _Client:
    """One keep-alive HTTP/1.1 connection spoken with h11.

    (The async HTTP client the tests use spends ~4 ms per request on its own,
    more than the bare endpoint costs, which would blur what is measured.)
    """

    def __init__(self, stream: anyio.abc.SocketStream, host: str) -> None:
        self._stream = stream
        self._host = host
        self._conn = h11.Connection(h11.CLIENT)

    @classmethod
    async def connect(cls, url: str) -> _Client:
        host, port = url.removeprefix("http://").split(":")
        return cls(await anyio.connect_tcp(host, int(port)), f"{host}:{port}")

    async def __aenter__(self) -> _Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stream.aclose()

    async def post(self, path: str, value: object) -> tuple[int, bytes]:
        body = json.dumps(value).encode()
        headers = [("host", self._host), ("content-type", "application/json"),
                   ("content-length", str(len(body)))]  # fmt: skip
        request = h11.Request(method="POST", target=path, headers=headers)
        await self._stream.send(
            self._conn.send(request) + self._conn.send(h11.Data(data=body))
            + self._conn.send(h11.EndOfMessage())
        )  # fmt: skip
        status, chunks = 0, []
        while True:
            event = self._conn.next_event()
            if event is h11.NEED_DATA:
                self._conn.receive_data(await self._stream.receive())
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                self._conn.start_next_cycle()
                return status, b"".join(chunks)


async def _run(running: RunningTeam) -> None:
    result = await running.run(GOAL)
    assert result.status == "completed"


if __name__ == "__main__":
    anyio.run(main)

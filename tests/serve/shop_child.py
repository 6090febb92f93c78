"""A service of the shop team (``tests.hierarchy.approval_team``) in a process of its own,
for the tests that kill the process that runs a run another service follows.

    python shop_child.py JOURNAL PLAN

serves ``create_app(shop_team(Shop(), PLAN), journal=JOURNAL)`` under uvicorn and prints
``url URL``; its ``slow`` steps wait for ever (nothing releases them). ``shop_child`` runs
it and kills it on the way out if it still runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

__all__ = ("shop_child",)

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def shop_child(journal: str, plan: str) -> AsyncIterator[tuple[str, Process]]:
    """The child serving the shop team whose planner plans ``plan``: its URL, and it."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}  # (the tests' helpers, and regiment)
    child = await anyio.open_process(
        [sys.executable, __file__, journal, plan], env=env, stdin=subprocess.DEVNULL, stderr=None
    )
    try:
        assert child.stdout is not None
        said, out = "", TextReceiveStream(child.stdout)
        with anyio.fail_after(60):  # (a hang guard)
            while "\n" not in said:
                said += await out.receive()
        yield said.split()[1], child
    finally:
        if child.returncode is None:
            child.kill()
        with anyio.fail_after(30):
            await child.wait()


async def _main(journal: str, plan: str) -> None:
    from examples.service.serving import serving
    from regiment.serve import create_app
    from tests.hierarchy.approval_team import Shop, shop_team

    async with serving(create_app(shop_team(Shop(), plan), journal=journal)) as url:
        print(f"url {url}", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(_main, sys.argv[1], sys.argv[2])

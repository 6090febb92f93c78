"""The same library under trio: a trio program runs two refund goals at once on one team.

Run it with ``.venv/bin/python examples/trio_app.py``. Nothing here is asyncio:
regiment is written against anyio, so it runs inside ``trio.run`` as it is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import trio

if __package__ in (None, ""):  # run as a script: load this folder as its package
    # (sys.path is left alone: regiment comes from the installed package, and the
    # repository's own tools/ or telemetry/ never shadow a module of yours).
    import importlib.util

    _folder = Path(__file__).resolve().parent
    _spec = importlib.util.spec_from_file_location(
        "examples", _folder / "__init__.py", submodule_search_locations=[str(_folder)]
    )
    assert _spec is not None
    assert _spec.loader is not None
    sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_spec.name])
    __package__ = _spec.name

from regiment import run_main
from regiment.hierarchy import RunResult
from regiment.models import ScriptedModel

from .refund.brain import refund_brain
from .refund.team import GOAL, build_team
from .refund.tools import Ledger


async def main() -> None:
    ledger = Ledger()
    team = build_team(ScriptedModel(refund_brain), ledger)
    goals = {order: GOAL.replace("88213", order) for order in ("88213", "77120")}
    results: dict[str, RunResult] = {}
    async with team.start() as running:

        async def run(order: str) -> None:
            results[order] = await running.run(goals[order])

        async with trio.open_nursery() as nursery:  # a trio nursery, two runs side by side
            for order in goals:
                nursery.start_soon(run, order)
        # trio's own cancellation works too: a run given no time is cancelled, not left running.
        with trio.move_on_after(0) as scope:
            await running.run(goals["77120"])
    for order in goals:
        result = results[order]
        versions = " -> ".join(f"v{p.version}" for p in result.plans)
        rejected = (
            f" (rejected by its check: {', '.join(result.rejected)})" if result.rejected else ""
        )
        print(
            f"order {order}: {result.status}, plan {versions}, "
            f"steps {', '.join(result.committed)}{rejected}"
        )
    print(f"a run with no time left was cancelled: {scope.cancelled_caught}")
    print(f"refunds issued: {ledger.refunds}; exceptions flagged: {ledger.exceptions}")
    print(f"running under: trio {trio.__version__}")


if __name__ == "__main__":
    # It takes no arguments: -h says what it does; any other is a usage error (exit 2).
    argparse.ArgumentParser(description=__doc__).parse_args()
    run_main(main, backend="trio")  # trio.run(main), quiet when piped into `head`

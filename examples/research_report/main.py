"""A report: three research steps at once, then a writing step; the draft is kept verbatim.

Run it with ``.venv/bin/python examples/research_report/main.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: load this folder as its package
    # (sys.path is left alone: regiment comes from the installed package, and the
    # repository's own tools/ or telemetry/ never shadow a module of yours).
    import importlib.util

    _folder = Path(__file__).resolve().parent
    _spec = importlib.util.spec_from_file_location(
        "examples.research_report",
        _folder / "__init__.py",
        submodule_search_locations=[str(_folder)],
    )
    assert _spec is not None
    assert _spec.loader is not None
    sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_spec.name])
    __package__ = _spec.name

from regiment import run_main
from regiment.hierarchy import (
    PlanCreated,
    Planner,
    RunCompleted,
    StepCompleted,
    StepDispatched,
    Team,
    Worker,
)
from regiment.models import Model, ScriptedModel

from .brain import research_brain
from .tools import find_notes

GOAL = "Write a short report on heat pumps: their history, efficiency and cost."


def build_team(model: Model) -> Team:
    """A researcher (runs several steps at once) and a writer whose drafts are artefacts."""
    return Team(
        name="reports",
        planner=Planner(model=model),
        workers=[
            Worker(
                name="researcher",
                description="Finds notes on one topic.",
                model=model,
                tools=[find_notes],
            ),
            Worker(
                name="writer",
                description="Writes a report from research results.",
                model=model,
                artifact=True,  # its draft goes into the answer verbatim
            ),
        ],
    )


async def main() -> None:
    team = build_team(ScriptedModel(research_brain))
    in_flight: set[str] = set()
    most = 0
    async with team.start() as running, running.stream(GOAL) as events:
        async for event in events:
            match event:
                case PlanCreated(plan=plan):
                    for step in plan.steps:
                        after = f" after {', '.join(step.depends_on)}" if step.depends_on else ""
                        print(
                            f"plan v{plan.version}: {step.id} [{step.worker}] {step.description}{after}"
                        )
                case StepDispatched(step_id=step_id, worker=worker):
                    in_flight.add(step_id)
                    most = max(most, len(in_flight))
                    print(f"  -> {step_id} to {worker}; in flight: {', '.join(sorted(in_flight))}")
                case StepCompleted(step_id=step_id):
                    in_flight.discard(step_id)
                    print(f"  <- {step_id} done")
                case RunCompleted(result=result):
                    print(f"\nat most {most} steps ran at the same time")
                    print(f"\nanswer:\n{result.answer}")
                case _:
                    pass


if __name__ == "__main__":
    # It takes no arguments: -h says what it does; any other is a usage error (exit 2).
    argparse.ArgumentParser(description=__doc__).parse_args()
    run_main(main)  # anyio.run(main), quiet when piped into `head`

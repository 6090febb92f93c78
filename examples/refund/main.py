"""The refund story, offline: the eligibility check fails, the planner replans.

Run it with ``make demo`` (or ``.venv/bin/python examples/refund/main.py``).
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
        "examples.refund", _folder / "__init__.py", submodule_search_locations=[str(_folder)]
    )
    assert _spec is not None
    assert _spec.loader is not None
    sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_spec.name])
    __package__ = _spec.name

from opentelemetry.sdk.trace import TracerProvider

from regiment import run_main
from regiment.hierarchy import (
    Plan,
    PlanCreated,
    Replanned,
    RunCompleted,
    RunResult,
    StaleReportDropped,
    StepCompleted,
    StepDispatched,
)
from regiment.models import ScriptedModel
from regiment.telemetry import SpanCollector, Telemetry

from .brain import refund_brain
from .team import GOAL, build_team
from .tools import Ledger


def _show_plan(plan: Plan) -> None:
    print(f"plan v{plan.version} ({plan.reason}):")
    for step in plan.steps:
        after = f" after {', '.join(step.depends_on)}" if step.depends_on else ""
        check = f" [check: {step.check}]" if step.check else ""
        print(f"  {step.id} [{step.worker}] {step.description}{after}{check}")


async def main() -> None:
    ledger = Ledger()
    # Spans go to an in-memory collector, drawn as a tree at the end (Jaeger not needed).
    collector = SpanCollector()
    provider = TracerProvider()
    provider.add_span_processor(collector)
    team = build_team(ScriptedModel(refund_brain), ledger, telemetry=Telemetry(provider))
    result: RunResult | None = None
    print("model: scripted (offline brain)")
    print(f"goal: {GOAL}\n")
    async with team.start() as running, running.stream(GOAL) as events:
        async for event in events:
            match event:
                case PlanCreated(plan=plan):
                    _show_plan(plan)
                case StepDispatched(step_id=step_id, worker=worker, plan_version=v):
                    print(f"  -> v{v} {step_id} dispatched to {worker}")
                case StepCompleted(step_id=step_id, output=output):
                    print(f"  <- {step_id} done: {output}")
                case Replanned(old_version=old, new_version=new, reason=reason):
                    print(f"\nreplan v{old} -> v{new}: {reason}")
                case StaleReportDropped(step_id=step_id, report_version=v):
                    print(f"  x  dropped a stale report of {step_id} (v{v})")
                case RunCompleted(result=finished):
                    result = finished
                case _:
                    pass
    print(f"\nrefunds issued: {ledger.refunds or 'none'}; exceptions flagged: {ledger.exceptions}")
    for mail in ledger.emails:
        print(f"email to {mail['to']}: {mail['subject']} - {mail['body']}")
    assert result is not None, "the run ended without a result"
    print(f"\nanswer ({result.status}):\n{result.answer}")
    provider.shutdown()
    trace_id = int(result.trace_id, 16) if result.trace_id else None
    print(f"\ntrace {result.trace_id}:\n{collector.render(trace_id)}")


if __name__ == "__main__":
    # It takes no arguments: -h says what it does; any other is a usage error (exit 2).
    argparse.ArgumentParser(description=__doc__).parse_args()
    run_main(main)  # anyio.run(main), quiet when piped into `head`

"""A resumed run continues its run's trace: the same trace id, under the first root
span, with a link to it that says which resume it is.

Over real processes and the real OTLP exporter: ``regiment run`` pauses (exporting
to a loopback receiver), ``regiment approve`` decides, ``regiment resume``
finishes; every span of both runs is one trace. A plain crash-resume (a child
``SIGKILL``ed mid-step, resumed here) ends the root span the child never ended.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import RunCreated, RunResumed, open_journal
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.telemetry import SpanCollector, Telemetry, configure_tracing
from regiment.tools import Approve, tool
from tests.cli.helpers import regiment_process

from ..telemetry.otlp_receiver import OtlpReceiver, ReceivedSpan
from .durable_team import Ledger, make_team
from .test_crash_resume import _run_and_kill

pytestmark = pytest.mark.anyio


def _traced(*argv: str, cwd: Path, endpoint: str) -> subprocess.CompletedProcess[str]:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "refunds"}
    return regiment_process(*argv, cwd=cwd, env=env)


REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team_approval.toml")
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."


def _roots(spans: tuple[ReceivedSpan, ...]) -> list[ReceivedSpan]:
    return [s for s in spans if s.name == "invoke_agent refunds"]


# The CLI commands run in processes of their own, on the CLI's loop: this test's backend
# only reads the journal once at the end (tests/journal reads it on both backends); on
# trio it ran the same processes again.
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_pause_approve_resume_in_three_processes_is_one_trace(tmp_path: Path) -> None:
    where = str(tmp_path / "journal.db")
    options = ("--model", "scripted", "--journal", where, "--app-dir", str(REPO))
    with OtlpReceiver() as receiver:
        base = receiver.endpoint.removesuffix("/v1/traces")
        first = _traced(
            "run", TEAM, GOAL, *options, "--trace", "jaeger", cwd=tmp_path, endpoint=base
        )
        assert first.returncode == 3, first.stderr
        (line,) = [x for x in first.stderr.splitlines() if x.startswith("paused:")]
        run_id = line.rsplit(" ", 1)[1]
        paused = receiver.spans()

        listed = _traced(
            "approvals", run_id, "--json", "--journal", where, cwd=tmp_path, endpoint=base
        )
        (row,) = [json.loads(x) for x in listed.stdout.splitlines()]
        decided = _traced(
            "approve", run_id, row["request_id"], "--journal", where, cwd=tmp_path, endpoint=base
        )
        assert decided.returncode == 0, decided.stderr

        third = _traced(
            "resume", TEAM, run_id, *options, "--trace", "jaeger", cwd=tmp_path, endpoint=base
        )
        assert third.returncode == 0, third.stderr
        spans = receiver.spans()
    resumed_spans = spans[len(paused) :]

    (root,) = _roots(paused)
    assert root.parent_span_id is None
    assert "regiment.run.resume" not in root.attributes
    (again,) = _roots(resumed_spans)
    assert len(resumed_spans) > 5  # the resumed run's planner, worker, model and tool spans
    # Every span of both processes is in one trace.
    assert {s.trace_id for s in spans} == {root.trace_id}
    assert again.parent_span_id == root.span_id
    assert again.attributes["regiment.run.resume"] == 1
    assert again.attributes["regiment.run.id"] == run_id
    (link,) = again.links
    assert (link.trace_id, link.span_id) == (root.trace_id, root.span_id)
    assert link.attributes["regiment.run.resume"] == 1
    assert f"trace {root.trace_id}" in third.stderr  # the command names the run's trace
    assert any(s.name == "execute_tool issue_refund" for s in resumed_spans)

    journal = await open_journal(where)
    try:
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    created = records[0]
    assert isinstance(created, RunCreated)
    assert created.trace is not None
    assert created.trace.startswith(f"00-{root.trace_id}-{root.span_id}-")  # W3C traceparent
    (resume,) = [r for r in records if isinstance(r, RunResumed)]
    assert resume.number == 1
    assert resume.trace is not None
    assert resume.trace.startswith(f"00-{root.trace_id}-{again.span_id}-")


async def test_a_crash_resume_ends_the_crashed_root_span(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = str(tmp_path / "runs.db")
    folder = tmp_path / "crashed"
    monkeypatch.setenv("DURABLE_TEAM_TRACED", "1")
    run_id = await _run_and_kill(where, folder, "tool:s1")

    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        created = (await journal.read(run_id))[0].record
        assert isinstance(created, RunCreated)
        assert created.trace is not None  # the killed child's root span
        _, first_trace, first_span, _ = created.trace.split("-")
        collector = SpanCollector()
        provider = TracerProvider()
        provider.add_span_processor(collector)
        team = dataclasses.replace(make_team(), telemetry=Telemetry(provider))
        async with team.start(journal=journal) as running:
            result = await running.resume(run_id, deps=Ledger(folder))
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    assert result.status == "completed"
    assert result.trace_id == first_trace
    spans = collector.spans()
    (root,) = [s for s in spans if s.name == "invoke_agent billing-desk"]
    assert {format(s.context.trace_id, "032x") for s in spans} == {first_trace}
    # The killed child never ended its root span: the resume ends that span (its id, its
    # start, no parent), not a new one under it, so the trace has its root.
    assert root.parent is None
    assert format(root.context.span_id, "016x") == first_span
    since = created.created_at - datetime(1970, 1, 1, tzinfo=UTC)
    assert root.start_time == since // timedelta(microseconds=1) * 1000  # its first start
    assert root.attributes is not None
    assert root.attributes["regiment.run.resume"] == 1
    assert not root.links  # (it would link to itself)
    (event,) = [e for e in root.events if e.name == "regiment.run.resumed"]
    assert event.attributes == {"regiment.run.resume": 1}
    (resumed,) = [r for r in records if isinstance(r, RunResumed)]
    assert resumed.number == 1
    assert resumed.trace == created.trace  # the same span, journaled as such


async def test_what_a_resume_replayed_says_so_on_its_spans(tmp_path: Path) -> None:
    # The step ran `lookup`, then paused on `pay`'s approval. The resumed run's trace
    # showed `execute_tool lookup` as if it ran again (it did not), a `plan` span
    # with no model call in it, and no sign of the step's two replayed model replies.
    ran: list[str] = []

    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        ran.append(order)
        return "found"

    @tool(requires_approval=True)
    def pay(order: str) -> str:
        """Pay an order."""
        return "paid"

    def brain(request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            return text_response(json.dumps({"steps": [{"id": "s1", "description": "pay"}]}))
        if request.role != "worker":
            return text_response("answer")
        done = sum(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts)
        return [
            tool_call_response("lookup", {"order": "7"}),
            tool_call_response("pay", {"order": "7"}),
            text_response("paid"),
        ][done]

    with OtlpReceiver() as receiver:
        handle = configure_tracing("resume", endpoint=receiver.endpoint, set_global=False)
        model = ScriptedModel(brain)
        worker = Worker(name="w", description="w", model=model, tools=[lookup, pay])
        team = Team(
            name="t",
            planner=Planner(model=model),
            workers=[worker],
            telemetry=Telemetry(handle.provider),
        )
        where = str(tmp_path / "runs.db")
        async with team.start(journal=where) as running:
            paused = await running.run("pay order 7")
            assert paused.status == "paused"
            await running.approve(paused.pending_approvals[0].request_id, Approve())
        handle.force_flush()
        first = len(receiver.spans())
        async with team.start(journal=where) as running:
            assert (await running.resume(paused.run_id)).status == "completed"
        handle.shutdown()
        spans = receiver.spans()
    assert ran == ["7"]  # lookup ran once, in the first process
    before, after = spans[:first], spans[first:]
    assert not any("regiment.replayed" in s.attributes for s in before)
    by_name = {s.name: s for s in after}
    plan = by_name["plan planner"]
    assert plan.attributes["regiment.replayed"] is True
    assert not [s for s in after if s.parent_span_id == plan.span_id]  # no chat: not asked
    assert by_name["execute_tool lookup"].attributes["regiment.replayed"] is True
    assert "regiment.replayed" not in by_name["execute_tool pay"].attributes  # it ran now
    step = by_name["invoke_agent w"]
    replayed = [a for name, a in step.events if name == "regiment.replayed"]
    assert replayed == [{"gen_ai.operation.name": "chat"}] * 2  # lookup's and pay's calls
    assert len([s for s in after if s.name == "chat scripted"]) == 2  # the rest, asked now
    # The resumed root's totals are the whole run's: every model call, in either process.
    asked = len([s for s in spans if s.name == "chat scripted"])
    assert by_name["invoke_agent t"].attributes["regiment.usage.model_calls"] == asked

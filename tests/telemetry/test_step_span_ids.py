"""A step's span id, chosen as it is dispatched and journaled with it: the step's span takes
it; a header that holds no span id, or a provider that is not the SDK's, gives the span an
id of its own; ``open_root`` finds the steps a dead process left open (none in an older
journal, which has no span ids). (tests/telemetry/test_interrupted_spans.py does it end to
end, with killed processes.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import msgspec
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.hierarchy.run._trace import open_root
from regiment.journal import (
    Entry,
    Record,
    RunCreated,
    RunResumed,
    StepDispatched,
    StepReported,
)
from regiment.telemetry import OpenRoot, OpenStep, SpanCollector, Telemetry, step_span_headers
from tests.fresh_interpreter import run_fresh

from .test_reopened_root import _Provider

T = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT = f"00-{T}-00f067aa0ba902b7-01"
AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
STEP = "1234567890abcdef"


def _collected() -> tuple[TracerProvider, SpanCollector]:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    return provider, collector


def _step_span_id(telemetry: Telemetry, headers: dict[str, str]) -> str:
    with telemetry.agent_span("clerk", parent_headers=headers, step_id="s1") as span:
        return format(span.get_span_context().span_id, "016x")


def test_a_step_span_takes_the_id_its_dispatch_chose() -> None:
    provider, collector = _collected()
    telemetry = Telemetry(provider)
    chosen, headers = step_span_headers({"traceparent": ROOT})
    assert len(chosen) == 16
    assert headers == {"traceparent": ROOT, "regiment-step-span": chosen}
    assert _step_span_id(telemetry, headers) == chosen
    assert _step_span_id(telemetry, {"traceparent": ROOT, "regiment-step-span": STEP}) == STEP
    # The next spans make their own ids again.
    assert _step_span_id(telemetry, {"traceparent": ROOT}) not in {chosen, STEP}
    with telemetry.chat_span("m", "p") as chat:
        assert format(chat.get_span_context().span_id, "016x") not in {chosen, STEP}
    steps = [s for s in collector.spans() if s.name == "invoke_agent clerk"]
    assert {format(s.context.trace_id, "032x") for s in steps} == {T}  # under the root
    assert step_span_headers({})[0] != chosen  # a new id each time
    provider.shutdown()


@pytest.mark.parametrize("given", ["xyz", "0000000000000000", "123", "zzzzzzzzzzzzzzzz"])
def test_a_header_that_holds_no_span_id_is_ignored(given: str) -> None:
    provider, collector = _collected()
    made = _step_span_id(Telemetry(provider), {"traceparent": ROOT, "regiment-step-span": given})
    assert made != given
    assert int(made, 16) != 0
    assert len(collector.spans()) == 1
    provider.shutdown()


def test_a_provider_not_the_sdks_gives_ids_of_its_own_and_ends_no_lost_step() -> None:
    provider, collector = _collected()
    telemetry = Telemetry(_Provider(provider))
    assert _step_span_id(telemetry, {"traceparent": ROOT, "regiment-step-span": STEP}) != STEP
    lost = OpenStep(
        span_id=STEP, worker="clerk", step_id="s1", plan_version=1, attempt=1, started=AT
    )
    reopen = OpenRoot(traceparent=ROOT, parent=None, started=AT, steps=(lost,))
    with telemetry.run_span("t", "r", "g", resume=(1, ROOT), reopen=reopen):
        pass
    names = [s.name for s in collector.spans()]
    assert names == ["invoke_agent clerk", "invoke_agent t"]  # no span with the lost id
    assert STEP not in {format(s.context.span_id, "016x") for s in collector.spans()}
    provider.shutdown()


def _entries(*records: Record) -> list[Entry]:
    return [Entry(seq=n, record=r, recorded_at=AT) for n, r in enumerate(records, 1)]


def _sent(step: str, span: str | None, attempt: int = 1) -> StepDispatched:
    return StepDispatched(
        run_id="r", plan_version=1, step_id=step, worker="clerk", attempt=attempt, span=span
    )


def _reported(step: str) -> StepReported:
    return StepReported(
        run_id="r", plan_version=1, step_id=step, worker="clerk", status="done", committed=True
    )


CREATED = RunCreated(run_id="r", team="t", config_hash="h", goal="g", created_at=AT, trace=ROOT)


def test_the_open_root_holds_the_steps_its_process_sent_and_never_reported() -> None:
    found = open_root(_entries(CREATED, _sent("s1", "a" * 16), _reported("s1"), _sent("s2", STEP)))
    assert found is not None
    assert found.steps == (
        OpenStep(span_id=STEP, worker="clerk", step_id="s2", plan_version=1, attempt=1, started=AT),
    )
    # A resume that died too: only the steps it sent (it ended the ones before it).
    again = RunResumed(run_id="r", number=1, trace=ROOT, resumed_at=AT)
    later = open_root(
        _entries(CREATED, _sent("s2", STEP), again, _sent("s2", "b" * 16), _sent("s3", "c" * 16))
    )
    assert later is not None
    assert [(s.step_id, s.span_id) for s in later.steps] == [("s2", "b" * 16), ("s3", "c" * 16)]


def test_an_older_journal_without_span_ids_still_reads_and_has_no_open_steps() -> None:
    body = json.loads(msgspec.json.encode(_sent("s1", None)))
    del body["span"]  # as a journal written before the field was
    old = msgspec.json.decode(json.dumps(body).encode(), type=Record)
    assert old == _sent("s1", None)
    found = open_root(_entries(CREATED, old))
    assert found == OpenRoot(traceparent=ROOT, parent=None, started=AT)


def test_a_global_provider_installed_after_the_telemetry_gives_the_chosen_id() -> None:
    # Telemetry() holds the API's proxy tracer (nothing was installed yet): the copy that
    # gives ids is made from the provider installed since, not from the proxy (it was
    # made from that, which is not the SDK's, so a step's span got an id of its own).
    code = f"""
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from regiment.telemetry import Telemetry
telemetry = Telemetry()
trace.set_tracer_provider(TracerProvider())
headers = {{"traceparent": "{ROOT}", "regiment-step-span": "{STEP}"}}
with telemetry.agent_span("clerk", parent_headers=headers) as span:
    print(format(span.get_span_context().span_id, "016x"))
"""
    assert run_fresh(code) == f"{STEP}\n"

"""``docs/tracing.md`` is the rendered catalogue, and the catalogue names everything we emit."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL, build_team
from examples.refund.tools import Ledger
from regiment.models import ScriptedModel
from regiment.telemetry import SpanCollector, Telemetry, semconv
from regiment.telemetry._catalogue import ATTRIBUTES, EVENTS, METRICS, SPANS, VALUES, render

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "tracing.md"
DOCUMENTED = {e.name for section in (SPANS, ATTRIBUTES, METRICS, EVENTS, VALUES) for e in section}


def test_the_doc_is_the_rendered_catalogue() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/tracing.md is out of date: run `make tracing-doc`"
    )


def test_every_semconv_name_is_documented() -> None:
    names = {getattr(semconv, attr) for attr in semconv.__all__}
    assert all(isinstance(name, str) for name in names)
    assert names - DOCUMENTED == set()


def test_names_other_rooms_write_as_text_are_the_documented_ones() -> None:
    run = (ROOT / "tools" / "_run.py").read_text(encoding="utf-8")
    for name in (
        semconv.APPROVAL_REQUESTED_EVENT,
        semconv.APPROVAL_DECIDED_EVENT,
        semconv.REGIMENT_APPROVAL_DECISION,
        semconv.REGIMENT_TOOL_OUTCOME,
    ):
        assert f'"{name}"' in run
    mcp = (ROOT / "tools" / "_mcp_transport.py").read_text(encoding="utf-8")
    for key in re.findall(r'attributes\["([a-z_.]+)"\]|"([a-z_.]+\.[a-z_.]+)": ', mcp):
        name = key[0] or key[1]
        assert name in DOCUMENTED, name


def _span_kind(name: str) -> str:
    """A span name with its subject replaced by the catalogue's placeholder."""
    for entry in SPANS:
        prefix = entry.name.split(" {")[0]
        if name == entry.name or (" {" in entry.name and name.startswith(prefix + " ")):
            return entry.name
    return name


@pytest.mark.anyio
async def test_every_emitted_span_attribute_and_event_is_documented() -> None:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    for capture in (False, True):
        team = dataclasses.replace(
            build_team(ScriptedModel(refund_brain), Ledger()),
            telemetry=Telemetry(provider, capture_content=capture),
        )
        await team.run(GOAL)
    provider.shutdown()
    span_names = {e.name for e in SPANS}
    seen_attributes: set[str] = set()
    for span in collector.spans():
        assert _span_kind(span.name) in span_names, span.name
        seen_attributes |= set(span.attributes or {})
        for event in span.events:
            assert event.name in DOCUMENTED, event.name
            seen_attributes |= set(event.attributes or {})
    assert seen_attributes - DOCUMENTED == set()
    assert semconv.REGIMENT_REPLAN_REASON in seen_attributes  # the capture-on run was seen

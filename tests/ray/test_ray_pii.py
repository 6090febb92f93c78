"""Content capture off, workers on a local Ray: no user text (the goal, a tool's
arguments and result, a model's reply, a check's explanation, an exception's message)
in any span or span event the planner side and the replicas export over real OTLP, nor
in any log record the planner side exports."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from types import ModuleType

import pytest

from regiment.errors import RunError
from regiment.hierarchy import Ray, Worker
from regiment.telemetry import Telemetry, configure_tracing

from ..telemetry._pii_team import SynthesisBroke, pii_team, pii_worker
from ..telemetry.otlp_receiver import OtlpReceiver, ReceivedLog, ReceivedSpan

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_capture_off_keeps_user_text_out_of_the_replicas_spans(
    ray_session: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, "regiment"):
        marker, spans, logs = await _run_on_ray(capture=False)

    remote = [s for s in spans if s.resource["service.name"] != "planner-side"]
    # the replica ran the step's tool call and model calls, and exported them
    assert {"execute_tool lookup", "chat scripted"} <= {s.name for s in remote}
    assert {"verify", "plan planner", "synthesize"} <= {s.name for s in spans}
    assert any(s.attributes.get("regiment.plan.replan") for s in spans)  # it replanned
    texts = [
        json.dumps([s.name, s.status_message, s.attributes, s.events], default=str) for s in spans
    ]
    texts += [f"{log.body} {log.attributes}" for log in logs]
    texts += [r.getMessage() for r in caplog.records]  # and what it logged here
    assert [text for text in texts if marker in text] == []


async def test_the_replicas_capture_content_as_the_team_says(ray_session: ModuleType) -> None:
    """Capture on in the team's process, off in the replicas' environment: the replicas'
    spans carry the step's content, as an in-process worker's would. Before, a replica
    read only its own environment, so it captured nothing here (and, the other way round,
    would capture where the team said not to)."""
    marker, spans, _ = await _run_on_ray(capture=True)

    remote = {s.name: s for s in spans if s.resource["service.name"] != "planner-side"}
    assert marker in json.dumps(remote["execute_tool lookup"].attributes, default=str)
    assert marker in json.dumps(remote["chat scripted"].attributes, default=str)


async def _run_on_ray(
    *, capture: bool
) -> tuple[str, tuple[ReceivedSpan, ...], tuple[ReceivedLog, ...]]:
    """The PII team with its worker on the session's Ray, traced to a local OTLP receiver
    (the replicas export their own spans there), ``capture`` content in the team's process:
    the marker, and the spans and log records exported."""
    with OtlpReceiver() as receiver:
        handle = configure_tracing(
            "planner-side", endpoint=receiver.endpoint, set_global=False, logs=True
        )
        team, goal, marker = pii_team(Telemetry(handle.provider, capture_content=capture))
        (local,) = team.workers
        assert isinstance(local, Worker)
        placement = Ray(
            build=functools.partial(pii_worker, marker), num_cpus=0, otlp_endpoint=receiver.endpoint
        )
        team = dataclasses.replace(team, workers=[dataclasses.replace(local, placement=placement)])
        with pytest.raises((RunError, SynthesisBroke)):
            await team.run(goal)  # leaving the team flushes the replicas' spans
        handle.shutdown()
        return marker, receiver.spans(), receiver.logs()

"""What crosses between the planner's process and a Ray replica: msgspec bytes.

A step goes out as :class:`RemoteStep` (the ``AssignStep`` itself, so the plan
version and the reserved budget allowance travel with it; the W3C trace
context; and the step's key, which stays the same when a step is retried on
another replica) and comes back as the ``StepReport``. Both are plain bytes,
so Ray's pickling never sees a regiment object on the hot path.
"""

from __future__ import annotations

import msgspec

from regiment.hierarchy._messages import AssignStep, StepReport

__all__ = ("RemoteStep", "decode_report", "decode_step", "encode_report", "encode_step", "step_key")


class RemoteStep(msgspec.Struct, frozen=True, kw_only=True, tag="remote_step"):
    """One step for a replica.

    Attributes:
        assign: the step, its plan version, attempt and budget allowance.
        headers: W3C ``traceparent`` / ``tracestate``: the replica's spans join the run's trace.
        key: the step's idempotency key (run, plan version, step, attempt); a retry on
            another replica carries the same one, and a cancel names it.
        worker: the worker that runs it (a replica of a pool hosts several).
    """

    assign: AssignStep
    headers: dict[str, str] = {}
    key: str = ""
    worker: str = ""


def step_key(assign: AssignStep) -> str:
    """``run/version/step/attempt``: the same for every delivery of one attempt."""
    return f"{assign.run_id}/v{assign.plan_version}/{assign.step.id}/{assign.attempt}"


_step_encoder = msgspec.msgpack.Encoder()
_step_decoder = msgspec.msgpack.Decoder(RemoteStep)
_report_decoder = msgspec.msgpack.Decoder(StepReport)


def encode_step(step: RemoteStep) -> bytes:
    return _step_encoder.encode(step)


def decode_step(data: bytes) -> RemoteStep:
    return _step_decoder.decode(data)


def encode_report(report: StepReport) -> bytes:
    return _step_encoder.encode(report)


def decode_report(data: bytes) -> StepReport:
    return _report_decoder.decode(data)

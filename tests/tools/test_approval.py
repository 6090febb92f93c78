"""Tools that require approval: approve, deny, edit, no approver, and the trace events."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from regiment._json import JsonObject
from regiment.errors import ApprovalError
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Deny,
    EditArguments,
    Tool,
    Toolset,
    tool,
)

pytestmark = pytest.mark.anyio


@dataclass
class Scripted:
    """An approver that answers every request with the same decision, and remembers them."""

    decision: ApprovalDecision
    requests: list[ApprovalRequest] = field(default_factory=list)

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return self.decision


def make_refund_tool() -> tuple[Tool[..., object], list[JsonObject]]:
    ran: list[JsonObject] = []

    @tool(requires_approval=True, idempotency_key=("order_id",))
    async def issue_refund(order_id: str, amount: float, note: str = "") -> str:
        """Refund an order."""
        ran.append({"order_id": order_id, "amount": amount})
        return f"refunded {amount} on {order_id}"

    return issue_refund, ran


async def test_a_plain_approver_that_hands_back_a_coroutine_is_awaited() -> None:
    # On trio the worker thread refused the coroutine ("Trio expected a sync function,
    # but ... appears to be asynchronous"): the call failed with an ApprovalError.
    refund, ran = make_refund_tool()
    asked = Scripted(Approve())

    def approver(request: ApprovalRequest) -> object:
        return asked(request)  # a plain function handing an async one's coroutine back

    result = await refund.call({"order_id": "1", "amount": 5}, call_id="c1", approver=approver)  # type: ignore[arg-type]
    assert (result.is_error, ran) == (False, [{"order_id": "1", "amount": 5.0}])


async def test_approved_calls_run_and_the_approver_sees_the_whole_call() -> None:
    refund, ran = make_refund_tool()
    approver = Scripted(Approve())
    result = await refund.call({"order_id": "88213", "amount": 10}, call_id="c1", approver=approver)
    assert result.content == "refunded 10.0 on 88213"
    assert ran == [{"order_id": "88213", "amount": 10.0}]
    assert approver.requests == [
        ApprovalRequest(
            tool_name="issue_refund",
            call_id="c1",
            arguments={"order_id": "88213", "amount": 10.0, "note": ""},
            description="Refund an order.",
            idempotency_key="issue_refund:order_id=88213",
        )
    ]


async def test_denied_calls_do_not_run_and_the_model_gets_the_reason() -> None:
    refund, ran = make_refund_tool()
    approver = Scripted(Deny(reason="refunds over 5 need a manager"))
    result = await refund.call({"order_id": "88213", "amount": 10}, call_id="c1", approver=approver)
    assert ran == []
    assert result.is_error
    assert result.error_type == "approval_denied"
    assert result.content == ("denied: refunds over 5 need a manager")
    assert result.attempts == 0
    assert result.idempotency_key == "issue_refund:order_id=88213"


async def test_edited_calls_run_with_the_edited_arguments() -> None:
    refund, ran = make_refund_tool()
    edit = EditArguments(arguments={"order_id": "88213", "amount": 5}, reason="capped")
    result = await refund.call(
        {"order_id": "88213", "amount": 10}, call_id="c1", approver=Scripted(edit)
    )
    assert result.content == "refunded 5.0 on 88213"
    assert ran == [{"order_id": "88213", "amount": 5.0}]
    assert result.arguments == {"order_id": "88213", "amount": 5}  # as the approver sent them


async def test_edited_arguments_are_validated_again() -> None:
    refund, ran = make_refund_tool()
    edit = EditArguments(arguments={"order_id": "88213", "amount": "five"})
    result = await refund.call(
        {"order_id": "88213", "amount": 10}, call_id="c1", approver=Scripted(edit)
    )
    assert ran == []
    assert result.error_type == "invalid_arguments"
    assert result.content == (
        "invalid arguments for tool 'issue_refund' as edited by the approver: amount: Input "
        'should be a valid number (got "five")'
    )


async def test_no_approver_means_the_tool_does_not_run() -> None:
    refund, ran = make_refund_tool()
    result = await refund.call({"order_id": "88213", "amount": 10}, call_id="c1")
    assert ran == []
    assert result.error_type == "approval_unavailable"
    assert result.content == (
        "tool 'issue_refund' needs approval before it runs, but no approver is configured, "
        "so it was not run"
    )


async def test_invalid_arguments_are_refused_before_anyone_is_asked() -> None:
    refund, _ = make_refund_tool()
    approver = Scripted(Approve())
    result = await refund.call({"order_id": "88213"}, call_id="c1", approver=approver)
    assert result.error_type == "invalid_arguments"
    assert approver.requests == []


async def test_tool_sets_pass_their_approver() -> None:
    refund, ran = make_refund_tool()
    approver = Scripted(Approve())
    billing = Toolset("billing", [refund], approver=approver)
    result = await billing.call("issue_refund", {"order_id": "1", "amount": 2}, call_id="c1")
    assert not result.is_error
    assert len(approver.requests) == 1
    assert ran == [{"order_id": "1", "amount": 2.0}]


async def test_an_approver_exception_propagates_naming_the_approver() -> None:
    refund, ran = make_refund_tool()

    async def broken(request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("approval service is down")

    with pytest.raises(ApprovalError) as caught:
        await refund.call({"order_id": "1", "amount": 2}, call_id="c1", approver=broken)
    assert str(caught.value).startswith(
        "the approver of tool 'issue_refund' raised RuntimeError: approval service is down; "
    )
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert ran == []


async def test_waiting_for_approval_holds_no_concurrency_slot() -> None:
    asked = anyio.Event()
    answer = anyio.Event()

    async def slow_human(request: ApprovalRequest) -> ApprovalDecision:
        asked.set()
        await answer.wait()
        return Approve()

    @tool(requires_approval=True)
    def delete_account(user: str) -> str:
        return f"deleted {user}"

    @tool
    def lookup(user: str) -> str:
        return f"found {user}"

    admin = Toolset("admin", [delete_account, lookup], max_concurrency=1, approver=slow_human)
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(admin.call, "delete_account", {"user": "ana"}, call_id="c1"))
        await asked.wait()
        found = await admin.call("lookup", {"user": "li"}, call_id="c2")
        answer.set()
    assert found.content == "found li"


async def test_approval_waits_are_events_on_the_current_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    refund, _ = make_refund_tool()
    with tracer.start_as_current_span("execute_tool issue_refund"):
        await refund.call(
            {"order_id": "1", "amount": 2}, call_id="c1", approver=Scripted(Deny(reason="no"))
        )
    (span,) = exporter.get_finished_spans()
    events = [(event.name, dict(event.attributes or {})) for event in span.events]
    about = {"gen_ai.tool.name": "issue_refund", "gen_ai.tool.call.id": "c1"}
    assert events == [
        ("regiment.approval.requested", about),
        ("regiment.approval.decided", {**about, "regiment.approval.decision": "deny"}),
    ]
    provider.shutdown()


def test_a_cancelled_error_while_the_task_is_being_cancelled_still_cancels() -> None:
    # asyncio: a predicate's or key function's own CancelledError fails the step
    # (ToolError), but one raised while a cancel of the task is pending is that cancel.
    import asyncio

    from regiment.errors import ToolError
    from regiment.tools import ToolPolicy

    def gives_up(arguments: JsonObject) -> bool:
        raise asyncio.CancelledError

    policy = ToolPolicy(requires_approval=gives_up)
    seen: list[str] = []

    async def being_cancelled() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        try:
            policy.needs_approval({}, "pay")
        except asyncio.CancelledError:
            seen.append("CancelledError")
            raise

    async def main() -> None:
        try:
            policy.needs_approval({}, "pay")
        except ToolError:
            seen.append("ToolError")
        await asyncio.gather(asyncio.create_task(being_cancelled()), return_exceptions=True)

    asyncio.run(main())
    assert seen == ["ToolError", "CancelledError"]

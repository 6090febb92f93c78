"""Tool sets: lookup, the unknown-tool answer, and composing without flags."""

from __future__ import annotations

import pytest

from regiment.errors import ConfigError
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Tool,
    ToolDefinition,
    ToolResult,
    Toolset,
    tool,
)


@tool
def check_eligibility(order_id: str) -> bool:
    """Check whether an order can be refunded."""
    return order_id == "88213"


@tool(idempotency_key=("order_id",))
def issue_refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


def email_customer(order_id: str, subject: str) -> str:
    """Email the customer of an order."""
    return f"sent {subject!r} about {order_id}"


async def approve_all(request: ApprovalRequest) -> ApprovalDecision:
    return Approve()


async def deny_all(request: ApprovalRequest) -> ApprovalDecision:
    raise AssertionError("not used")


def billing() -> Toolset:
    return Toolset("billing", [check_eligibility, issue_refund])


def test_lookup_and_definitions() -> None:
    tools = Toolset("mixed", [issue_refund, email_customer])
    assert tools.name == "mixed"
    assert tools.names == ("issue_refund", "email_customer")
    assert len(tools) == 2
    assert "email_customer" in tools
    assert "send_email" not in tools
    assert tools.get("issue_refund") is issue_refund
    assert tools.get("send_email") is None
    made = tools.get("email_customer")
    assert isinstance(made, Tool)
    assert made.function is email_customer
    assert [t.name for t in tools] == list(tools.names)
    assert tools.definitions == (issue_refund.definition, made.definition)
    assert all(isinstance(d, ToolDefinition) for d in tools.definitions)
    assert repr(tools) == "Toolset('mixed', ['issue_refund', 'email_customer'])"


def test_two_tools_of_one_name_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="tool set 'x' has two tools named 'issue_refund'"):
        Toolset("x", [issue_refund, Tool(email_customer, name="issue_refund")])


@pytest.mark.parametrize(("item", "shown"), [(5, "the int 5"), ("lookup", "the str 'lookup'")])
def test_something_that_is_no_function_is_named_as_what_it_is(item: object, shown: str) -> None:
    # Not "tool name None is not usable ... pass name=...": no name would make it a tool.
    with pytest.raises(ConfigError) as caught:
        Toolset("billing", [issue_refund, item])  # type: ignore[list-item]
    assert str(caught.value) == (
        f"tool set 'billing': tools[1] is {shown}, not a tool; give functions (plain typed "
        "ones, or made tools with @tool) or Tool objects"
    )


@pytest.mark.anyio
async def test_an_unknown_tool_is_an_error_result_naming_the_real_ones() -> None:
    result = await billing().call("send_email", {"to": "ana"}, call_id="c9")
    assert result == ToolResult(
        call_id="c9",
        tool_name="send_email",
        content=('no tool "send_email"; call one of: check_eligibility, issue_refund'),
        is_error=True,
        error_type="unknown_tool",
        arguments={"to": "ana"},
    )


@pytest.mark.anyio
async def test_an_empty_tool_set_says_so() -> None:
    result = await Toolset("idle", []).call("anything", {}, call_id="c")
    assert result.content == 'no tool "anything"; call one of: (none)'


@pytest.mark.anyio
async def test_calls_go_to_the_named_tool() -> None:
    result = await billing().call("check_eligibility", {"order_id": "88213"}, call_id="c")
    assert (result.content, result.tool_name, result.is_error) == (True, "check_eligibility", False)


def test_filtered_by_names_and_by_predicate() -> None:
    tools = Toolset("billing", [check_eligibility, issue_refund], max_concurrency=2)
    assert tools.filtered(["issue_refund"]).names == ("issue_refund",)
    assert tools.filtered("issue_refund").names == ("issue_refund",)
    read_only = tools.filtered(lambda t: t.policy.idempotency_key is None)
    assert read_only.names == ("check_eligibility",)
    assert (read_only.name, read_only.max_concurrency) == ("billing", 2)
    assert tools.names == ("check_eligibility", "issue_refund")  # unchanged


def test_filtering_on_a_name_the_set_does_not_have_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="has no tool 'refund'; its tools are"):
        billing().filtered(["refund"])


@pytest.mark.anyio
async def test_prefixed_renames_every_tool_but_keeps_idempotency_keys() -> None:
    tools = billing().prefixed("billing_")
    assert tools.names == ("billing_check_eligibility", "billing_issue_refund")
    assert [d.name for d in tools.definitions] == list(tools.names)
    result = await tools.call("billing_issue_refund", {"order_id": "7"}, call_id="c")
    assert (result.tool_name, result.content) == ("billing_issue_refund", "refunded 7")
    assert result.idempotency_key == "issue_refund:order_id=7"
    assert billing().names == ("check_eligibility", "issue_refund")


def test_prefixed_names_must_stay_valid() -> None:
    with pytest.raises(ConfigError, match="not usable"):
        billing().prefixed("has space ")


@pytest.mark.anyio
async def test_merged_and_or() -> None:
    comms = Toolset("comms", [email_customer], approver=approve_all)
    both = billing().merged(comms, name="support", max_concurrency=3)
    assert both.names == ("check_eligibility", "issue_refund", "email_customer")
    assert (both.name, both.max_concurrency, both.approver) == ("support", 3, approve_all)
    union = billing() | comms
    assert union.name == "billing+comms"
    assert union.names == both.names
    result = await union.call("email_customer", {"order_id": "1", "subject": "hi"}, call_id="c")
    assert result.content == "sent 'hi' about 1"


def test_merging_sets_with_a_shared_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="two tools named 'check_eligibility'"):
        billing() | billing()
    assert (billing() | billing().prefixed("other_")).names[2:] == (
        "other_check_eligibility",
        "other_issue_refund",
    )


def test_merging_sets_with_different_approvers_needs_a_choice() -> None:
    a = Toolset("a", [check_eligibility], approver=approve_all)
    b = Toolset("b", [issue_refund], approver=deny_all)
    with pytest.raises(ConfigError, match="pass approver="):
        a | b
    assert a.merged(b, approver=approve_all).approver is approve_all
    assert a.merged(Toolset("c", [email_customer], approver=approve_all)).approver is approve_all


def test_max_concurrency_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="max_concurrency must be 1 or more"):
        Toolset("x", [], max_concurrency=0)


@pytest.mark.parametrize("name", [[issue_refund], (issue_refund,), issue_refund, 3, None, "", "  "])
def test_a_name_that_is_not_one_is_refused(name: object) -> None:
    # Toolset([issue_refund], approver=...) took the list for the set's name and gave the
    # worker no tools at all: every call of the model came back "has no tool", and the run
    # completed with the approver never asked.
    with pytest.raises(ConfigError) as caught:
        Toolset(name, [check_eligibility])  # type: ignore[arg-type]
    message = str(caught.value)
    assert "Toolset(name, tools" in message
    assert "Toolset('billing', [issue_refund], approver=...)" in message


def test_a_worker_given_a_named_toolset_asks_its_approver() -> None:
    tools = Toolset("billing", [issue_refund], approver=approve_all)
    assert tools.names == ("issue_refund",)
    assert tools.approver is approve_all

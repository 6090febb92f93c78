"""Typed Python callables as worker tools: schemas, validation, limits, retries, approval;
and MCP servers as tool sources (``MCPServer``, owned by a running team's ``MCPHub``).

::

    @tool(idempotency_key=("order_id",), requires_approval=True)
    async def issue_refund(order_id: str, amount: float) -> dict[str, object]:
        \"\"\"Refund an order.\"\"\"

    billing = Toolset("billing", [check_eligibility, issue_refund], approver=ask_a_human)
    result = await billing.call("issue_refund", {"order_id": "88213", "amount": 10}, call_id="c1")
"""

from typing import TYPE_CHECKING

from regiment._lazy import LazyNames
from regiment.errors import RetryableToolError

__all__ = (
    "ApprovalDecision",
    "ApprovalRequest",
    "ApprovalRule",
    "Approve",
    "Approver",
    "Deny",
    "EditArguments",
    "IdempotencyKey",
    "OnToolError",
    "MCPConnection",
    "MCPHub",
    "MCPServer",
    "MCPServerLost",
    "MCPToolError",
    "MCPToolList",
    "RetryableToolError",
    "RunContext",
    "Tool",
    "ToolDefinition",
    "ToolOptions",
    "ToolPolicy",
    "ToolResult",
    "Toolset",
    "ToolsetItem",
    "WorkerTools",
    "abandoned_tool_calls",
    "ask_approver",
    "listed_tools",
    "require_mcp",
    "served_elsewhere",
    "tool",
)

# Each name loads with its module on first use (issue #22): a run without tools
# loads neither the @tool machinery nor the MCP client.
_LAZY_NAMES = LazyNames(
    __name__,
    {
        "regiment.tools._approval": (
            "ApprovalDecision",
            "ApprovalRequest",
            "Approve",
            "Approver",
            "Deny",
            "EditArguments",
            "ask_approver",
        ),
        "regiment.tools._context": ("RunContext",),
        "regiment.tools._decorator": ("tool",),
        "regiment.tools._definition": ("ToolDefinition",),
        "regiment.tools._mcp_connection": (
            "MCPConnection",
            "MCPServerLost",
        ),
        "regiment.tools._mcp_hub": (
            "MCPHub",
            "WorkerTools",
        ),
        "regiment.tools._mcp_remote": (
            "MCPToolList",
            "listed_tools",
            "served_elsewhere",
        ),
        "regiment.tools._mcp_server": (
            "MCPServer",
            "require_mcp",
        ),
        "regiment.tools._mcp_tools": ("MCPToolError",),
        "regiment.tools._policy": (
            "ApprovalRule",
            "IdempotencyKey",
            "OnToolError",
            "ToolOptions",
            "ToolPolicy",
        ),
        "regiment.tools._result": ("ToolResult",),
        "regiment.tools._thread": ("abandoned_tool_calls",),
        "regiment.tools._tool": ("Tool",),
        "regiment.tools._toolset": (
            "Toolset",
            "ToolsetItem",
        ),
    },
)

if TYPE_CHECKING:
    from regiment.tools._approval import (
        ApprovalDecision,
        ApprovalRequest,
        Approve,
        Approver,
        Deny,
        EditArguments,
        ask_approver,
    )
    from regiment.tools._context import RunContext
    from regiment.tools._decorator import tool
    from regiment.tools._definition import ToolDefinition
    from regiment.tools._mcp_connection import MCPConnection, MCPServerLost
    from regiment.tools._mcp_hub import MCPHub, WorkerTools
    from regiment.tools._mcp_remote import MCPToolList, listed_tools, served_elsewhere
    from regiment.tools._mcp_server import MCPServer, require_mcp
    from regiment.tools._mcp_tools import MCPToolError
    from regiment.tools._policy import (
        ApprovalRule,
        IdempotencyKey,
        OnToolError,
        ToolOptions,
        ToolPolicy,
    )
    from regiment.tools._result import ToolResult
    from regiment.tools._thread import abandoned_tool_calls
    from regiment.tools._tool import Tool
    from regiment.tools._toolset import Toolset, ToolsetItem


def __getattr__(name: str) -> object:
    return _LAZY_NAMES.load(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

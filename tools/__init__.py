"""Typed Python callables as worker tools: schemas, validation, limits, retries, approval;
and MCP servers as tool sources (``MCPServer``, owned by a running team's ``MCPHub``).

::

    @tool(idempotency_key=("order_id",), requires_approval=True)
    async def issue_refund(order_id: str, amount: float) -> dict[str, object]:
        \"\"\"Refund an order.\"\"\"

    billing = Toolset("billing", [check_eligibility, issue_refund], approver=ask_a_human)
    result = await billing.call("issue_refund", {"order_id": "88213", "amount": 10}, call_id="c1")
"""

from regiment.errors import RetryableToolError
from regiment.tools._approval import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Approver,
    Deny,
    EditArguments,
)
from regiment.tools._context import RunContext
from regiment.tools._decorator import tool
from regiment.tools._definition import ToolDefinition
from regiment.tools._mcp_connection import MCPConnection, MCPServerLost
from regiment.tools._mcp_hub import MCPHub, WorkerTools
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
from regiment.tools._tool import Tool
from regiment.tools._toolset import Toolset, ToolsetItem

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
    "require_mcp",
    "tool",
)

"""An MCP server's tool as an ordinary ``Tool``: its schema, validator, body and result.

The server's input schema is shown to the model as it is and checked with
``jsonschema`` before the call, so a call the schema rejects never reaches the
server; it comes back to the model as an ``invalid_arguments`` error result,
like any tool's. The body sends the call to the server's connection and maps
the ``CallToolResult``: structured content if there is any, else the text, and
``is_error`` raises :class:`MCPToolError` so the call ends as an error result.
The listing is here too: every page of ``tools/list``, and the check of ``include``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, cast

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from regiment._json import JsonObject, JsonValue
from regiment._json_problems import non_finite, schema_problems
from regiment._text import clipped
from regiment.errors import ConfigError, ToolError
from regiment.tools._argument_words import not_a_json_object
from regiment.tools._context import RunContext
from regiment.tools._mcp_server import MCPServer
from regiment.tools._schema import BoundArguments
from regiment.tools._tool import Tool

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from mcp.client.session import ClientSession
    from mcp.types import CallToolResult
    from mcp.types import Tool as ListedTool

__all__ = (
    "JsonSchemaArguments",
    "MCPToolError",
    "check_include",
    "list_all",
    "mcp_tool",
    "mcp_tools",
    "tool_name_for",
    "unlisted",
)

MCPCall = Callable[[str, JsonObject, str | None], Awaitable["CallToolResult"]]
"""Sends one ``tools/call`` (server-side name, arguments, idempotency key) over a connection."""

logger = logging.getLogger("regiment.tools.mcp")

_UNUSABLE = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_ERRORS = 5
_MAX_SHOWN = 200


class MCPToolError(ToolError):
    """An MCP server answered a call with ``isError``; its text is the message."""


class JsonSchemaArguments:
    """An :class:`~regiment.tools._validator.ArgumentValidator` over a JSON Schema.

    Raises:
        ToolError: the schema itself is not valid JSON Schema.
    """

    def __init__(self, schema: JsonObject, tool_name: str) -> None:
        from jsonschema import Draft202012Validator, SchemaError, validators

        kind = validators.validator_for(schema, default=Draft202012Validator)
        try:
            kind.check_schema(schema)
        except SchemaError as exc:
            raise ToolError(
                f"tool {tool_name!r} has an invalid input schema: {exc.message}"
            ) from exc
        unresolved = _unresolved_ref(schema)
        if unresolved is not None:
            raise ToolError(
                f"tool {tool_name!r} has an input schema whose $ref {unresolved}: no call "
                "could be checked against it"
            )
        self._validator: Validator = kind(schema)
        self._schema = schema
        properties = schema.get("properties")
        self._names = tuple(properties) if isinstance(properties, dict) else ()

    @property
    def schema(self) -> JsonObject:
        """The schema as the server gave it."""
        return self._schema

    @property
    def names(self) -> tuple[str, ...]:
        """The schema's top-level property names."""
        return self._names

    def validate(self, arguments: object) -> BoundArguments | str:
        """Check ``arguments`` against the schema; bind them as keywords."""
        if not isinstance(arguments, Mapping):
            return not_a_json_object(arguments, self._schema)
        from referencing.exceptions import Unresolvable

        data = cast(JsonObject, dict(arguments))
        try:
            found = list(self._validator.iter_errors(data))
        except Unresolvable as exc:  # a $ref below an $id of its own, that points nowhere
            return f"the server's input schema cannot be checked ({exc}); do not call this tool"
        errors = sorted(found, key=lambda e: list(e.absolute_path))
        # NaN and Infinity (a lenient JSON parser's reading): a schema's "number" takes them,
        # but no JSON carries them to the server.
        unfinite = non_finite(data)
        if errors or unfinite:
            return "; ".join([*schema_problems(errors, _MAX_ERRORS), *unfinite[:_MAX_ERRORS]])
        return BoundArguments(args=(), kwargs=dict(data), as_json=data, sent=data)

    def call_arguments(
        self, bound: BoundArguments, context: RunContext[object] | None
    ) -> tuple[tuple[object, ...], dict[str, object]]:
        """The body's arguments: the run's context (``None`` outside a run) first,
        then the validated arguments as keywords."""
        return (context,), bound.kwargs


def _unresolved_ref(schema: JsonObject) -> str | None:
    """The first ``$ref`` of ``schema`` that points nowhere (within it, or outside it:
    no other document is fetched) and why, or ``None``. A schema with an ``$id`` below
    its root, which moves the base of the refs under it, is left to the calls."""
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    refs: list[str] = []
    if _walk(schema, refs, root=True):
        return None
    root = Resource.from_contents(schema, default_specification=DRAFT202012)
    resolver = Registry().resolver_with_root(root)
    for ref in refs:
        try:
            resolver.lookup(ref)
        except Unresolvable as exc:
            return f"{ref!r} cannot be resolved ({type(exc).__name__})"
    return None


def _walk(node: object, refs: list[str], *, root: bool = False) -> bool:
    """Collect the ``$ref`` strings under ``node``; whether an ``$id`` is below the root."""
    children: Iterable[object] = ()
    moved = False
    if isinstance(node, list):
        children = node
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            refs.append(ref)
        moved = not root and isinstance(node.get("$id"), str)
        children = node.values()
    for child in children:  # every child: each one's refs are wanted
        moved = _walk(child, refs) or moved
    return moved


def tool_name_for(server: MCPServer, listed_name: str) -> str:
    """The name the model calls a server's tool by: prefixed, and usable by model APIs."""
    return (server.prefix + _UNUSABLE.sub("_", listed_name))[:64]


def mcp_tool(
    server: MCPServer,
    listed: ListedTool,
    send: MCPCall,
    attributes: Mapping[str, AttributeValue],
) -> Tool[..., object]:
    """The regiment tool for one listed MCP tool.

    Args:
        server: the server it comes from (prefix and policy options).
        listed: the tool as ``tools/list`` described it.
        send: sends the call to the server's connection.
        attributes: ``mcp.*`` and ``network.*`` attributes for the ``execute_tool`` span.

    Raises:
        ToolError: the tool's input schema is not valid JSON Schema.
    """
    name = tool_name_for(server, listed.name)
    schema = cast(JsonObject, listed.input_schema)
    validator = JsonSchemaArguments(schema, name)
    server_name = listed.name

    async def call(context: RunContext[object] | None, /, **arguments: JsonValue) -> JsonValue:
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attributes(attributes)
            span.set_attribute("gen_ai.tool.name", name)
        key = None if context is None else context.idempotency_key
        result = await send(server_name, arguments, key)
        if result.is_error:
            if span.is_recording():
                span.set_attribute("error.type", "tool_error")
            raise MCPToolError(_text(result) or f"MCP tool {server_name!r} reported an error")
        return result_content(result)

    description = listed.description or listed.title or ""
    return Tool(call, name=name, description=description, validator=validator, **server.options)


async def list_all(session: ClientSession) -> list[ListedTool]:
    """Every page of ``tools/list``."""
    from mcp.types import PaginatedRequestParams

    listed: list[ListedTool] = []
    cursor: str | None = None
    while True:
        params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        listed.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return listed


def check_include(
    server: MCPServer, listed: list[ListedTool], left_out: Mapping[str, str], *, strict: bool
) -> None:
    """``include`` must name tools the server has: an error at start, a warning later.
    A tool the server has but that was ``left_out`` (name → why: it was warned about
    already) is not missing."""
    have = {t.name for t in listed} | set(left_out)
    missing = [n for n in server.include or () if n not in have]
    if not missing:
        return
    message = (
        f"MCP server {server.name!r} has no tool {missing[0]!r} (named in include=); "
        f"its tools are: {', '.join(sorted(have)) or '(none)'}"
    )
    if strict:
        raise ConfigError(message)
    logger.warning("%s", message)


def mcp_tools(
    server: MCPServer,
    listed: Iterable[ListedTool],
    send: MCPCall,
    attributes: Mapping[str, AttributeValue],
    left_out: dict[str, str] | None = None,
) -> tuple[Tool[..., object], ...]:
    """The tools a worker gets of those listed: ``include``/``exclude`` applied, and any
    whose schema cannot be used left out (with a warning, and noted in ``left_out``)."""
    tools: list[Tool[..., object]] = []
    for item in listed:
        if not server.keeps(item.name):
            continue
        try:
            tools.append(mcp_tool(server, item, send, attributes))
        except (ToolError, ConfigError) as exc:
            logger.warning("MCP server %r: tool %r left out: %s", server.name, item.name, exc)
            if left_out is not None:
                left_out[item.name] = str(exc)
    return tuple(tools)


def unlisted(server: MCPServer, name: str, outcome: CallToolResult | ToolError | None) -> None:
    """A call of a tool ``name`` the server no longer lists (its tool list changed since
    the caller looked the tool up) fails saying so: before it is sent (``outcome`` None),
    or when its answer, an error, came with the change (and what the server said).

    Raises:
        ToolError: ``outcome`` is None or an error.
    """
    said = ""
    if isinstance(outcome, ToolError):
        said = f"; it said: {clipped(str(outcome), _MAX_SHOWN)}"
    elif outcome is not None:
        if not outcome.is_error:
            return
        said = f"; it said: {clipped(_text(outcome), _MAX_SHOWN)}"
    raise ToolError(
        f"MCP server {server.name!r} no longer has tool {name!r} (its tool list changed"
        f"{said}); use the tools offered now"
    )


def result_content(result: CallToolResult) -> JsonValue:
    """What the model reads: structured content if any, else the text blocks joined,
    else every content block as JSON (images, resources, ...), binary data left out."""
    from mcp.types import TextContent

    if result.structured_content is not None:
        return cast(JsonValue, result.structured_content)
    if all(isinstance(block, TextContent) for block in result.content):
        return _text(result)
    return [
        _block(block.model_dump(mode="json", by_alias=True, exclude_none=True))
        for block in result.content
    ]


def _block(body: dict[str, object]) -> JsonValue:
    """A content block as the model reads it: a tool result reaches the model as text,
    so an image's, audio's or blob's base64 (a 300 kB image is ~100k tokens of noise)
    becomes a note of its size; the rest (type, MIME type, URI, text) stays."""
    kind = str(body.get("type"))
    if kind in ("image", "audio") and isinstance(body.get("data"), str):
        body["data"] = _left_out(cast(str, body["data"]), kind)
    resource = body.get("resource")
    if isinstance(resource, dict) and isinstance(resource.get("blob"), str):
        resource["blob"] = _left_out(resource["blob"], "blob")
    return cast(JsonValue, body)


def _left_out(base64: str, kind: str) -> str:
    size = len(base64) * 3 // 4 - base64[-2:].count("=")
    return f"({size:,} bytes of {kind} data, left out: the model reads tool results as text)"


def _text(result: CallToolResult) -> str:
    from mcp.types import TextContent

    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))

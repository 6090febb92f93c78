"""MCP servers as tool sources, at the tools level: an MCPHub, its connections, and
the live tool set, against real servers over stdio and streamable HTTP."""

from __future__ import annotations

import functools
import io
import logging
import sys
import uuid
from pathlib import Path
from typing import cast

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketListener

from regiment._json import UNPARSED_ARGUMENTS
from regiment.errors import ConfigError, ToolError
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Deny,
    MCPHub,
    MCPServer,
    MCPServerLost,
    RunContext,
    Tool,
    Toolset,
    WorkerTools,
)

from .conftest import SDK_HTTP_LEAKS, SERVER_COMMAND, alive, server_children, start_http, stop

pytestmark = [pytest.mark.anyio, *SDK_HTTP_LEAKS]


def stdio(**options: object) -> MCPServer:
    return MCPServer.stdio(SERVER_COMMAND, name="stdio-app", **options)  # type: ignore[arg-type]


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> MCPServer:
    if request.param == "stdio":
        return stdio(prefix="t_")
    url = request.getfixturevalue("http_url")
    return MCPServer.http(url, {"X-Test": "1"}, name="http-app", prefix="t_")


async def test_list_call_invalid_arguments_and_is_error(server: MCPServer) -> None:
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        assert {"t_add", "t_shout", "t_refuse", "t_hang", "t_crash"} <= set(tools.names)
        add = tools.get("t_add")
        assert add is not None
        assert add.definition.input_schema["required"] == [
            "a",
            "b",
        ]  # offered as the server gave it
        assert add.description == "Add two integers."

        ok = await tools.call("t_add", {"a": 2, "b": 40}, call_id="c1")
        assert (ok.is_error, ok.content, ok.attempts) == (False, {"result": 42}, 1)

        bad = await tools.call("t_add", {"a": "two"}, call_id="c2")
        assert bad.is_error
        assert bad.error_type == "invalid_arguments"
        assert bad.attempts == 0  # the body, which sends the call, never ran
        assert bad.content == (
            "invalid arguments for tool 't_add': b: Field required, send an integer; "
            'a: Input should be an integer (got "two")'
        )

        refused = await tools.call("t_refuse", {"reason": "no such order"}, call_id="c3")
        assert refused.is_error
        assert refused.error_type == "MCPToolError"
        assert "no such order" in str(refused.content)

        text = await tools.call("t_shout", {"text": "hi"}, call_id="c4")
        assert text.content == {"result": "HI"}


async def test_unreadable_arguments_never_reach_the_server() -> None:
    # pid's schema takes no properties and does not forbid others: the arguments
    # of a call whose JSON did not parse would have validated and been sent.
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [stdio()])).current()
        sent = {UNPARSED_ARGUMENTS: '{"verbose": tr'}
        result = await tools.call("pid", sent, call_id="c1")
    assert (result.is_error, result.error_type, result.attempts) == (True, "invalid_arguments", 0)
    assert "the arguments are not one JSON object" in str(result.content)


async def test_include_exclude_and_a_missing_include() -> None:
    picky = stdio(include=["add", "shout"])
    wrong = stdio(include=["add", "no_such_tool"])
    async with MCPHub.open() as hub:
        tools = await hub.worker_tools(Toolset("w"), [picky])
        assert tools.current().names == ("add", "shout")
        with pytest.raises(ConfigError, match=r"has no tool 'no_such_tool' \(named in include=\)"):
            await hub.worker_tools(Toolset("w"), [wrong])


async def test_a_server_crash_mid_call_fails_that_call_and_the_next_call_restarts_it() -> None:
    async with MCPHub.open() as hub:
        tools = await hub.worker_tools(Toolset("w"), [stdio()])
        (connection,) = tools.connections
        first = await tools.current().call("pid", {}, call_id="p1")
        assert isinstance(first.content, dict)
        crashed = await tools.current().call("crash", {}, call_id="x")
        assert crashed.is_error
        assert crashed.error_type == "MCPServerLost"
        assert "broke during the call" in str(crashed.content)
        second = await tools.current().call("pid", {}, call_id="p2")
        assert not second.is_error, second.content
        assert isinstance(second.content, dict)
        assert second.content["result"] != first.content["result"]
        assert connection.restarts == 1
        assert alive([int(str(first.content["result"]))]) == []


async def test_a_server_that_dies_while_idle_is_restarted_before_the_next_call() -> None:
    async with MCPHub.open() as hub:
        tools = await hub.worker_tools(Toolset("w"), [stdio()])
        (connection,) = tools.connections
        first = await tools.current().call("pid", {}, call_id="p1")
        version = connection.version
        bye = await tools.current().call("quit_soon", {}, call_id="q")
        assert bye.content == {"result": "bye"}
        with anyio.fail_after(30):
            await connection.wait_listed(version)  # the restarted server listed its tools
        assert connection.restarts == 1
        second = await tools.current().call("pid", {}, call_id="p2")
        assert not second.is_error, second.content
        assert second.content != first.content


async def test_approval_and_retries_apply_as_to_any_tool(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        if request.tool_name == "add":
            return Deny(reason="no sums today")
        return Approve()

    server = stdio(
        requires_approval=True, retries=1, retry_on=(MCPServerLost,), backoff=0, prefix=""
    )
    async with MCPHub.open() as hub:
        live = await hub.worker_tools(Toolset("w", approver=approver), [server])
        denied = await live.current().call("add", {"a": 1, "b": 2}, call_id="d")
        assert denied.error_type == "approval_denied"
        assert denied.attempts == 0
        marker = str(tmp_path / "crashed-once")
        lucky = await live.current().call("flaky", {"marker": marker}, call_id="f")
        assert (lucky.content, lucky.attempts) == ({"result": "second time lucky"}, 2)
        assert [r.tool_name for r in asked] == ["add", "flaky"]
        assert hub.connections[0].restarts == 1


async def test_restarts_are_bounded() -> None:
    async with MCPHub.open() as hub:
        tools = await hub.worker_tools(Toolset("w"), [stdio(max_restarts=0)])
        crashed = await tools.current().call("crash", {}, call_id="x")
        assert crashed.error_type == "MCPServerLost"
        assert "it is not started again (max_restarts=0, all used)" in str(crashed.content)
        after = await tools.current().call("add", {"a": 1, "b": 1}, call_id="y")
        assert after.is_error
        assert after.error_type == "MCPServerLost"
        assert "already restarted 0 times (max_restarts=0)" in str(after.content)


class _CountWarnings(logging.Handler):
    """Sets ``reached`` once ``count`` warnings (or worse) were logged."""

    def __init__(self, count: int) -> None:
        super().__init__(logging.WARNING)
        self.count = count
        self.messages: list[str] = []
        self.reached = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        if len(self.messages) >= self.count:
            self.reached.set()


async def test_an_http_server_that_is_away_for_a_while_is_reconnected_with_backoff() -> None:
    first, port = start_http()
    processes = [first]
    counter = _CountWarnings(3)
    logger = logging.getLogger("regiment.tools.mcp")
    logger.addHandler(counter)
    url = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer.http(url, name="away", max_restarts=1, start_timeout=60)
    try:
        async with MCPHub.open() as hub:
            tools = await hub.worker_tools(Toolset("w"), [server])
            (connection,) = tools.connections
            before = await tools.current().call("pid", {}, call_id="a")
            stop(first)
            async with anyio.create_task_group() as tg:
                # Fails (lost mid-call) or waits for the server to be back: either is fine.
                tg.start_soon(functools.partial(tools.current().call, "pid", {}, call_id="b"))
                with anyio.fail_after(30):
                    await counter.reached.wait()  # it stopped, then two attempts were refused
                second, _ = await anyio.to_thread.run_sync(start_http, port)
                processes.append(second)
            after = await tools.current().call("pid", {}, call_id="c")
            assert not after.is_error, after.content
            assert after.content != before.content
            assert connection.restarts == 1  # the refused attempts spent no restarts
    finally:
        logger.removeHandler(counter)
        for process in processes:
            stop(process)
    assert "reconnecting it" in counter.messages[0]
    assert "reconnecting failed" in counter.messages[1]


async def test_a_hanging_call_times_out_and_the_session_carries_on() -> None:
    async with (
        await anyio.create_tcp_listener(local_host="127.0.0.1") as listener,
        MCPHub.open() as hub,
    ):
        port = listener.extra(SocketAttribute.local_port)
        tools = (await hub.worker_tools(Toolset("w"), [stdio(timeout=0.5)])).current()
        hung = await tools.call("hang", {"port": port}, call_id="h")
        assert hung.is_error
        assert hung.error_type == "timeout"
        # The call did reach the server before it timed out.
        with anyio.fail_after(10):
            stream = await cast(SocketListener, listener.listeners[0]).accept()
        await stream.aclose()
        ok = await tools.call("add", {"a": 1, "b": 2}, call_id="a")
        assert ok.content == {"result": 3}
        assert hub.connections[0].restarts == 0


async def test_a_hundred_concurrent_calls_through_one_session(server: MCPServer) -> None:
    results: dict[int, object] = {}
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()

        async def one(i: int) -> None:
            result = await tools.call("t_add", {"a": i, "b": 1000}, call_id=f"c{i}")
            results[i] = result.content

        async with anyio.create_task_group() as tg:
            for i in range(100):
                tg.start_soon(one, i)
        assert results == {i: {"result": i + 1000} for i in range(100)}
        assert len(hub.connections) == 1
        assert hub.connections[0].restarts == 0
        if server.transport.describe().startswith(sys.executable):
            assert len(server_children()) == 1


async def test_a_call_that_changed_the_tool_list_returns_with_the_new_list(
    server: MCPServer,
) -> None:
    name = f"grown_{uuid.uuid4().hex[:8]}"  # the HTTP server lives for the module
    async with MCPHub.open() as hub:
        live = await hub.worker_tools(Toolset("w"), [server])
        assert f"t_{name}" not in live.current()
        grew = await live.current().call("t_grow", {"name": name}, call_id="g")
        assert grew.content == {"result": "ok"}
        assert f"t_{name}" in live.current()  # no wait: the call returned after the relist
        used = await live.current().call(f"t_{name}", {}, call_id="u")
        assert used.content == {"result": "grown"}


async def test_a_call_in_a_run_sends_its_idempotency_key_in_meta(server: MCPServer) -> None:
    context: RunContext[object] = RunContext(
        run_id="r1",
        step_id="s1",
        worker="w",
        plan_version=1,
        call_id="k",
        idempotency_key="r1/v1/s1/0",
        deps=None,
    )
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        keyed = await tools.call("t_meta_key", {}, call_id="k", context=context)
        assert keyed.content == {"result": "r1/v1/s1/0"}
        outside = await tools.call("t_meta_key", {}, call_id="o")  # no run: no key
        assert outside.content == {"result": ""}


async def test_list_changed_refreshes_the_tool_list() -> None:
    async with MCPHub.open() as hub:
        live = await hub.worker_tools(Toolset("w"), [stdio()])
        (connection,) = live.connections
        assert "taught" not in live.current()
        version = connection.version
        result = await live.current().call("learn", {}, call_id="l")
        assert result.content == {"result": "ok"}
        with anyio.fail_after(10):
            await connection.wait_listed(version)
        assert "taught" in live.current()
        taught = await live.current().call("taught", {}, call_id="t")
        assert taught.content == {"result": "learned"}


def add(a: int, b: int) -> int:
    """A local tool named like a server's."""
    return a + b


async def test_name_clashes_without_a_prefix_name_both_sources(http_url: str) -> None:
    local = Toolset("w", [Tool(add)])
    unprefixed = stdio()  # started once: the hub keeps it (by identity) for the next clash
    async with MCPHub.open() as hub:
        with pytest.raises(ConfigError) as plain:
            await hub.worker_tools(local, [unprefixed])
        assert "'add' comes from both the tools of 'w' and MCP server 'stdio-app'" in str(
            plain.value
        )
        assert "prefix=" in str(plain.value)
        other = MCPServer.http(http_url, name="http-app")
        with pytest.raises(ConfigError) as servers:
            await hub.worker_tools(Toolset("w"), [unprefixed, other])
        assert len(server_children()) == 1  # the first clash's server, not a second one
        assert "both MCP server 'stdio-app' and MCP server 'http-app'" in str(servers.value)
        fixed = MCPServer.http(http_url, name="http-app", prefix="h_")
        live = await hub.worker_tools(local, [stdio(exclude=["add"]), fixed])
        assert {"add", "shout", "h_add", "h_shout"} <= set(live.current().names)


async def test_a_server_that_cannot_start_is_a_clear_error(refused_port: int) -> None:
    missing = MCPServer.stdio(["/nonexistent/mcp-server", "--x"], name="ghost")
    unnamed = MCPServer.stdio(["/nonexistent/mcp-server", "--x"])
    nobody = MCPServer.http(f"http://127.0.0.1:{refused_port}/mcp", name="remote")
    async with MCPHub.open() as hub:
        with pytest.raises(
            ToolError,
            match=r"MCP server 'ghost' \(/nonexistent/mcp-server --x\) could not be started: FileNotFoundError",
        ):
            await hub.worker_tools(Toolset("w"), [missing])
        with pytest.raises(
            ToolError,
            match=r"^MCP server '/nonexistent/mcp-server --x' could not be started: FileNotFoundError",
        ):
            await hub.worker_tools(Toolset("w"), [unnamed])
        with pytest.raises(
            ToolError,
            match=rf"^MCP server 'remote' \(http://127.0.0.1:{refused_port}/mcp\) could not be connected to: ",
        ):
            await hub.worker_tools(Toolset("w"), [nobody])


async def test_two_alike_unnamed_servers_are_told_to_take_different_names() -> None:
    async with MCPHub.open() as hub:
        with pytest.raises(ConfigError) as alike:
            await hub.worker_tools(
                Toolset("w"), [MCPServer.stdio(SERVER_COMMAND), MCPServer.stdio(SERVER_COMMAND)]
            )
    message = str(alike.value)
    assert "comes from two MCP servers both named" in message
    assert "name='server_app_py_1', prefix='server_app_py_1_'" in message
    assert "name='server_app_py_2', prefix='server_app_py_2_'" in message


def test_without_the_extra_the_error_gives_the_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(ConfigError, match=r"pip install 'regiment\[mcp\]'"):
        MCPServer.stdio(["python", "-m", "x"])


def test_bad_options_fail_at_config_time() -> None:
    with pytest.raises(ConfigError, match="both includes and excludes"):
        MCPServer.stdio(["x"], include=["a"], exclude=["a"])
    with pytest.raises(ConfigError, match="timeout must be a finite number of seconds > 0"):
        MCPServer.stdio(["x"], timeout=0)
    with pytest.raises(ConfigError, match="start_timeout must be a finite number of seconds"):
        MCPServer.stdio(["x"], start_timeout=float("nan"))
    with pytest.raises(ConfigError, match="http:// or https://"):
        MCPServer.http("ftp://example")
    with pytest.raises(ConfigError, match="list of tool names"):
        MCPServer.stdio(["x"], include="add")


def test_worker_tools_without_servers_is_the_plain_set() -> None:
    base = Toolset("w", [Tool(add)])
    assert WorkerTools(base).current() is base


@pytest.mark.parametrize("body", ["raise SystemExit(3)", "print('not MCP')"])
async def test_a_server_that_exits_or_speaks_no_mcp_at_start_says_so(body: str) -> None:
    # It said only "could not be started: MCPError: Connection closed".
    server = MCPServer.stdio([sys.executable, "-c", body], name="broken")
    async with MCPHub.open() as hub:
        with pytest.raises(ToolError) as info:
            await hub.worker_tools(Toolset("w"), [server])
    assert str(info.value).startswith(f"MCP server 'broken' ({sys.executable} -c ")
    assert str(info.value).endswith(
        "could not be started: it closed the connection before it was up (a stdio server "
        "that exited, or that wrote something other than MCP messages to stdout: see what "
        "it wrote to stderr)"
    )


async def test_a_stdio_server_starts_when_sys_stderr_is_not_a_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A notebook's (or a capture's) sys.stderr has no file descriptor, and the server could
    # not start: "could not be started: UnsupportedOperation: fileno".
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [MCPServer.stdio(SERVER_COMMAND)])).current()
        added = await tools.call("add", {"a": 2, "b": 3}, call_id="c1")
    assert added.content == {"result": 5}

"""``MCPServer``: where an MCP server is and which of its tools a worker gets.

Only configuration lives here; ``_mcp_connection`` talks to the server and
``_mcp_hub`` owns the connections of a running team. The ``mcp`` SDK is an
optional extra, imported where a connection is opened.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Unpack, final
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from regiment.errors import ConfigError
from regiment.tools._mcp_guard import find_command
from regiment.tools._policy import ToolOptions, ToolPolicy

__all__ = ("HttpTransport", "MCPServer", "StdioTransport", "require_mcp")

_INSTALL = "MCP servers need the mcp extra: pip install 'regiment[mcp]'"


def require_mcp() -> None:
    """Raise ``ConfigError`` with the install line unless the ``mcp`` extra is installed.

    It only looks the packages up: importing the SDK takes about half a second, which
    on a running event loop would stall every task on it (a connection imports it in
    a worker thread).
    """
    for name in ("jsonschema", "mcp"):
        if importlib.util.find_spec(name) is None:
            raise ConfigError(f"{_INSTALL} (No module named {name!r})")


@final
@dataclass(frozen=True, kw_only=True)
class StdioTransport:
    """A server run as a subprocess, speaking MCP over its stdin and stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    def describe(self) -> str:
        """The command line, for messages, logs and spans (and the server's name by
        default), its secret-looking arguments ``[REDACTED]`` (see ``shown_args``)."""
        line = shlex.join((self.command, *shown_args(self.args)))
        return line.replace(f"'{_REDACTED}'", _REDACTED)  # not quoted: it runs nowhere

    def __repr__(self) -> str:  # env may hold secrets: its names only
        env = None if self.env is None else sorted(self.env)
        return f"StdioTransport({self.describe()!r}, env={env!r}, cwd={self.cwd!r})"


# An option named like a secret, whose value is the next argument or follows ``=``:
# --token X, --api-key=X, --password X, -p? no (too short to tell), --client-secret X.
_SECRET_OPTION = re.compile(
    r"(?i)^--?(?:[a-z0-9]+[_.-])*(?:token|secret|password|passwd|pass|pwd|api[_-]?key|key"
    r"|access[_-]?key|private[_-]?key|auth|credentials?)(?P<rest>=.*)?$",
    re.DOTALL,
)
_REDACTED = "[REDACTED]"


def shown_args(args: Iterable[str]) -> list[str]:
    """A stdio server's arguments as they may be shown: the value of an option named like
    a secret (``--token X``, ``--api-key=X``) and what ``regiment.telemetry.redact`` finds
    (a URL's password, ``Authorization: Bearer ...``, ``DB_PASSWORD=...``, ``sk-...``
    keys) become ``[REDACTED]``."""
    from regiment.telemetry import redact  # loaded by any team that runs

    shown: list[str] = []
    value_next = False
    for arg in args:
        if value_next:
            shown.append(_REDACTED)
            value_next = False
            continue
        option = _SECRET_OPTION.match(arg)
        if option is None:
            shown.append(redact(arg))
        elif option["rest"] is None:
            shown.append(arg)
            value_next = True
        else:
            shown.append(arg[: option.start("rest") + 1] + _REDACTED)
    return shown


@final
@dataclass(frozen=True, kw_only=True)
class HttpTransport:
    """A server reached over streamable HTTP."""

    url: str
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def describe(self) -> str:
        """The URL, for messages, logs and spans (and the server's name by default): with
        no user or password, and each query value as ``...``, since a key may be in either
        (``https://KEY@host/mcp``, ``https://host/mcp?api_key=KEY``)."""
        parts = urlsplit(self.url)
        host = parts.netloc.rpartition("@")[2]
        query = "&".join(f"{key}=..." for key, _ in parse_qsl(parts.query, keep_blank_values=True))
        return urlunsplit((parts.scheme, host, parts.path, query, ""))

    def __repr__(self) -> str:  # the headers and the URL's key may be secrets
        return f"HttpTransport({self.describe()!r}, headers={sorted(self.headers)!r})"


@final
@dataclass(frozen=True, kw_only=True, eq=False)
class MCPServer:
    """An MCP server whose tools a worker may call, beside its plain tools.

    Make one with :meth:`stdio` or :meth:`http` and put it in a worker's
    ``tools``. A running team starts each server object once (when the team
    starts; see :class:`~regiment.tools.MCPHub`), so two workers given the same
    object share one connection. Equality is identity for that reason.

    Attributes:
        name: how messages and spans name the server.
        transport: where it runs.
        include: only these tools (server names, before ``prefix``); ``None`` for all.
        exclude: never these tools.
        prefix: put before every tool name, so two servers' tools cannot clash.
        options: the ``ToolPolicy`` options every tool of the server gets
            (``timeout``, ``retries``, ``requires_approval``, ...).
        max_restarts: how many times a server whose connection broke is brought back
            (started again; an HTTP server: connected to again) while the team runs;
            after that its calls fail at once. Attempts that fail to bring it back
            use none: they are retried 0.5 s, 1 s, 2 s, ... (at most 8 s) apart.
        start_timeout: seconds to start (or connect to) the server and list its tools;
            also how long it may take to come back after a break, and to list its
            tools again after ``notifications/tools/list_changed``.
    """

    name: str
    transport: StdioTransport | HttpTransport
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    prefix: str = ""
    options: ToolOptions = field(default_factory=lambda: ToolOptions())
    max_restarts: int = 3
    start_timeout: float = 30.0

    def __post_init__(self) -> None:
        ToolPolicy(**self.options)  # the same range checks a Tool makes, at config time
        if not self.name.strip():  # every message, log line and span names it: "MCP server ''"
            raise ConfigError(
                f"MCP server name is blank ({self.name!r}); give it a name, or leave name "
                "out to name it by its command line or URL"
            )
        if self.max_restarts < 0:
            raise ConfigError(f"MCP server {self.name!r}: max_restarts must be 0 or more")
        if not (math.isfinite(self.start_timeout) and self.start_timeout > 0):
            raise ConfigError(
                f"MCP server {self.name!r}: start_timeout must be a finite number of "
                f"seconds > 0, not {self.start_timeout!r}"
            )
        overlap = set(self.include or ()) & set(self.exclude)
        if overlap:
            raise ConfigError(
                f"MCP server {self.name!r} both includes and excludes {sorted(overlap)}; "
                "name each tool in one of the two lists"
            )

    @classmethod
    def stdio(
        cls,
        command: str | Sequence[str],
        args: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        *,
        name: str | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        prefix: str = "",
        max_restarts: int = 3,
        start_timeout: float = 30.0,
        **options: Unpack[ToolOptions],
    ) -> MCPServer:
        """A server started as a subprocess (``command`` may hold its arguments too).

        ``env`` is added to a minimal inherited environment (``PATH``, ``HOME``, ...),
        as the SDK does. On shutdown the server's stdin is closed; a server still
        running 2 s later gets SIGTERM (its whole process group), then SIGKILL. On
        Linux a watchdog does the same if this process is killed outright.

        Raises:
            ConfigError: the command is empty, an option is out of range, or the
                ``mcp`` extra is not installed.
        """
        require_mcp()
        parts = (command,) if isinstance(command, str) else tuple(command)
        if not parts or not parts[0]:
            raise ConfigError("MCPServer.stdio needs a command, e.g. ['python', '-m', 'my_server']")
        transport = StdioTransport(
            command=parts[0],
            args=(*parts[1:], *args),
            env=None if env is None else MappingProxyType(dict(env)),
            cwd=cwd,
        )
        return cls._make(
            transport, name, include, exclude, prefix, max_restarts, start_timeout, options
        )

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        prefix: str = "",
        max_restarts: int = 3,
        start_timeout: float = 30.0,
        **options: Unpack[ToolOptions],
    ) -> MCPServer:
        """A server reached over streamable HTTP at ``url`` (``http://host:port/mcp``).

        Raises:
            ConfigError: the URL is not http(s), an option is out of range, or the
                ``mcp`` extra is not installed.
        """
        require_mcp()
        _check_url(url)
        _check_headers(headers or {})
        transport = HttpTransport(url=url, headers=MappingProxyType(dict(headers or {})))
        if not url.startswith(("http://", "https://")):  # shown without a key it may hold
            raise ConfigError(
                f"MCPServer.http needs an http:// or https:// URL, not {transport.describe()!r}"
            )
        return cls._make(
            transport, name, include, exclude, prefix, max_restarts, start_timeout, options
        )

    @classmethod
    def _make(
        cls,
        transport: StdioTransport | HttpTransport,
        name: str | None,
        include: Iterable[str] | None,
        exclude: Iterable[str],
        prefix: str,
        max_restarts: int,
        start_timeout: float,
        options: ToolOptions,
    ) -> MCPServer:
        return cls(
            name=name if name is not None else transport.describe(),
            transport=transport,
            include=None if include is None else _names(include, "include"),
            exclude=_names(exclude, "exclude"),
            prefix=prefix,
            options=options,
            max_restarts=max_restarts,
            start_timeout=start_timeout,
        )

    def check_command(self) -> None:
        """What can be known of a stdio server without starting it: its ``cwd`` is a
        directory, and its command is found (on ``PATH``, the one its ``env`` sets or
        this process's; or, with a path separator in it, relative to ``cwd``, else to
        the current directory) and may be run. Nothing is checked of an HTTP server.

        Raises:
            ConfigError: says which, and what to do.
        """
        transport = self.transport
        if not isinstance(transport, StdioTransport):
            return
        cwd, command, env = transport.cwd, transport.command, transport.env or {}
        if cwd is not None and not os.path.isdir(cwd):
            raise ConfigError(f"cwd {cwd!r} is not a directory; fix the path or create it")
        path = env.get("PATH", os.environ.get("PATH", os.defpath))
        try:
            find_command(command, {"PATH": path}, cwd)
        except PermissionError:
            raise ConfigError(
                f"command {command!r} is not executable; make it so (chmod +x) or run "
                f"it through its interpreter (['python', {command!r}, ...])"
            ) from None
        except FileNotFoundError:
            if os.sep in command:
                where = os.path.abspath(os.path.join(cwd or os.getcwd(), command))
                raise ConfigError(
                    f"command {command!r} does not exist (looked for {where}); a relative "
                    "path is read from the server's cwd, else the current directory"
                ) from None
            # Not the PATH itself: the env's may be a value read from the environment.
            whose = "the PATH its env sets" if "PATH" in env else "PATH"
            raise ConfigError(
                f"command {command!r} is not found on {whose}; install it, or give its full path"
            ) from None

    def keeps(self, tool_name: str) -> bool:
        """Whether the server's tool ``tool_name`` passes ``include`` and ``exclude``."""
        if self.include is not None and tool_name not in self.include:
            return False
        return tool_name not in self.exclude

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r})"


def _names(names: Iterable[str], what: str) -> tuple[str, ...]:
    if isinstance(names, str):
        raise ConfigError(f"MCPServer {what}= takes a list of tool names, not the string {names!r}")
    return tuple(names)


def _check_url(url: str) -> None:
    """``url`` parses, with a host and a port in range: else a ``ConfigError`` (the URL
    itself not shown, as it may hold a key). A URL that did not parse failed the server's
    start with an ``ExceptionGroup`` of the ``ValueError``, raised again by the message
    that was to name it."""
    if not isinstance(url, str):
        raise ConfigError(
            f"MCPServer.http needs a URL as a str, such as http://127.0.0.1:8000/mcp; "
            f"got {type(url).__name__}"
        )
    try:
        parts = urlsplit(url)
        _ = parts.port  # reading it checks it: a ValueError if it is no number or too big
    except ValueError as exc:
        raise ConfigError(
            f"MCPServer.http needs a valid URL, such as http://127.0.0.1:8000/mcp; the one "
            f"given does not parse ({exc})"
        ) from None
    if parts.scheme in ("http", "https") and not parts.hostname:
        raise ConfigError(
            "MCPServer.http needs a URL with a host, such as http://127.0.0.1:8000/mcp"
        )


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP header name (RFC 9110 token)


def _check_headers(headers: Mapping[str, str]) -> None:
    """Each header can be sent: else a ``ConfigError`` naming it, never showing its value
    (a credential, often). httpx's own error quoted the value: a token read from a file
    with its newline was printed, and logged, whole."""
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise ConfigError(
                f"MCPServer.http: {name!r} is not a valid HTTP header name (letters, digits "
                "and !#$%&'*+.^_`|~- only)"
            )
        if not isinstance(value, str):
            raise ConfigError(
                f"MCPServer.http: header {name!r} must be a string, not {type(value).__name__}"
            )
        if any(c in value for c in "\r\n\0"):
            raise ConfigError(
                f"MCPServer.http: header {name!r} has a line break or NUL in its value (a "
                "token read from a file with its newline? strip it)"
            )
        if not value.isascii():
            raise ConfigError(
                f"MCPServer.http: header {name!r} has a character that is not ASCII in its "
                "value; HTTP headers carry ASCII (encode it as the server expects)"
            )

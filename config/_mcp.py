"""``[[workers.mcp]]`` in a team file: an MCP server a worker gets tools from.

::

    [[workers.mcp]]
    command = ["python", "-m", "my_server"]   # or: url = "http://127.0.0.1:8000/mcp"
    include = ["read_file"]
    prefix = "fs_"
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import msgspec

from regiment.config._env import expand, expand_url
from regiment.config._text import key_text
from regiment.errors import ConfigError
from regiment.hierarchy import InvalidValue
from regiment.tools import MCPServer, ToolOptions

if TYPE_CHECKING:
    from regiment.config._schema import TeamConfig

__all__ = ("MCPConfig", "check_commands", "mcp_server", "read_environment")


class MCPConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One ``[[workers.mcp]]`` entry: see ``MCPServer.stdio`` and ``MCPServer.http``.

    Exactly one of ``command`` (a subprocess over stdio; ``env`` and ``cwd`` go
    with it) and ``url`` (streamable HTTP; ``headers`` go with it). In a file, the
    values of ``env`` and ``headers`` (and ``url``'s user, password and query values)
    may be ``${NAME}`` references to environment variables (see ``read_environment``).
    """

    command: tuple[str, ...] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    name: str | None = None
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    prefix: str = ""
    timeout: float | None = None
    retries: int = 0
    requires_approval: bool = False
    max_result_chars: int | None = None
    max_restarts: int = 3
    start_timeout: float = 30.0

    def __post_init__(self) -> None:
        # Checked here, so that msgspec puts the key path in front (`mcp[0].timeout: ...`).
        for key, value, none in (
            ("timeout", self.timeout, "or leave the key out for no limit"),
            ("start_timeout", self.start_timeout, "or leave the key out for 30"),
        ):
            if value is not None and not (math.isfinite(value) and value > 0):
                problem = f"must be a finite number of seconds > 0, {none}; got {value!r}"
                raise InvalidValue("[[workers.mcp]]", key, problem)
        for key, count in (("retries", self.retries), ("max_restarts", self.max_restarts)):
            if count < 0:
                problem = f"must be a whole number >= 0 (0 for none); got {count!r}"
                raise InvalidValue("[[workers.mcp]]", key, problem)
        if self.max_result_chars is not None and self.max_result_chars < 1:
            problem = (
                "must be a whole number of characters >= 1, or leave the key out for the "
                f"worker's max_tool_result_chars; got {self.max_result_chars!r}"
            )
            raise InvalidValue("[[workers.mcp]]", "max_result_chars", problem)

    def __repr__(self) -> str:
        # What env and headers hold may be secrets read from the environment: names only;
        # the URL and the command's arguments may hold one too.
        fields = {name: getattr(self, name) for name in self.__struct_fields__}
        for name in ("env", "headers"):
            if fields[name] is not None:
                fields[name] = dict.fromkeys(fields[name], "...")
        if self.url is not None:
            fields["url"] = "..."
        if self.command is not None and len(self.command) > 1:  # --token X may be there
            fields["command"] = (self.command[0], "...")
        return f"MCPConfig({', '.join(f'{k}={v!r}' for k, v in fields.items())})"


def read_environment(config: MCPConfig, where: str) -> MCPConfig:
    """``config`` with the ``${NAME}`` references in ``env`` and ``headers`` values and in
    ``url`` read from the environment (``$$`` is a ``$``); ``where`` (file and key path)
    starts every error.

    Raises:
        ConfigError: a variable is not set, or a ``$`` is not a reference (see ``expand``).
    """
    if config.env is None and config.headers is None and config.url is None:
        return config
    changed: dict[str, object] = {}
    for field in ("env", "headers"):
        table: dict[str, str] | None = getattr(config, field)
        if table is not None:
            changed[field] = {
                key: expand(value, f"{where}.{field}.{key_text(key)}")
                for key, value in table.items()
            }
    if config.url is not None:
        changed["url"] = expand_url(config.url, f"{where}.url")
    return msgspec.structs.replace(config, **changed)


def mcp_server(config: MCPConfig, where: str) -> MCPServer:
    """The server an entry describes; ``where`` (file and key path) starts every error.

    Raises:
        ConfigError: neither or both of ``command`` and ``url``, options that belong
            to the other transport, a bad option, or the ``mcp`` extra is missing.
    """
    if (config.command is None) == (config.url is None):
        raise ConfigError(
            f"{where}: give either command = [...] (a server started over stdio) or "
            "url = 'http://...' (streamable HTTP), not both or neither"
        )
    try:
        if config.command is not None:
            if config.headers is not None:
                raise ConfigError("headers go with url, not with command")
            return MCPServer.stdio(
                config.command,
                env=config.env,
                cwd=config.cwd,
                name=config.name,
                include=config.include,
                exclude=config.exclude,
                prefix=config.prefix,
                max_restarts=config.max_restarts,
                start_timeout=config.start_timeout,
                **_options(config),
            )
        if config.env is not None or config.cwd is not None:
            raise ConfigError("env and cwd go with command, not with url")
        assert config.url is not None
        return MCPServer.http(
            config.url,
            config.headers,
            name=config.name,
            include=config.include,
            exclude=config.exclude,
            prefix=config.prefix,
            max_restarts=config.max_restarts,
            start_timeout=config.start_timeout,
            **_options(config),
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def check_commands(config: TeamConfig, source: str) -> None:
    """``check_config``'s look at the stdio servers of the file's in-process workers: each
    command is found and may be run, each ``cwd`` is a directory (``MCPServer.check_command``),
    as the team's start would need. A worker placed on Ray is left out: its servers start
    in its replicas, maybe on other machines.

    Raises:
        ConfigError: naming the file and the entry (``workers[0].mcp[1]``).
    """
    for index, worker in enumerate(config.workers):
        if worker.placement is not None:
            continue
        for number, entry in enumerate(worker.mcp):
            where = f"{source}: workers[{index}].mcp[{number}]"
            server = mcp_server(entry, where)
            try:
                server.check_command()
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from exc


def _options(config: MCPConfig) -> ToolOptions:
    options = ToolOptions(
        timeout=config.timeout, retries=config.retries, requires_approval=config.requires_approval
    )
    if config.max_result_chars is not None:  # else the worker's, or the tool set's, limit
        options["max_result_chars"] = config.max_result_chars
    return options

"""``regiment serve``: the app under uvicorn, with a log handler."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TextIO

import anyio

from regiment.errors import ConfigError
from regiment.hierarchy import Team

from ._app import create_app

__all__ = ("check_bind", "serve_command")

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def check_bind(host: str, token: str | None) -> None:
    """Refuse a host other than loopback without a token."""
    if token is None and host not in LOCAL_HOSTS:
        raise ConfigError(
            f"refusing to serve on {host} without a token: anyone who can reach it could "
            "run the team; pass --token (or set REGIMENT_TOKEN), or bind --host 127.0.0.1"
        )


async def serve_command(
    team: Team,
    *,
    host: str,
    port: int,
    token: str | None,
    journal: str | None,
    environ: Mapping[str, str],
    stderr: TextIO,
    stop: anyio.Event | None = None,
) -> int:
    """Serve ``team`` until interrupted (or ``stop`` is set); returns the exit code.

    Raises:
        ConfigError: a public host without a token, or a journal was given.
    """
    import uvicorn  # the serve extra, checked on importing regiment.serve

    token = token or environ.get("REGIMENT_TOKEN") or None
    check_bind(host, token)
    app = create_app(team, journal=journal, token=token)
    _log_to(stderr)
    config = uvicorn.Config(app, host=host, port=port, log_config=None, lifespan="on")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        if stop is not None:

            async def stop_when_set() -> None:
                await stop.wait()
                server.should_exit = True

            tg.start_soon(stop_when_set)
        await server.serve()
        tg.cancel_scope.cancel()
    return 0


def _log_to(stderr: TextIO) -> None:
    """One handler on the ``regiment`` logger (and uvicorn's), at INFO."""
    handler = logging.StreamHandler(stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("regiment", "uvicorn"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, logging.StreamHandler) for h in logger.handlers):
            logger.addHandler(handler)
        logger.setLevel(logging.INFO)

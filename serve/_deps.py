"""The ``serve`` extra: checked before anything imports it."""

from __future__ import annotations

import importlib.util

from regiment.errors import ConfigError

__all__ = ("require_serve",)

INSTALL = "pip install 'regiment[serve]'"


def require_serve() -> None:
    """Raise ``ConfigError`` with the install line if the ``serve`` extra is missing."""
    missing = [
        name
        for name in ("starlette", "sse_starlette", "uvicorn")
        if importlib.util.find_spec(name) is None
    ]
    if missing:
        raise ConfigError(
            f"the service needs {', '.join(missing)}, which are not installed: {INSTALL}"
        )

"""The error for a provider's model that lacks what only the environment can give it."""

from __future__ import annotations

from regiment.errors import ConfigError

__all__ = ("NoCredentials",)


class NoCredentials(ConfigError):
    """A provider's model cannot be made: ``env`` (its API key, or its server's URL) is
    not set, nor given in code. The message advises code (``api_key=``, ``base_url=``);
    a team file's reader, which has no such argument, words its own advice from ``env``."""

    def __init__(self, message: str, *, env: str) -> None:
        super().__init__(message)
        self.env = env

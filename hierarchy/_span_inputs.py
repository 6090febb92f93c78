"""What a model call's ``chat`` span is given besides the call itself: the applied
settings (``gen_ai.request.*``) and the API's host and port, worked out without
rebuilding settings or re-parsing an address on every traced call (#22)."""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

from opentelemetry.util.types import AttributeValue

from regiment.models import Model, ModelRequest, ModelSettings
from regiment.telemetry import semconv as sc

__all__ = ("server", "tuning")


def tuning(model: ModelSettings | None, request: ModelRequest) -> dict[str, AttributeValue]:
    """The settings a call is made with, as its span's ``gen_ai.request.*`` attributes:
    ``effective_settings``'s layers (the request's own fields, the model's settings, the
    role's), each over the one before, read field by field: a traced call builds and
    checks no settings object for its span (#22)."""
    max_tokens: int | None = request.max_tokens
    temperature, top_p, stops = request.temperature, None, request.stop_sequences or None
    for layer in (model, request.settings):
        if layer is None:
            continue
        if layer.max_tokens is not None:
            max_tokens = layer.max_tokens
        if layer.temperature is not None:
            temperature = layer.temperature
        if layer.top_p is not None:
            top_p = layer.top_p
        if layer.stop_sequences is not None:
            stops = layer.stop_sequences
    attributes: dict[str, AttributeValue] = {}
    if max_tokens is not None:
        attributes[sc.GEN_AI_REQUEST_MAX_TOKENS] = max_tokens
    if temperature is not None:
        attributes[sc.GEN_AI_REQUEST_TEMPERATURE] = temperature
    if top_p is not None:
        attributes[sc.GEN_AI_REQUEST_TOP_P] = top_p
    if stops:
        attributes[sc.GEN_AI_REQUEST_STOP_SEQUENCES] = list(stops)
    return attributes


def server(model: Model) -> tuple[str, int | None] | None:
    """The host and port of a model's API, for models that say (``base_url``)."""
    base_url = getattr(model, "base_url", None)
    return None if base_url is None else _server_of(str(base_url))


@functools.lru_cache(maxsize=64)
def _server_of(base_url: str) -> tuple[str, int | None] | None:
    """``base_url``'s host and port, parsed once per address, not on every traced call (#22)."""
    parts = urlsplit(base_url)
    if not (host := parts.hostname):
        return None
    default = {"https": 443, "http": 80}.get(parts.scheme)
    return host, parts.port or default

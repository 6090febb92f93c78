"""Model specs: the strings team files and ``--model`` name a model with."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, TypeAlias

from regiment.errors import ConfigError
from regiment.models._protocol import Model
from regiment.models._scripted import ScriptedModel, ScriptFunction
from regiment.models._settings import ModelSettings

__all__ = ("Provider", "model_from_spec", "parse_model_spec")

Provider: TypeAlias = Literal["anthropic", "openai", "openai-compatible", "scripted"]

_PREFIXES: tuple[Provider, ...] = ("anthropic", "openai", "openai-compatible")
_FORMS = (
    "'anthropic:<model id>' (e.g. 'anthropic:claude-sonnet-4-5'), 'openai:<model id>' "
    "(e.g. 'openai:gpt-4.1'), 'openai-compatible:<model id>' (a Chat Completions server "
    "at a base URL) or 'scripted'"
)


def parse_model_spec(spec: str, *, where: str = "model") -> tuple[Provider, str]:
    """Split a model spec into ``(provider, model_id)``; ``("scripted", "")`` for ``"scripted"``.

    Args:
        spec: ``"anthropic:<id>"``, ``"openai:<id>"``, ``"openai-compatible:<id>"``
            or ``"scripted"``.
        where: where the spec came from, for the error message.

    Raises:
        regiment.errors.ConfigError: the spec is none of those forms.
    """
    if spec == "scripted":
        return ("scripted", "")
    prefix, colon, model_id = spec.partition(":")
    for provider in _PREFIXES:
        if colon and prefix == provider and model_id.strip():
            return (provider, model_id.strip())
    raise ConfigError(f"{where}: expected {_FORMS}, got {spec!r}")


def model_from_spec(
    spec: str,
    *,
    where: str = "model",
    base_url: str | None = None,
    settings: ModelSettings | None = None,
    script: ScriptFunction | None = None,
    environ: Mapping[str, str] | None = None,
) -> Model:
    """The model a spec names, ready to call.

    Args:
        spec: as for ``parse_model_spec``.
        where: where the spec came from, for error messages.
        base_url: the server's address; needed for ``openai-compatible`` (else
            the ``OPENAI_BASE_URL`` environment variable), optional otherwise.
        settings: settings for every call of the model.
        script: the function a ``"scripted"`` spec answers with.
        environ: the environment to read ``OPENAI_BASE_URL`` from (default: ``os.environ``).

    Raises:
        regiment.errors.ConfigError: a bad spec, ``"scripted"`` without a
            script, ``openai-compatible`` without a base URL, missing
            credentials, or an SDK that is not installed.
    """
    provider, model_id = parse_model_spec(spec, where=where)
    match provider:
        case "scripted":
            if script is None:
                raise ConfigError(f"{where}: 'scripted' needs a script function (a brain)")
            return ScriptedModel(script)
        case "anthropic":
            from regiment.models._anthropic import AnthropicModel

            return AnthropicModel(model_id, base_url=base_url, settings=settings)
        case "openai" | "openai-compatible":
            from regiment.models._openai import OpenAIModel

            compatible = provider == "openai-compatible"
            url = base_url or (os.environ if environ is None else environ).get("OPENAI_BASE_URL")
            if compatible and not url:
                raise ConfigError(
                    f"{where}: {spec!r} needs the server's base URL (e.g. "
                    "'http://localhost:11434/v1' for Ollama); give base_url or set OPENAI_BASE_URL"
                )
            return OpenAIModel(model_id, base_url=url, settings=settings, compatible=compatible)

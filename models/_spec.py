"""Model specs: the strings team files and ``--model`` name a model with."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Literal, TypeAlias, TypedDict

from regiment.errors import ConfigError
from regiment.models._credentials import NoCredentials
from regiment.models._price import Price
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


class _Options(TypedDict, total=False):
    timeout: float
    max_retries: int
    stream: bool


def _given(timeout: float | None, max_retries: int | None, stream: bool | None) -> _Options:
    """The options a caller gave (``None``: the model's default)."""
    options: _Options = {}
    if timeout is not None:
        options["timeout"] = timeout
    if max_retries is not None:
        options["max_retries"] = max_retries
    if stream is not None:
        options["stream"] = stream
    return options


def _claudes_only(provider: Provider, max_continuations: int | None, where: str) -> None:
    if max_continuations is not None and provider != "anthropic":
        raise ConfigError(f"{where}: max_continuations applies to 'anthropic:' models only")


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
    raise ConfigError(f"{where}: expected {_FORMS}, got {spec!r}{_meant(spec)}")


# The model families whose bare id (``claude-sonnet-4-5``, ``gpt-4.1``) says the provider.
_FAMILIES = (("claude", "anthropic"), ("gpt", "openai"), ("o1", "openai"), ("o3", "openai"))


def _meant(spec: str) -> str:
    """`` (did you mean 'anthropic:claude-sonnet-4-5'?)`` for a spec that is one slip away
    from a good one: a bare model id of a known family, a misspelt or capitalised prefix."""
    prefix, colon, model_id = spec.strip().partition(":")
    if not colon:
        bare = spec.strip()
        family = next((p for f, p in _FAMILIES if bare.lower().startswith(f)), None)
        return f" (did you mean '{family}:{bare}'?)" if family else ""
    close = difflib.get_close_matches(prefix.strip().lower(), (*_PREFIXES, "scripted"), n=1)
    if not close or not model_id.strip():
        return ""
    meant = "scripted" if close[0] == "scripted" else f"{close[0]}:{model_id.strip()}"
    return f" (did you mean {meant!r}?)"


def model_from_spec(
    spec: str,
    *,
    where: str = "model",
    base_url: str | None = None,
    settings: ModelSettings | None = None,
    script: ScriptFunction | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    stream: bool | None = None,
    max_continuations: int | None = None,
    price: Price | None = None,
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
        timeout, max_retries, stream, max_continuations: the model's (``None``: its default).
        price: what its tokens cost (needed under a ``Budget(usd=...)``).

    Raises:
        regiment.errors.ConfigError: a bad spec, ``"scripted"`` without a script (or
            with options), ``openai-compatible`` without a base URL, missing
            credentials, or an SDK that is not installed.
    """
    provider, model_id = parse_model_spec(spec, where=where)
    options = _given(timeout, max_retries, stream)
    _claudes_only(provider, max_continuations, where)
    match provider:
        case "scripted":
            if script is None:
                raise ConfigError(f"{where}: 'scripted' needs a script function (a brain)")
            if options:  # the options a provider's model is made with
                raise ConfigError(f"{where}: a scripted model takes no {', '.join(options)}")
            return ScriptedModel(script, price=price)
        case "anthropic":
            from regiment.models._anthropic import DEFAULT_CONTINUATIONS, AnthropicModel

            most = DEFAULT_CONTINUATIONS if max_continuations is None else max_continuations
            return AnthropicModel(
                model_id,
                base_url=base_url,
                settings=settings,
                max_continuations=most,
                price=price,
                **options,
            )
        case "openai" | "openai-compatible":
            url = base_url or (os.environ if environ is None else environ).get("OPENAI_BASE_URL")
            return _openai(spec, provider, model_id, url, settings, price, options, where)


def _openai(
    spec: str,
    provider: Provider,
    model_id: str,
    url: str | None,
    settings: ModelSettings | None,
    price: Price | None,
    options: _Options,
    where: str,
) -> Model:
    """``model_from_spec`` for an ``openai`` or ``openai-compatible`` spec."""
    from regiment.models._openai import OpenAIModel

    compatible = provider == "openai-compatible"
    if compatible and not url:
        raise NoCredentials(
            f"{where}: {spec!r} needs the server's base URL (e.g. "
            "'http://localhost:11434/v1' for Ollama); give base_url or set OPENAI_BASE_URL",
            env="OPENAI_BASE_URL",
        )
    return OpenAIModel(
        model_id, base_url=url, settings=settings, compatible=compatible, price=price, **options
    )

"""Each role's model, from the specs a team file writes (``"anthropic:<id>"``,
``"openai:<id>"``, ``"openai-compatible:<id>"``, ``"scripted"``).

Specs are read by :func:`regiment.models.parse_model_spec` and models made by
:func:`regiment.models.model_from_spec`, the one parser the library has; roles
may mix providers. ``openai-compatible`` reads its server's address from
``OPENAI_BASE_URL``. ``[providers.anthropic]`` and ``[providers.openai]`` give the
models' options (``timeout``, ``max_retries``, ``stream``; Claude's ``max_continuations``).
"""

from __future__ import annotations

import importlib.util
from typing import cast

from regiment.config._imports import import_callable
from regiment.config._schema import TeamConfig
from regiment.errors import ConfigError
from regiment.models import (
    Model,
    NoCredentials,
    ScriptedModel,
    ScriptFunction,
    model_from_spec,
    parse_model_spec,
)

__all__ = ("KEEP_REQUESTS", "RoleModels", "check_installed", "check_prices", "parse_model_spec")

KEEP_REQUESTS = 100  # requests a team file's scripted model keeps (the latest)


class RoleModels:
    """Makes each role's model; one instance per distinct spec, so roles share a client."""

    def __init__(self, config: TeamConfig, source: str, override: str | Model | None) -> None:
        self._config = config
        self._source = source
        self._instance = None if override is None or isinstance(override, str) else override
        self._override = override if isinstance(override, str) else None
        self._made: dict[str, Model] = {}

    def get(self, spec: str | None, key: str) -> Model:
        if self._instance is not None:
            return self._instance
        chosen = self._override or spec or self._config.model
        written = key if spec else "model"  # a role that names none uses the file's
        where = f"{self._source}: {'--model' if self._override else written}"
        if chosen not in self._made:
            self._made[chosen] = self._make(chosen, where)
        return self._made[chosen]

    def _make(self, spec: str, where: str) -> Model:
        kind, _ = parse_model_spec(spec, where=where)
        if kind != "scripted":
            providers = self._config.providers
            options = providers.anthropic if kind == "anthropic" else providers.openai
            continuing = providers.anthropic.max_continuations if kind == "anthropic" else None
            try:  # the provider's SDK loads only when a role uses it
                return model_from_spec(
                    spec,
                    where=where,
                    timeout=options.timeout,
                    max_retries=options.max_retries,
                    stream=options.stream,
                    max_continuations=continuing,
                    price=self._config.prices.get(spec, options.price),
                )
            except NoCredentials as exc:  # its words are for code: `api_key=`, `base_url=`
                offline = (
                    "; or run offline on the file's brain: --model scripted"
                    if self._config.brain
                    else ""
                )
                advice = _unset(spec, exc.env) + (offline if self._override else "")
                raise ConfigError(f"{where}: {advice}") from exc
            except ConfigError as exc:
                if str(exc).startswith(f"{where}:"):
                    raise
                raise ConfigError(f"{where}: {exc}") from exc
        brain = self._config.brain
        if brain is None:
            raise ConfigError(
                f"{where}: the model is 'scripted' but the file has no "
                "brain = 'module:function' to answer its requests; add one"
            )
        fn = import_callable(
            brain, where=f"{self._source}: brain", expected="a function of a ModelRequest"
        )
        # A file's brain may serve for good (`regiment serve --model scripted`): its model
        # keeps the latest requests only, so memory stays bounded however many runs it answers.
        price = self._config.prices.get(spec)
        return ScriptedModel(cast(ScriptFunction, fn), keep_requests=KEEP_REQUESTS, price=price)


def check_installed(spec: str, where: str) -> None:
    """Refuse a spec whose provider's SDK is an optional extra that is not installed, as
    making its model would (``regiment validate`` makes none: it needs no key)."""
    kind, _ = parse_model_spec(spec, where=where)
    if kind in ("openai", "openai-compatible") and importlib.util.find_spec("openai") is None:
        raise ConfigError(
            f"{where}: {spec!r} needs the openai SDK, an optional extra: "
            "pip install 'regiment[openai]'"
        )


def _unset(spec: str, env: str) -> str:
    """What a team file's user does about model ``spec`` without ``env``: a file names
    models, never keys or servers, so the environment it runs in gives them."""
    if env == "OPENAI_BASE_URL":
        return (
            f"{spec!r} needs its server's URL: set OPENAI_BASE_URL in the environment "
            "(e.g. OPENAI_BASE_URL=http://localhost:11434/v1 for Ollama)"
        )
    which = "OpenAI API key" if env == "OPENAI_API_KEY" else "Anthropic credentials"
    advice = f"no {which} for {spec!r}: set {env} in the environment (a team file holds no keys"
    if env == "OPENAI_API_KEY":  # a local server that wants none
        advice += "; a local server that needs none is 'openai-compatible:<id>' at OPENAI_BASE_URL"
    return advice + ")"


def check_prices(config: TeamConfig, source: str) -> None:
    """With a ``[budget]`` ``usd``: a ``ConfigError`` naming the first role whose model has
    no price (in ``[prices]``, or its provider's ``price``); every ``[prices]`` key must be
    a model spec."""
    for spec in config.prices:
        parse_model_spec(spec, where=f"{source}: prices")
    if config.budget.usd is None:
        return
    providers = config.providers
    for role_key, spec in config.model_specs().items():
        kind, _ = parse_model_spec(spec, where=f"{source}: {role_key}")
        by_provider = {"anthropic": providers.anthropic.price, "scripted": None}
        if config.prices.get(spec, by_provider.get(kind, providers.openai.price)) is None:
            raise ConfigError(
                f"{source}: {role_key}: [budget] usd needs a price for every model, and "
                f"{spec!r} has none; add [prices.{spec!r}] input = ..., output = ... (US "
                "dollars per million tokens), or a price on its [providers] table"
            )

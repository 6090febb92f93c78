"""Each role's model, from the specs a team file writes (``"anthropic:<id>"``,
``"openai:<id>"``, ``"openai-compatible:<id>"``, ``"scripted"``).

Specs are read by :func:`regiment.models.parse_model_spec` and models made by
:func:`regiment.models.model_from_spec`, the one parser the library has; roles
may mix providers. ``openai-compatible`` reads its server's address from
``OPENAI_BASE_URL``. ``[providers.anthropic]`` and ``[providers.openai]`` give the
models' options (``timeout``, ``max_retries``, ``stream``; Claude's ``max_continuations``).
"""

from __future__ import annotations

from typing import cast

from regiment.config._imports import import_callable
from regiment.config._schema import TeamConfig
from regiment.errors import ConfigError
from regiment.models import (
    Model,
    ScriptedModel,
    ScriptFunction,
    model_from_spec,
    parse_model_spec,
)

__all__ = ("KEEP_REQUESTS", "RoleModels", "parse_model_spec")

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
                )
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
        return ScriptedModel(cast(ScriptFunction, fn), keep_requests=KEEP_REQUESTS)

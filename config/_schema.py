"""Team configuration files: typed structs decoded from TOML or YAML.

A file declares the same things the Python constructors take (``Team``, ``Planner``,
``Worker``, ``Check``, ``Budget``, ``Critic``, ``Compression``); :func:`~regiment.hierarchy.build_team`
turns it into those objects, so config and code are two doors to one model. Decoding is
strict: an unknown key, a missing one or a value of the wrong type is a ``ConfigError``
that names the file, the key path and what was expected::

    team.toml: workers[1].max_iterations: expected `int`, got `str`

Models are written ``"anthropic:<model id>"``, ``"openai:<model id>"``,
``"openai-compatible:<model id>"`` (at ``OPENAI_BASE_URL``) or ``"scripted"`` (the team's
``brain``, a ``module:function`` path, answers every request); tools, check
predicates and brains are ``module:attribute`` import paths.

A worker may be a whole team declared in another file (a ``TeamWorker``): its
``[[workers]]`` entry says ``team = "research.toml"`` (relative to this file), a complete
team file with its own ``brain`` and models.

Model settings (``ModelSettings``: ``max_tokens``, ``temperature``, ``top_p``,
``stop_sequences``, ``timeout``, ``thinking_budget``, ``extra``) are a
top-level ``[settings]`` table, every role's default, and each role's own,
which win key by key: ``[planner.settings]``, ``[planner.synthesizer_settings]``,
``[[workers]] settings = {...}``, ``[critic.settings]``, ``[compression.settings]``::

    [settings]
    max_tokens = 2048

    [planner.settings]
    temperature = 0.2
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from regiment._json import JsonObject
from regiment.config._errors import explain
from regiment.config._mcp import MCPConfig, read_environment
from regiment.config._text import ConfigFormat, decode_bytes, parse_text, read_team_file
from regiment.errors import ConfigError
from regiment.hierarchy import Budget
from regiment.models import Price

__all__ = (
    "AnthropicConfig",
    "CheckConfig",
    "CompressionConfig",
    "ConfigFormat",
    "CriticConfig",
    "PlacementConfig",
    "PlannerConfig",
    "PromptsConfig",
    "ProviderConfig",
    "ProvidersConfig",
    "TeamConfig",
    "WorkerConfig",
    "load_config",
    "parse_config",
    "MODEL_ONLY_KEYS",
    "team_worker_conflict",
    "team_worker_error",
)


class _Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Strict: a misspelt key is an error, not a silently ignored setting."""


class PromptsConfig(_Section, frozen=True, kw_only=True):
    """``[planner.prompts]``: replaces the default instructions of each role (see ``Prompts``)."""

    planner: str | None = None
    worker: str | None = None
    synthesizer: str | None = None


class PlannerConfig(_Section, frozen=True, kw_only=True):
    """``[planner]``: see ``Planner``. ``model`` defaults to the team's ``model``."""

    model: str | None = None
    max_steps: int = 10
    max_plan_attempts: int = 3
    synthesizer_model: str | None = None
    name: str = "planner"
    prompts: PromptsConfig = PromptsConfig()
    settings: JsonObject | None = None
    synthesizer_settings: JsonObject | None = None
    guardrails: tuple[str, ...] = ()
    synthesizer_guardrails: tuple[str, ...] = ()


class PlacementConfig(_Section, frozen=True, kw_only=True):
    """``[workers.placement]``: where a worker's steps run. ``kind = "ray"`` places
    it on Ray replicas (see ``regiment.hierarchy.Ray`` for the other keys), each
    replica building the worker from this same file; workers naming the same
    ``pool`` share its replicas (and must agree on the other keys)."""

    kind: Literal["local", "ray"] = "local"
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    resources: dict[str, float] = {}
    replicas: int = 1
    address: str | None = None
    max_restarts: int = 1
    otlp_endpoint: str | None = None
    pool: str | None = None
    start_timeout: float = 120.0


class _Unsaid(float):
    """A ``step_timeout`` not given (not a 300.0 given): ``None`` for a team, else 300.0."""


class WorkerConfig(_Section, frozen=True, kw_only=True):
    """One ``[[workers]]`` entry: see ``Worker``. ``tools`` are ``module:attribute`` paths;
    ``[[workers.mcp]]`` entries are MCP servers it gets tools from (see ``MCPConfig``).

    With ``team`` (a team file's path, relative to the file declaring it) the
    entry is a ``TeamWorker``: it takes ``name``, ``description``, ``artifact`` and
    ``step_timeout`` only, since the nested file has its own models and workers; its
    ``step_timeout`` is ``None`` unless given, as ``TeamWorker``'s (a worker's: 300.0).
    """

    name: str
    description: str
    team: str | None = None
    model: str | None = None
    tools: tuple[str, ...] = ()
    mcp: tuple[MCPConfig, ...] = ()
    max_iterations: int = 8
    system_prompt: str = ""
    step_timeout: float | None = _Unsaid(300.0)  # ``Worker``'s default
    cancel_grace: float | None = 5.0
    max_concurrent_steps: int = 8
    max_tool_result_chars: int | None = None
    artifact: bool = False
    on_tool_error: Literal["tell_model", "raise"] = "tell_model"
    settings: JsonObject | None = None
    guardrails: tuple[str, ...] = ()
    tool_guardrails: dict[str, tuple[str, ...]] = {}
    require_approval: tuple[str, ...] = ()
    approval_timeout: float | None = None
    placement: PlacementConfig | None = None

    def __post_init__(self) -> None:
        if type(self.step_timeout) is _Unsaid:  # none given: the default of its kind
            given = None if self.team is not None else float(self.step_timeout)
            msgspec.structs.force_setattr(self, "step_timeout", given)


class CheckConfig(_Section, frozen=True, kw_only=True):
    """One ``[checks.<name>]`` table: see ``Check``.

    ``predicate`` (and ``explain``) are ``module:function`` paths to functions
    of a ``StepReport``.
    """

    description: str
    predicate: str
    explain: str | None = None


class CriticConfig(_Section, frozen=True, kw_only=True):
    """``[critic]``: see ``Critic``; its presence turns critique rounds on."""

    model: str | None = None
    prompt: str | None = None
    settings: JsonObject | None = None
    guardrails: tuple[str, ...] = ()


class CompressionConfig(_Section, frozen=True, kw_only=True):
    """``[compression]``: see ``Compression``; its presence turns compression on."""

    threshold_tokens: int | None = None
    context_window: int = 200_000
    window_fraction: float = 0.5
    model: str | None = None
    prompt: str | None = None
    settings: JsonObject | None = None


_Retries = Annotated[int, msgspec.Meta(ge=0)]
_Seconds = Annotated[float, msgspec.Meta(gt=0)]


class ProviderConfig(_Section, frozen=True, kw_only=True):
    """``[providers.openai]`` (``openai:`` and ``openai-compatible:`` models) and
    ``[providers.anthropic]``: how the models a file names are made (their
    constructors' options; unset keys keep the constructors' defaults). ``price`` (a
    ``Price`` table: US dollars per million tokens) prices every model of the provider
    the file's ``[prices]`` does not; a ``Budget.usd`` needs one for each model."""

    timeout: _Seconds | None = None
    max_retries: _Retries | None = None
    stream: bool | None = None
    price: Price | None = None


class AnthropicConfig(ProviderConfig, frozen=True, kw_only=True):
    """``[providers.anthropic]``: as ``[providers.openai]``, and ``max_continuations``
    (how often a call goes on with a turn the API paused, ``pause_turn``)."""

    max_continuations: _Retries | None = None


class ProvidersConfig(_Section, frozen=True, kw_only=True):
    """``[providers]``: options of each provider's models."""

    anthropic: AnthropicConfig = AnthropicConfig()
    openai: ProviderConfig = ProviderConfig()


class TeamConfig(_Section, frozen=True, kw_only=True):
    """A whole team file.

    Attributes:
        name: the team's name.
        model: every role's model unless the role names its own:
            ``"anthropic:<model id>"`` or ``"scripted"``.
        brain: ``module:function`` of a scripted brain (a function of a
            ``ModelRequest``), used by roles whose model is ``"scripted"``;
            the command line falls back to it when there is no API key.
        planner: the planner's settings.
        workers: the workers (at least one).
        checks: named checks a plan step may carry.
        budget: limits per run: the ``[budget]`` table is a ``Budget``, decoded
            and range-checked by that type itself (one definition, not a twin).
        concurrency: steps of one run in flight at once.
        critic: critique rounds, if present.
        compression: context compression, if present.
        settings: every role's model settings, under the role's own.
        guardrails: ``module:attribute`` paths of guardrails for the whole team
            (the planner, critic and workers take ``guardrails`` too; workers also
            ``tool_guardrails``, by tool name).
        output_type: ``module:Model`` of a pydantic model the answer must match
            (``Team.output_type``); ``output_retries``: re-asks of an invalid answer.
        providers: options of the models the file names, by provider.
        prices: a ``Price`` for each model spec (``"anthropic:<id>"``, ``"scripted"``),
            over its provider's ``price``.
    """

    name: str
    workers: tuple[WorkerConfig, ...]
    model: str = "scripted"
    brain: str | None = None
    planner: PlannerConfig = PlannerConfig()
    checks: dict[str, CheckConfig] = {}
    budget: Budget = Budget()
    concurrency: int = 8
    critic: CriticConfig | None = None
    compression: CompressionConfig | None = None
    settings: JsonObject | None = None
    guardrails: tuple[str, ...] = ()
    output_type: str | None = None
    output_retries: int = 2
    providers: ProvidersConfig = ProvidersConfig()
    prices: dict[str, Price] = {}

    def model_specs(self) -> dict[str, str]:
        """Every role's model spec, keyed by key path (``planner.model``, ``workers[0].model``, ...).

        Team workers have no entry: their models are declared in their own files.
        """
        specs = {"planner.model": self.planner.model or self.model}
        if self.planner.synthesizer_model:
            specs["planner.synthesizer_model"] = self.planner.synthesizer_model
        for index, worker in enumerate(self.workers):
            if worker.team is None:  # a team worker's models are in its own file
                specs[f"workers[{index}].model"] = worker.model or self.model
        if self.critic is not None and self.critic.model:
            specs["critic.model"] = self.critic.model
        if self.compression is not None and self.compression.model:
            specs["compression.model"] = self.compression.model
        return specs


def load_config(path: str | Path) -> TeamConfig:
    """Read a team file; the format follows the suffix (``.toml``, ``.yaml``/``.yml``).

    Raises:
        ConfigError: the file cannot be read, has an unknown suffix, does not
            parse, or does not match the schema.
    """
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix == ".toml":
        fmt: ConfigFormat = "toml"
    elif suffix in (".yaml", ".yml"):
        fmt = "yaml"
    else:
        raise ConfigError(f"{path}: expected a .toml, .yaml or .yml team file")
    data = read_team_file(file, str(path))
    return parse_config(decode_bytes(data, str(path)), format=fmt, source=str(path))


def parse_config(text: str, *, format: ConfigFormat, source: str = "<config>") -> TeamConfig:
    """Decode a team file's text.

    Args:
        text: the file's contents.
        format: ``"toml"`` or ``"yaml"``.
        source: the file name errors start with.

    Raises:
        ConfigError: the text does not parse or does not match the schema.
    """
    raw = parse_text(text, format, source)
    try:
        config = msgspec.convert(raw, TeamConfig)
    except msgspec.ValidationError as exc:
        # A value out of range (``Budget`` checks itself) is the cause; it names its field.
        why = explain(str(exc), raw, TeamConfig, format, cause=exc.__cause__)
        raise ConfigError(f"{source}: {why}") from exc
    assert isinstance(raw, dict)  # it decoded into a TeamConfig
    for index, entry in enumerate(raw["workers"]):
        # The keys as written: a model-only key set to its default is still a mistake.
        _refuse_model_keys(entry.get("team"), entry.keys(), source, index)
    unique_names([worker.name for worker in config.workers], source)
    return _read_environment(config, source)


def unique_names(names: Sequence[str], source: str) -> None:
    """Refuse a worker name used twice (by a dict: 20,000 workers take linear time)."""
    first: dict[str, int] = {}
    for index, name in enumerate(names):
        seen = first.setdefault(name, index)
        if seen != index:  # the second one is the mistake; its line is the one shown
            raise ConfigError(
                f"{source}: workers[{index}].name: {name!r} is also workers[{seen}]'s "
                "name; worker names must be unique (a plan assigns steps by name)"
            )


def _read_environment(config: TeamConfig, source: str) -> TeamConfig:
    """``config`` with the ``${NAME}`` references of its MCP entries read, once, here:
    a Ray replica builds its worker from this config, with the values read here."""
    workers = tuple(
        msgspec.structs.replace(
            worker,
            mcp=tuple(
                read_environment(entry, f"{source}: workers[{i}].mcp[{j}]")
                for j, entry in enumerate(worker.mcp)
            ),
        )
        if worker.mcp
        else worker
        for i, worker in enumerate(config.workers)
    )
    return msgspec.structs.replace(config, workers=workers)


MODEL_ONLY_KEYS = (
    "model",
    "tools",
    "max_iterations",
    "system_prompt",
    "cancel_grace",
    "max_concurrent_steps",
    "max_tool_result_chars",
    "on_tool_error",
    "settings",
    "require_approval",
    "approval_timeout",
    "placement",
)
"""``[[workers]]`` keys that describe a model-backed worker, so cannot go with ``team``."""


def team_worker_conflict(worker: WorkerConfig) -> str | None:
    """The first model-only key a team worker sets to other than its default, if any."""
    if worker.team is None:
        return None
    defaults = WorkerConfig(name=worker.name, description=worker.description)
    changed = [k for k in MODEL_ONLY_KEYS if getattr(worker, k) != getattr(defaults, k)]
    return changed[0] if changed else None


def team_worker_error(source: str, index: int, key: str, team: str) -> ConfigError:
    """The error for ``key`` next to ``team`` in ``workers[index]``."""
    return ConfigError(
        f"{source}: workers[{index}].{key}: a worker with team = {team!r} is run by that "
        f"team's own planner and workers, so it takes no {key!r}; set it in {team} "
        "or remove 'team' to make this a model-backed worker"
    )


def _refuse_model_keys(team: object, keys: Iterable[object], source: str, index: int) -> None:
    if isinstance(team, str):
        for key in keys:
            if key in MODEL_ONLY_KEYS:
                raise team_worker_error(source, index, str(key), team)

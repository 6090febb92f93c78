"""Team configuration files: typed structs decoded from TOML or YAML.

A file declares the same things the Python constructors take (``Team``,
``Planner``, ``Worker``, ``Check``, ``Budget``, ``Critic``, ``Compression``);
:func:`~regiment.hierarchy.build_team` turns it into those objects, so config
and code are two doors to one model. Decoding is strict: an unknown key, a
missing one or a value of the wrong type is a ``ConfigError`` that names the
file, the key path and what was expected::

    team.toml: workers[1].max_iterations: expected `int`, got `str`

Models are written ``"anthropic:<model id>"`` or ``"scripted"`` (the team's
``brain``, a ``module:function`` path, answers every request); tools, check
predicates and brains are ``module:attribute`` import paths.

A worker may be a whole team declared in another file (a ``TeamWorker``)::

    [[workers]]
    name = "research"
    description = "Finds and checks facts."
    team = "research.toml"   # relative to this file

The nested file is a complete team file with its own ``brain`` and models.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import msgspec

from regiment.config._errors import explain
from regiment.config._mcp import MCPConfig
from regiment.config._text import ConfigFormat, decode_bytes, parse_text
from regiment.errors import ConfigError

__all__ = (
    "BudgetConfig",
    "CheckConfig",
    "CompressionConfig",
    "ConfigFormat",
    "CriticConfig",
    "PlacementConfig",
    "PlannerConfig",
    "PromptsConfig",
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


class PlacementConfig(_Section, frozen=True, kw_only=True):
    """``[workers.placement]``: where a worker's steps run. ``kind = "ray"`` places
    it on Ray replicas (see ``regiment.hierarchy.Ray`` for the other keys), each
    replica building the worker from this same file."""

    kind: Literal["local", "ray"] = "local"
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    resources: dict[str, float] = {}
    replicas: int = 1
    address: str | None = None
    max_restarts: int = 1
    otlp_endpoint: str | None = None


class WorkerConfig(_Section, frozen=True, kw_only=True):
    """One ``[[workers]]`` entry: see ``Worker``. ``tools`` are ``module:attribute`` paths;
    ``[[workers.mcp]]`` entries are MCP servers it gets tools from (see ``MCPConfig``).

    With ``team`` (a team file's path, relative to the file declaring it) the
    entry is a ``TeamWorker``: it takes ``name``, ``description`` and
    ``artifact`` only, since the nested file has its own models and workers.
    """

    name: str
    description: str
    team: str | None = None
    model: str | None = None
    tools: tuple[str, ...] = ()
    mcp: tuple[MCPConfig, ...] = ()
    max_iterations: int = 8
    system_prompt: str = ""
    step_timeout: float | None = 300.0
    max_concurrent_steps: int = 8
    artifact: bool = False
    placement: PlacementConfig | None = None


class CheckConfig(_Section, frozen=True, kw_only=True):
    """One ``[checks.<name>]`` table: see ``Check``.

    ``predicate`` (and ``explain``) are ``module:function`` paths to functions
    of a ``StepReport``.
    """

    description: str
    predicate: str
    explain: str | None = None


class BudgetConfig(_Section, frozen=True, kw_only=True):
    """``[budget]``: see ``Budget``; an absent limit is unlimited."""

    model_calls: int | None = None
    tool_calls: int | None = None
    tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    replans: int = 3
    rounds: int = 3
    wall_clock: float | None = None
    on_exhausted: Literal["partial", "raise"] = "partial"


class CriticConfig(_Section, frozen=True, kw_only=True):
    """``[critic]``: see ``Critic``; its presence turns critique rounds on."""

    model: str | None = None
    prompt: str | None = None


class CompressionConfig(_Section, frozen=True, kw_only=True):
    """``[compression]``: see ``Compression``; its presence turns compression on."""

    threshold_tokens: int | None = None
    context_window: int = 200_000
    window_fraction: float = 0.5
    model: str | None = None
    prompt: str | None = None


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
        budget: limits per run.
        concurrency: steps of one run in flight at once.
        critic: critique rounds, if present.
        compression: context compression, if present.
    """

    name: str
    workers: tuple[WorkerConfig, ...]
    model: str = "scripted"
    brain: str | None = None
    planner: PlannerConfig = PlannerConfig()
    checks: dict[str, CheckConfig] = {}
    budget: BudgetConfig = BudgetConfig()
    concurrency: int = 8
    critic: CriticConfig | None = None
    compression: CompressionConfig | None = None

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
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the team file: {exc.strerror or exc}") from exc
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
        raise ConfigError(f"{source}: {explain(str(exc), raw, TeamConfig, format)}") from exc
    assert isinstance(raw, dict)  # it decoded into a TeamConfig
    for index, entry in enumerate(raw["workers"]):
        # The keys as written: a model-only key set to its default is still a mistake.
        _refuse_model_keys(entry.get("team"), entry.keys(), source, index)
    return config


MODEL_ONLY_KEYS = (
    "model",
    "tools",
    "max_iterations",
    "system_prompt",
    "step_timeout",
    "max_concurrent_steps",
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

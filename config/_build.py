"""From a :class:`TeamConfig` to a :class:`Team`: models, imports, and the objects."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from regiment._json import JsonObject
from regiment.config._errors import settings_error
from regiment.config._imports import (
    IncludeChain,
    import_callable,
    import_guardrails,
    import_output_type,
    import_tool,
)
from regiment.config._mcp import check_commands, mcp_server
from regiment.config._models import RoleModels, check_installed, check_prices, parse_model_spec
from regiment.config._nested import load_nested, root_chain, team_files, within
from regiment.config._placement import placed
from regiment.config._schema import (
    CheckConfig,
    CompressionConfig,
    CriticConfig,
    PlannerConfig,
    PromptsConfig,
    TeamConfig,
    WorkerConfig,
    load_config,
    team_worker_conflict,
    team_worker_error,
)
from regiment.errors import ConfigError
from regiment.hierarchy import (
    Check,
    Compression,
    Critic,
    InvalidValue,
    Planner,
    Prompts,
    StepReport,
    Team,
    Worker,
)
from regiment.models import Model, ModelSettings, Price, ScriptedModel
from regiment.telemetry import Telemetry

if TYPE_CHECKING:
    from regiment.hierarchy import TeamWorker

__all__ = (
    "build_team",
    "build_worker",
    "check_config",
    "load_team",
    "parse_model_spec",
    "team_files",
)

_T = TypeVar("_T")


def load_team(
    path: str | Path, *, model: str | Model | None = None, telemetry: Telemetry | None = None
) -> Team:
    """Read a team file and build its team, and the teams of the files it nests.

    Args:
        path: a ``.toml``, ``.yaml`` or ``.yml`` team file.
        model: a model for every role, replacing the files' own (see ``build_team``).
        telemetry: where the team's spans go (``None``: the global provider).

    Raises:
        ConfigError: the file (or a nested one) is wrong; the message names the
            file, the key path and what was expected.
    """
    return build_team(load_config(path), model=model, telemetry=telemetry, source=str(path))


def build_team(
    config: TeamConfig,
    *,
    model: str | Model | None = None,
    telemetry: Telemetry | None = None,
    source: str = "<config>",
) -> Team:
    """Build the team a config describes: import its tools and checks, make its models.

    A worker entry with ``team = "<file>"`` becomes a ``TeamWorker``; the file
    is read relative to the directory of ``source`` and built by the same
    rules, with its own ``brain`` and models.

    Args:
        config: the decoded file (see ``load_config``), or one built in Python.
        model: a model for every role of this team *and of every nested team*,
            replacing the files' own, so one switch takes the whole tree
            offline: a spec (``"anthropic:<id>"``; ``"scripted"``, where each
            file's own ``brain`` answers its roles) or a ready ``Model``
            (shared by every role at every level).
        telemetry: where the team's spans go (``None``: the global provider);
            nested teams report to their parent's.
        source: the file name error messages start with, and the file whose
            directory nested team paths are relative to (``"<config>"``: the
            current directory).

    Raises:
        ConfigError: an import path, a model spec or a value is wrong, a
            nested file is missing or wrong, or a file includes itself.
    """
    return _build(config, _Tree(model, telemetry, checking=False), source, root_chain(source))


def check_config(config: TeamConfig, *, source: str = "<config>") -> Team:
    """Check everything ``build_team`` would, without creating model clients.

    Every model spec is parsed, the brain (if any) and every tool and check
    are imported, and the team is built with a stand-in model, so a file can
    be checked on a machine without API keys. Nested team files are checked
    the same way.

    Returns:
        The team as built with the stand-in (for a summary; do not run it).

    Raises:
        ConfigError: as ``build_team``.
    """
    # priced, as a Budget.usd wants (check_prices checks the file's own prices)
    free = Price(input=0, output=0)
    tree = _Tree(ScriptedModel([], name="stand-in", price=free), None, checking=True)
    return _build(config, tree, source, root_chain(source))


@dataclass(frozen=True)
class _Tree:
    """What every file of one team tree is built with."""

    model: str | Model | None
    telemetry: Telemetry | None
    checking: bool  # check_config: check each file's specs and brain; model is the stand-in


def _build(config: TeamConfig, tree: _Tree, source: str, chain: IncludeChain) -> Team:
    if tree.checking:
        _check_models(config, source)
        check_commands(config, source)
    models = RoleModels(config, source, tree.model)
    # Before the roles' own (which a file writes below it): the first mistake is said first.
    settings = _settings(config.settings, source, "settings")
    workers = [
        _team_worker(w, i, tree, source, chain)
        if w.team is not None
        else placed(_worker(w, i, models, source), config, i, source, tree.model)
        for i, w in enumerate(config.workers)
    ]
    checks = {name: _check(c, name, source) for name, c in config.checks.items()}
    planner = _planner(config.planner, models, source)
    critic = _critic(config.critic, models, source) if config.critic is not None else None
    guards = import_guardrails(config.guardrails, where=f"{source}: guardrails")
    output_type = import_output_type(config.output_type, where=f"{source}: output_type")
    wanted = config.compression
    compression = (
        _checked(source, "compression", lambda: _compression(wanted, models, source))
        if wanted
        else None
    )
    return _checked(
        source,
        "",
        lambda: Team(
            name=config.name,
            planner=planner,
            workers=workers,
            checks=checks,
            budget=config.budget,  # decoded and range-checked as a Budget already
            concurrency=config.concurrency,
            critic=critic,
            compression=compression,
            telemetry=tree.telemetry,
            settings=settings,
            guardrails=guards,
            output_type=output_type,
            output_retries=config.output_retries,
        ),
    )


def _check_models(config: TeamConfig, source: str) -> None:
    check_prices(config, source)
    for role_key, spec in config.model_specs().items():
        key = "model" if spec == config.model else role_key  # the key the file writes it at
        kind, _ = parse_model_spec(spec, where=f"{source}: {key}")
        check_installed(spec, f"{source}: {key}")
        if kind == "scripted" and config.brain is None:
            raise ConfigError(
                f"{source}: {key}: the model is 'scripted' but the file has no "
                "brain = 'module:function' to answer its requests; add one"
            )
    if config.brain is not None:
        import_callable(
            config.brain, where=f"{source}: brain", expected="a function of a ModelRequest"
        )


def _team_worker(
    config: WorkerConfig, index: int, tree: _Tree, source: str, chain: IncludeChain
) -> TeamWorker:
    assert config.team is not None
    conflict = team_worker_conflict(config)  # a config made in Python skipped parse_config's check
    if conflict is not None:
        raise team_worker_error(source, index, conflict, config.team)
    nested, nested_source, nested_chain = load_nested(config.team, index, source, chain)
    team = within(
        config.team, index, source, lambda: _build(nested, tree, nested_source, nested_chain)
    )
    # The nested-team worker (and the run channel it drives): only for a file that nests
    # one, so `regiment validate` of a flat team does not load it (issue #22).
    from regiment.hierarchy import TeamWorker

    c, where = config, f"workers[{index}]"
    build = partial(TeamWorker, name=c.name, description=c.description, artifact=c.artifact)
    return _checked(source, where, lambda: build(team=team, step_timeout=c.step_timeout))


def _settings(table: JsonObject | None, source: str, key: str) -> ModelSettings | None:
    """A ``settings`` table as ``ModelSettings``; an unknown key is an error naming it,
    a value of the wrong type one that says what to write."""
    if table is None:
        return None
    try:
        return ModelSettings.from_mapping(table, where=f"{source}: {key}")
    except ConfigError as exc:
        raise settings_error(exc, table, source, key) from exc.__cause__


def _critic(config: CriticConfig, models: RoleModels, source: str) -> Critic:
    # No model of its own: the critic uses the planner's.
    critic_model = models.get(config.model, "critic.model") if config.model else None
    settings = _settings(config.settings, source, "critic.settings")
    guards = import_guardrails(config.guardrails, where=f"{source}: critic.guardrails")
    if config.prompt:
        return Critic(
            model=critic_model, prompt=config.prompt, settings=settings, guardrails=guards
        )
    return Critic(model=critic_model, settings=settings, guardrails=guards)


def _compression(config: CompressionConfig, models: RoleModels, source: str) -> Compression:
    compressor = models.get(config.model, "compression.model") if config.model else None
    made = Compression(
        threshold_tokens=config.threshold_tokens,
        context_window=config.context_window,
        window_fraction=config.window_fraction,
        model=compressor,
        settings=_settings(config.settings, source, "compression.settings"),
    )
    return dataclasses.replace(made, prompt=config.prompt) if config.prompt else made


def _planner(config: PlannerConfig, models: RoleModels, source: str) -> Planner:
    synthesizer = (
        models.get(config.synthesizer_model, "planner.synthesizer_model")
        if config.synthesizer_model
        else None
    )
    planner_model = models.get(config.model, "planner.model")
    settings = _settings(config.settings, source, "planner.settings")
    synthesizer_settings = _settings(
        config.synthesizer_settings, source, "planner.synthesizer_settings"
    )
    guards = import_guardrails(config.guardrails, where=f"{source}: planner.guardrails")
    synth_guards = import_guardrails(
        config.synthesizer_guardrails, where=f"{source}: planner.synthesizer_guardrails"
    )
    return _checked(
        source,
        "planner",
        lambda: Planner(
            model=planner_model,
            max_steps=config.max_steps,
            max_plan_attempts=config.max_plan_attempts,
            prompts=_prompts(config.prompts),
            synthesizer_model=synthesizer,
            name=config.name,
            settings=settings,
            synthesizer_settings=synthesizer_settings,
            guardrails=guards,
            synthesizer_guardrails=synth_guards,
        ),
    )


def _prompts(config: PromptsConfig) -> Prompts:
    given = {k: v for k in ("planner", "worker", "synthesizer") if (v := getattr(config, k))}
    return Prompts(**given)


def build_worker(
    config: TeamConfig, index: int, source: str, model: str | Model | None = None
) -> Worker:
    """The worker ``config.workers[index]`` describes, in-process (what a Ray replica runs).

    Raises:
        ConfigError: as ``build_team``.
    """
    return _worker(config.workers[index], index, RoleModels(config, source, model), source)


def _worker(config: WorkerConfig, index: int, models: RoleModels, source: str) -> Worker:
    key = f"workers[{index}]"
    tools = [
        import_tool(spec, where=f"{source}: {key}.tools[{t}]")
        for t, spec in enumerate(config.tools)
    ]
    servers = [mcp_server(m, f"{source}: {key}.mcp[{i}]") for i, m in enumerate(config.mcp)]
    worker_model = models.get(config.model, f"{key}.model")
    settings = _settings(config.settings, source, f"{key}.settings")
    guards = import_guardrails(config.guardrails, where=f"{source}: {key}.guardrails")
    per_tool = {
        name: import_guardrails(specs, where=f"{source}: {key}.tool_guardrails.{name}")
        for name, specs in config.tool_guardrails.items()
    }
    return _checked(
        source,
        key,
        lambda: Worker(
            name=config.name,
            description=config.description,
            model=worker_model,
            tools=[*tools, *servers],
            max_iterations=config.max_iterations,
            system_prompt=config.system_prompt,
            step_timeout=config.step_timeout,
            cancel_grace=config.cancel_grace,
            max_concurrent_steps=config.max_concurrent_steps,
            max_tool_result_chars=config.max_tool_result_chars,
            artifact=config.artifact,
            on_tool_error=config.on_tool_error,
            settings=settings,
            guardrails=guards,
            tool_guardrails=per_tool,
            require_approval=config.require_approval,
            approval_timeout=config.approval_timeout,
        ),
    )


def _check(config: CheckConfig, name: str, source: str) -> Check:
    key, expected = f"checks.{name}", "a function of a StepReport"
    found = import_callable(config.predicate, where=f"{source}: {key}.predicate", expected=expected)
    predicate = cast(Callable[[StepReport], bool], found)
    explain = None
    if config.explain:
        found = import_callable(config.explain, where=f"{source}: {key}.explain", expected=expected)
        explain = cast(Callable[[StepReport], str], found)
    made = partial(Check, description=config.description, predicate=predicate, explain=explain)
    return _checked(source, key, made)


def _checked(source: str, key: str, make: Callable[[], _T]) -> _T:
    """Run a constructor; its ``ConfigError`` gets the file and key path in front.

    A value out of range names its key: ``team.toml: workers[0].step_timeout: must be ...``.
    """
    try:
        return make()
    except InvalidValue as exc:
        where = f"{key}.{exc.field}" if key else exc.field
        raise ConfigError(f"{source}: {where}: {exc.problem}") from exc
    except ConfigError as exc:
        raise ConfigError(f"{source}: {key + ': ' if key else ''}{exc}") from exc

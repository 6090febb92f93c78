"""config room: team files (TOML or YAML) decoded into the hierarchy's public types.

``load_team(path)`` reads a file and builds a ``Team``; ``load_config`` and
``parse_config`` give the decoded ``TeamConfig`` first, ``check_config``
builds it without starting anything, and ``team_files`` lists the tree of
nested team files. Every error names the file and the key path. This room
builds hierarchy objects; ``regiment.hierarchy`` never imports it.
"""

from regiment.config._build import build_team, check_config, load_team, team_files
from regiment.config._placement import place_on_ray, placed, rebuild_worker, trace_replicas
from regiment.config._schema import (
    AnthropicConfig,
    CheckConfig,
    CompressionConfig,
    ConfigFormat,
    CriticConfig,
    PlannerConfig,
    PromptsConfig,
    ProviderConfig,
    ProvidersConfig,
    TeamConfig,
    WorkerConfig,
    load_config,
    parse_config,
)

__all__ = (
    "AnthropicConfig",
    "CheckConfig",
    "CompressionConfig",
    "ConfigFormat",
    "CriticConfig",
    "PlannerConfig",
    "PromptsConfig",
    "ProviderConfig",
    "ProvidersConfig",
    "TeamConfig",
    "WorkerConfig",
    "build_team",
    "check_config",
    "load_config",
    "load_team",
    "parse_config",
    "place_on_ray",
    "placed",
    "rebuild_worker",
    "team_files",
    "trace_replicas",
)

"""A hash of what shapes a team's runs: a resume refuses a run whose team changed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from regiment.hierarchy._prompts import CALLS_MADE
from regiment.hierarchy.guard._types import GuardLike, Guardrail
from regiment.hierarchy.workers._team_worker import TeamWorker
from regiment.hierarchy.workers._worker import Worker

if TYPE_CHECKING:
    from regiment.hierarchy._budget import Budget
    from regiment.hierarchy._memory import Compression
    from regiment.hierarchy._team import Team
    from regiment.models import Model

__all__ = ("config_hash", "config_hashes")


def config_hash(team: Team) -> str:
    """A hash of what shapes a team's runs, so a resume can refuse a changed team.

    It covers the team's name, concurrency, budget and check names; the planner
    (models, prompts, limits), critic and compression; a structured answer's schema
    and re-ask bound; the guardrails; and every worker: its description, model,
    prompt, limits, each tool's name, description, schema and approval rule, and
    its guards (nested teams included). Telemetry is left out: it does not
    change what a run does.
    """
    return config_hashes(team)[0]


def config_hashes(team: Team) -> tuple[str, dict[str, str]]:
    """:func:`config_hash` of ``team``, and a short hash of each of its parts by the part's
    key (``budget``, ``w:billing/model``, ``w:billing/tool:refund``, ...), journaled with
    the run so a resume can name what changed (``_config_diff``)."""
    import hashlib  # OpenSSL's hashes load on first use (issue #22: import time)

    digest = hashlib.sha256()
    texts: dict[str, list[str]] = {}
    for key, part in _config_parts(team):
        digest.update(part.encode())
        digest.update(b"\x1f")
        texts.setdefault(key, []).append(part)
    parts = {
        key: hashlib.sha256("\x1f".join(each).encode()).hexdigest()[:_PART_HASH]
        for key, each in texts.items()
    }
    return digest.hexdigest()[:32], parts


_PART_HASH = 8  # hex digits a part's hash keeps: enough to tell a change, short on disk


def _config_parts(team: Team) -> list[tuple[str, str]]:
    """What the hash covers, in its order, each text with the key of the part it is of."""
    planner = team.planner
    synth = planner.synthesizer_model
    parts = [
        ("name", team.name),
        ("concurrency", str(team.concurrency)),
        ("budget", _budget(team.budget)),
        ("checks", ",".join(sorted(team.checks))),
        ("planner.model", _model(planner.model)),
        ("synthesizer.model", _model(synth) if synth is not None else ""),
        (
            "planner",
            repr((planner.name, planner.max_steps, planner.max_plan_attempts, planner.prompts)),
        ),
        (
            "critic",
            "" if team.critic is None else repr(team.critic.prompt) + _model(team.critic.model),
        ),
        ("compression", _compression(team.compression)),
        ("guardrails", _guards(team.guardrails)),
    ]
    if planner.prompts.calls_made != CALLS_MADE:  # (left out of the prompts' repr)
        parts.append(("planner", f"calls_made {planner.prompts.calls_made!r}"))
    if team.output_type is not None:  # a structured answer: its schema and its bound
        shape = team.output_shape()
        parts.append(
            ("output", f"output {msgspec.json.encode(shape.tool).decode()} x{shape.attempts}")
        )
    for worker in team.workers:
        parts.extend(_worker_parts(worker))
    return parts


def _worker_parts(worker: Worker | TeamWorker) -> list[tuple[str, str]]:
    at = f"w:{worker.name}"
    parts = [(at, f"worker {worker.name}: {worker.description} artifact={worker.artifact}")]
    match worker:
        case Worker():
            parts.append((f"{at}/model", _model(worker.model)))
            parts.append((f"{at}/prompt", repr((worker.system_prompt, worker.max_iterations))))
            parts.append((f"{at}/limits", repr((worker.step_timeout, worker.on_tool_error))))
            for definition in worker.toolset.definitions:
                parts.append(
                    (f"{at}/tool:{definition.name}", msgspec.json.encode(definition).decode())
                )
            parts.extend((f"{at}/mcp", f"mcp {server!r}") for server in worker.mcp_servers)
            # What may run unasked, and what is checked: a resume under looser
            # approvals or fewer guards would run what the paused run could not.
            parts.append(
                (
                    f"{at}/approvals",
                    f"approval {sorted(worker.require_approval)} {worker.approval_timeout}",
                )
            )
            parts.extend(
                (
                    f"{at}/tool:{tool.name}",
                    f"approval {tool.name}: {_rule(tool.policy.requires_approval)}",
                )
                for tool in worker.toolset.tools
            )
            parts.append((f"{at}/guardrails", _guards(worker.guardrails)))
            parts.extend(
                (f"{at}/guardrails", f"guards {name}: {_guards(guards)}")
                for name, guards in sorted(worker.tool_guardrails.items())
            )
        case TeamWorker(team=child):
            if worker.step_timeout is not None:  # unset: the hash runs journaled before had
                parts.append((f"{at}/limits", f"step_timeout {worker.step_timeout!r}"))
            parts.extend((f"{at}/{key}", part) for key, part in _config_parts(child))
    return parts


def _compression(c: Compression | None) -> str:
    if c is None:
        return ""
    return repr((c.threshold_tokens, c.context_window, c.window_fraction, c.prompt)) + _model(
        c.model
    )


def _rule(rule: object) -> str:
    """A tool's approval rule: always, never, or the predicate's name."""
    if isinstance(rule, bool):
        return "always" if rule else "never"
    return f"{getattr(rule, '__module__', '')}.{getattr(rule, '__qualname__', repr(rule))}"


def _guards(guards: Sequence[GuardLike]) -> str:
    """Each guard's kind, name and what a trip does (the team made them ``Guardrail``s)."""
    return repr(
        [
            (g.kind, g.name or _rule(g.check), g.on_trip) if isinstance(g, Guardrail) else _rule(g)
            for g in guards
        ]
    )


def _model(model: Model | None) -> str:
    return "" if model is None else f"{model.provider}/{model.name}"


def _budget(budget: Budget) -> str:
    """``budget`` as JSON; without ``usd`` when it has none, so a team that sets no money
    limit hashes as it did before ``Budget.usd`` was added (its paused runs resume)."""
    if budget.usd is not None:
        return msgspec.json.encode(budget).decode()
    fields = msgspec.structs.asdict(budget)
    del fields["usd"]
    return msgspec.json.encode(fields).decode()

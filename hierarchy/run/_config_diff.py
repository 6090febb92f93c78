"""What changed in a team since a run began: the parts a resume names.

A run journals a short hash of each part of its team's configuration
(``RunCreated.config_parts``, from :func:`config_hashes`); a resume compares them with
the team it is given, so its refusal (or, forced, its warning) says which parts changed:
``worker 'billing': tool 'refund' changed; worker 'comms' added``.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ("changed_parts",)

# What each part's key names (a worker's keys: after its ``w:<name>/``).
_NAMES = {
    "name": "the team's name",
    "concurrency": "the team's concurrency",
    "budget": "the budget",
    "checks": "the checks",
    "planner.model": "the planner's model",
    "synthesizer.model": "the synthesizer's model",
    "planner": "the planner's prompts or limits",
    "critic": "the critic",
    "compression": "the compression",
    "guardrails": "the team's guardrails",
    "output": "the structured answer",
    "model": "its model",
    "prompt": "its system prompt or iteration limit",
    "limits": "its step timeout or tool error handling",
    "mcp": "its MCP servers",
    "approvals": "its approval settings",
}


def changed_parts(before: Mapping[str, str] | None, now: Mapping[str, str]) -> str:
    """The parts of a team that differ between ``before`` (the run's journaled part
    hashes; ``None``: journaled by a regiment that kept none) and ``now``, as a clause:
    ``"worker 'billing': tool 'refund' changed; the budget changed"``."""
    if before is None:
        return (
            "its workers, tools, models, prompts, budgets, approvals or guardrails changed "
            "(the run was journaled by an older regiment, which did not record which)"
        )
    said: list[str] = []
    gone = _units(before.keys() - now.keys())
    new = _units(now.keys() - before.keys())
    said += [f"{_name(key)} removed" for key in sorted(gone)]
    said += [f"{_name(key)} added" for key in sorted(new)]
    for key in sorted(before.keys() & now.keys()):
        if before[key] != now[key] and not _under(key, gone | new):
            worker = key.rpartition("/")[2].startswith("w:")  # the worker's own line
            said.append(f"{_name(key)}{': its description' if worker else ''} changed")
    return "; ".join(said) if said else "its configuration changed"


def _units(keys: set[str]) -> set[str]:
    """Of ``keys`` (parts on one side only), those that are not under another of them:
    a worker removed is said once, not with each of its parts."""
    return {key for key in keys if not _under(key, keys)}


def _under(key: str, units: set[str]) -> bool:
    """Whether ``key`` is a part of one of ``units`` (a worker's, a tool's)."""
    return any(key.startswith(unit + "/") for unit in units)


def _name(key: str) -> str:
    """A part's key as a message says it: ``w:billing/tool:refund`` is
    ``worker 'billing': tool 'refund'``."""
    said: list[str] = []
    segments = key.split("/")
    for segment in segments:
        kind, _, name = segment.partition(":")
        if kind == "w" and name:
            said.append(f"worker '{name}'")
        elif kind == "tool" and name:
            said.append(f"tool '{name}'")
        else:
            said.append(_NAMES.get(segment, segment))
    return ": ".join(said)

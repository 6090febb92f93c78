"""A money budget's check at team start: every model the team can call has a price."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from regiment.errors import ConfigError
from regiment.hierarchy.guard._types import Guardrail, as_guardrail
from regiment.hierarchy.workers._worker import Worker
from regiment.models import Model, Price

if TYPE_CHECKING:
    from regiment.hierarchy._team import Team

__all__ = ("check_money",)


def _guards(team: Team) -> Iterator[Guardrail]:
    """Every guard of ``team`` itself (not of the teams it nests)."""
    planner, critic = team.planner, team.critic
    yield from (as_guardrail(g) for g in team.guardrails)
    yield from (as_guardrail(g) for g in planner.guardrails)
    yield from (as_guardrail(g) for g in planner.synthesizer_guardrails)
    if critic is not None:
        yield from (as_guardrail(g) for g in critic.guardrails)
    for worker in team.workers:
        if isinstance(worker, Worker):
            yield from (as_guardrail(g) for g in worker.guardrails)
            for given in worker.tool_guardrails.values():
                yield from (as_guardrail(g) for g in given)


def _models(team: Team, where: str) -> Iterator[tuple[str, Model]]:
    """Each model ``team`` (and the teams its ``TeamWorker`` s run) calls, and its role:
    its guards' judges too, where a guard names its model (``Guardrail.model``)."""
    planner = team.planner
    for guard in _guards(team):
        if guard.model is not None:
            yield f"{where}guardrail '{guard.name}' (its judge)", guard.model
    yield f"{where}planner", planner.model
    if planner.synthesizer_model is not None:
        yield f"{where}synthesizer_model", planner.synthesizer_model
    if team.critic is not None and team.critic.model is not None:
        yield f"{where}critic", team.critic.model
    if team.compression is not None and team.compression.model is not None:
        yield f"{where}compression", team.compression.model
    for worker in team.workers:
        if isinstance(worker, Worker):  # on Ray too: its replicas charge at this price
            yield f"{where}worker '{worker.name}'", worker.model
        else:  # a TeamWorker: its run's budget is capped by its step's share of money
            child = worker.team
            yield from _models(child, f"{where}team worker '{worker.name}' (team '{child.name}'): ")


def check_money(team: Team) -> None:
    """A ``ConfigError`` naming the first model of ``team`` with no ``Price`` when its
    budget limits money (``Budget.usd``)."""
    if team.budget.usd is None:
        return
    for role, model in _models(team, ""):
        if not isinstance(getattr(model, "price", None), Price):
            raise ConfigError(
                f"team '{team.name}': Budget(usd={team.budget.usd}) needs a price for every "
                f"model, and {role}'s model {model.name!r} has none; give it one, e.g. "
                f"AnthropicModel(..., price=Price(input=3.0, output=15.0)) (US dollars per "
                "million tokens; a team file: price = {input = 3.0, output = 15.0} on its "
                "provider or model entry)"
            )

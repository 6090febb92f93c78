"""A worker the planner cannot tell apart is a config error: the planner picks a step's
worker by the workers' descriptions, and ``Worker(description="")`` (or ``None``, or
spaces) was accepted, handing it a worker described by nothing."""

from __future__ import annotations

import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import InvalidValue, Planner, Team, TeamWorker, Worker
from regiment.models import ScriptedModel

BLANK = ["", "   ", "\n\t", None, 3]


def _team() -> Team:
    model = ScriptedModel([])
    worker = Worker(name="clerk", description="Files things.", model=model)
    return Team(name="inner", planner=Planner(model=model), workers=[worker])


@pytest.mark.parametrize("description", BLANK)
def test_a_worker_without_a_description_is_refused(description: object) -> None:
    with pytest.raises(InvalidValue) as caught:
        Worker(name="clerk", description=description, model=ScriptedModel([]))  # type: ignore[arg-type]
    assert caught.value.field == "description"
    assert str(caught.value).startswith("worker 'clerk': description must say what the worker")
    assert isinstance(caught.value, ConfigError)


@pytest.mark.parametrize("description", BLANK)
def test_a_team_worker_without_a_description_is_refused(description: object) -> None:
    with pytest.raises(InvalidValue, match="worker 'desk': description must say"):
        TeamWorker(name="desk", description=description, team=_team())  # type: ignore[arg-type]


def test_a_described_worker_is_kept_as_given() -> None:
    worker = Worker(name="clerk", description=" Files things. ", model=ScriptedModel([]))
    assert worker.description == " Files things. "
    assert TeamWorker(name="desk", description="Desk.", team=_team()).description == "Desk."

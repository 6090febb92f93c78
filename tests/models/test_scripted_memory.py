"""A scripted model that serves for good keeps a bounded number of requests: with
``keep_requests`` it holds the latest ones, and a team file's scripted model (the one
``regiment serve --model scripted`` runs on) holds at most ``KEEP_REQUESTS``."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.config import load_team
from regiment.config._models import KEEP_REQUESTS
from regiment.errors import ConfigError
from regiment.models import Message, ModelRequest, ScriptedModel

pytestmark = pytest.mark.anyio


def _request(n: int) -> ModelRequest:
    return ModelRequest(messages=(Message.user(f"question {n}"),), role="worker")


async def test_keep_requests_holds_the_latest_and_counts_every_call() -> None:
    model = ScriptedModel(lambda request: "ok", keep_requests=3)
    for n in range(10):
        await model.complete(_request(n))
    assert [r.messages[0].text for r in model.requests] == [f"question {n}" for n in (7, 8, 9)]
    assert model.calls == 10
    everything = ScriptedModel(lambda request: "ok")  # the default keeps them all
    for n in range(10):
        await everything.complete(_request(n))
    assert len(everything.requests) == everything.calls == 10


async def test_a_list_script_still_runs_in_order_past_the_bound() -> None:
    model = ScriptedModel(["a", "b", "c"], keep_requests=1)
    replies = [(await model.complete(_request(n))).text for n in range(3)]
    assert replies == ["a", "b", "c"]


def test_keep_requests_below_zero_is_refused() -> None:
    with pytest.raises(ConfigError, match="keep_requests must be at least 0"):
        ScriptedModel(["a"], keep_requests=-1)


BRAIN = """
def brain(request):
    if request.role == "planner":
        return '{"steps": [{"description": "answer"}]}'
    return "done"
"""


async def test_a_team_files_scripted_model_keeps_a_bounded_number_of_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "serve_brain.py").write_text(BRAIN)
    (tmp_path / "team.toml").write_text(
        'name = "t"\nbrain = "serve_brain:brain"\n\n'
        '[[workers]]\nname = "w"\ndescription = "answers"\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    team = load_team(tmp_path / "team.toml")
    model = team.planner.model
    assert isinstance(model, ScriptedModel)
    async with team.start() as running:
        runs = KEEP_REQUESTS  # three calls a run: plan, step, synthesis
        for _ in range(runs):
            await running.run("answer me")
    assert model.calls == 3 * runs
    assert len(model.requests) == KEEP_REQUESTS

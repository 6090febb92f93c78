"""``Team.run(goal, ...)``: the one-call form takes what a run of a started team takes."""

from __future__ import annotations

import json
import sqlite3
from functools import partial
from pathlib import Path

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from regiment import (
    Planner,
    RunContext,
    ScriptedModel,
    Team,
    TeamWorker,
    Worker,
    text_response,
    tool,
)
from regiment.errors import ConfigError
from regiment.journal import nested_run_id, open_journal
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, tool_call_response

pytestmark = pytest.mark.anyio


@tool
def whoami(ctx: RunContext[dict[str, str]]) -> str:
    """The user the run is for."""
    return ctx.deps["user"]


def _brain(request: ModelRequest) -> ModelResponse | str:
    if request.role == "planner":
        return '{"steps": [{"description": "say who asks"}]}'
    if request.role == "worker":
        last = request.messages[-1]
        results = [p for p in last.parts if isinstance(p, ToolResultPart)]
        if results:
            return text_response(f"asked by {results[0].content}")
        return tool_call_response("whoami", {})
    return text_response("done")


def _team() -> Team:
    model = ScriptedModel(_brain)
    worker = Worker(name="w", description="says who asks", model=model, tools=[whoami])
    return Team(name="t", planner=Planner(model=model), workers=[worker])


async def test_team_run_passes_deps_and_a_journal(tmp_path: Path) -> None:
    result = await _team().run("who asks?", deps={"user": "ana"}, journal=tmp_path / "runs.db")
    assert result.steps[0].output == "asked by ana"
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        (listed,) = await journal.list_runs()
    finally:
        await journal.close()
    assert (listed.run_id, listed.status) == (result.run_id, "completed")


@pytest.mark.parametrize("goal", [42, None, b"bytes"], ids=["int", "none", "bytes"])
async def test_a_goal_that_is_not_text_is_a_config_error(goal: object) -> None:
    with pytest.raises(ConfigError, match="the goal must be text"):
        await _team().run(goal)  # type: ignore[arg-type]


async def test_an_empty_goal_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="the goal is empty"):
        await _team().run("   ")


async def test_a_goal_with_a_lone_surrogate_is_a_config_error(tmp_path: Path) -> None:
    # What a shell argument in a non-UTF-8 encoding becomes under surrogateescape: no
    # journal, model or trace can carry it, so the run is refused before it starts.
    with pytest.raises(ConfigError, match=r"'\\udcff' at position 6 is a lone surrogate"):
        await _team().run("order \udcff88213", journal=tmp_path / "runs.db")
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        assert await journal.list_runs() == ()
    finally:
        await journal.close()


@pytest.mark.parametrize(
    ("session", "message"),
    [
        (7, "the session must be text (a str) or None, not int: 7"),
        (b"s-1", "the session must be text (a str) or None, not bytes"),
        ("", "the session is blank ('')"),
        ("  ", "the session is blank ('  '); give the id the run's conversation goes by, or None"),
        ("s-\udcff", "the session is not valid text: '\\udcff' at position 2 is a lone surrogate"),
    ],
)  # fmt: skip
async def test_a_session_that_is_no_id_is_a_config_error(
    session: object, message: str, tmp_path: Path
) -> None:
    # A blank id was taken (every run given it saw the others' goals and answers), and
    # one with a lone surrogate failed a journaled run with a UnicodeEncodeError.
    async with _team().start(journal=tmp_path / "runs.db") as running:
        with pytest.raises(ConfigError) as info:
            await running.run("who asks?", session=session)  # type: ignore[arg-type]
        assert str(info.value).startswith(message)
        with pytest.raises(ConfigError) as info:
            async with running.stream("who asks?", session=session):  # type: ignore[arg-type]
                pass
        assert str(info.value).startswith(message)
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        assert await journal.list_runs() == ()
    finally:
        await journal.close()


@pytest.mark.parametrize("session", [None, "s-1"])
async def test_runs_cancelled_while_their_records_wait_are_journaled_cancelled(
    session: str | None, tmp_path: Path
) -> None:
    # Another connection's write transaction holds the file, so the group commit that
    # records two new runs waits; both callers are cancelled meanwhile. The record of
    # the run that did not make the commit itself stayed queued and was written with a
    # later commit, and nothing ended it: listed as running (its lease held), then
    # stalled, where a resume would have run it. A run once recorded is now seen
    # through to its start, and then cancelled like any other.
    path = tmp_path / "runs.db"
    async with _team().start(journal=path) as running:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        scopes = [anyio.CancelScope(), anyio.CancelScope()]

        async def run(scope: anyio.CancelScope) -> None:
            with scope:
                await running.run("who asks?", session=session)

        async with anyio.create_task_group() as tg:
            for scope in scopes:
                tg.start_soon(run, scope)
            await wait_all_tasks_blocked()
            for scope in scopes:
                scope.cancel()
            other.execute("COMMIT")
        other.close()
    journal = await open_journal(str(path))
    try:
        listed = await journal.list_runs()
    finally:
        await journal.close()
    assert [info.status for info in listed] == ["cancelled", "cancelled"]


async def test_a_nested_run_cancelled_while_its_record_waits_is_journaled_cancelled(
    tmp_path: Path,
) -> None:
    # As above, one level down: the planner's reply takes the file (another connection's
    # write transaction), so the records that create the nested runs of the two steps it
    # sends to a team worker wait for the group commit; the run is cancelled meanwhile.
    # The creation that waited for the other's commit was not seen through, and one cut
    # before its run began only let go of its lease: either nested run stayed with its
    # creation record only, listed as running with its lease held, then stalled.
    path = tmp_path / "runs.db"
    other = sqlite3.connect(path, isolation_level=None)
    held = anyio.Event()

    def plan(request: ModelRequest) -> ModelResponse | str:
        if request.role != "planner":
            return text_response("done")
        other.execute("BEGIN IMMEDIATE")
        held.set()
        steps = [{"id": s, "description": "ask the desk", "worker": "desk"} for s in "ab"]
        return json.dumps({"steps": steps})

    desk = TeamWorker(name="desk", description="the team below", team=_team())
    top = Team(name="top", planner=Planner(model=ScriptedModel(plan)), workers=[desk])
    async with top.start(journal=path) as running:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(running.run, "who asks?", deps={"user": "ana"}))
                await held.wait()
                await wait_all_tasks_blocked()
                scope.cancel()
                other.execute("COMMIT")
        other.close()
    journal = await open_journal(str(path))
    try:
        (info,) = await journal.list_runs()
        nested = [await journal.get_run(nested_run_id(info.run_id, 1, s)) for s in "ab"]
    finally:
        await journal.close()
    assert [info.status] + [run.status for run in nested] == ["cancelled"] * 3

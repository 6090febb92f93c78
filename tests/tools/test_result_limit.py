"""A tool result longer than its limit is cut, with a note the model reads; text that is
not valid UTF-8 is escaped. Before, a 20 MB result went whole to the model, the journal,
the events and the spans, and a lone surrogate failed the model request (and, journaled,
the step, which was replanned and ran the tool again)."""

from __future__ import annotations

import json
import logging
import string
from pathlib import Path

import pytest

from regiment import Planner, ScriptedModel, Team, Worker, text_response, tool_call_response
from regiment.cli._progress import tool_failure_line
from regiment.errors import ConfigError
from regiment.hierarchy import ToolFailed
from regiment.journal import SqliteJournal, ToolCallFinished
from regiment.models import ModelRequest, ModelResponse, ToolResultPart
from regiment.tools import Tool, Toolset, tool

pytestmark = pytest.mark.anyio


def _note(length: int, limit: int) -> str:
    return (
        f"\n\n[cut: this result was {length:,} characters long, over the limit of "
        f"{limit:,}, so only its first {limit:,} characters are above. If you need what "
        "was cut, call the tool again asking for less: a narrower query, fewer items, or "
        "one part at a time.]"
    )


def dump(n: int) -> str:
    """n characters of a file."""
    return (string.ascii_lowercase * (n // 26 + 1))[:n]


def rows(n: int) -> list[dict[str, int]]:
    """n rows."""
    return [{"row": i} for i in range(n)]


def fails(n: int) -> str:
    """Fails with a long message."""
    raise ValueError("E" * n)


async def test_a_result_over_the_tools_limit_is_cut_with_a_note(
    caplog: pytest.LogCaptureFixture,
) -> None:
    short = Tool(dump, max_result_chars=50)
    with caplog.at_level(logging.WARNING, logger="regiment"):
        result = await short.call({"n": 200}, call_id="c1")
        whole = await short.call({"n": 50}, call_id="c2")
    assert result.content == dump(50) + _note(200, 50)
    assert not result.is_error
    assert whole.content == dump(50)
    (record,) = caplog.records  # one per cut, none for the result that fits
    assert record.name == "regiment.tools"
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(
        "tool 'dump': its result was 200 characters, over the limit of 50"
    )


async def test_structured_results_and_error_messages_are_cut_as_the_model_reads_them() -> None:
    listed = await Tool(rows, max_result_chars=30).call({"n": 10}, call_id="c1")
    raised = await Tool(fails, max_result_chars=30).call({"n": 100}, call_id="c2")
    text = json.dumps(rows(10), separators=(",", ":"))  # 101 characters
    assert listed.content == text[:30] + _note(101, 30)
    assert raised.is_error
    assert raised.error_type == "ValueError"
    assert raised.content == "ValueError: " + "E" * 18 + _note(112, 30)


async def test_the_default_limit_is_100000_characters_for_a_tool_and_a_set() -> None:
    alone = await Tool(dump).call({"n": 20_000_000}, call_id="c1")
    in_set = await Toolset("w", [dump]).call("dump", {"n": 150_000}, call_id="c2")
    assert alone.content == dump(100_000) + _note(20_000_000, 100_000)
    assert in_set.content == dump(100_000) + _note(150_000, 100_000)


def _calls(tool_name: str, n: int) -> tuple[ScriptedModel, list[ToolResultPart]]:
    """A team's model whose worker calls ``tool_name`` once; the results it read."""
    seen: list[ToolResultPart] = []

    def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return '{"steps": [{"description": "read it"}]}'
        if request.role != "worker":
            return text_response("done")
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if results:
            seen.extend(results)
            return text_response("read")
        return tool_call_response(tool_name, {"n": n})

    return ScriptedModel(brain), seen


async def test_a_workers_limit_cuts_what_the_model_reads_and_the_journal_holds(
    tmp_path: Path,
) -> None:
    model, seen = _calls("dump", 5_000)
    own = Tool(rows, max_result_chars=1_000_000)  # a tool's own limit wins
    worker = Worker(
        name="w",
        description="reads",
        model=model,
        tools=[Tool(dump), own],
        max_tool_result_chars=300,
    )
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    result = await team.run("read", journal=tmp_path / "runs.db")
    (read,) = seen
    assert read.content == dump(300) + _note(5_000, 300)
    assert result.steps[0].tool_outcomes[0].content == read.content
    journal = await SqliteJournal.open(tmp_path / "runs.db")
    try:
        records = [entry.record for entry in await journal.read(result.run_id)]
    finally:
        await journal.close()
    (finished,) = [r for r in records if isinstance(r, ToolCallFinished)]
    assert finished.result.content == read.content  # what a resume replays
    assert worker.toolset.get("rows") is not None
    listed = await worker.toolset.call("rows", {"n": 100}, call_id="c")
    assert isinstance(listed.content, list)  # its own limit, not the worker's


async def test_text_that_is_not_utf8_is_escaped_and_a_journaled_run_goes_on(
    tmp_path: Path,
) -> None:
    @tool
    def listing(n: int) -> dict[str, str]:
        """A directory listing with an undecodable name."""
        return {"name": b"caf\xe9.txt".decode("utf-8", "surrogateescape")}

    model, seen = _calls("listing", 1)
    worker = Worker(name="w", description="lists", model=model, tools=[listing])
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    result = await team.run("list", journal=tmp_path / "runs.db")
    assert result.status == "completed"
    (read,) = seen  # run once: the step did not fail and replan
    assert read.content == '{"name":"caf\\\\udce9.txt"}'
    read.content.encode("utf-8")  # a provider can send it


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "100"])
def test_a_limit_that_is_not_a_whole_number_of_characters_is_refused(value: object) -> None:
    with pytest.raises(ConfigError, match="max_result_chars must be a whole number"):
        Tool(dump, max_result_chars=value)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_result_chars must be a whole number"):
        Toolset("w", [dump], max_result_chars=value)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_tool_result_chars must be a whole number >= 1"):
        Worker(name="w", description="d", model=ScriptedModel([]), max_tool_result_chars=value)  # type: ignore[arg-type]


async def test_nan_and_infinities_are_strings_so_the_journal_holds_what_the_model_read(
    tmp_path: Path,
) -> None:
    # The model read NaN, the journal held null: a resumed run replayed another result.
    @tool
    def ratios(n: int) -> dict[str, float]:
        """Ratios, some undefined."""
        return {"a": float("nan"), "b": float("inf"), "c": 0.5}

    model, seen = _calls("ratios", 1)
    worker = Worker(name="w", description="divides", model=model, tools=[ratios])
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    result = await team.run("divide", journal=tmp_path / "runs.db")
    (read,) = seen
    assert read.content == '{"a":"NaN","b":"Infinity","c":0.5}'
    journal = await SqliteJournal.open(tmp_path / "runs.db")
    try:
        records = [entry.record for entry in await journal.read(result.run_id)]
    finally:
        await journal.close()
    (finished,) = [r for r in records if isinstance(r, ToolCallFinished)]
    assert finished.result.text == read.content


def test_a_sets_own_limit_survives_being_merged_into_a_worker() -> None:
    model = ScriptedModel([])
    reading = Toolset("reading", [rows], max_result_chars=500)
    worker = Worker(name="w", description="d", model=model, tools=[Tool(dump), reading])
    assert worker.toolset.max_result_chars == 500
    assert (Toolset("a", [dump]) | reading).max_result_chars == 500
    assert Toolset("a", [dump], max_result_chars=7).merged(reading).max_result_chars == 7
    assert reading.filtered(["rows"]).prefixed("r_").max_result_chars == 500


async def test_a_long_error_is_whole_for_the_model_and_short_in_log_and_progress_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The model reads a failed call's whole message (up to its limit); ``regiment run``'s
    progress line gives its start and length (before, it printed all of it: up to 100,000
    characters on one line), and the WARNING on ``regiment.worker`` its type alone."""
    model, seen = _calls("fails", 20_000)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="fails", model=model, tools=[Tool(fails)])],
    )
    with caplog.at_level(logging.WARNING, logger="regiment.worker"):
        result = await team.run("fail")
    (read,) = seen
    assert read.content == "ValueError: " + "E" * 20_000  # under the default limit: whole
    (record,) = [r for r in caplog.records if r.name == "regiment.worker"]
    assert record.getMessage() == "w s1: fails failed: ValueError"  # its type, not its text
    (failed,) = [e for e in result.events if isinstance(e, ToolFailed)]
    assert failed.message == read.content
    line = tool_failure_line(failed)
    assert line.startswith("w s1: fails failed: ValueError: EEE")
    assert line.endswith("... (20,012 characters in all)")
    assert len(line) < 1_000

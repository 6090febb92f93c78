"""Team files that nest other team files as workers: runs, formats, cycles and mistakes."""

from __future__ import annotations

import io
import sys
import textwrap
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from regiment.cli import run_async
from regiment.config import build_team, check_config, load_team, team_files
from regiment.errors import ConfigError
from regiment.hierarchy import TeamConfig, TeamWorker, Worker, WorkerConfig, load_config
from regiment.models import ScriptedModel
from regiment.telemetry import SpanCollector, Telemetry

BRAINS = """
import json

from regiment.models import ModelRequest, TextPart

CHILD_PLANS: list[str] = []


def _first(request: ModelRequest) -> str:
    return "".join(p.text for p in request.messages[0].parts if isinstance(p, TextPart))


def parent(request: ModelRequest) -> str:
    if request.role in ("planner", "replanner"):
        return json.dumps({"steps": [
            {"id": "s1", "description": "find the number", "worker": "research"},
            {"id": "s2", "description": "write it up", "worker": "writer", "depends_on": ["s1"]},
        ]})
    if request.role == "worker":
        return "wrote: " + _first(request).split("- s1: ")[1].splitlines()[0]
    return "parent answer"


def child(request: ModelRequest) -> str:
    if request.role in ("planner", "replanner"):
        CHILD_PLANS.append(_first(request))
        return json.dumps({"steps": [{"id": "s1", "description": "dig", "worker": "digger"}]})
    if request.role == "worker":
        return "the number is 42"
    return "child says 42"
"""

PARENT_TOML = """
name = "parent"
brain = "{brains}:parent"

[[workers]]
name = "research"
description = "Finds facts."
team = "{child}"

[[workers]]
name = "writer"
description = "Writes things up."
"""

PARENT_YAML = """
name: parent
brain: "{brains}:parent"
workers:
  - name: research
    description: Finds facts.
    team: {child}
  - name: writer
    description: Writes things up.
"""

CHILD_TOML = """
name = "research-team"
brain = "{brains}:child"

[[workers]]
name = "digger"
description = "Digs up facts."
"""


@pytest.fixture
def brains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of a fresh module of brains in ``tmp_path`` (unique: modules are cached)."""
    module = f"nested_brains_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(BRAINS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return module


def _write(path: Path, text: str, **fields: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).format(**fields), encoding="utf-8")
    return path


def _tracing() -> tuple[Telemetry, TracerProvider, SpanCollector]:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    return Telemetry(provider), provider, collector


def _one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def _error(make: Callable[[], object]) -> str:
    with pytest.raises(ConfigError) as caught:
        make()
    return str(caught.value)


@pytest.mark.anyio
@pytest.mark.parametrize("parent_format", ["toml", "yaml"])
async def test_a_nested_team_file_runs_under_the_parents_step(
    tmp_path: Path, brains: str, parent_format: str
) -> None:
    # The child sits in a subdirectory: its path is relative to the parent file.
    _write(tmp_path / "teams" / "research.toml", CHILD_TOML, brains=brains)
    text = PARENT_TOML if parent_format == "toml" else PARENT_YAML
    parent = _write(
        tmp_path / f"parent.{parent_format}", text, brains=brains, child="teams/research.toml"
    )
    telemetry, provider, collector = _tracing()

    team = load_team(parent, model="scripted", telemetry=telemetry)
    research = team.workers[0]
    assert isinstance(research, TeamWorker)
    assert research.team.name == "research-team"
    assert research.capabilities == ("digger",)
    result = await team.run("report the number")

    assert result.status == "completed"
    assert result.committed == ("s1", "s2")
    assert result.output_of("s1") == "child says 42"  # the child run's answer is the step's output
    assert result.output_of("s2") == "wrote: child says 42"
    assert result.answer == "parent answer"
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    assert s1.worker == "research"
    assert s1.model_calls == 3  # the child's plan, its digger, its synthesis
    assert result.model_calls == 1 + 3 + 1 + 1
    # The child was given the parent's step, and its run is a child of that step's span.
    child_plans: list[str] = sys.modules[brains].CHILD_PLANS
    assert len(child_plans) == 1
    assert "find the number" in child_plans[0]
    assert "This is step s1 of a plan by team 'parent'" in child_plans[0]
    provider.shutdown()
    spans = collector.spans()
    step_span = _one(spans, "invoke_agent research")
    child_root = _one(spans, "invoke_agent research-team")
    assert child_root.parent is not None
    assert child_root.parent.span_id == step_span.context.span_id
    assert len({s.context.trace_id for s in spans}) == 1


def test_a_model_override_reaches_the_nested_team(tmp_path: Path, brains: str) -> None:
    # Both files want Claude; "scripted" puts each on its own brain, a Model on that model.
    claude = 'model = "anthropic:claude-sonnet-4-5"\n'
    _write(tmp_path / "research.toml", claude + CHILD_TOML, brains=brains)
    parent = _write(
        tmp_path / "parent.toml", claude + PARENT_TOML, brains=brains, child="research.toml"
    )
    team = load_team(parent, model="scripted")
    research = team.workers[0]
    assert isinstance(research, TeamWorker)
    writer, digger = team.workers[1], research.team.workers[0]
    assert isinstance(writer, Worker)
    assert isinstance(digger, Worker)
    assert type(writer.model).__name__ == type(digger.model).__name__ == "ScriptedModel"
    assert writer.model is not digger.model  # each file's own brain

    # A ready Model is every role's, at every level; validate checks both files' brains.
    model = ScriptedModel(["unused"])
    shared = load_team(parent, model=model)
    nested = shared.workers[0]
    assert isinstance(nested, TeamWorker)
    assert nested.team.planner.model is shared.planner.model is model
    checked = check_config(load_config(parent), source=str(parent))
    assert isinstance(checked.workers[0], TeamWorker)


def test_a_file_that_includes_itself_is_refused_with_the_chain(tmp_path: Path, brains: str) -> None:
    loop = _write(tmp_path / "loop.toml", PARENT_TOML, brains=brains, child="loop.toml")
    message = _error(lambda: load_team(loop, model="scripted"))
    assert f"{loop}: workers[0].team: 'loop.toml' makes a team contain itself" in message
    assert f"{loop} -> {loop};" in message
    assert "remove one of these entries" in message


def test_a_two_file_cycle_is_refused_with_the_chain(tmp_path: Path, brains: str) -> None:
    a = _write(tmp_path / "a.toml", PARENT_TOML, brains=brains, child="sub/b.yaml")
    b = _write(tmp_path / "sub" / "b.yaml", PARENT_YAML, brains=brains, child="../a.toml")
    message = _error(lambda: load_team(a, model="scripted"))
    back = tmp_path / "sub" / ".." / "a.toml"  # named as the including file wrote it
    assert f"{b}: workers[0].team: '../a.toml' makes a team contain itself" in message
    assert f"{a} -> {b} -> {back};" in message
    # validate goes through the same loader.
    assert "makes a team contain itself" in _error(
        lambda: check_config(load_config(a), source=str(a))
    )


def test_the_same_file_twice_side_by_side_is_not_a_cycle(tmp_path: Path, brains: str) -> None:
    _write(tmp_path / "research.toml", CHILD_TOML, brains=brains)
    parent = _write(
        tmp_path / "parent.toml",
        PARENT_TOML
        + '\n[[workers]]\nname = "again"\ndescription = "Also finds."\nteam = "research.toml"\n',
        brains=brains,
        child="research.toml",
    )
    team = load_team(parent, model="scripted")
    first, second = team.workers[0], team.workers[2]
    assert isinstance(first, TeamWorker)
    assert isinstance(second, TeamWorker)
    assert first.team is not second.team


def test_a_missing_nested_file_names_the_parent_and_the_path(tmp_path: Path, brains: str) -> None:
    parent = _write(tmp_path / "parent.toml", PARENT_TOML, brains=brains, child="nope.toml")
    message = _error(lambda: load_team(parent))
    assert message.startswith(
        f"{parent}: workers[0].team: the team file '{tmp_path / 'nope.toml'}' does not exist"
    )
    assert "fix the path or create the file" in message


@pytest.mark.parametrize(("line", "wanted"), [("", None), ("step_timeout = 600", 600.0)])
def test_a_nested_team_s_step_timeout_is_none_unless_the_file_gives_one(
    tmp_path: Path, brains: str, line: str, wanted: float | None
) -> None:
    """Not the 300 s of a model-backed worker's entry: as ``TeamWorker``'s in code."""
    _write(tmp_path / "research.toml", CHILD_TOML, brains=brains)
    text = PARENT_TOML.replace('team = "{child}"', f'team = "{{child}}"\n{line}')
    parent = _write(tmp_path / "parent.toml", text, brains=brains, child="research.toml")
    research, writer = load_team(parent, model="scripted").workers
    assert isinstance(research, TeamWorker)
    assert research.step_timeout == wanted
    assert isinstance(writer, Worker)
    assert writer.step_timeout == 300.0
    if line:  # and a value out of range names its key, as a worker's does
        bad = text.replace(line, "step_timeout = -1")
        path = _write(tmp_path / "bad.toml", bad, brains=brains, child="research.toml")
        assert "workers[0].step_timeout" in _error(lambda: load_team(path, model="scripted"))


@pytest.mark.parametrize("given", [None, 300.0])
def test_a_nested_team_entry_built_in_python_has_no_step_timeout_unless_given_one(
    tmp_path: Path, brains: str, given: float | None
) -> None:
    """``WorkerConfig(team=...)`` in code had the 300 s of a model-backed worker's entry,
    where the same entry in a file (and ``TeamWorker``) has none: one team, two limits."""
    _write(tmp_path / "research.toml", CHILD_TOML, brains=brains)
    parent = _write(tmp_path / "parent.toml", PARENT_TOML, brains=brains, child="research.toml")
    keys = {"name": "research", "description": "finds", "team": "research.toml"}
    built = (
        WorkerConfig(name="research", description="finds", team="research.toml")
        if given is None
        else WorkerConfig(
            name="research", description="finds", team="research.toml", step_timeout=given
        )
    )
    decoded = msgspec.convert(
        keys if given is None else {**keys, "step_timeout": given}, WorkerConfig
    )
    assert (built.step_timeout, decoded.step_timeout) == (given, given)
    from_file = load_config(parent)
    config = msgspec.structs.replace(from_file, workers=(built, *from_file.workers[1:]))
    research, writer = build_team(config, model="scripted", source=str(parent)).workers
    assert isinstance(research, TeamWorker)
    assert research.step_timeout == given
    assert isinstance(writer, Worker)
    assert writer.step_timeout == 300.0
    assert WorkerConfig(name="w", description="d").step_timeout == 300.0  # as Worker's


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('model = "scripted"', "model"),
        ("max_iterations = 8", "max_iterations"),  # even at its default value
        ('tools = ["x:y"]', "tools"),
    ],
)
def test_team_with_a_model_only_key_is_refused(
    tmp_path: Path, brains: str, line: str, key: str
) -> None:
    _write(tmp_path / "research.toml", CHILD_TOML, brains=brains)
    text = PARENT_TOML.replace('team = "{child}"', f'team = "{{child}}"\n{line}')
    parent = _write(tmp_path / "parent.toml", text, brains=brains, child="research.toml")
    message = _error(lambda: load_team(parent, model="scripted"))
    assert message.startswith(f"{parent}: workers[0].{key}: a worker with team = 'research.toml'")
    assert f"takes no '{key}'" in message
    assert "remove 'team'" in message


def test_a_config_made_in_python_is_checked_the_same_way(tmp_path: Path, brains: str) -> None:
    _write(tmp_path / "research.toml", CHILD_TOML, brains=brains)
    entry = WorkerConfig(name="r", description="d", team="research.toml", max_iterations=3)
    message = _error(
        lambda: build_team(TeamConfig(name="t", workers=(entry,)), source=str(tmp_path / "p.toml"))
    )
    assert "workers[0].max_iterations: a worker with team = 'research.toml'" in message


def test_a_typo_in_the_nested_file_names_that_file_and_the_key(tmp_path: Path, brains: str) -> None:
    child = _write(
        tmp_path / "research.toml",
        CHILD_TOML.replace('name = "digger"', 'name = "digger"\nmax_iteration = 3'),
        brains=brains,
    )
    parent = _write(tmp_path / "parent.toml", PARENT_TOML, brains=brains, child="research.toml")
    message = _error(lambda: load_team(parent, model="scripted"))
    assert message == (
        f"{child}: workers[0]: unknown key `max_iteration =` (did you mean `max_iterations =`?) "
        f"(the team file named by {parent}: workers[0].team = 'research.toml')"
    )


@pytest.mark.anyio
async def test_validate_reports_the_nested_files_problems(
    tmp_path: Path, brains: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds --app-dir to it
    child = _write(tmp_path / "research.toml", CHILD_TOML, brains=brains)
    parent = _write(tmp_path / "parent.toml", PARENT_TOML, brains=brains, child="research.toml")

    out, err = io.StringIO(), io.StringIO()
    assert await run_async(["validate", str(parent)], stdout=out, stderr=err) == 0, err.getvalue()
    assert "worker research: team file research.toml; digger" in out.getvalue()

    # The child's brain cannot be imported: validate says so, naming the child file.
    _write(child, CHILD_TOML, brains=brains + "_missing")
    out, err = io.StringIO(), io.StringIO()
    assert await run_async(["validate", str(parent)], stdout=out, stderr=err) == 2
    assert f"regiment: error: {child}:3: brain: cannot import" in err.getvalue()


CHILD_ON_CLAUDE_TOML = """
name = "research-team"
model = "anthropic:claude-sonnet-4-5"
brain = "{brains}:child"

[[workers]]
name = "digger"
description = "Digs up facts."
"""


def test_team_files_lists_the_tree_outermost_first(tmp_path: Path, brains: str) -> None:
    child = _write(tmp_path / "teams" / "research.toml", CHILD_TOML, brains=brains)
    parent = _write(
        tmp_path / "parent.toml", PARENT_TOML, brains=brains, child="teams/research.toml"
    )
    files = team_files(load_config(parent), source=str(parent))
    assert [name for name, _ in files] == [str(parent), str(child)]
    assert [config.name for _, config in files] == ["parent", "research-team"]


@pytest.mark.anyio
async def test_without_a_key_a_nested_file_that_wants_claude_runs_on_its_brain(
    tmp_path: Path, brains: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds --app-dir to it
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # the SDK reads the real environment
    child = _write(tmp_path / "research.toml", CHILD_ON_CLAUDE_TOML, brains=brains)
    parent = _write(tmp_path / "parent.toml", PARENT_TOML, brains=brains, child="research.toml")

    out, err = io.StringIO(), io.StringIO()
    environ = {"REGIMENT_JOURNAL": str(tmp_path / "journal.db")}  # not the repository's
    code = await run_async(
        ["run", str(parent), "the number"], stdout=out, stderr=err, environ=environ
    )
    assert code == 0, err.getvalue()
    assert out.getvalue().startswith("parent answer")
    (note,) = [line for line in err.getvalue().splitlines() if "ANTHROPIC_API_KEY" in line]
    assert f"{parent}: {brains}:parent" in note
    assert f"{child}: {brains}:child" in note


@pytest.mark.anyio
async def test_without_a_key_the_fallback_needs_a_brain_in_every_file(
    tmp_path: Path, brains: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    no_brain = CHILD_ON_CLAUDE_TOML.replace('brain = "{brains}:child"\n', "")
    _write(tmp_path / "research.toml", no_brain, brains=brains)
    parent = _write(tmp_path / "parent.toml", PARENT_TOML, brains=brains, child="research.toml")

    out, err = io.StringIO(), io.StringIO()
    environ = {"REGIMENT_JOURNAL": str(tmp_path / "journal.db")}  # not the repository's
    code = await run_async(
        ["run", str(parent), "the number"], stdout=out, stderr=err, environ=environ
    )
    assert code != 0
    assert "ANTHROPIC_API_KEY" in err.getvalue()  # the error says what is missing
    assert "running offline" not in err.getvalue()

"""``import regiment`` loads what a run needs and nothing heavier (issue #22).

The SDKs and file formats a program may never use (model providers, the
OpenTelemetry SDK and its exporters, pydantic, TOML, SQL, YAML, rich, the web
and MCP servers) load on first use. Each check runs in a fresh interpreter, so
what this test process already imported cannot hide a regression.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fresh_interpreter import modules_after

# Top-level modules (or dotted prefixes) that `import regiment` must not load.
HEAVY = (
    "anthropic",
    "openai",
    "httpx",
    "opentelemetry.sdk",
    "opentelemetry.exporter",
    "pydantic",
    "pydantic_core",
    "yaml",
    "rich",
    "starlette",
    "uvicorn",
    "psycopg",
    "mcp",
    "sqlite3",
    "tomllib",
    "importlib.metadata",
    "secrets",
    "hmac",
    "hashlib",
    "socket",
)


_VALIDATE_NEEDS = (
    "pydantic",
    "tomllib",
    "importlib.metadata",
    "socket",
    "secrets",
    "hmac",
    "hashlib",
)


def _loaded_after(code: str) -> set[str]:
    return modules_after(code)[0]


def _heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules for h in HEAVY if m == h or m.startswith(h + "."))


def test_import_regiment_loads_no_room() -> None:
    loaded = _loaded_after("import regiment")
    assert "regiment.errors" in loaded
    rooms = sorted(m for m in loaded if m.startswith("regiment.") and m != "regiment.errors")
    assert rooms == [
        "regiment._lazy",
        "regiment._log_records",
        "regiment._version",
    ]  # all stdlib-only
    assert [m for m in loaded if m.split(".")[0] in ("anyio", "msgspec", "opentelemetry")] == []


def test_a_program_using_a_team_loads_no_heavy_module() -> None:
    loaded = _loaded_after(
        "from regiment import Team, Worker, ScriptedModel, Telemetry, Budget, Check, Toolset"
    )
    assert "regiment.hierarchy._team" in loaded
    assert _heavy_in(loaded) == []


def test_every_root_name_is_the_rooms_object() -> None:
    code = (
        "import importlib, regiment\n"
        "for name in regiment.__all__:\n"
        "    value = getattr(regiment, name)\n"
        "    assert name in dir(regiment), name\n"
        "    room = getattr(value, '__module__', 'regiment')\n"
        "    if room.startswith('regiment.') and not name.startswith('__'):\n"
        "        public = '.'.join(p for p in room.split('.') if not p.startswith('_'))\n"
        "        owner = importlib.import_module(public if public != 'regiment' else room)\n"
        "        assert getattr(owner, name, value) is value, name\n"
    )
    _loaded_after(code)


# What `from regiment import Team, Worker, ScriptedModel` must not load (issue #22): the
# run engine loads when a team starts, the journal's backends with a journal, the MCP
# client with an MCP server, the nested-team worker with a TeamWorker, the @tool
# decorator, the built-in guardrails and the JSON forms of results with their names.
NOT_WITH_A_TEAM = (
    "regiment.hierarchy._running",
    "regiment.hierarchy._supervisor",
    "regiment.hierarchy._approving",
    "regiment.hierarchy._json_io",
    "regiment.hierarchy.run._actor",
    "regiment.hierarchy.run._book",
    "regiment.hierarchy.run._phase",
    "regiment.hierarchy.run._resume",
    "regiment.hierarchy.run._session",
    "regiment.hierarchy.run._structured",
    "regiment.hierarchy.workers._team_worker",
    "regiment.hierarchy.guard._builtin",
    "regiment.journal._open",
    "regiment.journal._memory",
    "regiment.journal._buffered",
    "regiment.tools._decorator",
    "regiment.tools._mcp_connection",
    "regiment.tools._mcp_server",
)
_ONE_RUN = """
import anyio
from regiment import Planner, ScriptedModel, Team, Worker, text_response

def brain(request):
    if request.role == "planner":
        return '{"steps": [{"description": "say hi"}]}'
    return text_response("hi")

model = ScriptedModel(brain)
team = Team(name="t", planner=Planner(model=model), workers=[Worker(name="w", description="greets", model=model)])
assert anyio.run(team.run, "greet").answer == "hi"
"""


def test_a_team_loads_without_the_run_engine() -> None:
    loaded = _loaded_after("from regiment import Team, Worker, ScriptedModel")
    assert "regiment.hierarchy.workers._worker" in loaded
    assert [m for m in NOT_WITH_A_TEAM if m in loaded] == []


def test_a_run_loads_the_engine_but_no_journal_or_mcp_client() -> None:
    loaded = _loaded_after(_ONE_RUN)
    assert {"regiment.hierarchy._running", "regiment.hierarchy.run._actor"} <= loaded
    unused = (
        "regiment.journal._memory",
        "regiment.journal._open",
        "regiment.tools._mcp_connection",
    )
    assert [m for m in unused if m in loaded] == []


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("from regiment import configure_tracing", "opentelemetry.sdk.trace"),
        ("from regiment import load_team", "tomllib"),
        ("from regiment import TeamConfig", "regiment.config._schema"),
        ("from regiment.telemetry import SpanCollector", "opentelemetry.sdk.trace"),
        ("from regiment.journal import SqliteJournal", "sqlite3"),
        ("from regiment.journal import PostgresJournal", "regiment.journal._sql"),
        ("from regiment import tool\n@tool\ndef f(x: int) -> int:\n    return x", "pydantic"),
    ],
)
def test_a_lazy_name_loads_its_module_on_first_use(code: str, expected: str) -> None:
    assert expected in _loaded_after(code)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("regiment", "configure_tracing"),
        ("regiment", "load_team"),
        ("regiment", "TeamConfig"),
        ("regiment.telemetry", "TracingHandle"),
        ("regiment.telemetry", "render_trace"),
        ("regiment.telemetry", "spans_to_otlp_json"),
        ("regiment.journal", "SqliteJournal"),
    ],
)
def test_a_lazy_name_is_the_real_object(module: str, name: str) -> None:
    code = (
        f"import {module} as m\n"
        f"v = getattr(m, {name!r})\n"
        "assert v.__name__ == " + repr(name) + ", v\n"
        "assert v.__module__.startswith('regiment.'), v.__module__"
    )
    _loaded_after(code)


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    code = (
        "import regiment, regiment.telemetry, regiment.journal\n"
        "for m in (regiment, regiment.telemetry, regiment.journal):\n"
        "    try:\n"
        "        m.no_such_name\n"
        "    except AttributeError as exc:\n"
        "        assert 'no_such_name' in str(exc)\n"
        "    else:\n"
        "        raise SystemExit(f'{m.__name__}.no_such_name did not raise')"
    )
    _loaded_after(code)


def test_validate_loads_neither_the_tracing_sdk_nor_a_provider_sdk() -> None:
    # The example's tools need pydantic (their schemas are checked; pydantic itself
    # loads importlib.metadata for its plugins, and secrets and socket through
    # pydantic.types and email.utils; hashlib through hmac), the team file tomllib.
    # No event loop runs.
    team_file = Path(__file__).resolve().parents[1] / "examples" / "refund" / "team.toml"
    code = (
        "from regiment.cli import main\n"
        "try:\n"
        f"    main(['validate', {str(team_file)!r}])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
    )
    loaded = _loaded_after(code)
    assert "regiment.config._build" in loaded
    assert sorted(m for m in loaded if m.startswith(("asyncio", "anyio._backends", "ssl"))) == []
    assert [m for m in _heavy_in(loaded) if not m.startswith(_VALIDATE_NEEDS)] == []


_METRICS_AND_LOGS_APIS = ("opentelemetry.metrics", "opentelemetry._logs")


def test_a_run_loads_neither_the_metrics_nor_the_logs_api() -> None:
    # Any name of regiment.telemetry loaded OpenTelemetry's metrics and logs APIs (~5 ms),
    # though a run records metrics only for an installed meter provider and exports
    # logs only with configure_tracing(logs=True).
    loaded = _loaded_after(_ONE_RUN)
    assert "regiment.telemetry._telemetry" in loaded
    assert sorted(m for m in loaded if m.startswith(_METRICS_AND_LOGS_APIS)) == []


@pytest.mark.parametrize(
    "install",
    [
        "from opentelemetry import metrics\n"
        "from opentelemetry.sdk.metrics import MeterProvider\n"
        "metrics.set_meter_provider(MeterProvider())\n",
        # The API makes the global provider from this variable on first use.
        "import os\nos.environ['OTEL_PYTHON_METER_PROVIDER'] = 'sdk_meter_provider'\n",
    ],
    ids=["set_meter_provider", "environment"],
)
def test_a_global_meter_provider_is_still_found(install: str) -> None:
    code = f"{install}from regiment import Telemetry\nassert Telemetry().metrics is not None\n"
    assert "opentelemetry.metrics" in _loaded_after(code)

"""Every async test runs on both anyio backends; ``wire`` and ``api`` put a test on each
provider's wire over the HTTP stand-in (tests/models/wires.py)."""

from __future__ import annotations

import gc
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from pg_server import PostgresServer

    from tests.models.standin import StandIn
    from tests.models.wires import Wire

# bench/ holds the tests' PostgreSQL server (pg_server.py) and the crash tortures' children.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

# CI loads Hypothesis' own "ci" profile (.ci/run sets CI): no deadline, too_slow not
# checked, examples derandomized. Elsewhere the default profile's 200 ms deadline and its
# too_slow check can fail tests by chance on a loaded machine (`make test` runs up to four
# workers): those two are as on CI here too; the examples stay random.
if settings.get_current_profile_name() == "default":
    settings.register_profile(
        "regiment", deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("regiment")

# The keys of tests/models/wires.py's WIRES, which is imported on first use: it loads the
# providers' SDKs, which most tests never need (test_providers checks the two agree).
WIRE_NAMES = ("anthropic", "openai")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "jump_clock: runs on a clock the test moves on (tests/jump_clock.py)"
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    _heap_frozen()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if gc.get_freeze_count() == 0:  # a test thawed it (gc.unfreeze() thaws everything)
        _heap_frozen()


def _heap_frozen() -> None:
    """What the worker holds once it has imported every test module (the SDKs, ~600,000
    objects) is moved out of the collector's sight (``gc.freeze()``): each full collection
    walked all of it again, a quarter of a worker's time (tests/hierarchy and tests/actors
    in one process: 253 s of 434 s in collections). Only what the tests make is collected
    and seen by ``gc.get_objects()``, which the leak tests count."""
    gc.collect()
    gc.freeze()


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str | tuple[str, dict[str, Any]]:
    if request.node.get_closest_marker("jump_clock") is None:
        return str(request.param)
    from tests.jump_clock import backend_options

    return str(request.param), backend_options(str(request.param))


@pytest.fixture(autouse=True)
def _half_read_bodies_collected(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that breaks a provider's stream on purpose (``half_read_body``) leaves the
    SDK's half-read body generators in reference cycles. Collected later, in another
    test, trio warns there about them; so they are collected here, under this test's
    own warning filters. Only what the test made is looked at: what was there before
    is frozen meanwhile (a full collection of a worker's whole heap took 1-4 s a test
    on a loaded machine)."""
    marks = request.node.iter_markers("filterwarnings")
    if not any("Async generator 'anthropic." in str(arg) for mark in marks for arg in mark.args):
        yield
        return
    gc.freeze()
    try:
        yield
        gc.collect()
    finally:
        gc.unfreeze()


# Where a CLI run journals by default (``.regiment/journal.db`` under the working
# directory): a test that runs the CLI in-process or as a child from the repository must
# give it a journal of its own (``$REGIMENT_JOURNAL`` in tmp_path, or ``--no-journal``).
REPO_JOURNAL_DIR = Path(__file__).resolve().parent.parent / ".regiment"


@pytest.fixture(autouse=True)
def _no_journal_left_in_the_repository() -> Iterator[None]:
    """Fails the test after which a ``.regiment/`` appeared in the repository: its runs
    shared one journal with every other test (and the developer's own runs) there. One
    that was there before the test (a developer's own) is left alone."""
    there_before = REPO_JOURNAL_DIR.exists()
    yield
    if not there_before and REPO_JOURNAL_DIR.exists():
        pytest.fail(
            f"{REPO_JOURNAL_DIR} appeared during this test (or one running beside it): "
            "give the CLI a journal in tmp_path ($REGIMENT_JOURNAL) or --no-journal",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session (initdb + pg_ctl in a temporary
    directory, see ``bench/pg_server.py``), whichever directory's tests ask for it: made
    here, not imported into each test module (each import was a fixture of its own, and
    started a server of its own, 5-9 s). Missing server binaries fail the fixture with an
    install hint: the suite never skips PostgreSQL silently."""
    from pg_server import PostgresServer, alive

    try:
        server = PostgresServer(fsync=False)
    except FileNotFoundError as exc:
        pytest.fail(str(exc))
    try:
        server.start()
        yield server
    finally:
        server.stop()
        assert server.pid is None or not alive(server.pid), "the postmaster outlived its fixture"


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """An empty schema of its own on the session's server (first on the search path)."""
    import psycopg

    schema = f"journal_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"'.encode())
    return f"{postgres_server.url}?options=-csearch_path%3D{schema}"


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A local port that refuses every connection for the test's length: bound, never
    listened on. A port bound and closed again (the old way) could meanwhile be taken by
    another test's server (the other xdist worker, a Ray node), or be picked as a
    connection's own source port and connect to itself: held bound, it can be neither."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.fixture(params=WIRE_NAMES)
def wire(request: pytest.FixtureRequest) -> Wire:
    """Each provider's wire in turn (the test runs once per provider)."""
    from tests.models.wires import WIRES

    return WIRES[request.param]


@pytest.fixture
async def api(wire: Wire) -> AsyncIterator[StandIn]:
    """``wire``'s stand-in on a free local port, for the test's length; a call with no reply
    queued gets a 500 that is not retried."""
    from tests.models.standin import serve

    async for server in serve(wire.no_reply):
        yield server


# The Ray tests are two units, each run whole by one worker, which starts one local Ray for
# them (tests/ray/conftest.py): these files, and the other Ray files. Split by their seconds
# summed (--durations, -n 0, load ~20, Dec 2026): 802 s and 805 s. One unit of all of them was
# the run's longest path: its worker waited on Ray (restarts, lost replicas) for most of the run.
RAY_SECOND = frozenset(
    f"tests/ray/test_ray_{name}.py"
    for name in [
        "approve_ask",
        "cancel",
        "cut_chain",
        "guards",
        "imports",
        "journal_money",
        "load",
        "lost_in_flight",
        "mcp",
        "mcp_lost",
        "pool",
        "refund",
        "restarting",
        "serve_sigterm",
        "start_cancel",
        "stdout",
        "team_file",
        "trace",
        "two_nodes",
        "unimportable",
    ]
)
RAY_UNITS = ("tests/ray", "tests/ray, second half")

# The files that take longest under ``make test``: handed out first, so none of them starts
# last and leaves the other worker idle at the end of the run. After them, the other files
# go out largest first (by their number of tests). The seconds are a file's tests summed
# (--durations, -n 2, Dec 2026, a 2-core machine at load 10-22: two to four times a quiet one's);
# the two ``RAY_UNITS`` (``work_unit``) go first. A file
# named here that no longer exists fails tests/test_heavy_first.py. Figures marked est.
# are the old ones scaled by a before/after measurement of that file's change; the heap's
# freeze (``_heap_frozen``) shortens in-process files, which were not measured again.
HEAVY_FIRST = (
    *RAY_UNITS,
    "tests/mcp_tools/test_mcp_stdio_stop.py",  # 276 s, 17 tests (est.: 2 of 19 merged)
    "tests/mcp_tools/test_mcp_tools.py",  # 183 s, 49 tests (est.: 2 starts merged, gc)
    "tests/mcp_tools/test_mcp_team.py",  # 130 s, 30 tests
    "tests/mcp_tools/test_mcp_serve_cancel.py",  # 95 s, 4 tests
    "tests/journal/test_served_takeover.py",  # 89 s, 4 tests
    "tests/examples/test_examples.py",  # 88 s, 22 tests
    "tests/journal/test_crash_torture.py",  # 86 s, 3 tests
    "tests/journal/test_crash_serve.py",  # 86 s, 3 tests
    "tests/telemetry/test_interrupted_spans.py",  # 84 s, 6 tests (est.: asyncio only)
    "tests/journal/test_crash_resume.py",  # 70 s, 24 tests
    "tests/journal/test_nested_resume.py",  # 64 s, 18 tests
    "tests/models/test_providers.py",  # 59 s, 213 tests
    "tests/hierarchy/test_run_cycles.py",  # 57 s, 8 tests
    "tests/cli/test_plain_install.py",  # 56 s, 8 tests (est.: pip --no-compile)
    "tests/journal/test_crash_in_flight.py",  # 55 s, 15 tests
    "tests/mcp_tools/test_mcp_server_logs.py",  # 52 s, 20 tests
    "tests/cli/test_output_unwritten.py",  # 51 s, 9 tests
    "tests/mcp_tools/test_mcp_client_spans.py",  # 50 s, 12 tests
    "tests/cli/test_interrupt.py",  # 50 s, 20 tests
    "tests/hierarchy/test_plan_garbage.py",  # 50 s, 7 tests
    "tests/telemetry/test_crash_trace.py",  # 49 s, 3 tests (est.: asyncio only)
    "tests/mcp_tools/test_mcp_content.py",  # 49 s, 14 tests
    "tests/mcp_tools/test_mcp_http_stop.py",  # 47 s, 3 tests
    "tests/serve/test_sigterm.py",  # 47 s, 7 tests
    "tests/test_import_cost.py",  # 45 s, 24 tests
    "tests/journal/test_approvals_processes.py",  # 45 s, 2 tests
    "tests/cli/test_mcp_start_line.py",  # 43 s, 2 tests
    "tests/journal/test_resume.py",  # 42 s, 21 tests
    "tests/journal/test_resume_trace.py",  # 42 s, 5 tests
    "tests/cli/test_usage_before_notes.py",  # 42 s, 6 tests
    "tests/cli/test_interrupt_waits.py",  # 40 s, 3 tests
    "tests/test_public_structs.py",  # 36 s, 1 tests
    "tests/mcp_tools/test_mcp_http_auth.py",  # 36 s, 6 tests (est.: 6 -> 3 servers)
    "tests/serve/test_follow_elsewhere.py",  # 35 s, 8 tests (one process, load 2)
    "tests/cli/test_answer_unwritten.py",  # 34 s, 5 tests
    "tests/cli/test_show_ends.py",  # 33 s, 5 tests
    "tests/test_readme.py",  # 33 s, 10 tests
    "tests/mcp_tools/test_mcp_team_env.py",  # 32 s, 10 tests
    "tests/mcp_tools/test_mcp_serve.py",  # 31 s, 4 tests
    "tests/mcp_tools/test_mcp_approvals.py",  # 30 s, 7 tests
    "tests/cli/test_resume_events_file.py",  # 30 s, 6 tests
    "tests/mcp_tools/test_mcp_http_client_gone.py",  # 30 s, 2 tests
    "tests/hierarchy/test_approval_memory.py",  # 29 s, 8 tests
    "tests/tools/test_validation.py",  # 29 s, 24 tests
    "tests/cli/test_broken_pipe.py",  # 28 s, 6 tests
    "tests/actors/test_retired_cells.py",  # 27 s, 4 tests
    "tests/cli/test_resume_by_id.py",  # 27 s, 9 tests
    "tests/mcp_tools/test_mcp_example.py",  # 27 s, 2 tests
    "tests/serve/test_cancel_decided.py",  # 27 s, 9 tests
    "tests/mcp_tools/test_mcp_server_logs_rest.py",  # 26 s, 6 tests
    "tests/cli/test_broken_team_files.py",  # 26 s, 6 tests
    "tests/journal/test_crash_in_flight_asks.py",  # 26 s, 5 tests
    "tests/serve/test_follow_journal_down.py",  # 17 s, 1 test (one process, load 2)
    "tests/cli/test_service_journal.py",  # 14 s, 9 tests
)


def work_unit(nodeid: str) -> str:
    """What one xdist worker runs whole: the test's file, or one of ``RAY_UNITS`` for a Ray
    test (each starts one local Ray for its tests, not one per test file)."""
    path = nodeid.split("::", 1)[0]
    if not path.startswith("tests/ray/"):
        return path
    return RAY_UNITS[1] if path in RAY_SECOND else RAY_UNITS[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files in ``HEAVY_FIRST`` first, in its order; then the rest, most tests first
    (what xdist's own --loadscope-reorder did); a file's tests keep their order."""
    rank = {unit: n for n, unit in enumerate(HEAVY_FIRST)}
    counts: dict[str, int] = {}
    for item in items:
        counts[work_unit(item.nodeid)] = counts.get(work_unit(item.nodeid), 0) + 1

    def order(item: pytest.Item) -> tuple[int, int]:
        unit = work_unit(item.nodeid)
        return rank.get(unit, len(rank)), -counts[unit]

    items.sort(key=order)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``make test`` runs the suite on pytest-xdist workers. Each test file goes to one
    worker, so a module's costly fixtures (a built venv, a PostgreSQL server) are made
    once; every Ray test goes to one worker (``work_unit``). (xdist's own ``xdist_group``
    marks do not group under pytest 9: its ``--dist loadgroup`` renames nodes through an
    attribute pytest no longer reads.) The units go out in collection order, which
    ``pytest_collection_modifyitems`` sets: xdist's reorder (most tests first) would put a
    heavy file of few tests last, and the run would wait on it alone."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):  # type: ignore[misc]  # (xdist ships no types)
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False
    return ByFile(config, log)

"""Every example is a real program: run each one as a user would and read what it prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import with_stdout_closed

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-W", "error", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_refund_demo_replans_and_ends_with_the_answer_and_the_trace_tree() -> None:
    lines = _run(str(EXAMPLES / "refund" / "main.py"))
    text = "\n".join(lines)
    assert lines[0] == "model: scripted (offline brain)"
    assert "plan v1 (initial):" in lines
    assert any(line.startswith("replan v1 -> v2: step s1 failed its check") for line in lines)
    assert "refunds issued: none; exceptions flagged: ['88213']" in lines
    answer = lines.index("answer (completed):")
    trace = next(i for i, line in enumerate(lines) if line.startswith("trace "))
    assert answer < trace
    assert "could not be made" in text[text.index("email to") :]
    tree = lines[trace + 1 :]
    assert tree[0].startswith("invoke_agent refunds")
    assert "versions=2" in tree[0]
    assert any("plan planner" in line and "plan v1->v2" in line for line in tree)
    assert tree[-1].strip().startswith("└─ chat scripted")  # synthesis is the last phase


def test_research_report_runs_research_in_parallel_and_keeps_the_draft() -> None:
    lines = _run(str(EXAMPLES / "research_report" / "main.py"))
    assert "  -> s3 to researcher; in flight: s1, s2, s3" in lines
    assert "at most 3 steps ran at the same time" in lines
    assert lines.index("  <- s3 done") < lines.index("  -> s4 to writer; in flight: s4")
    answer = "\n".join(lines[lines.index("answer:") + 1 :])
    assert answer.startswith("Here is the report the writer drafted")
    # The writer's draft is in the answer verbatim, after the synthesizer's introduction.
    assert "# Heat pumps in brief\n\n- Heat pumps date to Lord Kelvin's 1852 idea" in answer
    assert answer.endswith("In short: efficient, old, and cheap to run.")


def test_service_serves_concurrent_goals_and_cancels_when_a_client_leaves() -> None:
    lines = _run(str(EXAMPLES / "service" / "main.py"))
    assert lines == [
        "ana: 200 completed: order 88213: shipped 40 days ago",
        "li: 200 completed: order 77120: shipped 12 days ago",
        "sam: hung up before the answer; his run ended cancelled",
    ]


def test_trio_app_runs_the_library_under_trio() -> None:
    lines = _run(str(EXAMPLES / "trio_app.py"))
    assert lines[:4] == [
        "order 88213: completed, plan v1 -> v2, steps s4, s5 (rejected by its check: s1)",
        "order 77120: completed, plan v1, steps s1, s2, s3",
        "a run with no time left was cancelled: True",
        "refunds issued: ['77120']; exceptions flagged: ['88213']",
    ]
    assert lines[4].startswith("running under: trio ")


@pytest.mark.parametrize(
    "script", ["refund/main.py", "research_report/main.py", "trio_app.py"], ids=str
)
def test_examples_leave_sys_path_alone(script: str) -> None:
    # Run as a script would be, then look: the repository root must not have been
    # put on sys.path (its tools/ and telemetry/ would shadow a user's own modules).
    code = (
        "import runpy, sys; before = list(sys.path);"
        f" runpy.run_path({str(EXAMPLES / script)!r}, run_name='__main__');"
        " print('added:', [p for p in sys.path if p not in before])"
    )
    lines = _run("-c", code)
    assert lines[-1] == "added: []"


def test_durable_kills_a_run_mid_refund_and_resumes_it_paying_each_order_once() -> None:
    lines = _run(str(EXAMPLES / "durable" / "main.py"))
    assert lines[0].startswith("run run-")
    assert lines[1:] == [
        "killed the child (exit -9) inside the refund of order 1002",
        "the journal lists the run as stalled",
        "resumed: completed",
        "answer: Refunds done: order 1001: refunded 20; order 1002: refunded 35; "
        "order 1003: refunded 15",
        "bank paid: 1001 (20), 1002 (35), 1003 (15)",
        # 1001 was replayed from the journal; 1002 was in flight at the kill, so its
        # body ran again with the same idempotency key and the bank paid it once.
        "refund tool bodies ran for: 1001, 1002, 1002, 1003",
    ]


@pytest.mark.parametrize(
    "script",
    [
        "ping_pong.py",
        "trio_app.py",
        "refund/main.py",
        "research_report/main.py",
        "mcp/main.py",
        "durable/main.py",
        "service/main.py",
    ],
)
def test_an_example_whose_reader_left_ends_quietly(script: str) -> None:
    """``python examples/refund/main.py | head -3``: exit 141, as a command killed by
    SIGPIPE, not a ``BrokenPipeError`` traceback (``regiment.run_main``)."""
    done = with_stdout_closed([sys.executable, "-W", "error", str(EXAMPLES / script)])
    assert (done.returncode, done.stderr) == (141, "")


PROGRAMS = [
    "ping_pong.py",
    "trio_app.py",
    "refund/main.py",
    "research_report/main.py",
    "service/main.py",
    "mcp/main.py",
    "durable/main.py",
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_an_argument_an_example_does_not_take_is_a_usage_error(program: str) -> None:
    # ping_pong.py exited 1 (a failure's code) for a bad argument; the others ignored any
    # argument, `--help` too, and ran the whole story.
    path = str(EXAMPLES / program)
    wrong = subprocess.run(
        [sys.executable, path, "--bogus"], capture_output=True, text=True, timeout=60
    )
    assert (wrong.returncode, wrong.stdout) == (2, ""), wrong.stderr
    assert wrong.stderr.splitlines()[-1].endswith("error: unrecognized arguments: --bogus")
    helped = subprocess.run(
        [sys.executable, path, "-h"], capture_output=True, text=True, timeout=60
    )
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.startswith(f"usage: {Path(program).name} [-h]")
    first = (EXAMPLES / program).read_text(encoding="utf-8").splitlines()[0].strip('"')
    assert " ".join(first.split()[:4]) in " ".join(helped.stdout.split())  # what it does

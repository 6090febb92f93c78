"""``regiment run`` streams: the answer is written as it comes, deltas in jsonl on request."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from regiment.cli import run_async

from .test_cli import GOAL, REFUND

pytestmark = pytest.mark.anyio


class Writes(io.StringIO):
    """A stdout that keeps every write apart, to see the answer arrive in pieces."""

    def __init__(self) -> None:
        super().__init__()
        self.pieces: list[str] = []

    def write(self, text: str) -> int:
        self.pieces.append(text)
        return super().write(text)


async def _run(*argv: str) -> tuple[int, Writes, str]:
    out, err = Writes(), io.StringIO()
    code = await run_async(list(argv), stdout=out, stderr=err, environ={})
    return code, out, err.getvalue()


async def test_plain_run_writes_the_answer_as_the_synthesizer_streams_it(
    tmp_path: Path,
) -> None:
    target = tmp_path / "events.jsonl"
    code, out, err = await _run(
        "run", REFUND, GOAL, "--plain", "--events", "jsonl", "--events-file", str(target)
    )
    assert code == 0, err

    events = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    answer = events[-1]["result"]["answer"]
    assert out.getvalue() == answer + "\n"
    pieces = [p for p in out.pieces if p.strip()]
    assert len(pieces) > 2  # in pieces, as it streamed, not in one write at the end
    assert "".join(out.pieces) == answer + "\n"


async def test_events_jsonl_has_tool_calls_but_deltas_only_when_asked(tmp_path: Path) -> None:
    without, with_deltas = tmp_path / "plain.jsonl", tmp_path / "deltas.jsonl"
    for target, extra in ((without, ()), (with_deltas, ("--events-deltas",))):
        code, _out, err = await _run(
            "run", REFUND, GOAL, "--events", "jsonl", "--events-file", str(target), *extra
        )
        assert code == 0, err

    plain = [json.loads(line) for line in without.read_text(encoding="utf-8").splitlines()]
    kinds = {e["type"] for e in plain}
    assert "TextDelta" not in kinds
    assert {"ToolCallStarted", "ToolCallFinished"} <= kinds

    every = [json.loads(line) for line in with_deltas.read_text(encoding="utf-8").splitlines()]
    synth = "".join(
        e["text"] for e in every if e["type"] == "TextDelta" and e["role"] == "synthesizer"
    )
    assert synth.strip() == every[-1]["result"]["answer"]
    assert every[0]["type"] == "RunStarted"


async def test_events_deltas_needs_events_jsonl(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, _err = await _run("run", REFUND, GOAL, "--events-deltas")
    assert code == 2  # a usage error: argparse writes it, after the usage, to sys.stderr
    assert "--events-deltas needs --events jsonl" in capsys.readouterr().err


async def test_on_one_terminal_the_streamed_answer_ends_its_line_before_the_last_progress_line() -> (
    None
):
    # stdout and stderr are one terminal: the answer's last line must not run into
    # "[ 0.0s] run completed ...", and no blank line is left after it.
    screen = Writes()
    code = await run_async(
        ["run", REFUND, GOAL, "--plain", "--no-journal"], stdout=screen, stderr=screen, environ={}
    )
    assert code == 0, screen.getvalue()
    lines = screen.getvalue().splitlines()
    (last,) = [n for n, line in enumerate(lines) if "run completed:" in line]
    assert lines[last].startswith("[")
    assert lines[last - 1].strip()  # the answer's last line, not an empty one
    assert lines[last - 1].startswith("- s5")

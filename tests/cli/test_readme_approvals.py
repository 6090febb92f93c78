"""The README's approval sequence, typed as it is written, in a directory of its own.

Each ``regiment`` line of the block under "Approvals" runs as a real process
(``python -m regiment``), with the README's example ids replaced by the real ones and
its optional ``[...]`` parts left out; the ``#`` lines are what the commands print.
The example is copied next to the journal, as a user of a clone would have it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from regiment.journal import ToolCallFinished, open_journal

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
EXAMPLE_RUN, EXAMPLE_REQUEST = "run-1-5f3a9c2e", "apr-..."


def _block() -> list[str]:
    found = re.search(r"A paused run's decisions go to the journal.*?```sh\n(.*?)```", README, re.S)
    assert found is not None, "README: the Approvals section has no command sequence"
    return found.group(1).splitlines()


async def _regiment(line: str, cwd: Path) -> tuple[int, str, str]:
    argv = shlex.split(re.sub(r"\s*\[[^]]*\]", "", line))
    assert argv[0] == "regiment"
    offline = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}  # the brain
    done = await anyio.run_process(
        [sys.executable, "-m", "regiment", *argv[1:]], check=False, cwd=cwd, env=offline
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


# Every command runs in a process of its own, under the CLI's own event loop: this test's
# backend only awaits those processes and reads the journal once at the end (which
# tests/journal reads on both backends); on trio it ran the same five processes again.
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_readme_sequence_pauses_decides_and_resumes(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    lines = _block()
    commands = [x for x in lines if x.startswith("regiment ")]
    printed = [x.removeprefix("# ") for x in lines if x.startswith("# ")]
    assert [shlex.split(c)[1] for c in commands] == ["run", "approvals", "approve", "resume"]

    code, out, err = await _regiment(commands[0], tmp_path)
    assert code == 3, err
    paused = printed[0].split("  ")[0].replace(EXAMPLE_RUN, "RUN")
    (line,) = [x for x in err.splitlines() if x.startswith("paused:")]
    run_id = line.rsplit(" ", 1)[1]
    assert line.replace(run_id, "RUN") == paused

    code, out, err = await _regiment(commands[1].replace(EXAMPLE_RUN, run_id), tmp_path)
    assert code == 0, err
    (row,) = out.splitlines()
    request_id = row.split()[0]
    code, out, err = await _regiment(f"{commands[1]} --json".replace(EXAMPLE_RUN, run_id), tmp_path)
    assert json.loads(out)["request_id"] == request_id

    approve = commands[2].replace(EXAMPLE_RUN, run_id).replace(EXAMPLE_REQUEST, request_id)
    code, out, err = await _regiment(approve, tmp_path)
    assert code == 0, err
    said = printed[1].replace(EXAMPLE_RUN, run_id).replace(EXAMPLE_REQUEST, request_id)
    assert out.strip() == said

    code, out, err = await _regiment(commands[3].replace(EXAMPLE_RUN, run_id), tmp_path)
    assert code == 0, err
    assert "on the way" in out
    journal = await open_journal(str(tmp_path / ".regiment" / "journal.db"))
    try:
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    refunds = [
        r
        for r in records
        if isinstance(r, ToolCallFinished) and r.result.tool_name == "issue_refund"
    ]
    assert [r.result.arguments for r in refunds] == [{"order_id": "77120"}]

"""A RUN_ID that ``regiment show`` or ``regiment resume`` does not find is named cut when
it is long (its start and how long it was), as ``regiment approvals`` names one: a
5,000-character paste is not written back whole, once or (for an id shaped like a nested
run's) four times."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.journal import NESTED_MARK

from .helpers import run_cli

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
REFUND = str(REPO / "examples" / "refund" / "team.toml")
LONG = "run-" + "x" * 4996
CUT = f"'run-{'x' * 44}…{'x' * 16}' (5,000 characters)"  # its first 48, its last 16


@pytest.mark.parametrize("run_id", [LONG, LONG + NESTED_MARK + "v1-t1"], ids=["top", "nested"])
@pytest.mark.parametrize(
    "argv",
    [
        ("show", "ID"),
        ("show", "ID", "--json"),
        ("resume", "ID"),
        ("resume", REFUND, "ID", "--model", "scripted"),
        ("approvals", "ID"),
    ],
    ids=["show", "show-json", "resume", "resume-file", "approvals"],
)
@pytest.mark.parametrize("journal", ["runs.db", "missing.db"], ids=["journal", "none"])
async def test_a_long_run_id_is_named_cut(
    argv: tuple[str, ...], run_id: str, journal: str, tmp_path: Path
) -> None:
    code, _, err = await run_cli(
        "run", REFUND, "refund order 88213", "--model", "scripted", "--journal", "runs.db"
    )
    assert code == 0, err
    given = [run_id if word == "ID" else word for word in argv]
    code, out, err = await run_cli(*given, "--journal", journal)
    assert (code, out) == (2, ""), err
    assert len(err) < 600, err
    if argv[0] == "approvals" and journal == "missing.db":
        return  # (no journal: the id is not named at all)
    tail = run_id[-16:]  # a nested id ends in its mark and step
    said = CUT.replace("x" * 16 + "'", tail + "'").replace("5,000", f"{len(run_id):,}")
    assert said in err, err

"""A command that fails before it runs anything leaves nothing behind in the directory
it was started in: ``regiment run`` with a team whose brain or tools do not import made
an empty ``.regiment/`` there (the journal's directory), opened before the team was
built."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

BROKEN = {
    "brain": 'brain = "no_such_module_here:brain"\n',
    "tool": 'brain = "examples.refund.brain:refund_brain"\n',
}


@pytest.mark.parametrize("broken", BROKEN, ids=str)
async def test_a_team_that_cannot_be_built_leaves_no_journal_directory(
    broken: str, tmp_path: Path
) -> None:
    tools = '["examples.refund.tools:no_such_tool"]' if broken == "tool" else "[]"
    team = tmp_path / "team.toml"
    team.write_text(
        f'name = "t"\nmodel = "scripted"\n{BROKEN[broken]}\n'
        f'[[workers]]\nname = "w"\ndescription = "Works."\ntools = {tools}\n',
        encoding="utf-8",
    )
    code, out, err = await run_cli("run", str(team), "a goal")
    assert code == 2, err
    assert "cannot import" in err
    assert out == ""
    assert [p.name async for p in anyio.Path(tmp_path).iterdir()] == ["team.toml"]

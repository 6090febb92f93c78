"""``regiment validate`` names a team file's ``output_type`` (and its re-asks) and the model
settings it gives (``[settings]``, each role's own). It listed neither, so a file whose
``[planner.settings]`` was misspelt as a worker's key, or whose ``output_type`` was left
out, read the same as the right one."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

MODULE = """
from pydantic import BaseModel

from regiment.models import text_response


class Refund(BaseModel):
    order: str


def brain(request):
    return text_response("{}")
"""

TEAM = """name = "t"
brain = "{module}:brain"
{top}
[settings]
max_tokens = 1024
timeout = 30

[planner.settings]
temperature = 0.0

[planner.synthesizer_settings]
max_tokens = 4000
stop_sequences = ["END"]

[critic.settings]
extra = {{top_k = 5}}

[[workers]]
name = "desk"
description = "Does what is asked."
settings = {{temperature = 0.2, thinking_budget = 2048}}

[[workers]]
name = "plain"
description = "Sets nothing."
"""


async def _summary(tmp_path: Path, top: str) -> list[str]:
    module = f"shapes_{uuid.uuid4().hex[:8]}"  # unique: imported modules are cached
    (tmp_path / f"{module}.py").write_text(MODULE, encoding="utf-8")
    team = tmp_path / "team.toml"
    team.write_text(TEAM.format(module=module, top=top.format(module=module)), encoding="utf-8")
    code, out, err = await run_cli("validate", str(team), "--app-dir", str(tmp_path))
    assert (code, err) == (0, ""), err
    return out.splitlines()


async def test_each_roles_settings_show_on_its_line(tmp_path: Path) -> None:
    lines = await _summary(tmp_path, "")
    assert lines[1:] == [
        "  planner: scripted, at most 10 steps; settings temperature 0.0; "
        'synthesizer settings max_tokens 4,000, stop_sequences ["END"]',
        "  worker desk: scripted; no tools; settings temperature 0.2, thinking_budget 2,048",
        "  worker plain: scripted; no tools",
        '  critic: the planner\'s model (scripted), at most 3 rounds; settings extra {"top_k":5}',
        "  settings of every role: max_tokens 1,024, timeout 30.0 s",
    ]


@pytest.mark.parametrize(
    ("top", "said"),
    [
        ('output_type = "{module}:Refund"\n', "at most 2 re-asks"),
        ('output_type = "{module}:Refund"\noutput_retries = 1\n', "at most 1 re-ask"),
    ],
    ids=["default-retries", "one-retry"],
)
async def test_the_output_type_shows_with_its_re_asks(tmp_path: Path, top: str, said: str) -> None:
    lines = await _summary(tmp_path, top)
    typed = [line for line in lines if line.startswith("  output_type: ")]
    assert len(typed) == 1, lines
    assert typed[0].startswith("  output_type: shapes_")
    assert typed[0].endswith(f":Refund, the answer must match it ({said} of one that does not)")

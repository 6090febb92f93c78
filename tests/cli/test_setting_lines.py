"""A ``[settings]`` mistake names the key's line, as every other team file error does.

It said ``team.toml: settings: unknown setting 'x'``, so the command pointed at the
``[settings]`` header (``team.toml:5:``) however far below it the key was."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]

TOML = """name = "t"
brain = "examples.refund.brain:refund_brain"

[settings]
max_tokens = 100
temperature = 0.5
{line}

[[workers]]
name = "billing"
description = "Issues refunds."
settings = {{ top_p = 0.5 }}
"""

YAML = """name: t
brain: examples.refund.brain:refund_brain
settings:
  max_tokens: 100
  temperature: 0.5
  {line}
workers:
  - name: billing
    description: Issues refunds.
    settings:
      top_p: 0.5
"""

CASES = {  # (the file, the key's line, what the error starts with after it)
    "toml unknown": (TOML.format(line="tempo = 1"), "toml", 7, "settings.tempo: unknown setting"),
    "toml range": (TOML.format(line="top_p = 3.0"), "toml", 7, "settings.top_p: must be above 0"),
    "toml type": (TOML.format(line='timeout = "x"'), "toml", 7, "settings.timeout: expected"),
    "yaml unknown": (YAML.format(line="tempo: 1"), "yaml", 6, "settings.tempo: unknown setting"),
    "yaml range": (YAML.format(line="top_p: 3.0"), "yaml", 6, "settings.top_p: must be above 0"),
    "yaml worker": (
        YAML.format(line="top_p: 0.5").replace("      top_p: 0.5", "      top_p: 0.5\n      x: 1"),
        "yaml",
        12,
        "workers[0].settings.x: unknown setting 'x'",
    ),
}


@pytest.mark.parametrize(("text", "fmt", "line", "said"), CASES.values(), ids=CASES.keys())
async def test_a_settings_mistake_names_the_keys_line(
    text: str, fmt: str, line: int, said: str, tmp_path: Path
) -> None:
    team = tmp_path / f"team.{fmt}"
    team.write_text(text, encoding="utf-8")
    code, out, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
    assert (code, out) == (2, ""), err
    assert err.startswith(f"regiment: error: {team}:{line}: {said}"), err


async def test_a_workers_inline_settings_mistake_names_its_line(tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text(TOML.format(line="").replace("top_p = 0.5", "top_q = 0.5"), encoding="utf-8")
    code, _, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
    assert code == 2
    assert err.startswith(f"regiment: error: {team}:12: workers[0].settings.top_q: unknown"), err


async def test_the_team_wide_settings_mistake_is_said_before_a_workers(tmp_path: Path) -> None:
    # It said the worker's (line 12) first, though the file has [settings] on top.
    team = tmp_path / "team.toml"
    text = TOML.format(line="tempo = 1").replace("top_p = 0.5", "top_q = 0.5")
    team.write_text(text, encoding="utf-8")
    code, _, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
    assert code == 2
    assert err.startswith(f"regiment: error: {team}:7: settings.tempo: unknown setting"), err

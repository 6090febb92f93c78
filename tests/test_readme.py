"""The README's programs are real: every complete one (a block that starts with
``import anyio``) runs as written, and the quick start prints what it says."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(import anyio\n.*?)```", README.read_text(encoding="utf-8"), re.S)


def _run(code: str, tmp_path: Path) -> str:
    script = tmp_path / "readme_program.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_readme_has_programs_to_run() -> None:
    assert len(BLOCKS) >= 2


def test_quick_start_prints_its_answer(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"## Quick start\n\n```python\n(.*?)```", text, re.S)
    assert match is not None, "README has no quick start code block"
    assert _run(match.group(1), tmp_path) == "It is snowing in Oslo (-3 C)."


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_every_complete_program_runs(index: int, tmp_path: Path) -> None:
    assert _run(BLOCKS[index], tmp_path)


def test_the_team_file_shown_is_the_example_file() -> None:
    # The README prints examples/refund/team.toml; what it shows must decode to what the
    # file holds (comments aside), so a key the file gains is not missing from the page.
    text = README.read_text(encoding="utf-8")
    match = re.search(r"`examples/refund/team.toml`:\n\n```toml\n(.*?)```", text, re.S)
    assert match is not None, "README no longer shows examples/refund/team.toml"
    shown = tomllib.loads(match.group(1))
    example = README.parent / "examples" / "refund" / "team.toml"
    assert shown == tomllib.loads(example.read_text(encoding="utf-8"))


def test_every_example_program_is_in_the_examples_table() -> None:
    # "Each is a program you can run offline": a program in examples/ the table leaves
    # out is one a reader never hears of (ping_pong.py was missing).
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Examples") : text.index("## The `regiment` command")]
    examples = README.parent / "examples"
    programs = [p for p in examples.glob("*.py") if p.name != "__init__.py"]
    programs += list(examples.glob("*/main.py"))
    assert programs
    missing = [p for p in programs if f"examples/{p.relative_to(examples)}" not in table]
    assert missing == []

"""What a plan step pays for beyond its hops (issue #22), continued from
``test_step_path_cost.py`` (its helpers; the same warmed-up team's run, counted exactly
by the interpreter): work a step did in C that the Python-call counts there do not see.

CPython 3.11 compiles a call with more than 15 keywords (more than 30 stack items) into
a dict built key by key and unpacked again (``BUILD_MAP``, ``MAP_ADD`` each, then
``CALL_FUNCTION_EX``): about 8k instructions more than the same call with 15, and no
Python frame more, so a call census cannot tell. ``StepProgress.report`` made a step's
report so (17 keywords); a 16th keyword to ``run_tool_loop`` (branch ``h-perf14``) made
a step 7.9k instructions dearer while it counted one Python call fewer."""

from __future__ import annotations

import dis
import sys
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest

import regiment
from regiment.tools import Toolset

from .test_step_path_cost import _code_called, _counted

pytestmark = pytest.mark.anyio

_ROOT = Path(regiment.__file__).parent
# Where a run's work is done (config/ and cli/ run once, as a team is built).
_RUN_PATH = ("actors", "hierarchy", "models", "telemetry", "tools", "journal")


def _packed_calls(code: CodeType) -> set[int]:
    """The offsets of ``code``'s calls whose keywords the compiler packs into a dict."""
    packed: set[int] = set()
    adds = 0
    for instruction in dis.get_instructions(code):
        if instruction.opname == "BUILD_MAP":
            adds = 0
        elif instruction.opname == "MAP_ADD":
            adds += 1
        elif instruction.opname == "CALL_FUNCTION_EX":
            if adds:
                packed.add(instruction.offset)
            adds = 0
    return packed


def _codes(code: CodeType) -> list[CodeType]:
    found = [code]
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found.extend(_codes(const))
    return found


def _run_path_files() -> list[Path]:
    return [
        path
        for room in _RUN_PATH
        for path in sorted((_ROOT / room).rglob("*.py"))
        if "__pycache__" not in path.parts
    ]


def test_no_call_on_a_runs_path_packs_its_keywords_into_a_dict() -> None:
    packed = [
        f"{path.relative_to(_ROOT)}:{code.co_name}"
        for path in _run_path_files()
        for code in _codes(compile(path.read_text(), str(path), "exec"))
        if _packed_calls(code)
    ]
    assert packed == [], f"calls with more than 15 keywords (split them, #22): {packed}"


async def test_a_step_packs_no_keywords_into_a_dict() -> None:
    # A step's report was made with 17 keywords: a dict built and unpacked once a step (3).
    seen: dict[CodeType, set[int]] = {}
    runs: list[str] = []

    def tracer(frame: FrameType, event: str, _: object) -> Any:
        code = frame.f_code
        if event == "call":
            if code not in seen:
                seen[code] = _packed_calls(code)
            if seen[code]:
                frame.f_trace_opcodes = True
                return tracer
            return None
        if event == "opcode" and frame.f_lasti in seen[code]:
            runs.append(code.co_name)
        return tracer

    def matches(frame: FrameType, event: str, _: object) -> bool:
        return False

    sys.settrace(tracer)
    try:
        await _counted(matches)
    finally:
        sys.settrace(None)
    assert runs == []


async def test_a_step_of_a_worker_with_fixed_tools_asks_no_definitions_property() -> None:
    # Toolset.definitions (a property) was read once a step; a worker with no MCP servers
    # (its tool set cannot change) reads it once, as it starts. One with MCP servers still
    # reads the current set's each step (tests/mcp_tools/test_mcp_list_changed.py).
    definitions = vars(Toolset)["definitions"].fget.__code__
    assert await _counted(_code_called(definitions)) == 0  # was one a step (3)

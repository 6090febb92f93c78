"""What a plan step's bookkeeping does in C (issue #22), counted by the interpreter's
opcodes (exact, whatever the machine): work a Python-call count does not see. A step's
dispatch built a ``{}`` it threw away once the version had a step running
(``Dispatcher.sent``'s ``setdefault``)."""

from __future__ import annotations

import dis
import sys
from types import CodeType, FrameType
from typing import Any

import pytest

from regiment.hierarchy.run._dispatch import Dispatcher

from .test_step_envelopes import _counted

pytestmark = pytest.mark.anyio


def _opcodes(code: CodeType, opname: str) -> set[int]:
    return {i.offset for i in dis.get_instructions(code) if i.opname == opname}


class _OpcodeCounter:
    """Counts the ``opname`` opcodes ``code`` executes while it traces (``with``)."""

    def __init__(self, code: CodeType, opname: str) -> None:
        self.code, self.offsets, self.count = code, _opcodes(code, opname), 0

    def _trace(self, frame: FrameType, event: str, _: object) -> Any:
        if event == "call":
            if frame.f_code is not self.code:
                return None
            frame.f_trace_opcodes = True
        elif event == "opcode" and frame.f_lasti in self.offsets:
            self.count += 1
        return self._trace

    def __enter__(self) -> None:
        sys.settrace(self._trace)

    def __exit__(self, *exc: object) -> None:
        sys.settrace(None)


async def test_a_step_sent_builds_no_dict_it_throws_away() -> None:
    async def built(steps: int) -> int:
        counter = _OpcodeCounter(Dispatcher.sent.__code__, "BUILD_MAP")
        with counter:
            await _counted(lambda *_: False, steps)
        return counter.count

    # One for the version's first step (its running steps' dict), none for the others.
    assert await built(4) - await built(1) == 0  # 3 on main

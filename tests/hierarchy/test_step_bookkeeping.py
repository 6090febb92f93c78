"""What a plan step's bookkeeping does in C (issue #22), counted by the interpreter's
opcodes (exact, whatever the machine): work a Python-call count does not see. A step's
report charged to its worker added six zeros (a usage with no cache and no price, as
most replies have: ``Spent.charge``), and its dispatch built a ``{}`` it threw away once
the version had a step running (``Dispatcher.sent``'s ``setdefault``). The totals
charged stay those of every count added (the last test)."""

from __future__ import annotations

import dis
import sys
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

import pytest

from regiment.hierarchy._spent import Spent
from regiment.hierarchy.run._dispatch import Dispatcher
from regiment.models import Usage

from .test_step_hand_in_cost import _counted

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


def _additions(charges: Callable[[Spent], None]) -> int:
    spent = Spent()
    counter = _OpcodeCounter(Spent.charge.__code__, "BINARY_OP")
    with counter:
        charges(spent)
    return counter.count


def test_a_report_with_no_cache_and_no_price_adds_no_zeros() -> None:
    # A step's report: one model call, its tokens, no tool call, no cache, no price.
    usage = Usage(input_tokens=30, output_tokens=12)
    added = _additions(lambda spent: spent.charge("w", usage, 1, 0))
    # model calls, input and output tokens to the totals and to the role: 5 (was 12)
    assert added == 5


def test_a_charge_of_every_count_adds_each() -> None:
    usage = Usage(
        input_tokens=30, output_tokens=12, cache_read_tokens=7, cache_write_tokens=5, micro_usd=9
    )
    assert _additions(lambda spent: spent.charge("w", usage, 1, 2)) == 12


async def test_a_step_sent_builds_no_dict_it_throws_away() -> None:
    async def built(steps: int) -> int:
        counter = _OpcodeCounter(Dispatcher.sent.__code__, "BUILD_MAP")
        with counter:
            await _counted(lambda *_: False, steps)
        return counter.count

    # One for the version's first step (its running steps' dict), none for the others.
    assert await built(4) - await built(1) == 0  # 3 on main


def test_the_totals_are_every_count_charged() -> None:
    spent = Spent()
    spent.charge("w", Usage(input_tokens=30, output_tokens=12), 1, 0)
    spent.charge("w", Usage(input_tokens=1, cache_read_tokens=7, micro_usd=9), 1, 2)
    spent.charge("p", Usage(output_tokens=4, cache_write_tokens=5), 0, 0)
    assert (spent.model_calls, spent.tool_calls) == (2, 2)
    assert (spent.input_tokens, spent.output_tokens, spent.micro_usd) == (43, 16, 9)
    assert spent.by_role() == {
        "w": Usage(input_tokens=31, output_tokens=12, cache_read_tokens=7, micro_usd=9),
        "p": Usage(output_tokens=4, cache_write_tokens=5),
    }
    assert spent.total() == Usage(
        input_tokens=31, output_tokens=16, cache_read_tokens=7, cache_write_tokens=5, micro_usd=9
    )

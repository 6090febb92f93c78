"""The usual plan's reading asks no Python function whether a step's text says
something or reads as JSON (issue #22: two calls a step of every plan, row 2's
ten-step plan twenty a run): text that starts with a letter or digit does and does
not. Other text is still asked about, and read as before (the property tests in
``test_plan_one_pass.py`` hold the one pass to the general reader)."""

from __future__ import annotations

import json
import sys
from types import FrameType

from regiment.hierarchy import parse_plan
from regiment.hierarchy.plan import _lines


def _asked(reply: str) -> tuple[int, list[str]]:
    """The calls of ``_meaningful`` and ``_looks_like_json`` made reading ``reply``."""
    codes = {_lines._meaningful.__code__, _lines._looks_like_json.__code__}
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" and frame.f_code in codes:
            calls += 1

    sys.setprofile(profile)
    try:
        plan = parse_plan(reply, max_steps=20, default_worker="w")
    finally:
        sys.setprofile(None)
    return calls, [s.description for s in plan.steps]


def _plan(*texts: str) -> str:
    steps = [{"id": f"s{i}", "description": t} for i, t in enumerate(texts, 1)]
    return json.dumps({"steps": steps})


def test_the_usual_plan_asks_nothing_of_its_steps_text() -> None:
    texts = [f"part {i}" for i in range(10)] + ["3 more", "\u00e9t\u00e9"]
    assert _asked(_plan(*texts)) == (0, texts)


def test_other_text_is_still_asked_about_and_read_as_before() -> None:
    calls, read = _asked(_plan("part 1", "[urgent] call back", "  indented"))
    assert calls == 4  # two for each of the last two
    assert read == ["part 1", "[urgent] call back", "indented"]
    with_json = _plan("part 1", "[1, 2]")
    calls, _ = _asked(with_json)
    assert calls >= 2  # the one pass asked, then left it to the general reader

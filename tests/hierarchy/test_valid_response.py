"""A model reply's text is made encodable part by part, and left alone when it is.

``valid_response`` runs on every model call, so it keeps the reply object when
nothing needs fixing and, when one part does, keeps every clean part as it was.
"""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from regiment.hierarchy._text import valid_response
from regiment.models import ModelResponse
from regiment.models._messages import TextPart, ToolCallPart

_LONE = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
_TEXT = st.one_of(st.text(max_size=8), st.tuples(st.text(max_size=4), _LONE).map("".join))
_PART = st.one_of(
    _TEXT.map(lambda text: TextPart(text=text)),
    _TEXT.map(lambda text: ToolCallPart(id="c1", name="t", arguments={"q": text})),
    # The call's id and tool name too (ASCII ones skip the check: #22).
    _TEXT.map(lambda text: ToolCallPart(id=text, name="t", arguments={})),
    _TEXT.map(lambda text: ToolCallPart(id="c1", name=text, arguments={})),
)


@given(st.lists(_PART, max_size=5))
def test_every_part_is_encodable_and_clean_parts_stay_the_same_object(
    parts: list[TextPart | ToolCallPart],
) -> None:
    response = ModelResponse(parts=tuple(parts), stop_reason="end_turn", model="m")
    fixed = valid_response(response)
    msgspec.json.encode(fixed)  # raises on a lone surrogate
    assert len(fixed.parts) == len(parts)
    for old, new in zip(parts, fixed.parts, strict=True):
        try:
            msgspec.json.encode(old)
        except UnicodeEncodeError:
            assert new is not old
            assert type(new) is type(old)
        else:
            assert new is old  # a clean part is kept, not copied
    if all(p is q for p, q in zip(parts, fixed.parts, strict=True)):
        assert fixed is response  # nothing to fix: no copy of the reply either


def test_a_bad_part_after_clean_ones_is_replaced_in_place() -> None:
    first, bad = TextPart(text="fine"), TextPart(text="x\ud800y")
    response = ModelResponse(parts=(first, bad), stop_reason="end_turn", model="m")
    fixed = valid_response(response)
    assert fixed.parts[0] is first
    assert fixed.parts[1] == TextPart(text="x\ufffdy")
    assert valid_response(fixed) is fixed

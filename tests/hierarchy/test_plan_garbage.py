"""Property tests: whatever a model writes (prose, JSON of the wrong shape,
truncated JSON, bracket soup, lone surrogates), ``parse_plan`` gives either
meaningful steps with valid dependencies, or no steps and an error (or an
explicit "nothing to do"), and raises nothing."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from regiment.hierarchy import parse_plan
from regiment.hierarchy.plan._parse import ParsedPlan
from regiment.hierarchy.plan._validate import validate_plan

_SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d"])
_KEYS = st.sampled_from(
    ["steps", "plan", "description", "task", "step", "id", "worker", "depends_on", "deps",
     "check", "nothing_to_do", "done", "result", "x"]
)  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["", " ", "s1", "1", "step 2", "a, b", "billing", "-"]),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=14,
)
# Plan-like objects with fields of any type: the shapes a careless model writes.
_STEP_OBJECTS = st.dictionaries(_KEYS, _JSON, max_size=5)
_PLANS = st.one_of(
    st.lists(st.one_of(_STEP_OBJECTS, _SCALARS), max_size=5),
    st.fixed_dictionaries({"steps": st.one_of(_JSON, st.lists(_STEP_OBJECTS, max_size=5))}),
)
_VALID_JSON = st.one_of(_JSON, _PLANS).map(lambda v: msgspec.json.encode(v).decode())


@st.composite
def _truncated(draw: st.DrawFn) -> str:
    text = draw(_VALID_JSON)
    return text[: draw(st.integers(min_value=0, max_value=len(text)))]


@st.composite
def _with_surrogates(draw: st.DrawFn) -> str:
    text = draw(st.one_of(_VALID_JSON, st.text(max_size=40)))
    at = draw(st.integers(min_value=0, max_value=len(text)))
    return text[:at] + draw(_SURROGATES) + text[at:]


_SOUP = st.text(alphabet='[]{}",:\\ \n\t0a-*1.`json', max_size=60)
_DEEP = st.integers(min_value=1, max_value=3000).map(lambda n: "[" * n + "]" * n)
_DEEP_OPEN = st.integers(min_value=1, max_value=3000).map(lambda n: '{"steps": ' + "[" * n)
_WRAPPED = st.tuples(
    st.sampled_from(["", "Here is the plan:\n", "```json\n", "```\n", "1. ", "- "]),
    st.one_of(_VALID_JSON, _truncated()),
    st.sampled_from(["", "\n```", "\nHope this helps.", " [1]"]),
).map("".join)
GARBAGE = st.one_of(
    st.text(),
    _VALID_JSON,
    _truncated(),
    _SOUP,
    _with_surrogates(),
    _DEEP,
    _DEEP_OPEN,
    _WRAPPED,
)


def _is_raw_json(text: str) -> bool:
    """Whether a step's text is a JSON object or array (the thing that must never be a step)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return True
    try:
        value = msgspec.json.decode(stripped)
    except (msgspec.DecodeError, RecursionError):
        return False
    return isinstance(value, list | dict)


def assert_keeps_its_promises(reply: str, parsed: ParsedPlan, max_steps: int) -> None:
    """What every reading of every reply must satisfy."""
    if parsed.steps:
        assert parsed.error is None
        assert not parsed.nothing_to_do
    else:
        assert parsed.nothing_to_do != (parsed.error is not None)  # exactly one says why
    assert len(parsed.steps) <= max_steps
    ids = [step.id for step in parsed.steps]
    assert len(set(ids)) == len(ids)
    for step in parsed.steps:
        assert step.id.strip()
        assert any(char.isalnum() for char in step.description), step
        assert not _is_raw_json(step.description), step
        for text in (step.description, step.id, *step.depends_on, step.worker or ""):
            text.encode("utf-8")  # no lone surrogate survives
    _assert_dependencies_valid_or_reported(parsed)
    if reply.strip()[:1] in ("{", "[") and len(reply) <= 64_000:
        assert parsed.source == "json"  # a JSON-looking reply is never read as lines
    if parsed.error is not None:
        parsed.error.encode("utf-8")
        assert len(parsed.error) < 2_000  # an excerpt, never the whole reply


def _assert_dependencies_valid_or_reported(parsed: ParsedPlan) -> None:
    """Each dependency names another step, or validation sends it back to the model."""
    problems = validate_plan(parsed.steps, workers=("w",))
    ids = {step.id for step in parsed.steps}
    for step in parsed.steps:
        for dep in step.depends_on:
            assert dep.strip()
            if dep == step.id or dep not in ids:
                assert any(repr(dep) in problem for problem in problems), (step, problems)


@settings(max_examples=600, deadline=None)
@given(reply=GARBAGE, max_steps=st.integers(min_value=1, max_value=6))
@example(reply='["{0"]', max_steps=1)  # found by hypothesis: a cut object read as a step's text
@example(reply='{"steps": [{"id": "s1", "description": "[1, 2]"}]}', max_steps=3)
def test_garbage_gives_steps_or_an_error_never_an_exception(reply: str, max_steps: int) -> None:
    assert_keeps_its_promises(reply, parse_plan(reply, max_steps=max_steps), max_steps)


@settings(max_examples=200, deadline=None)
@given(plan=_PLANS)
def test_json_plans_of_any_field_types_are_read_whole_or_rejected(plan: object) -> None:
    """A step object is never read in part: every listed step becomes a step, or none does."""
    reply = msgspec.json.encode(plan).decode()
    parsed = parse_plan(reply, max_steps=10)
    assert_keeps_its_promises(reply, parsed, 10)
    listed = (
        plan if isinstance(plan, list) else plan.get("steps") if isinstance(plan, dict) else None
    )
    if parsed.steps and isinstance(listed, list) and parsed.truncated_from is None:
        assert len(parsed.steps) == len([step for step in listed if not _blank(step)])


_TEXT_KEYS = ("description", "action", "task", "step", "title", "text", "instruction")


def _blank(step: object) -> bool:
    """A step whose text is only blank strings, which issue #5 drops: ``"  "``, ``"-"``,
    ``{"task": ""}`` (``"step": 3`` is its number, not its text)."""
    if isinstance(step, str):
        return not any(c.isalnum() for c in step)
    if not isinstance(step, dict):
        return False
    texts = [
        step[key]
        for key in _TEXT_KEYS
        if key in step and not (key == "step" and type(step[key]) is int and 0 <= step[key] < 10**9)
    ]
    return bool(texts) and all(
        isinstance(t, str) and not any(c.isalnum() for c in t) for t in texts
    )


@pytest.mark.parametrize(
    "reply",
    ['["{0"]', '["[1, 2]"]', '{"steps": ["{\\"description\\": \\"pay\\"}"]}',
     '{"steps": [{"id": "s1", "description": "{\\"tool\\": \\"pay\\"}"}]}'],
)  # fmt: skip
def test_a_step_whose_text_is_json_goes_back_to_the_planner(reply: str) -> None:
    parsed = parse_plan(reply, max_steps=5)
    assert parsed.steps == ()
    assert parsed.error is not None
    assert "step 1's text is JSON, not words" in parsed.error


def test_a_bracketed_tag_is_words_not_json() -> None:
    parsed = parse_plan('{"steps": ["[urgent] call the customer back"]}', max_steps=5)
    assert [s.description for s in parsed.steps] == ["[urgent] call the customer back"]

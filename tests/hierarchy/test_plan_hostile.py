"""Plans from a hostile model: garbage that looks like JSON, blank bullets,
wrong types and text no encoder accepts give no steps and a clear error."""

from __future__ import annotations

import pytest

from regiment.hierarchy import parse_plan
from regiment.hierarchy.plan._parse import ParsedPlan
from regiment.hierarchy.plan._plan import PlanStep


def _parse(reply: str, max_steps: int = 5) -> ParsedPlan:
    return parse_plan(reply, max_steps=max_steps)


def _error(reply: str) -> str:
    parsed = _parse(reply)
    assert parsed.steps == ()
    assert not parsed.nothing_to_do
    assert parsed.error is not None
    return parsed.error


# --- JSON that cannot be read as a plan --------------------------------------


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        ('{"steps": [{"description": "a"}, {"descr', "not valid JSON (Input data was truncated)"),
        ("['a','b']", "not valid JSON"),
        ('{"steps": "do it"}', '"steps" must be an array of steps, but it is a string'),
        ("[NaN]", "not valid JSON"),
        ("[" * 5000 + "]" * 5000, "nested too deeply"),
        ("[[[[[1]]]]]", "step 1 is an array"),
        ("[1, 2, 3]", "step 1 is a number"),
        ('```json\n"just a string"\n```', "the JSON is a string, not a plan"),
        ("{}", 'the JSON object has no "steps" array'),
        ('{"plan": null}', '"steps" must be an array of steps, but it is a null'),
        ("  \n [true]", "step 1 is a boolean"),
        ('```json\n{"steps": "do it"}\n```', '"steps" must be an array'),
        ('Here you go:\n```JSON\n{"x": 1}\n```', 'no "steps" array (its keys: x)'),
        ('```json\n["a", "b"', "not valid JSON"),  # a fence that never closes
        ('```\n{"steps": {"a": 1}}\n```', "it is an object"),  # an untagged fence of JSON
        # A JSON literal alone was read as prose: a step named "null" went to a worker.
        ("null", "the JSON is a null, not a plan"),
        (" true\n", "the JSON is a boolean, not a plan"),
        ("false", "the JSON is a boolean, not a plan"),
        ("-1.5e3", "the JSON is a number, not a plan"),
        ("1" * 5000, "the JSON is a number, not a plan"),  # out of msgspec's range
        # "steps" of another type was quoted as Python wrote it ('None'), not as JSON.
        ('{"steps": null}', "it is a null: 'null'"),
        ('{"steps": {"a": true}}', """it is an object: '{"a":true}'"""),
    ],
)
def test_json_that_is_not_a_plan_is_an_error_not_a_step(reply: str, says: str) -> None:
    error = _error(reply)
    assert says in error
    assert "reply with" in error  # it says what to do, for the re-prompt


def test_the_decode_error_quotes_a_short_excerpt_of_a_huge_reply() -> None:
    error = _error("[" + '"a", ' * 10_000)
    assert len(error) < 400


def test_a_json_plan_followed_by_prose_is_still_read() -> None:
    parsed = _parse('{"steps": ["a", "b"]}\n\nHope this helps! [1]')
    assert [s.description for s in parsed.steps] == ["a", "b"]


def test_a_valid_plan_in_a_fence_wins_over_a_broken_json_start() -> None:
    parsed = _parse('{"oops": \n```json\n["a"]\n```')
    assert [s.description for s in parsed.steps] == ["a"]


def test_json_on_a_line_of_prose_is_never_a_step() -> None:
    assert "JSON but not a plan" in _error('Here is the plan:\n{"steps": "x", "note": 1')
    assert "JSON but not a plan" in _error('1. {"task": "x"}\n2. {"task": "y"}')


def test_prose_that_starts_like_a_literal_is_still_a_step() -> None:
    parsed = _parse("nullify the cache\n")
    assert [s.description for s in parsed.steps] == ["nullify the cache"]
    assert [s.description for s in _parse('"look up the weather"').steps] == [
        '"look up the weather"'
    ]


def test_a_bracketed_tag_in_prose_is_text_not_json() -> None:
    parsed = _parse("Plan:\n1. [urgent] call the customer\n2. [1] file the report")
    assert [s.description for s in parsed.steps] == [
        "[urgent] call the customer",
        "[1] file the report",
    ]


# --- blank bullets -------------------------------------------------------------


@pytest.mark.parametrize(
    "reply", ["- \n- \n", "* ", "1. ", "-\n*\n+", "1.\n2)\nStep 3:", "---\n***"]
)
def test_blank_bullets_are_not_steps(reply: str) -> None:
    assert "held no steps" in _error(reply)


def test_blank_bullets_between_real_ones_are_skipped() -> None:
    assert [s.description for s in _parse("- a\n- \n* \n- b").steps] == ["a", "b"]


def test_a_lone_dash_in_prose_does_not_turn_the_reply_into_a_list() -> None:
    assert [s.description for s in _parse("check eligibility\n-\nissue refund").steps] == [
        "check eligibility",
        "issue refund",
    ]


def test_a_dependency_on_a_blank_numbered_line_is_an_error_not_a_dropped_edge() -> None:
    error = _error("1. \n2. check\n3. refund (depends on: 1)")
    assert "depends on '1', which is a blank line (or step) of the plan" in error


# --- wrong types in step objects -------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (
            '[{"description": 5}, {"description": "b", "depends_on": [1]}]',
            '"description" is a number',
        ),
        ('[{"task": ["x"]}]', '"task" is an array'),
        ('[{"description": null}]', '"description" is a null'),
        ('[{"description": "  ", "task": 3}]', '"description" is a blank string'),
        ('[{"worker": "w"}]', 'step 1 has no "description"'),
        ('[{"description": "a", "worker": 3}]', '"worker" is a number'),
        ('[{"description": "a", "check": true}]', '"check" is a boolean'),
        ('[{"description": "a", "id": {"x": 1}}]', '"id" is an object'),
        ('[{"description": "a", "depends_on": [{"id": 1}]}]', "depends on an object"),
        ('[{"description": "a", "depends_on": 1.5}]', "depends on a number"),
        ('[{"description": "a", "depends_on": [10000000000]}]', "depends on a number"),
        ('{"steps": ["a", 7]}', "step 2 is a number"),
    ],
)
def test_a_malformed_step_is_an_error_never_dropped(reply: str, says: str) -> None:
    error = _error(reply)
    assert "malformed" in error
    assert says in error


def test_every_malformed_step_is_named_up_to_a_limit() -> None:
    error = _error("[" + ", ".join(["{}"] * 9) + "]")
    assert "step 5 has no" in error
    assert "and 4 more" in error


# --- text no encoder accepts, control characters, huge replies -------------------


@pytest.mark.parametrize(
    "reply",
    [
        '["check \ud800 eligibility"]',
        '{"steps": [{"description": "a\udfff", "id": "x\ud83d"}]}',
        "1. check \ud800\n2. refund",
        "\ud800",
    ],
)
def test_lone_surrogates_never_raise_and_never_reach_a_step(reply: str) -> None:
    parsed = _parse(reply)
    for step in parsed.steps:
        step.description.encode("utf-8")  # would raise on a lone surrogate
        step.id.encode("utf-8")
    assert parsed.steps or parsed.error is not None


def test_a_surrogate_pair_is_joined_into_its_character() -> None:
    (step,) = _parse('["launch \ud83d\ude80"]').steps
    assert step.description == "launch \U0001f680"


@pytest.mark.parametrize("reply", ["\x00", "\x00\x01\x02\n\x7f", "1. \x00\n2. \x1b"])
def test_control_characters_alone_are_not_steps(reply: str) -> None:
    assert "held no steps" in _error(reply)


def test_control_characters_inside_a_step_are_kept_as_text() -> None:
    assert _parse('["a\\u0000b"]').steps == (PlanStep(id="s1", description="a\x00b"),)


def test_a_huge_reply_is_an_error_not_a_long_parse() -> None:
    error = _error("1. step\n" * 50_000)
    assert "characters long" in error


def test_a_step_number_too_long_for_int_is_just_text() -> None:
    parsed = _parse("Step " + "9" * 5000 + ": a\nStep 2: b (depends on: " + "1" * 5000 + ")")
    assert len(parsed.steps) == 2

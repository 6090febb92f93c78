"""Lenient parsing of planner replies."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.errors import ConfigError
from regiment.hierarchy import ParsedPlan, PlanStep, parse_plan


def _parse(reply: str, max_steps: int = 10, start_index: int = 1) -> ParsedPlan:
    return parse_plan(reply, max_steps=max_steps, start_index=start_index)


def _descriptions(reply: str) -> list[str]:
    return [step.description for step in _parse(reply).steps]


# --- JSON -------------------------------------------------------------------


def test_fenced_json_list_of_strings() -> None:
    parsed = _parse('Sure!\n```json\n["check eligibility", "issue refund"]\n```\nDone.')
    assert parsed == ParsedPlan(
        steps=(
            PlanStep(id="s1", description="check eligibility"),
            PlanStep(id="s2", description="issue refund"),
        ),
        source="json",
    )


def test_fence_without_language_tag() -> None:
    assert _descriptions('```\n["a", "b"]\n```') == ["a", "b"]


def test_json_inside_prose() -> None:
    reply = 'Here is the plan: [{"description": "a"}, {"description": "b"}] Hope it helps.'
    assert _descriptions(reply) == ["a", "b"]


def test_prose_brackets_before_the_plan_are_skipped() -> None:
    reply = 'As noted in [1] and {see below}, "quoted" text:\n{"steps": ["a", "b"]}'
    assert _descriptions(reply) == ["a", "b"]


def test_unbalanced_prose_bracket_does_not_hide_the_plan() -> None:
    reply = 'The [draft said "maybe\n["a", "b"]'
    parsed = _parse(reply)
    assert (parsed.source, [s.description for s in parsed.steps]) == ("json", ["a", "b"])


def test_plan_nested_under_another_key() -> None:
    assert _descriptions('{"result": {"steps": ["a"]}}') == ["a"]


def test_trailing_commas_are_forgiven() -> None:
    assert _descriptions('[\n  {"task": "a"},\n  {"task": "b"},\n]') == ["a", "b"]


@pytest.mark.parametrize("key", ["description", "action", "task", "step"])
def test_each_text_key(key: str) -> None:
    assert _descriptions(f'[{{"{key}": "do it"}}]') == ["do it"]


def test_description_wins_over_a_numeric_step_key() -> None:
    parsed = _parse('[{"step": 1, "action": "a"}, {"step": 2, "action": "b", "depends_on": [1]}]')
    assert parsed.steps == (
        PlanStep(id="s1", description="a"),
        PlanStep(id="s2", description="b", depends_on=("s1",)),
    )


def test_object_fields_worker_aliases_and_check() -> None:
    reply = """{"steps": [
        {"id": "check", "description": "check eligibility", "worker": " billing ",
         "check": "eligible"},
        {"id": "refund", "description": "issue refund", "assignee": "billing",
         "dependencies": ["check"]},
        {"id": "email", "description": "email customer", "agent": "comms", "deps": "refund"}
    ]}"""
    assert _parse(reply).steps == (
        PlanStep(id="check", description="check eligibility", worker="billing", check="eligible"),
        PlanStep(id="refund", description="issue refund", worker="billing", depends_on=("check",)),
        PlanStep(id="email", description="email customer", worker="comms", depends_on=("refund",)),
    )


def test_depends_on_as_ints_means_the_nth_step() -> None:
    reply = '["a", {"task": "b", "depends_on": 1}, {"task": "c", "depends_on": [1, 2]}]'
    assert [s.depends_on for s in _parse(reply).steps] == [(), ("s1",), ("s1", "s2")]


def test_depends_on_as_strings_single_and_comma_separated() -> None:
    reply = (
        '[{"task": "a"}, {"task": "b", "depends_on": "s1"},'
        ' {"task": "c", "depends_on": "s1, s2"}, {"task": "d", "depends_on": ["step 3", "2"]}]'
    )
    assert [s.depends_on for s in _parse(reply).steps] == [(), ("s1",), ("s1", "s2"), ("s3", "s2")]


def test_numeric_ids_are_labels_and_steps_get_generated_ids() -> None:
    reply = (
        '[{"id": 10, "task": "a"}, {"id": "20", "task": "b", "depends_on": [10]},'
        ' {"id": 30, "task": "c", "depends_on": ["20", 99]}]'
    )
    steps = _parse(reply).steps
    assert [(s.id, s.depends_on) for s in steps] == [
        ("s1", ()),
        ("s2", ("s1",)),
        ("s3", ("s2", "s99")),
    ]


def test_explicit_ids_are_kept_trimmed_and_duplicates_made_unique() -> None:
    reply = (
        '[{"id": " a ", "task": "1"}, {"id": "a", "task": "2", "depends_on": "a"},'
        ' {"task": "3"}, {"id": "s2", "task": "4"}]'
    )
    steps = _parse(reply).steps
    assert [(s.id, s.depends_on) for s in steps] == [
        ("a", ()),
        ("a-2", ("a",)),
        ("s3", ()),  # s3 by position; s2 is taken by the model's own id
        ("s2", ()),
    ]


@pytest.mark.parametrize("blank", ['""', '"  "', "null"])
def test_a_blank_id_is_no_id(blank: str) -> None:
    # A blank "id" was refused with 'step 1's "id" is a string; use a short string',
    # which contradicts itself; a step with no id gets the next free sN, so this does too.
    parsed = _parse(f'[{{"id": {blank}, "task": "a"}}, {{"task": "b", "depends_on": [1]}}]')
    assert parsed.error is None
    assert [(s.id, s.depends_on) for s in parsed.steps] == [("s1", ()), ("s2", ("s1",))]


@pytest.mark.parametrize(("value", "kind"), [("[1]", "an array"), ("true", "a boolean")])
def test_an_id_that_is_not_text_is_refused_saying_what_it_is(value: str, kind: str) -> None:
    parsed = _parse(f'[{{"id": {value}, "task": "a"}}]')
    assert parsed.steps == ()
    assert f'step 1\'s "id" is {kind}; use a short string such as "s1"' in (parsed.error or "")


def test_generated_id_skips_a_name_the_model_took() -> None:
    steps = _parse('[{"id": "s2", "task": "x"}, {"task": "y"}]').steps
    assert [s.id for s in steps] == ["s2", "s3"]


@pytest.mark.parametrize(
    "reply",
    [
        '["check eligibility", "", "   ", "email the customer"]',
        '{"steps": ["check eligibility", "-", {"task": ""}, {"description": "email the customer"}]}',
        'Plan:\n```json\n[{"description": "check eligibility"}, {"description": " "}, '
        '"email the customer"]\n```',
    ],
)
def test_blank_json_steps_are_dropped(reply: str) -> None:
    # Issue #5: "Blank steps are dropped." They were sent back to the planner as an error.
    parsed = _parse(reply)
    assert parsed.error is None
    assert [(s.id, s.description) for s in parsed.steps] == [
        ("s1", "check eligibility"),
        ("s2", "email the customer"),
    ]


def test_a_dependency_on_a_dropped_blank_step_is_an_error_not_a_dropped_edge() -> None:
    for reply in (
        '["a", "   ", {"task": ""}, {"task": "d", "depends_on": [1, 2, 3]}]',
        '[{"id": "x", "description": ""}, {"id": "y", "description": "b", "depends_on": ["x"]}]',
    ):
        parsed = _parse(reply)
        assert parsed.steps == ()
        assert parsed.error is not None
        assert "which is a blank line (or step) of the plan" in parsed.error


def test_positions_count_the_dropped_blank_steps() -> None:
    # "depends_on": [3] is the reply's third step, as the model counted: "b", not "c".
    steps = _parse('["a", {"description": ""}, "b", {"description": "c", "depends_on": [3]}]').steps
    assert [(s.id, s.description, s.depends_on) for s in steps] == [
        ("s1", "a", ()),
        ("s2", "b", ()),
        ("s3", "c", ("s2",)),
    ]


def test_unknown_dependency_is_kept_for_validation_to_report() -> None:
    assert _parse('[{"task": "a", "depends_on": ["fetch"]}]').steps[0].depends_on == ("fetch",)


def test_ids_continue_from_start_index_for_a_replan_tail() -> None:
    reply = '[{"task": "flag exception", "depends_on": ["s1"]}, {"task": "email", "depends_on": 1}]'
    steps = _parse(reply, start_index=4).steps
    assert [(s.id, s.depends_on) for s in steps] == [("s4", ("s1",)), ("s5", ("s4",))]


def test_custom_id_prefix() -> None:
    parsed = parse_plan('["a", "b"]', max_steps=5, id_prefix="step-", start_index=7)
    assert [s.id for s in parsed.steps] == ["step-7", "step-8"]


def test_listed_steps_win_over_a_contradicting_flag() -> None:
    assert _descriptions('{"nothing_to_do": true, "steps": ["a"]}') == ["a"]


def test_json_inside_a_numbered_line_is_step_text_not_the_plan() -> None:
    reply = '1. call lookup with ["88213"]\n2. email the customer'
    assert _descriptions(reply) == ['call lookup with ["88213"]', "email the customer"]


# --- lines ------------------------------------------------------------------


def test_numbered_lines_with_a_lead_in_and_a_closing_line() -> None:
    reply = "Here is the plan:\n\n1. Check eligibility\n2) Issue refund\n3: Email\n\nLet me know!"
    parsed = _parse(reply)
    assert parsed.source == "lines"
    assert [s.description for s in parsed.steps] == ["Check eligibility", "Issue refund", "Email"]


@pytest.mark.parametrize(
    "reply",
    [
        "Plan:\nStep 1: a\nStep 2: b",
        "## Plan\n### Step 1. a\n### Step 2 - b",
        "**Step 1:** a\n**Step 2:** b",
        "1. **a**\n2. **b**",
        "(1) a\n(2) b",
        "Steps:\n- a\n- b",
        "Steps:\n* a\n* b",
        "Steps:\n• a\n• b",
        "Todo:\n- [ ] a\n- [x] b",
    ],
)
def test_marked_line_styles(reply: str) -> None:
    assert _descriptions(reply) == ["a", "b"]


def test_unmarked_lines_each_become_a_step() -> None:
    assert _descriptions("check eligibility\n\n  issue refund  \nemail customer\n") == [
        "check eligibility",
        "issue refund",
        "email customer",
    ]


def test_decimal_numbers_do_not_count_as_markers() -> None:
    assert _descriptions("1.5 kg of flour\n2.5 kg of sugar") == [
        "1.5 kg of flour",
        "2.5 kg of sugar",
    ]


def test_sub_bullets_stay_with_their_numbered_step() -> None:
    reply = "1. Check eligibility\n   - call check_eligibility\n2. Email\nThanks."
    assert _descriptions(reply) == ["Check eligibility\n- call check_eligibility", "Email"]


def test_line_notes_give_worker_dependencies_and_check() -> None:
    reply = (
        "1. Check eligibility (worker: billing; check: eligible)\n"
        "2. Issue refund [assignee: billing, depends on: 1]\n"
        "3. Email the customer (worker: comms) (after: 1 and 2)\n"
        "4. Note (in passing) that it is done"
    )
    assert _parse(reply).steps == (
        PlanStep(id="s1", description="Check eligibility", worker="billing", check="eligible"),
        PlanStep(id="s2", description="Issue refund", worker="billing", depends_on=("s1",)),
        PlanStep(
            id="s3", description="Email the customer", worker="comms", depends_on=("s1", "s2")
        ),
        PlanStep(id="s4", description="Note (in passing) that it is done"),
    )


def test_code_fence_lines_are_not_steps() -> None:
    assert _descriptions("```\ncheck\nrefund\n```") == ["check", "refund"]


# --- nothing to do, empty, truncation --------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "[]",
        "```json\n[]\n```",
        '{"steps": []}',
        '{"nothing_to_do": true}',
        '{"done": true}',
        "Nothing to do",
        "Nothing to do: the refund was already issued.",
        "No steps needed.",
        "NO_STEPS",
        "nothing needs to be done",
        '["No steps needed"]',
        "- none",
    ],
)
def test_nothing_to_do_forms(reply: str) -> None:
    parsed = _parse(reply)
    assert (parsed.nothing_to_do, parsed.steps) == (True, ())


@pytest.mark.parametrize(
    "reply",
    ["No step can be skipped.\nrefund", "Nothing in the order is missing, so:\n1. refund"],
)
def test_phrases_that_only_look_like_nothing_to_do(reply: str) -> None:
    parsed = _parse(reply)
    assert not parsed.nothing_to_do
    assert parsed.steps


@pytest.mark.parametrize("reply", ["", "   \n\t\n"])
def test_blank_reply_is_empty_not_nothing_to_do(reply: str) -> None:
    parsed = _parse(reply)
    assert (parsed.steps, parsed.nothing_to_do, parsed.source) == ((), False, "empty")
    assert parsed.error is not None
    assert "held no steps" in parsed.error


@pytest.mark.parametrize("reply", ['["", "  "]', '[{"description": "  "}]', '{"steps": ["-"]}'])
def test_json_with_only_blank_steps_is_an_error_not_nothing_to_do(reply: str) -> None:
    parsed = _parse(reply)
    assert (parsed.steps, parsed.nothing_to_do, parsed.source) == ((), False, "json")
    assert parsed.error is not None
    assert "held no steps" in parsed.error


def test_truncation_is_recorded() -> None:
    parsed = _parse('["a", "b", "c", "d"]', max_steps=2)
    assert [s.id for s in parsed.steps] == ["s1", "s2"]
    assert parsed.truncated_from == 4


def test_no_truncation_at_exactly_max_steps() -> None:
    assert _parse("1. a\n2. b", max_steps=2).truncated_from is None


@pytest.mark.parametrize(("max_steps", "start_index"), [(0, 1), (3, -1)])
def test_bad_arguments_are_a_config_error(max_steps: int, start_index: int) -> None:
    with pytest.raises(ConfigError, match="max_steps"):
        parse_plan("a", max_steps=max_steps, start_index=start_index)


@pytest.mark.parametrize(("reply", "kind"), [(None, "NoneType"), (5, "int"), (b"[]", "bytes")])
def test_a_reply_that_is_not_text_is_a_config_error(reply: object, kind: str) -> None:
    # An AttributeError ('NoneType' object has no attribute 'strip'), or a TypeError.
    with pytest.raises(ConfigError) as caught:
        parse_plan(reply)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"parse_plan reads a model's reply as text (a str); got {kind}: {reply!r}"
    )


def test_pathological_brackets_are_handled() -> None:
    parsed = _parse("[" * 5000 + '"a"' + "]" * 5000 + "\n" + "{" * 3000)
    assert len(parsed.steps) <= 10


# --- properties -------------------------------------------------------------

_FRAGMENTS = st.sampled_from(
    [
        "\n", " ", "1. ", "2) ", "Step 3: ", "- ", "* ", "• ", "[", "]", "{", "}", '"', ",", ":",
        "\\", "```", "```json\n", '"steps"', '"task"', '"id"', '"depends_on"', "1", "s1", "a",
        "Nothing to do", "(worker: x)", "(depends on: 1, 2)", "null", "true", "[]", '{"task": "x"}',
    ]
)  # fmt: skip
_REPLIES = st.one_of(st.text(), st.lists(_FRAGMENTS, max_size=40).map("".join))


@settings(max_examples=400, deadline=None)
@given(
    reply=_REPLIES,
    max_steps=st.integers(min_value=1, max_value=6),
    start_index=st.integers(min_value=0, max_value=20),
)
def test_never_raises_and_keeps_its_promises(reply: str, max_steps: int, start_index: int) -> None:
    parsed = parse_plan(reply, max_steps=max_steps, start_index=start_index)
    assert len(parsed.steps) <= max_steps
    assert all(step.description.strip() for step in parsed.steps)
    ids = [step.id for step in parsed.steps]
    assert len(set(ids)) == len(ids)
    assert all(step.id.strip() for step in parsed.steps)
    if parsed.nothing_to_do:
        assert parsed.steps == ()
    if parsed.truncated_from is not None:
        assert parsed.truncated_from > max_steps == len(parsed.steps)


def test_a_reply_reads_as_a_planner_would_without_naming_max_steps() -> None:
    # The README sends a reader to parse_plan to see how a reply is read; parse_plan(reply)
    # was a TypeError (max_steps had no default), not the plan a Planner would get.
    reply = "\n".join(f"{n}. step {n}" for n in range(1, 13))
    parsed = parse_plan(reply)
    assert [step.id for step in parsed.steps] == [f"s{n}" for n in range(1, 11)]
    assert parsed.truncated_from == 12


def test_a_phrase_or_an_address_as_an_id_is_a_label_and_the_step_gets_a_generated_id() -> None:
    # The id goes on spans and logs, where the model's own words may not.
    reply = (
        '{"steps": [{"id": "check ann@example.com", "description": "a"},'
        ' {"id": "b", "description": "b", "depends_on": ["check ann@example.com"]},'
        ' {"id": "x' + "y" * 40 + '", "description": "c", "depends_on": ["b"]}]}'
    )
    steps = _parse(reply).steps
    assert [(s.id, s.depends_on) for s in steps] == [
        ("s1", ()),
        ("b", ("s1",)),
        ("s3", ("b",)),  # 41 characters: no short name
    ]

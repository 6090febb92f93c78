"""The usual JSON plan is read in one pass, without the general id and dependency
rules; whenever that pass accepts a plan, the general rules give the same steps
(both the one-pass reading of step objects and the typed decoding of the reply).
And the validator's shortcut (no cycle search for a plan whose steps only wait on
earlier ones) finds the same problems as a full search."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from regiment.hierarchy import PlanStep, parse_plan, validate_plan
from regiment.hierarchy.plan._json import _from_json
from regiment.hierarchy.plan._lines import _RawStep, _Reading
from regiment.hierarchy.plan._parse import _as_written, _finish, _Naming, _resolved
from regiment.hierarchy.plan._shape import _NUMERIC, _numeric
from regiment.hierarchy.plan._usual import _one_pass
from regiment.hierarchy.plan._validate import _cycles

# Ids and dependencies as planners write them, and the shapes that need the rules.
_names = st.sampled_from(
    ["s1", "s2", "s3", "a", "fetch", "step3", "Step 2", "\u017ftep 5", "#4", "7", "0", "x-1"]
)
_raws = st.builds(
    _RawStep,
    description=st.sampled_from(["do a", "do b"]),
    label=st.none() | _names,
    worker=st.none() | st.sampled_from(["w", "v"]),
    deps=st.lists(_names, max_size=3).map(tuple),
    check=st.none() | st.just("c"),
)


@given(raws=st.lists(_raws, min_size=1, max_size=6), worker=st.none() | st.just("w"))
def test_the_one_pass_reading_is_what_the_general_rules_give(
    raws: list[_RawStep], worker: str | None
) -> None:
    direct = _as_written(raws, worker)
    general, problems = _resolved(raws, list(range(len(raws))), _Naming("s", 1, worker))
    if direct is not None:
        assert direct == general
        assert problems == []


def test_the_usual_plan_takes_the_one_pass_reading() -> None:
    raws = [_RawStep(description="a", label="s1"), _RawStep(description="b", label="s2")]
    assert _as_written(raws, "w") == [
        PlanStep(id="s1", description="a", worker="w"),
        PlanStep(id="s2", description="b", worker="w"),
    ]
    # a repeated id, a numbered id or a numbered dependency: the general rules
    assert _as_written([*raws, _RawStep(description="c", label="s1")], None) is None
    assert _as_written([_RawStep(description="c", label="3")], None) is None
    assert _as_written([_RawStep(description="c", label="s9", deps=("1",))], None) is None


def test_a_sole_worker_is_filled_in_by_the_reader() -> None:
    reply = json.dumps({"steps": [{"description": "a"}, {"id": "b", "description": "b"}]})
    parsed = parse_plan(reply, max_steps=5, default_worker="only")
    assert [s.worker for s in parsed.steps] == ["only", "only"]
    named = json.dumps({"steps": [{"id": "x", "description": "a", "worker": "other"}]})
    assert parse_plan(named, max_steps=5, default_worker="only").steps[0].worker == "other"
    assert parse_plan(named.replace('"other"', '""'), max_steps=5).steps[0].worker is None


_ids = st.sampled_from(["a", "b", "c", "d", "e"])


# A new step reusing a kept id ("a"), in a cycle with another: the search was skipped.
@example(graph=[("b", ["a"]), ("a", ["b"])], kept=["k1", "a"])
@given(
    graph=st.lists(st.tuples(_ids, st.lists(_ids, max_size=3)), min_size=1, max_size=5),
    kept=st.lists(st.sampled_from(["k1", "a"]), max_size=2, unique=True),
)
def test_the_cycle_search_is_skipped_only_where_it_finds_none(
    graph: list[tuple[str, list[str]]], kept: list[str]
) -> None:
    steps = [PlanStep(id=i, description="x", worker="w", depends_on=tuple(d)) for i, d in graph]
    problems = validate_plan(steps, workers=("w",), known_ids=kept)
    cycles = [p for p in problems if "in a cycle" in p]
    assert len(cycles) == len(_cycles(steps))


@example(label="\u017ftep 3")  # re.I folds the long s: the pattern reads it as "step 3"
@example(label=" #\u0663")
@given(label=st.text(alphabet="0123456789#sStTeEpP\u017f _-\t\u0663\u00b2xK", max_size=8))
def test_a_number_is_read_as_the_pattern_alone_reads_it(label: str) -> None:
    match = _NUMERIC.match(label.strip())
    assert _numeric(label) == (int(match.group(1)) if match else None)


# Step objects as planners write them, and the values that send a plan to the general reader.
_good_text = st.sampled_from(["do a", " do b ", "\u00e9t\u00e9", "x\ty", "1"])
_text = (
    _good_text
    | _good_text
    | st.sampled_from(["", "-", "nothing to do", " Nothing. ", "[1] do a", "[1, 2]", '{"a": 1}'])
    | st.sampled_from(["_", "\u00bfqu\u00e9?", " {x", "\u00b2 do", "_a", "\u0663"])
)
_good_label = st.sampled_from(["s1", "s2", " s3 ", "fetch", "a-b", "S4", "s5", "x"])
_label = _good_label | _good_label | st.sampled_from(["7", "step 2", "#4", "", "  ", "\u017ftep 1"])
_good_dep = st.sampled_from(["s1", "s2", "s3", "fetch", "x", "S4"])
_dep = _good_dep | _good_dep | st.sampled_from(["7", "step 2", "a,b", "and", "AND", "x y", ""])
_usual_objects = st.fixed_dictionaries(
    {"id": _label, "description": _text},
    optional={
        "worker": st.sampled_from(["w", " v ", ""]) | st.none(),
        "depends_on": st.lists(_dep, max_size=3),
        "check": st.sampled_from(["c", " "]) | st.none(),
    },
)
_good_objects = st.fixed_dictionaries(
    {"id": _good_label, "description": _good_text},
    optional={"worker": st.sampled_from(["w", " v ", ""]), "depends_on": st.lists(_good_dep)},
)
_other_objects = st.fixed_dictionaries(
    {},
    optional={
        "id": _label | st.none() | st.integers(0, 9),
        "description": _text | st.none() | st.integers(0, 9),
        "worker": st.just(3),
        "depends_on": st.lists(_dep | st.integers(1, 3), max_size=3) | st.none() | _dep,
        "task": st.just("other key"),
    },
)
_step_objects = _usual_objects | _usual_objects | _other_objects


@settings(max_examples=300)
@given(
    steps=st.lists(_step_objects, max_size=5)
    | st.lists(
        _good_objects, min_size=1, max_size=5, unique_by=lambda step: str(step["id"]).strip()
    ),
    worker=st.none() | st.just("only"),
    extra=st.none() | st.just({"nothing_to_do": False}),
)
def test_the_typed_one_pass_reading_is_what_the_general_reader_gives(
    steps: list[dict[str, object]], worker: str | None, extra: dict[str, object] | None
) -> None:
    reply = json.dumps({"steps": steps, **(extra or {})})
    fast = _one_pass(reply, worker)
    general = _finish(_from_json(reply) or _Reading([]), "json", 100, _Naming("s", 1, worker))
    if fast is not None:
        assert general.error is None
        assert list(general.steps) == fast
        assert parse_plan(reply, max_steps=100, default_worker=worker) == general


def test_the_usual_plan_is_read_in_one_pass_and_anything_else_is_not() -> None:
    usual = json.dumps(
        {
            "steps": [
                {"id": "s1", "description": "a"},
                {"id": "s2", "description": "b", "depends_on": ["s1", "s1"]},
            ]
        }
    )
    assert _one_pass(usual, "w") == [
        PlanStep(id="s1", description="a", worker="w"),
        PlanStep(id="s2", description="b", worker="w", depends_on=("s1",)),
    ]
    others: list[dict[str, object]] = [
        {"steps": [{"description": "a"}]},  # no id: the general rules number it
        {"steps": [{"id": "s1", "description": "a", "task": "b"}]},  # a key it does not know
        {"steps": [{"id": "1", "description": "a"}]},  # a numbered id
        {"steps": [{"id": "s1", "description": "a", "depends_on": [1]}]},  # a numbered dependency
        {"steps": [{"id": "s1", "description": "nothing to do"}]},
        {"steps": []},
        {"plan": [{"id": "s1", "description": "a"}]},
    ]
    for other in others:
        assert _one_pass(json.dumps(other), "w") is None
    trailing_comma = '{"steps": [{"id": "s1", "description": "a"},]}'
    assert _one_pass(trailing_comma, "w") is None

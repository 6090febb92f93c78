"""The usual JSON plan is read in one pass, without the general id and dependency
rules; whenever that pass accepts a plan, the general rules give the same steps.
And the validator's shortcut (no cycle search for a plan whose steps only wait on
earlier ones) finds the same problems as a full search."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from regiment.hierarchy import PlanStep, parse_plan, validate_plan
from regiment.hierarchy.plan._lines import _RawStep
from regiment.hierarchy.plan._parse import _as_written, _Naming, _resolved
from regiment.hierarchy.plan._shape import _NUMERIC, _numeric
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

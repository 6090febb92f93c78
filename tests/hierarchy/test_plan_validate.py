"""Plan validation: every kind of problem, worded so a model can fix it."""

from __future__ import annotations

import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import PlanStep, validate_plan

TEAM = ("comms", "billing")


def _step(
    step_id: str,
    worker: str | None = "billing",
    depends_on: tuple[str, ...] = (),
    check: str | None = None,
) -> PlanStep:
    return PlanStep(
        id=step_id, description=f"do {step_id}", worker=worker, depends_on=depends_on, check=check
    )


def test_a_good_plan_has_no_problems() -> None:
    steps = [_step("s1", check="eligible"), _step("s2", "comms", ("s1",))]
    assert validate_plan(steps, workers=TEAM, checks={"eligible"}) == ()


def test_unknown_worker() -> None:
    assert validate_plan([_step("s1"), _step("s2", "shipping")], workers=TEAM) == (
        "step s2 is assigned to worker 'shipping', which does not exist; "
        "the workers are: billing, comms",
    )


def test_missing_worker_in_a_team_of_several() -> None:
    assert validate_plan([_step("s1", None)], workers=TEAM) == (
        "step s1 names no worker; this team has several, so assign one of: billing, comms",
    )


def test_a_single_worker_team_needs_no_worker_field() -> None:
    assert validate_plan([_step("s1", None), _step("s2", "solo")], workers=["solo"]) == ()


def test_a_single_worker_team_still_rejects_another_name() -> None:
    assert validate_plan([_step("s1", "billing")], workers=["solo"]) == (
        "step s1 is assigned to worker 'billing', which does not exist; the workers are: solo",
    )


def test_unknown_dependency_lists_what_a_step_may_depend_on() -> None:
    steps = [_step("s3"), _step("s4", depends_on=("s9",))]
    assert validate_plan(steps, workers=TEAM, known_ids={"s2", "s10", "s1"}) == (
        "step s4 depends on step 's9', which does not exist; s4 may depend on: s3, s1, s2, s10",
    )


def test_kept_committed_steps_are_valid_dependency_targets() -> None:
    steps = [_step("s4", depends_on=("s1",))]
    assert validate_plan(steps, workers=TEAM, known_ids=("s1",)) == ()


def test_self_dependency() -> None:
    assert validate_plan([_step("s1", depends_on=("s1",))], workers=TEAM) == (
        "step s1 depends on itself; remove 's1' from its depends_on",
    )


def test_cycle_names_the_path() -> None:
    steps = [_step("s1", depends_on=("s3",)), _step("s2"), _step("s3", depends_on=("s1",))]
    assert validate_plan(steps, workers=TEAM) == (
        "steps s1 -> s3 -> s1 depend on each other in a cycle, so none of them "
        "could ever start; remove one of these dependencies",
    )


def test_longer_cycle_and_a_separate_one_are_both_reported() -> None:
    steps = [
        _step("a", depends_on=("b",)),
        _step("b", depends_on=("c",)),
        _step("c", depends_on=("a",)),
        _step("d", depends_on=("e",)),
        _step("e", depends_on=("d", "a")),
    ]
    problems = validate_plan(steps, workers=TEAM)
    assert [p.split(" depend on")[0] for p in problems] == [
        "steps a -> b -> c -> a",
        "steps d -> e -> d",
    ]


def test_a_diamond_is_not_a_cycle() -> None:
    steps = [
        _step("a"),
        _step("b", depends_on=("a",)),
        _step("c", depends_on=("a",)),
        _step("d", depends_on=("b", "c")),
    ]
    assert validate_plan(steps, workers=TEAM) == ()


def test_a_long_chain_does_not_hit_the_recursion_limit() -> None:
    steps = [_step("s1")] + [_step(f"s{i}", depends_on=(f"s{i - 1}",)) for i in range(2, 5000)]
    assert validate_plan(steps, workers=TEAM) == ()


def test_duplicate_ids() -> None:
    assert validate_plan([_step("s1"), _step("s1"), _step("s1")], workers=TEAM) == (
        "step id 's1' is used by 3 steps; give each step its own id",
    )


def test_new_step_reusing_a_kept_id() -> None:
    assert validate_plan([_step("s2")], workers=TEAM, known_ids=("s1", "s2")) == (
        "step id 's2' is already used by a completed step of the earlier plan; "
        "give new steps ids that are not taken (taken: s1, s2)",
    )


def test_empty_id_and_blank_description() -> None:
    steps = [_step("s1"), PlanStep(id=" ", description="x", worker="billing")]
    steps.append(PlanStep(id="s3", description="  ", worker="billing"))
    assert validate_plan(steps, workers=TEAM) == (
        "step #2 has an empty id; give every step a short unique id",
        "step s3 has no description; say what the step must do",
    )


def test_unknown_check() -> None:
    steps = [_step("s1", check="eligble")]
    assert validate_plan(steps, workers=TEAM, checks=("refund_issued", "eligible")) == (
        "step s1 asks for check 'eligble', which is not registered; "
        "the checks are: eligible, refund_issued",
    )


def test_check_when_none_are_registered() -> None:
    assert validate_plan([_step("s1", check="eligible")], workers=TEAM) == (
        "step s1 asks for check 'eligible', but no checks are registered; leave 'check' out",
    )


def test_problems_come_in_a_stable_order() -> None:
    steps = [
        _step("s1", "shipping", ("s1", "s7"), check="nope"),
        _step("s1", None, ("s1",)),
    ]
    assert validate_plan(steps, workers=TEAM) == (
        "step id 's1' is used by 2 steps; give each step its own id",
        "step s1 is assigned to worker 'shipping', which does not exist; "
        "the workers are: billing, comms",
        "step s1 depends on itself; remove 's1' from its depends_on",
        "step s1 depends on step 's7', which does not exist; "
        "remove it from s1's depends_on: there is no other step to depend on",
        "step s1 asks for check 'nope', but no checks are registered; leave 'check' out",
        "step s1 names no worker; this team has several, so assign one of: billing, comms",
        "step s1 depends on itself; remove 's1' from its depends_on",
    )


def test_no_workers_is_a_programming_error() -> None:
    with pytest.raises(ConfigError, match="at least one"):
        validate_plan([_step("s1")], workers=())

"""Plan values: lookup, readiness, and new versions that leave the old one alone."""

from __future__ import annotations

import msgspec
import pytest

from regiment.hierarchy import Plan, PlanStep


def _refund_plan() -> Plan:
    return Plan(
        version=1,
        reason="initial",
        steps=(
            PlanStep(id="s1", description="check eligibility", worker="billing"),
            PlanStep(id="s2", description="issue refund", worker="billing", depends_on=("s1",)),
            PlanStep(id="s3", description="email customer", worker="comms", depends_on=("s2",)),
        ),
    )


def test_step_finds_by_id() -> None:
    assert _refund_plan().step("s2").description == "issue refund"


def test_step_unknown_id_lists_the_steps() -> None:
    with pytest.raises(
        KeyError, match=r"plan version 1 has no step 's9'; its steps are: s1, s2, s3"
    ):
        _refund_plan().step("s9")


def test_plans_and_steps_are_immutable() -> None:
    plan = _refund_plan()
    with pytest.raises(AttributeError):
        plan.version = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        plan.steps[0].description = "refund anyway"  # type: ignore[misc]


def test_is_empty_and_ids() -> None:
    assert Plan(version=1, steps=()).is_empty
    assert not _refund_plan().is_empty
    assert _refund_plan().ids == ("s1", "s2", "s3")


def test_with_tail_makes_a_new_version_and_leaves_the_old_one_unchanged() -> None:
    old = _refund_plan()
    before = msgspec.json.encode(old)
    tail = (
        PlanStep(id="s4", description="flag exception", worker="billing", depends_on=("s1",)),
        PlanStep(id="s5", description="email: no refund", worker="comms", depends_on=("s4",)),
    )

    new = old.with_tail(keep={"s1"}, new_steps=tail, reason="check failed: not eligible")

    assert new is not old
    assert (new.version, new.parent_version, new.reason) == (2, 1, "check failed: not eligible")
    assert new.ids == ("s1", "s4", "s5")
    assert new.step("s1") == old.step("s1")
    assert msgspec.json.encode(old) == before
    assert old.ids == ("s1", "s2", "s3")
    assert (old.version, old.parent_version) == (1, None)


def test_with_tail_keeps_kept_steps_in_plan_order_whatever_the_order_of_keep() -> None:
    new = _refund_plan().with_tail(keep=["s2", "s1"], new_steps=(), reason="r")
    assert new.ids == ("s1", "s2")


def test_with_tail_rejects_keeping_a_step_the_plan_does_not_have() -> None:
    with pytest.raises(KeyError, match="no step 's7'"):
        _refund_plan().with_tail(keep={"s7"}, new_steps=(), reason="r")


def test_with_tail_drops_truncation_record_of_the_parent() -> None:
    plan = msgspec.structs.replace(_refund_plan(), truncated_from=12)
    assert plan.with_tail(keep=(), new_steps=(), reason="r").truncated_from is None


def test_ready_is_in_plan_order_and_waits_for_dependencies() -> None:
    plan = Plan(
        version=1,
        steps=(
            PlanStep(id="a", description="A"),
            PlanStep(id="b", description="B", depends_on=("a",)),
            PlanStep(id="c", description="C"),
            PlanStep(id="d", description="D", depends_on=("a", "c")),
            PlanStep(id="e", description="E"),
        ),
    )
    assert [s.id for s in plan.ready(committed=(), running=())] == ["a", "c", "e"]
    assert [s.id for s in plan.ready(committed={"a"}, running={"c"})] == ["b", "e"]
    assert [s.id for s in plan.ready(committed={"a", "c"}, running=())] == ["b", "d", "e"]
    assert plan.ready(committed={"a", "b", "c", "d", "e"}, running=()) == ()


def test_ready_counts_kept_committed_dependencies() -> None:
    plan = _refund_plan().with_tail(
        keep={"s1"},
        new_steps=(PlanStep(id="s4", description="flag", depends_on=("s1",)),),
        reason="r",
    )
    assert [s.id for s in plan.ready(committed={"s1"}, running=())] == ["s4"]


def test_outline_shows_worker_dependencies_and_check() -> None:
    plan = Plan(
        version=1,
        steps=(
            PlanStep(id="s1", description="check", worker="billing", check="eligible"),
            PlanStep(id="s2", description="refund", depends_on=("s1",)),
        ),
    )
    assert plan.outline() == "s1 [billing] check (check: eligible)\ns2 refund (after s1)"


def test_plan_round_trips_through_json() -> None:
    plan = _refund_plan()
    assert msgspec.json.decode(msgspec.json.encode(plan), type=Plan) == plan

"""Plan validation: what is wrong with a plan, in words the planner model can act on.

A plan a model wrote that names an unknown worker or dependency, or whose
dependencies form a cycle, is not a crash: the problems go back to the planner
model as a re-prompt. So each problem is one self-contained sentence that says
what is wrong and what would be right.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import NamedTuple

from regiment.errors import ConfigError
from regiment.hierarchy.plan._plan import PlanStep

__all__ = ("CutSteps", "validate_plan")


class CutSteps(NamedTuple):
    """The steps of a reply past ``Planner.max_steps``, which were cut: a dependency on
    one is told so, not that the step (which the model did write) does not exist."""

    ids: Collection[str]
    limit: int  # max_steps
    written: int  # how many steps the reply had


def validate_plan(
    steps: Sequence[PlanStep],
    *,
    workers: Collection[str],
    known_ids: Collection[str] = (),
    checks: Collection[str] = (),
    written_as: Mapping[str, str] | None = None,
    replaced_ids: Collection[str] = (),
    cut: CutSteps | None = None,
) -> tuple[str, ...]:
    """The problems with a plan; an empty tuple means it is valid.

    Args:
        steps: the steps to check (a first plan, or a replan's new tail).
        workers: the team's worker names. With exactly one worker a step may
            leave ``worker`` out (``None``); with several it must name one.
        known_ids: ids of steps kept from earlier versions (the committed
            ones): valid dependency targets, and ids new steps must not reuse.
        checks: names of the registered checks a step may ask for.
        written_as: :attr:`ParsedPlan.written_as`: a dependency on no step is
            quoted as the model wrote it (``7``), not as the id it was read as.
        replaced_ids: a replaced version's unfinished steps: depending on one is told so.
        cut: the reply's steps past ``max_steps``: depending on one is told so.

    Returns:
        One sentence per problem, in a stable order: ids first, then each
        step in plan order, then dependency cycles.

    Raises:
        ConfigError: ``workers`` is empty (a team needs at least one worker).
    """
    if not workers:
        raise ConfigError("validate_plan needs the team's workers; a team has at least one")
    plan_ids = [step.id for step in steps]
    known = set(plan_ids) | set(known_ids)
    usual = not known_ids and len(known) == len(steps)  # unique ids, nothing kept
    problems: list[str] = []
    earlier = set(known_ids).difference(plan_ids)  # kept; a reused id is not earlier
    forward = False
    for step in steps:  # the messages are only built for a step with a problem
        if usual and not (step.id.strip() and step.description.strip()):
            usual = False
        if step.worker not in workers and (step.worker is not None or len(workers) > 1):
            problems.extend(_worker_problems(step, workers))
        if not known.issuperset(step.depends_on) or step.id in step.depends_on:
            targets = [*dict.fromkeys(plan_ids), *_sorted(set(known_ids) - set(plan_ids))]
            others = [target for target in targets if target != step.id]  # not itself
            problems.extend(
                _dependency_problems(step, known, others, written_as or {}, replaced_ids, cut)
            )
        if step.check is not None and step.check not in checks:
            problems.extend(_check_problems(step, checks))
        if not forward and not earlier.issuperset(step.depends_on):
            forward = True
        earlier.add(step.id)
    if not usual:  # ids first: blank, repeated or taken ones
        problems[:0] = _id_problems(steps, known_ids)
    if forward:  # only a dependency on a later step can close a cycle
        problems.extend(_cycle_problems(steps))
    return tuple(problems)


def _cycle_problems(steps: Sequence[PlanStep]) -> Iterator[str]:
    for cycle in _cycles(steps):
        yield (
            f"steps {' -> '.join(cycle)} depend on each other in a cycle, so none of them "
            "could ever start; remove one of these dependencies"
        )


def _id_problems(steps: Sequence[PlanStep], known_ids: Collection[str]) -> Iterator[str]:
    counts = Counter(step.id for step in steps)
    reported: set[str] = set()
    for number, step in enumerate(steps, start=1):
        if not step.id.strip():
            yield f"step #{number} has an empty id; give every step a short unique id"
        elif step.id in known_ids and step.id not in reported:
            reported.add(step.id)
            yield (
                f"step id {step.id!r} is already used by a completed step of the earlier plan; "
                f"give new steps ids that are not taken (taken: {_listing(_sorted(known_ids))})"
            )
        elif counts[step.id] > 1 and step.id not in reported:
            reported.add(step.id)
            yield (
                f"step id {step.id!r} is used by {counts[step.id]} steps; give each step its own id"
            )
        if not step.description.strip():
            yield f"step {step.id} has no description; say what the step must do"


def _worker_problems(step: PlanStep, workers: Collection[str]) -> Iterator[str]:
    names = _listing(sorted(workers))
    if step.worker is None:
        if len(workers) > 1:
            yield (
                f"step {step.id} names no worker; this team has several, so assign one of: {names}"
            )
    elif step.worker not in workers:
        yield (
            f"step {step.id} is assigned to worker {step.worker!r}, which does not exist; "
            f"the workers are: {names}"
        )


def _dependency_problems(
    step: PlanStep,
    valid: set[str],
    others: Sequence[str],
    written_as: Mapping[str, str],
    replaced: Collection[str],
    cut: CutSteps | None,
) -> Iterator[str]:
    # The steps it may depend on, never itself (which the next sentence would refuse).
    may = (
        f"{step.id} may depend on: {_listing(others)}"
        if others
        else f"remove it from {step.id}'s depends_on: there is no other step to depend on"
    )
    for dep in step.depends_on:
        if dep == step.id:
            yield f"step {step.id} depends on itself; remove {dep!r} from its depends_on"
        elif dep not in valid and cut is not None and dep in cut.ids:
            yield (
                f"step {step.id} depends on step {dep!r}, which is past the {cut.limit} steps "
                f"a plan may have (the plan had {cut.written}), so it was cut and never runs; "
                f"plan at most {cut.limit} steps, each depending only on steps among them"
            )
        elif dep not in valid and dep in replaced:
            yield (
                f"step {step.id} depends on step {dep!r} of the plan being replaced, which "
                f"did not finish and is dropped with it; to build on it, give {dep!r} again "
                f"as a step of your reply, else {may}"
            )
        elif dep not in valid and dep in written_as:
            written = written_as[dep]
            shown = written if written.isdigit() else repr(written)
            number = re.search(r"\d+$", dep)
            yield (
                f"step {step.id} depends on {shown}, which is no step of the plan (no step "
                f"is number {number.group() if number else shown}, and none has the id "
                f"{dep!r}); {may}"
            )
        elif dep not in valid:
            yield (f"step {step.id} depends on step {dep!r}, which does not exist; {may}")


def _check_problems(step: PlanStep, checks: Collection[str]) -> Iterator[str]:
    if step.check is None or step.check in checks:
        return
    if checks:
        yield (
            f"step {step.id} asks for check {step.check!r}, which is not registered; "
            f"the checks are: {_listing(sorted(checks))}"
        )
    else:
        yield (
            f"step {step.id} asks for check {step.check!r}, but no checks are registered; "
            "leave 'check' out"
        )


def _cycles(steps: Sequence[PlanStep]) -> list[list[str]]:
    """Dependency cycles as id paths (``[s1, s3, s1]``: s1 waits for s3, s3 for s1).

    Iterative depth-first search in plan order, so the result is deterministic
    and a long chain cannot hit the recursion limit. Self-dependencies and
    unknown targets are reported elsewhere and left out here.
    """
    graph: dict[str, list[str]] = {}
    for step in steps:
        graph.setdefault(step.id, [dep for dep in step.depends_on if dep != step.id])
    graph = {node: [dep for dep in deps if dep in graph] for node, deps in graph.items()}
    on_path: set[str] = set()
    finished: set[str] = set()
    cycles: list[list[str]] = []
    for root in graph:
        if root in finished:
            continue
        path, pending = [root], [iter(graph[root])]
        on_path.add(root)
        while pending:
            following = next(pending[-1], None)
            if following is None:
                done = path.pop()
                on_path.discard(done)
                finished.add(done)
                pending.pop()
            elif following in on_path:
                cycles.append([*path[path.index(following) :], following])
            elif following not in finished:
                on_path.add(following)
                path.append(following)
                pending.append(iter(graph[following]))
    return cycles


def _listing(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"


def _sorted(ids: Collection[str]) -> list[str]:
    """Ids in natural order (s2 before s10)."""
    return sorted(ids, key=lambda i: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", i)])

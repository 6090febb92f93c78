"""How the run of a nested team (a ``TeamWorker``'s step) is named in the journal.

A nested run of a journaled run is journaled as a run of its own, under an id derived
from the step it serves: its parent run's id, the plan version, the step id and the
attempt. The same step of the same plan version therefore finds its nested run again
after a resume. The id carries ``~``, which a top-level run's id never does, so a
listing can leave nested runs out and anything can name the top run a nested one
belongs to.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = (
    "NESTED_MARK",
    "nested_run_id",
    "nested_under",
    "not_resumable_alone",
    "top_run_id",
    "with_tops",
)

NESTED_MARK = "~"
"""What every nested run's id contains and no top-level run's id does."""


def nested_run_id(parent: str, plan_version: int, step_id: str, attempt: int = 1) -> str:
    """The id of the run serving step ``step_id`` of ``parent``'s plan version
    ``plan_version`` (``parent``'s ``attempt``-th try of it)."""
    tried = "" if attempt == 1 else f"-a{attempt}"
    return f"{parent}{NESTED_MARK}v{plan_version}-{step_id}{tried}"


def top_run_id(run_id: str) -> str | None:
    """The top-level run a nested run belongs to; ``None`` for a top-level run."""
    top, mark, _ = run_id.partition(NESTED_MARK)
    return top if mark else None


def not_resumable_alone(
    run_id: str, *, journal_flag: str = "", how: str | None = None
) -> str | None:
    """Why nested run ``run_id`` cannot be resumed by itself (``None``: a top-level run):
    what a ``resume`` of it says, naming the run to resume instead (``journal_flag``: what
    the ``regiment resume`` it suggests adds to read the journal in use, `` --journal J``;
    ``how``: how to resume that run, said instead of that command)."""
    top = top_run_id(run_id)
    if top is None:
        return None
    how = how or f"`regiment resume{journal_flag} {top}`"
    return (
        f"run {run_id!r} is the run of a nested team (a step of run {top!r}); it is "
        f"resumed with that run: resume {top!r} ({how}), which finishes this one where "
        "it stopped"
    )


def nested_under(run_id: str) -> str:
    """What the ids of ``run_id``'s nested runs (at any depth) begin with."""
    return f"{run_id}{NESTED_MARK}"


def with_tops(run_ids: Iterable[str]) -> list[str]:
    """``run_ids`` and the top runs of the nested ones, sorted (the order rows are locked in:
    a top run's id sorts before its nested runs', so the top's row is locked first)."""
    ids = set(run_ids)
    ids.update(top for run_id in list(ids) if (top := top_run_id(run_id)) is not None)
    return sorted(ids)

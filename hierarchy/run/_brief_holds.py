"""Leases this process holds for a moment, not for a run: a paused run's cancel
(``RunningTeam.cancel_paused``) or an approval decision being recorded.

Such a holder owns the run's lease under this process's name, as a run of it would, so a
resume here that met it was told the run was "running in this process already". A resume
asks here instead: it waits such a hold out (one write or two), then tries again, and is
told what the run became (a cancel's ``already finished (cancelled)``); one still held
after that says what holds it.
"""

from __future__ import annotations

from types import TracebackType

import anyio

from regiment.errors import LeaseHeld

__all__ = ("BriefHold", "wait_brief_hold")

_held: dict[str, list[str]] = {}  # run id -> what holds its lease briefly (a cancel, a decision)
_TRIES = 40  # times 50 ms: a brief holder writes once or twice


class BriefHold:
    """``with BriefHold(run_id, "being cancelled"):`` around taking, using and releasing
    the run's lease for a moment (a class, not ``@contextmanager``: see
    tests/hierarchy/test_run_fixed_cost.py)."""

    __slots__ = ("_run_id", "_what")

    def __init__(self, run_id: str, what: str) -> None:
        self._run_id, self._what = run_id, what

    def __enter__(self) -> None:
        _held.setdefault(self._run_id, []).append(self._what)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        holders = _held[self._run_id]
        holders.remove(self._what)
        if not holders:
            del _held[self._run_id]


async def wait_brief_hold(run_id: str, refused: LeaseHeld) -> None:
    """Return once a brief hold on ``run_id`` in this process has ended (the caller then
    asks for the lease again); raise ``refused`` at once if there is none (a run holds
    it), or a ``LeaseHeld`` saying what holds it if it does not end."""
    if run_id not in _held:
        raise refused
    for _ in range(_TRIES):
        await anyio.sleep(0.05)
        if run_id not in _held:
            return
    what = " and ".join(_held.get(run_id, ["held briefly"]))
    raise LeaseHeld(
        f"run {run_id!r} is not running, but is {what} in this process, which holds its "
        "lease for that: retry in a moment (a cancelled run then has nothing to resume)"
    ) from refused

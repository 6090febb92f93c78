"""The torture's body-rerun check reads the final journal, the ledger and the kills.

It read the journal once after each kill to learn which calls were in flight; a racing
resume could finish them first, so a body run twice before any commit looked like a
rerun of a finished call (or a rerun was let through by a key in flight at another kill).
"""

from __future__ import annotations

from crash_checks import reruns


def test_a_rerun_after_a_kill_before_the_result_was_journaled_is_allowed() -> None:
    assert reruns("k", [10, 11], {10: 100.0}, done=150.0) == []
    assert reruns("k", [10, 11, 12], {10: 100.0, 11: 120.0}, done=150.0) == []
    assert reruns("k", [10], {}, done=150.0) == []


def test_a_rerun_after_the_result_was_journaled_is_found() -> None:
    (why,) = reruns("k", [10, 11], {10: 100.0}, done=90.0)
    assert why == "k: again after pid 10 had journaled its result ([10, 11])"


def test_a_rerun_after_a_process_that_was_not_killed_is_found() -> None:
    (why,) = reruns("k", [10, 11], {}, done=150.0)
    assert why == "k: again after pid 10, which was not killed ([10, 11])"


def test_a_body_run_twice_in_one_process_is_found() -> None:
    why = reruns("k", [10, 10], {10: 100.0}, done=150.0)
    assert why[0] == "k: twice in one process ([10, 10])"

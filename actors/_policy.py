"""Restart policy (OTP style) and the sliding window that enforces it."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from regiment.errors import ConfigError

__all__ = ("RestartPolicy",)


@dataclass(frozen=True, kw_only=True)
class RestartPolicy:
    """How often a failing actor may be restarted before its failure escalates.

    An actor whose handler raises is replaced by a fresh instance from its
    factory. Failures are counted in a sliding window: the ``max_restarts + 1``-th
    failure within ``within`` seconds is not restarted but escalated to the
    parent actor (``on_child_failed``) or, at the top, out of the actor system.

    Attributes:
        max_restarts: restarts allowed inside the window; ``0`` escalates the first failure.
        within: length of the window in seconds (on the system's clock).
    """

    max_restarts: int = 3
    within: float = 5.0

    def __post_init__(self) -> None:
        if self.max_restarts < 0:
            raise ConfigError(f"max_restarts must be >= 0, got {self.max_restarts}")
        if self.within <= 0:
            raise ConfigError(f"within must be a positive number of seconds, got {self.within}")


class RestartWindow:
    """Failure times inside the policy's window; says whether one more restart is allowed."""

    __slots__ = ("_clock", "_failures", "policy")

    def __init__(self, policy: RestartPolicy, clock: Callable[[], float]) -> None:
        self.policy = policy
        self._clock = clock
        self._failures: deque[float] = deque()

    def record_failure(self) -> bool:
        """Record a failure now; return True if the actor may be restarted."""
        now = self._clock()
        horizon = now - self.policy.within
        while self._failures and self._failures[0] <= horizon:
            self._failures.popleft()
        self._failures.append(now)
        return len(self._failures) <= self.policy.max_restarts

    @property
    def failures_in_window(self) -> int:
        """How many failures the window currently holds."""
        return len(self._failures)

"""One instance's lifetime: the helper tasks and child actors it owns."""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Generic, TypeVar, TypeVarTuple, cast

from anyio.abc import TaskGroup

from regiment.actors._messages import ChildFailed
from regiment.actors._policy import RestartPolicy
from regiment.errors import ConfigError

if TYPE_CHECKING:
    from regiment.actors._actor import Actor
    from regiment.actors._cell import Cell
    from regiment.actors._ref import ActorRef

__all__ = ("Incarnation",)

M = TypeVar("M")
R = TypeVar("R")
CM = TypeVar("CM")
CR = TypeVar("CR")
Ts = TypeVarTuple("Ts")
# context, fn, args, name
_Helper = tuple[contextvars.Context, Callable[..., Awaitable[object]], tuple[object, ...], str]


class Incarnation(Generic[M, R]):
    """One instance's lifetime: owns its helper tasks and child actors."""

    def __init__(self, cell: Cell[M, R], tg: TaskGroup | None) -> None:
        self.cell = cell
        self.tg = tg  # None while the actor is dormant (no task of its own yet)
        self.ended = False  # its body is done: no task may start in its task group now
        # Helper tasks a dormant actor asked for: started once its task is up.
        self._pending: list[_Helper] | None = None
        self.children: list[Cell[object, object]] = []
        self.signals: deque[ChildFailed] = deque()
        self.failure: Exception | None = None
        self.helpers = 0  # helper tasks started and not yet finished
        self._live_at_prune = 0  # children left by the last prune of stopped ones

    def start_soon(
        self, fn: Callable[[*Ts], Awaitable[object]], *args: *Ts, name: str | None
    ) -> None:
        name = name or f"{self.cell.name} task"
        if self.tg is None:  # dormant: the actor's task starts, then starts this one
            if self._pending is None:
                self._pending = []
            # In the context current now, as a task started now would copy it (a
            # handler's context variables, set around this call, reach the helper).
            self._pending.append((contextvars.copy_context(), fn, args, name))
            self.helpers += 1
            self.cell.wake_task()
            return
        self.tg.start_soon(self._guarded, fn, args, name=name)
        self.helpers += 1

    def bind(self, tg: TaskGroup) -> None:
        """A dormant actor's task has started, in ``tg``: the helpers it asked for start."""
        self.tg = tg
        pending, self._pending = self._pending, None
        if pending is not None:
            for context, fn, args, name in pending:
                context.run(self._start_in, tg, fn, args, name)

    def _start_in(
        self,
        tg: TaskGroup,
        fn: Callable[..., Awaitable[object]],
        args: tuple[object, ...],
        name: str,
    ) -> None:
        tg.start_soon(self._guarded, fn, args, name=name)

    def has_dormant_children(self) -> bool:
        return any(child.sleeper is not None for child in self.children)

    async def _guarded(self, fn: Callable[[*Ts], Awaitable[object]], args: tuple[*Ts]) -> None:
        try:
            await fn(*args)
        except Exception as exc:
            self.fail(exc)
        finally:
            self.helpers -= 1

    @property
    def idle(self) -> bool:
        """No helper task is running and every child has stopped: nothing to cancel."""
        return not self.helpers and all(child.stopped.done for child in self.children)

    def fail(self, error: Exception) -> None:
        """A helper task failed: the instance fails (first error wins)."""
        if self.failure is None:
            self.failure = error
        if self.tg is not None:  # a helper runs only once there is one
            self.tg.cancel_scope.cancel()

    async def spawn(
        self,
        factory: Callable[[], Actor[CM, CR]],
        *,
        name: str,
        capacity: int,
        restart: RestartPolicy,
    ) -> ActorRef[CM, CR]:
        tg = self._host(name)
        child = self._adopt(factory, name, capacity, restart)
        return cast("ActorRef[CM, CR]", await tg.start(child.run, name=f"actor {name}"))

    def spawn_dormant(
        self,
        factory: Callable[[], Actor[CM, CR]],
        *,
        name: str,
        capacity: int,
        restart: RestartPolicy,
    ) -> ActorRef[CM, CR]:
        """A child started here with no task of its own until it needs one (``_dormant``)."""
        self._host(name)
        child = self._adopt(factory, name, capacity, restart)
        try:
            child.start_dormant(cast("Incarnation[object, object]", self))
        except BaseException:
            self.children.remove(cast("Cell[object, object]", child))
            raise
        return child.ref

    def _host(self, name: str) -> TaskGroup:
        if self.tg is None:
            raise ConfigError(
                f"actor {self.cell.name!r} is dormant (spawned with spawn_dormant) and cannot "
                f"spawn a child ({name!r}): spawn it with ctx.spawn() to let it have children"
            )
        return self.tg

    def _adopt(
        self,
        factory: Callable[[], Actor[CM, CR]],
        name: str,
        capacity: int,
        restart: RestartPolicy,
    ) -> Cell[CM, CR]:
        child = self.cell.child(factory, name, capacity, restart, parent=self.child_failed)
        # Stopped children are dropped once the list has doubled since the last prune:
        # amortised O(1) per spawn (a service holding N live runs spawns in O(N) otherwise).
        if len(self.children) >= max(2 * self._live_at_prune, 16):
            self.children = [c for c in self.children if not c.stopped.done]
            self._live_at_prune = len(self.children)
        self.children.append(cast("Cell[object, object]", child))
        return child

    def child_failed(self, failure: ChildFailed) -> None:
        """Queue a child's escalation; the loop handles it between messages."""
        self.signals.append(failure)
        self.cell.wake()

    async def stop_children(self) -> None:
        """Stop live children gracefully, newest first."""
        for child in reversed(self.children):
            if not child.stopped.done:  # a retired child has no ref left to stop it by
                await child.ref.stop()

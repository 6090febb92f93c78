"""A team: one planner and its workers, started inside the caller's event loop.

``async with team.start() as running:`` spawns the team's actors in an actor
system owned by that block; ``await running.run(goal)`` and
``running.stream(goal)`` can be used by many tasks at once. Each run gets its
own planner actor (a child of the team's supervisor), so one run's failure or
cancellation never touches another's.

Nested teams: a :class:`~regiment.hierarchy.TeamWorker` in ``workers`` is
another team serving as one worker. Its child team is started by
``RunningTeam.spawn`` together with the parent, in the same actor system (so
leaving the parent's block stops both), and each step assigned to it becomes
one run of the child with ``allowance=`` the step's reserved share. A child
team without its own ``telemetry`` uses the parent's, so a nested run is one
trace.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import _AsyncGeneratorContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, final

import anyio

from regiment._misuse import EnterFirst
from regiment.errors import ConfigError
from regiment.hierarchy._budget import Budget
from regiment.hierarchy._money import check_money
from regiment.hierarchy._planner import Planner
from regiment.hierarchy._ranges import (
    LEASE_TTL,
    InvalidValue,
    part_given,
    seconds,
    settings_given,
)
from regiment.hierarchy.guard._types import GuardLike, as_guardrails
from regiment.hierarchy.workers._placement import check_pools
from regiment.hierarchy.workers._worker import Worker

if TYPE_CHECKING:
    from pydantic import BaseModel

    from regiment.hierarchy._checks import Check
    from regiment.hierarchy._critic import Critic
    from regiment.hierarchy._memory import Compression
    from regiment.hierarchy._result import RunResult
    from regiment.hierarchy._running import RunningTeam
    from regiment.hierarchy.run._structured import AnswerShape
    from regiment.hierarchy.workers._team_worker import TeamWorker
    from regiment.journal import JournalSpec, TeamFile
    from regiment.models import ModelSettings
    from regiment.telemetry import Telemetry

__all__ = ("Team", "TeamStart")


@final
@dataclass(frozen=True, kw_only=True)
class Team:
    """One planner and its workers.

    Attributes:
        name: the team's name (the root span is ``invoke_agent {name}``).
        planner: how the team plans and synthesises.
        workers: the specialists steps are assigned to: workers, or whole
            teams wrapped in :class:`~regiment.hierarchy.TeamWorker`.
        checks: named predicates a plan step may carry.
        budget: limits per run.
        concurrency: steps of one run in flight at once.
        critic: judges each round's result; ``None`` means one round, no critique.
        compression: compresses the carried context when it grows; ``None`` never does.
        telemetry: where spans go; ``None`` uses the global tracer provider
            (which records nothing until the application installs one).
        settings: how every role's model calls are tuned by default; a role's
            own settings (``Planner.settings``, ``Worker.settings``, ...) win
            over them key by key.
        guardrails: guards that apply everywhere: every step, the plan, the answer.
        output_type: a pydantic model the answer must match: the synthesizer is asked
            for it natively (a forced tool for Claude, a JSON-schema response format
            for Chat Completions), ``RunResult.output`` holds the validated instance
            and ``RunResult.answer`` its JSON text (without artefacts appended).
        output_retries: re-asks of an answer that does not validate (each carries the
            validation error) before the run fails with ``OutputInvalid``.
    """

    name: str
    planner: Planner
    workers: Sequence[Worker | TeamWorker]
    checks: Mapping[str, Check] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    concurrency: int = 8
    critic: Critic | None = None
    compression: Compression | None = None
    telemetry: Telemetry | None = None
    settings: ModelSettings | None = None
    guardrails: Sequence[GuardLike] = ()
    output_type: type[BaseModel] | None = None
    output_retries: int = 2

    def __post_init__(self) -> None:
        _check_parts(self)
        names = [w.name for w in self.workers]
        if not names:
            raise ConfigError(f"team '{self.name}' has no workers; give it at least one Worker")
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise ConfigError(
                f"team '{self.name}' has two workers named {', '.join(dupes)}; worker names must be unique"
            )
        # InvalidValue names the field, so a team file's error names its key and line.
        concurrency: object = self.concurrency
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise InvalidValue(
                f"team '{self.name}'",
                "concurrency",
                f"must be a whole number of at least 1, got {concurrency!r}",
            )
        if self.output_retries < 0:
            raise InvalidValue(
                f"team '{self.name}'",
                "output_retries",
                f"must be 0 or more, got {self.output_retries}",
            )
        placed = [(w.name, w.placement) for w in self.workers if isinstance(w, Worker)]
        try:
            check_pools((name, where) for name, where in placed if where is not None)
        except ConfigError as exc:
            raise ConfigError(f"team '{self.name}': {exc}") from None
        object.__setattr__(self, "guardrails", as_guardrails(self.guardrails, "team: "))
        check_money(self)
        if self.output_type is not None:
            self.output_shape()  # a bad output_type or output_retries fails here

    def output_shape(self) -> AnswerShape:
        """How the synthesis asks for and checks ``output_type`` (set it first)."""
        from regiment.hierarchy.run._structured import AnswerShape  # with the engine

        return AnswerShape.of(self.output_type, self.output_retries, team=self.name)

    def start(
        self,
        *,
        journal: JournalSpec = None,
        lease_ttl: float = LEASE_TTL,
        team_file: TeamFile | None = None,
    ) -> TeamStart:
        """Spawn the team's actors in the current event loop; stop them on exit
        (``async with team.start() as running:``).

        Args:
            journal: where runs are journaled: ``None`` (not at all, the default),
                a file path (SQLite), a ``postgresql://`` URL, or a ``Journal``
                (left open for its owner to close).
            lease_ttl: seconds a run stays owned by this process without a heartbeat
                (beats come every third of it): after a crash, how soon another may resume it.
            team_file: the team file the team was built from, journaled with each run
                (``RunCreated.team_file``) so that ``regiment resume RUN_ID`` can build
                the team again; ``regiment run`` passes it.
        """
        return TeamStart(self._started, (journal, lease_ttl, team_file), {})

    async def _started(
        self, journal: JournalSpec, lease_ttl: float, team_file: TeamFile | None
    ) -> AsyncGenerator[RunningTeam, None]:
        """The body of :meth:`start`'s block: the team runs while it is suspended."""
        seconds("Team.start", "lease_ttl", lease_ttl)
        # The run engine loads when a team first starts, not with Team (issue #22): a
        # program that builds or checks teams (`regiment validate`) never pays for it.
        from regiment.actors import open_actor_system  # with the run's machinery (issue #22)
        from regiment.hierarchy._running import RunningTeam
        from regiment.tools import MCPHub

        opened = None
        if journal is not None:  # the journal room loads only for a journaled team (issue #22)
            from regiment.journal import open_journal

            opened = await open_journal(journal)
        try:
            if opened is not None:
                from regiment.hierarchy._journal_fit import check_journal_fits

                check_journal_fits(opened, self)
            # The hub outlives the actors: a worker's last tool call ends before its MCP
            # sessions close. Servers start here, eagerly (see regiment.tools.MCPHub).
            tracer = None if self.telemetry is None else self.telemetry.tracer
            async with MCPHub.open(tracer) as mcp, open_actor_system() as system:
                running = await RunningTeam.spawn(self, system, mcp=mcp)
                running.journal, running.lease_ttl = opened, lease_ttl
                running.team_file = team_file
                running._desk.journal = opened
                yield running
        finally:
            if opened is not None and opened is not journal:
                with anyio.CancelScope(shield=True):
                    await opened.close()

    async def run(
        self,
        goal: str,
        *,
        deps: object = None,
        concurrency: int | None = None,
        journal: JournalSpec = None,
    ) -> RunResult:
        """Start the team, run one goal, stop the team (the one-call form for scripts).

        ``deps`` and ``concurrency`` are as for ``RunningTeam.run``; ``journal`` as for
        :meth:`start`. (A session needs the runs before it: use ``start()`` for that.)
        """
        async with self.start(journal=journal) as running:
            return await running.run(goal, deps=deps, concurrency=concurrency)

    def __repr__(self) -> str:  # the prompts, models and tools are the workers' own
        workers = ", ".join(repr(w.name) for w in self.workers)
        return f"Team({self.name!r}, workers=[{workers}], budget={self.budget!r})"


@final
class TeamStart(EnterFirst, _AsyncGeneratorContextManager["RunningTeam"]):
    """What ``Team.start()`` returns: an async context manager, entered with ``async with
    team.start() as running:``. Used without it (``team.start().run(goal)``, ``await
    team.start()``) it raises a ``ConfigError`` showing that line (see ``EnterFirst``);
    made and entered as ``asynccontextmanager`` makes and enters its own (no cost more)."""

    __slots__ = ()
    entered_as = ("team.start()", "running")
    after = (
        "; leaving the block stops the team (for one run, `await team.run(goal)` starts "
        "and stops it)"
    )


def _check_parts(team: Team) -> None:
    """A ``ConfigError`` naming the part of ``team`` that is not of its type (a dict for
    a ``Budget``, one ``Worker`` for the list), before a run trips over it."""
    if not isinstance(team.name, str) or not team.name.strip():
        raise InvalidValue("Team", "name", f"must be the team's name (text); got {team.name!r}")
    owner = f"team '{team.name}'"
    if not isinstance(team.planner, Planner):
        raise ConfigError(f"{owner}: planner must be a Planner(model=...); got {_a(team.planner)}")
    workers: object = team.workers  # what the caller gave, whatever its annotation says
    if isinstance(workers, str | bytes) or not isinstance(workers, Sequence):
        listed = " (put it in a list: workers=[...])" if hasattr(workers, "name") else ""
        raise ConfigError(f"{owner}: workers must be a list of workers; got {_a(workers)}{listed}")
    for index, worker in enumerate(workers):
        # A TeamWorker (its module loads with the engine) is known by what it offers.
        if not isinstance(worker, Worker) and not hasattr(type(worker), "step_model_calls"):
            raise ConfigError(
                f"{owner}: workers[{index}] must be a Worker or a TeamWorker; got {_a(worker)}"
            )
    if not isinstance(team.budget, Budget):
        raise ConfigError(
            f"{owner}: budget must be a Budget (Budget(model_calls=...)); got {_a(team.budget)}"
        )
    from regiment.hierarchy._critic import Critic  # here: its module loads with a team's
    from regiment.hierarchy._memory import Compression

    for part, kind, example in (
        ("critic", Critic, "Critic(model=...)"),
        ("compression", Compression, "Compression(context_window=...)"),
    ):
        given: object = getattr(team, part)
        if given is not None and not isinstance(given, kind):
            raise ConfigError(f"{owner}: {part} must be a {example} or None; got {_a(given)}")
    settings_given(owner, settings=team.settings)
    if team.telemetry is not None:  # its room loads only for a team that has one
        from regiment.telemetry import Telemetry

        part_given(owner, "telemetry", team.telemetry, Telemetry, "Telemetry(...)")
    if not isinstance(team.checks, Mapping) or not all(
        isinstance(name, str) and callable(getattr(check, "run", None))
        for name, check in team.checks.items()
    ):
        raise ConfigError(
            f"{owner}: checks must map names to Check(description=..., predicate=...); "
            f"got {team.checks!r}"
        )


def _a(value: object) -> str:
    """How an error shows a value: its type, and its name or a short repr."""
    kind, name = type(value).__name__, getattr(value, "name", None)
    if isinstance(name, str):
        return f"the {kind} {name!r}"
    text = repr(value)
    return f"the {kind} {text}" if len(text) <= 80 and " object at 0x" not in text else f"a {kind}"

"""Workers: what a worker is (config) and how its steps are limited.

The actor that runs a worker's steps is ``_worker_actor.WorkerActor``: it and the
step machinery under it (the actor system, the tool loop, the step actor, the
approval gate, the guard chain) load when a team starts, not when a ``Worker``
is made (``from regiment import Worker``, ``regiment validate``; issue #22).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, final

from opentelemetry.util.types import AttributeValue

from regiment.errors import ConfigError
from regiment.hierarchy._ranges import InvalidValue, at_least, model_given, seconds, settings_given
from regiment.hierarchy.guard._note import SubjectKind
from regiment.hierarchy.guard._types import GuardLike, Guardrail, as_guardrails
from regiment.hierarchy.workers._placement import Ray
from regiment.models import Model, ModelSettings
from regiment.telemetry import semconv
from regiment.tools import OnToolError, Tool, Toolset

if TYPE_CHECKING:
    from regiment.tools import MCPServer

__all__ = (
    "StepLimits",
    "Worker",
    "WorkerSpec",
    "check_worker_description",
    "check_worker_name",
    "step_limits",
)

STEP_TIMEOUT = 300.0  # seconds a step may take, by default

CANCEL_GRACE = 5.0
"""Seconds a cancelled step has to end before it is reported abandoned (the default;
``_grace`` gives up on it; here so that a ``Worker`` loads without the step machinery)."""


class WorkerSpec(Protocol):
    """What the planner needs to know of anything it can assign steps to."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def artifact(self) -> bool: ...
    @property
    def capabilities(self) -> tuple[str, ...]:
        """What the planner is told it can do (tool names, or a sub-team's workers)."""
        ...

    @property
    def step_model_calls(self) -> int:
        """The most model calls one step can use; the planner reserves this much."""
        ...


def _split_tools(
    items: tuple[Tool[..., object] | Toolset | MCPServer, ...],
) -> tuple[tuple[MCPServer, ...], list[Tool[..., object]]]:
    """A worker's MCP servers, and its tools that are not in a tool set."""
    if all(isinstance(i, Tool | Toolset) for i in items):  # the usual case: the MCP
        return (), [i for i in items if isinstance(i, Tool)]  # client loads only when used
    from regiment.tools import MCPServer

    servers = tuple(i for i in items if isinstance(i, MCPServer))
    return servers, [i for i in items if not isinstance(i, MCPServer | Toolset)]


def _tool_items(worker: str, given: object) -> tuple[Tool[..., object] | Toolset | MCPServer, ...]:
    """``Worker.tools`` as a tuple; a lone tool (a function, a ``Tool``, an ``MCPServer``)
    or a string is refused naming it, not left to a ``TypeError`` (``not iterable``).
    The items are checked by the tool set they make."""
    tools: Any = given
    if isinstance(tools, Iterable) and not isinstance(tools, str | bytes) and not callable(tools):
        return tuple(tools)
    name = getattr(tools, "name", None) or getattr(tools, "__name__", None)
    kind = type(tools).__name__ if isinstance(tools, Tool) or not callable(tools) else "function"
    item = name if isinstance(name, str) and name.isidentifier() else "..."
    called = name if item == name else repr(name) if isinstance(name, str) else None
    shown = f"the {kind} {called}" if called else f"the {kind} {tools!r:.60}"
    listed = f" (put it in a list: tools=[{item}])" if callable(tools) or name else ""
    raise ConfigError(
        f"worker '{worker}': tools must be a list of tools, or a Toolset; got {shown}{listed}"
    )


def check_worker_name(name: str) -> None:
    """Raise ``ConfigError`` unless ``name`` can be used as an assignee in plans."""
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "_-" for c in name):
        raise InvalidValue(  # names the field: a team file's error names the key and line
            "Worker", "name", f"must be non-empty letters, digits, '_' or '-'; got {name!r}"
        )


def check_worker_description(name: str, description: object) -> None:
    """Raise ``ConfigError`` unless ``description`` is text the planner can choose by:
    it picks a step's worker by the descriptions, so a blank one is a worker it cannot
    tell apart from the others."""
    if not isinstance(description, str) or not description.strip():
        raise InvalidValue(  # names the field: a team file's error names the key and line
            f"worker {name!r}",
            "description",
            "must say what the worker is good at (the planner picks workers by their "
            f"descriptions); got {description!r}",
        )


@final
@dataclass(frozen=True, kw_only=True)
class Worker:
    """A specialist the planner can hand steps to.

    Attributes:
        name: how plans refer to it (letters, digits, ``_`` and ``-``).
        description: what it is good at; the planner reads this.
        model: the model for its tool loop.
        tools: its tool set, or tools, tool sets (merged, approver included) and
            :class:`~regiment.tools.MCPServer` s (whose tools it gets when the team
            starts); it can call nothing else.
        max_iterations: model calls per step before the step ends as ``iteration_limit`` (>= 1).
        system_prompt: replaces the default worker instructions.
        step_timeout: seconds a step may take before it ends as ``timed_out``
            (finite, > 0); ``None``: no limit.
        cancel_grace: seconds a cancelled or timed-out step has to stop (finite, > 0).
            A step still going after that (a tool that ignores cancellation) is
            reported without it, its running tool calls as ``abandoned``, and a
            warning names them; ``None``: its run waits for it to stop.
        max_concurrent_steps: steps it runs at once (across all runs), >= 1.
        artifact: its answers are finished artefacts, kept verbatim by synthesis.
        on_tool_error: what an exception from one of its tools does (unless the
            tool sets its own): ``"tell_model"`` (the default) hands it to the model
            as an error result; ``"raise"`` fails the step.
        max_tool_result_chars: the longest result (or error message) one of its tool
            calls gives the model, in characters, unless the tool sets its own
            ``max_result_chars``; a longer one is cut there, with a note telling the
            model so and how to ask for less. ``None``: its tool set's (100,000 by default).
        settings: how its model calls are tuned, over the team's ``settings``.
        guardrails: guards around its steps' model calls and tool calls (after
            the team's); :class:`~regiment.hierarchy.Guardrail` s or callables
            whose parameter is annotated with a subject type.
        tool_guardrails: guards around the calls of one tool, by tool name
            (after the team's and the worker's).
        require_approval: names of its tools whose every call needs approval
            (on top of the tools' own ``requires_approval``); its MCP servers' tools
            count too (checked once ``Team.start()`` has listed them).
        approval_timeout: seconds an unanswered approval request waits before it
            counts as a denial; ``None``: it waits (the run pauses meanwhile).
        placement: where its steps run: ``None`` in the team's process, or
            :class:`~regiment.hierarchy.Ray` on Ray replicas (the ``ray`` extra).
    """

    name: str
    description: str
    model: Model
    tools: Toolset | Iterable[Tool[..., object] | Toolset | MCPServer] = ()
    max_iterations: int = 8
    system_prompt: str = ""
    step_timeout: float | None = STEP_TIMEOUT
    cancel_grace: float | None = CANCEL_GRACE
    max_concurrent_steps: int = 8
    artifact: bool = False
    on_tool_error: OnToolError = "tell_model"
    max_tool_result_chars: int | None = None
    settings: ModelSettings | None = None
    guardrails: Sequence[GuardLike] = ()
    tool_guardrails: Mapping[str, Sequence[GuardLike]] = field(default_factory=dict)
    require_approval: Iterable[str] = ()
    approval_timeout: float | None = None
    placement: Ray | None = None
    toolset: Toolset = field(init=False, repr=False, compare=False)
    mcp_servers: tuple[MCPServer, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_worker_name(self.name)
        check_worker_description(self.name, self.description)
        model_given(f"worker '{self.name}'", "model", self.model)
        settings_given(f"worker '{self.name}'", settings=self.settings)
        if self.on_tool_error not in ("tell_model", "raise"):
            raise ConfigError(
                f"worker '{self.name}': on_tool_error must be 'tell_model' or 'raise', "
                f"not {self.on_tool_error!r}"
            )
        owner = f"worker {self.name!r}"
        at_least(owner, "max_iterations", self.max_iterations, 1)
        at_least(owner, "max_concurrent_steps", self.max_concurrent_steps, 1)
        limit = self.max_tool_result_chars
        at_least(owner, "max_tool_result_chars", limit, 1, none_means="its tool set's limit")
        seconds(owner, "step_timeout", self.step_timeout, default=STEP_TIMEOUT)
        seconds(owner, "cancel_grace", self.cancel_grace, default=CANCEL_GRACE)
        seconds(owner, "approval_timeout", self.approval_timeout)
        needs = (self.require_approval,) if isinstance(self.require_approval, str) else ()
        object.__setattr__(self, "require_approval", needs or tuple(self.require_approval))
        if self.placement is not None and not isinstance(self.placement, Ray):
            raise ConfigError(
                f"worker '{self.name}': placement must be None (in-process) or Ray(...), "
                f"not {self.placement!r}"
            )
        items = () if isinstance(self.tools, Toolset) else _tool_items(self.name, self.tools)
        servers, plain = _split_tools(items)
        toolset = self.tools if isinstance(self.tools, Toolset) else Toolset(self.name, plain)
        for inner in (i for i in items if isinstance(i, Toolset)):
            toolset = toolset.merged(inner, name=self.name, max_concurrency=inner.max_concurrency)
        if limit is not None:
            toolset = toolset.with_max_result_chars(limit)
        # An MCP server's tools are known at Team.start(), which checks the other names.
        local = [n for n in self.require_approval if not servers or n in toolset.names]
        try:
            toolset = toolset.requiring_approval(local)
        except ConfigError as exc:
            raise ConfigError(f"worker '{self.name}': require_approval: {exc}") from None
        object.__setattr__(self, "toolset", toolset)
        where = f"worker '{self.name}': "
        tools: tuple[SubjectKind, ...] = ("tool_call", "tool_result")
        own = as_guardrails(self.guardrails, where, ("model_request", "model_reply", *tools))
        object.__setattr__(self, "guardrails", own)
        per_tool = _per_tool(self.tool_guardrails, where, tools)
        object.__setattr__(self, "tool_guardrails", per_tool)
        unknown = sorted(set(per_tool) - set(toolset.names)) if not servers else []
        if unknown:
            have = ", ".join(toolset.names) or "(none)"
            raise ConfigError(
                f"{where}tool_guardrails names tool '{unknown[0]}', which it does not have; "
                f"its tools are: {have}"
            )
        object.__setattr__(self, "mcp_servers", servers)

    @property
    def capabilities(self) -> tuple[str, ...]:
        """Its tool names."""
        return self.toolset.names

    @property
    def step_model_calls(self) -> int:
        """Its iteration cap: one model call per iteration."""
        return self.max_iterations

    def __repr__(self) -> str:  # the model's own repr leaves out its key
        tools = self.tools if isinstance(self.tools, Toolset | list | tuple) else "..."
        return f"Worker({self.name!r}, model={self.model!r}, tools={tools!r})"


class StepLimits(TypedDict):
    """A :class:`StepActor`'s options for a :class:`Worker`'s steps (see ``step_limits``)."""

    max_concurrent: int
    step_timeout: float | None
    cancel_grace: float | None
    span_attributes: Mapping[str, AttributeValue]


def step_limits(worker: Worker, replicas: int = 1) -> StepLimits:
    """How ``worker``'s steps run, in this process or on Ray (``replicas``: each takes
    ``max_concurrent_steps`` at once): its limits, and the attributes of each step's
    ``invoke_agent`` span (the model's provider, the worker's description)."""
    return StepLimits(
        max_concurrent=worker.max_concurrent_steps * replicas,
        step_timeout=worker.step_timeout,
        cancel_grace=worker.cancel_grace,
        span_attributes={
            semconv.GEN_AI_PROVIDER_NAME: worker.model.provider,
            semconv.GEN_AI_AGENT_DESCRIPTION: worker.description,
        },
    )


def _per_tool(
    given: Mapping[str, Sequence[GuardLike]], where: str, kinds: tuple[SubjectKind, ...]
) -> dict[str, tuple[Guardrail, ...]]:
    """A worker's ``tool_guardrails``, each tool's as guardrails (``tool_guardrails=3``
    was an ``AttributeError``: ``'int' object has no attribute 'items'``)."""
    if not isinstance(given, Mapping):
        raise ConfigError(
            f"{where}tool_guardrails must map tool names to lists of guardrails "
            f"({{'issue_refund': [cap]}}); got {given!r:.80}"
        )
    return {
        tool: as_guardrails(
            guards, f"{where}tool_guardrails '{tool}': ", kinds, _in_tool_list(tool)
        )
        for tool, guards in given.items()
    }


def _in_tool_list(tool: str) -> Callable[[str], str]:
    """The hint's spelling of one bare guard of ``tool``: in a list, under its name."""
    return lambda shown: f"tool_guardrails={{{tool!r}: [{shown}]}}"

"""A named, immutable set of tools given to one worker."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping
from typing import TypeAlias, final

from regiment._json import JsonValue
from regiment._text import json_shown
from regiment.errors import ConfigError
from regiment.tools._approval import Approver
from regiment.tools._context import RunContext
from regiment.tools._cut import DEFAULT_MAX_RESULT_CHARS
from regiment.tools._definition import ToolDefinition
from regiment.tools._made_of import check_approver
from regiment.tools._policy import result_limit
from regiment.tools._result import ToolResult
from regiment.tools._run import LoopLimiter
from regiment.tools._tool import Tool

__all__ = ("Toolset", "ToolsetItem")

ToolsetItem: TypeAlias = Tool[..., object] | Callable[..., object]
"""A ``Tool``, or a plain typed function that becomes one with default options."""


def _listed(name: str, tools: object) -> Iterable[object]:
    """``tools`` if it is a collection of tools; one tool, a string or a number given
    in its place is refused, saying to put it in a list."""
    one = isinstance(tools, str | bytes | Mapping) or callable(tools)
    if one or not isinstance(tools, Iterable):
        called = getattr(tools, "__name__", None) if callable(tools) else None
        kind = "tool" if isinstance(tools, Tool) else "function"
        shown = (
            f"the {type(tools).__name__} {tools!r:.60}"
            if called is None
            else f"the {kind} {called}"
        )
        raise ConfigError(
            f"tool set {name!r}: tools must be a list of tools; got {shown} "
            f"(put it in a list: Toolset({name!r}, [{called or '...'}]))"
        )
    return tools


def _check_concurrency(max_concurrency: object) -> None:
    if max_concurrency is not None and (
        not isinstance(max_concurrency, int) or isinstance(max_concurrency, bool)
    ):
        raise ConfigError(
            "max_concurrency must be a whole number, 1 or more, or None for no limit, "
            f"not {max_concurrency!r}"
        )
    if max_concurrency is not None and max_concurrency < 1:
        raise ConfigError(f"max_concurrency must be 1 or more, not {max_concurrency!r}")


@final
class Toolset:
    """The tools one worker may call, and nothing else.

    Compose without flags: ``filtered``, ``prefixed``, ``merged`` (or ``a | b``)
    each return a new tool set; this one never changes.

    Args:
        name: the set's name, used in messages to the model (usually the worker's).
        tools: ``Tool`` objects or plain typed functions.
        max_concurrency: how many calls across all these tools may run at once;
            ``None`` for no shared limit (each tool's own limit still applies).
        approver: decides on calls to tools that require approval.
        max_result_chars: the longest result (or error message), in characters of
            ``ToolResult.text``, that a call of one of its tools that sets no
            ``max_result_chars`` of its own gives the model; a longer one is cut there,
            with a note telling the model so and how to ask for less.

    Raises:
        ConfigError: two tools share a name, or a limit is out of range.
    """

    def __init__(
        self,
        name: str,
        tools: Iterable[ToolsetItem] = (),
        *,
        max_concurrency: int | None = None,
        approver: Approver | None = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            # Toolset([tool], approver=...) took the list for the name, and the set had no
            # tools: every call came back "has no tool", the approver never asked.
            raise ConfigError(
                f"Toolset(name, tools, ...): the name comes first and must be a non-blank "
                f"string (the set's name, usually the worker's), not the "
                f"{type(name).__name__} {name!r}; e.g. "
                "Toolset('billing', [issue_refund], approver=...)"
            )
        self._max_result_chars = result_limit("max_result_chars", max_result_chars)
        check_approver(name, approver)
        _check_concurrency(max_concurrency)
        self._name = name
        self._tools: dict[str, Tool[..., object]] = {}
        for index, item in enumerate(_listed(name, tools)):
            if not (isinstance(item, Tool) or callable(item)):
                raise ConfigError(
                    f"tool set {name!r}: tools[{index}] is the {type(item).__name__} {item!r}, not a "
                    "tool; give functions (plain typed ones, or made tools with @tool) or Tool objects"
                )
            made = item if isinstance(item, Tool) else Tool(item)
            if made.name in self._tools:
                raise ConfigError(
                    f"tool set {name!r} has two tools named {made.name!r}; give one another "
                    "name (Tool(fn, name=...)) or combine the sets with .prefixed(...) first"
                )
            self._tools[made.name] = made
        self._max_concurrency = max_concurrency
        self._approver = approver
        self._limiters = () if max_concurrency is None else (LoopLimiter(max_concurrency),)
        # Every model request of every step sends these: made once, the set never changes.
        self._definitions = tuple(t.definition for t in self._tools.values())

    @property
    def name(self) -> str:
        """The set's name."""
        return self._name

    @property
    def names(self) -> tuple[str, ...]:
        """The tools' names, in the order they were given."""
        return tuple(self._tools)

    @property
    def tools(self) -> tuple[Tool[..., object], ...]:
        """The tools, in the order they were given."""
        return tuple(self._tools.values())

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        """What a model is told about each tool."""
        return self._definitions

    @property
    def max_concurrency(self) -> int | None:
        """The limit on calls running at once across the set, if any."""
        return self._max_concurrency

    @property
    def max_result_chars(self) -> int:
        """The longest result a call of one of its tools (with no limit of its own) gives."""
        return self._max_result_chars

    def with_max_result_chars(self, chars: int) -> Toolset:
        """The same set with ``max_result_chars=chars`` (a worker's ``max_tool_result_chars``)."""
        return Toolset(
            self._name,
            self._tools.values(),
            max_concurrency=self._max_concurrency,
            approver=self._approver,
            max_result_chars=chars,
        )

    @property
    def approver(self) -> Approver | None:
        """Who decides on calls to tools that require approval."""
        return self._approver

    def get(self, name: str) -> Tool[..., object] | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool[..., object]]:
        return iter(self.tools)

    def __repr__(self) -> str:
        return f"Toolset({self._name!r}, {list(self._tools)!r})"

    def key_for(self, name: str, arguments: Mapping[str, JsonValue]) -> str | None:
        """The declared idempotency key of a call of tool ``name``, if it has one."""
        found = self._tools.get(name)
        return None if found is None else found.key_for(arguments)

    def call(
        self,
        name: str,
        arguments: Mapping[str, JsonValue],
        *,
        call_id: str,
        approver: Approver | None = None,
        context: RunContext[object] | None = None,
    ) -> Coroutine[object, object, ToolResult]:
        """Call the tool ``name`` the way ``Tool.call`` does, under the set's limit and approver.

        ``approver`` replaces the set's own for this call (a worker passes one that
        asks the set's approver first, and otherwise pauses for a human). A name the set does not have comes back as an error result that lists the
        names it does have, so the model can pick one.
        """
        found = self._tools.get(name)
        if found is None:
            return _ready(
                ToolResult(
                    call_id=call_id,
                    tool_name=name,
                    content=_unknown_called(name, self._tools),
                    is_error=True,
                    error_type="unknown_tool",
                    arguments=dict(arguments) if isinstance(arguments, Mapping) else {},
                )
            )
        return found._call_limited(
            arguments,
            call_id=call_id,
            approver=approver or self._approver,
            limiters=self._limiters,
            context=context,
            max_result_chars=self._max_result_chars,
        )

    def _unknown(self, name: str) -> str:
        have = ", ".join(sorted(self._tools)) or "(none)"
        return f"worker tool set {self._name!r} has no tool {name!r}; its tools are: {have}"

    def filtered(self, keep: Callable[[Tool[..., object]], bool] | Iterable[str]) -> Toolset:
        """A set with only some of these tools: those ``keep`` accepts, or those named.

        Raises:
            ConfigError: a name is given that this set does not have.
        """
        if callable(keep):
            return self._with(t for t in self._tools.values() if keep(t))
        wanted = (keep,) if isinstance(keep, str) else tuple(keep)
        unknown = [n for n in wanted if n not in self._tools]
        if unknown:
            raise ConfigError(f"{self._unknown(unknown[0])}; cannot filter on it")
        return self._with(t for t in self._tools.values() if t.name in wanted)

    def requiring_approval(self, names: Iterable[str]) -> Toolset:
        """A set where every call to the tools ``names`` needs approval.

        Raises:
            ConfigError: a name is given that this set does not have.
        """
        wanted = (names,) if isinstance(names, str) else tuple(names)
        unknown = [n for n in wanted if n not in self._tools]
        if unknown:
            raise ConfigError(f"{self._unknown(unknown[0])}; it cannot require approval")
        if not wanted:
            return self
        return self._with(
            t.requiring_approval() if t.name in wanted else t for t in self._tools.values()
        )

    def prefixed(self, prefix: str) -> Toolset:
        """A set with every tool renamed ``prefix + name`` (limits are shared with these)."""
        return self._with(t.renamed(prefix + t.name) for t in self._tools.values())

    def merged(
        self,
        other: Toolset,
        *,
        name: str | None = None,
        max_concurrency: int | None = None,
        approver: Approver | None = None,
        max_result_chars: int | None = None,
    ) -> Toolset:
        """A set with the tools of both.

        Args:
            other: the set to add.
            name: the new set's name; defaults to ``"<this>+<other>"``.
            max_concurrency: a limit for the new set as a whole (each tool keeps its own).
            approver: defaults to whichever of the two sets has one.
            max_result_chars: defaults to this set's, or the other's if only it has
                one other than the default.

        Raises:
            ConfigError: both sets have a tool of the same name (use ``prefixed``),
                or both have different approvers and none is given.
        """
        if approver is None:
            approver = _one_approver(self, other)
        return Toolset(
            name if name is not None else f"{self._name}+{other._name}",
            (*self._tools.values(), *other._tools.values()),
            max_concurrency=max_concurrency,
            approver=approver,
            max_result_chars=max_result_chars or _one_limit(self, other),
        )

    def __or__(self, other: Toolset) -> Toolset:
        return self.merged(other)

    def _with(self, tools: Iterable[Tool[..., object]]) -> Toolset:
        # A derived set copies the settings; it gets its own shared limiter.
        return Toolset(
            self._name,
            tools,
            max_concurrency=self._max_concurrency,
            approver=self._approver,
            max_result_chars=self._max_result_chars,
        )


def _one_limit(a: Toolset, b: Toolset) -> int:
    if a.max_result_chars == DEFAULT_MAX_RESULT_CHARS:
        return b.max_result_chars
    return a.max_result_chars


def _one_approver(a: Toolset, b: Toolset) -> Approver | None:
    if a.approver is None or b.approver is None or a.approver is b.approver:
        return a.approver if a.approver is not None else b.approver
    raise ConfigError(
        f"tool sets {a.name!r} and {b.name!r} have different approvers; "
        "pass approver=... to merged() to choose one"
    )


async def _ready(result: ToolResult) -> ToolResult:
    return result


def _unknown_called(name: str, tools: Mapping[str, object]) -> str:
    """A call of a tool the set has not, as the model reads it: the name it sent as JSON."""
    return f"no tool {json_shown(name)}; call one of: {', '.join(sorted(tools)) or '(none)'}"

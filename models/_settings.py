"""Model settings: how one role's model calls are tuned (tokens, sampling, timeout).

Settings come in layers that ``merge``: a team-wide default, then a role's own
(planner, a worker, critic, compressor, synthesizer); a setting a layer leaves
as ``None`` falls through to the layer below. Providers apply the result.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, cast

import msgspec

from regiment._json import JsonObject
from regiment.errors import ConfigError

if TYPE_CHECKING:
    from regiment.models._messages import ModelRequest

__all__ = ("ModelSettings", "effective_settings", "extra_tools")

# Fields ModelSettings owns; `extra` may not repeat them (two spellings of one setting).
_NAMED = (
    "max_tokens",
    "temperature",
    "top_p",
    "stop_sequences",
    "timeout",
    "thinking_budget",
)

# Body fields a call is built around; an `extra` that replaced them would break the call.
_BUILT = ("model", "messages", "stream")


class ModelSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a model call is tuned; ``None`` means "not set here" (the layer below decides).

    Providers apply every field they support. ``thinking_budget`` is for
    Anthropic only (extended thinking); other providers ignore it.

    Attributes:
        max_tokens: the most tokens a reply may have (at least 1).
        temperature: sampling temperature, 0 to 2 (Anthropic accepts 0 to 1).
        top_p: nucleus sampling, above 0 and at most 1.
        stop_sequences: strings that end the reply when the model writes them.
        timeout: seconds the server may keep a request waiting (above 0): to connect,
            to answer, and between two pieces of a streamed reply; overrides the
            client's. A stream that keeps sending may take longer as a whole (bound
            a worker's step with ``step_timeout``, a run with ``Budget.wall_clock``).
        thinking_budget: Anthropic extended thinking: tokens Claude may think
            with (at least 1024, and below ``max_tokens``).
        extra: provider-specific body fields sent as they are (e.g.
            ``{"reasoning_effort": "low"}`` for OpenAI, ``{"top_k": 5}`` for
            Anthropic); they win over everything else in the request body, but
            ``tools`` (a list of tool objects, such as Claude's server tools) is
            sent after the request's own tools, and ``model``, ``messages`` and
            ``stream`` may not be given.
    """

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop_sequences: tuple[str, ...] | None = None
    timeout: float | None = None
    thinking_budget: int | None = None
    extra: JsonObject = msgspec.field(default_factory=dict)

    KEYS: ClassVar[tuple[str, ...]] = (*_NAMED, "extra")

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object], *, where: str = "settings") -> ModelSettings:
        """Settings from a mapping, as a team file's ``[settings]`` table gives them.

        Args:
            data: setting names to values.
            where: where the mapping came from, for error messages
                (e.g. ``"team.toml: planner.settings"``).

        Raises:
            regiment.errors.ConfigError: a key is not a setting, a value has the
                wrong type, or a value is out of range; the message names the key.
        """
        for key in data:
            if key not in cls.KEYS:
                raise ConfigError(
                    f"{where}.{_key_text(key)}: unknown setting {str(key)!r}; the settings are: "
                    f"{', '.join(cls.KEYS)} (put provider-specific ones under 'extra')"
                )
        try:
            return msgspec.convert(dict(data), cls)
        except _BadSetting as exc:  # out of range: the message names the key, as the file does
            raise ConfigError(f"{where}.{exc.key}: {exc.problem}") from exc
        except msgspec.ValidationError as exc:
            detail, _, path = str(exc).partition(" - at `$.")
            key = path.rstrip("`") or "?"
            raise ConfigError(f"{where}.{key}: {detail[:1].lower()}{detail[1:]}") from exc

    def merge(self, over: ModelSettings | None) -> ModelSettings:
        """These settings with every field ``over`` sets put on top (``extra`` merges by key)."""
        if over is None:
            return self
        changes: dict[str, object] = {
            name: getattr(over, name) for name in _NAMED if getattr(over, name) is not None
        }
        if over.extra:
            changes["extra"] = {**self.extra, **over.extra}
        return msgspec.structs.replace(self, **changes) if changes else self


def effective_settings(
    model_settings: ModelSettings | None, request: ModelRequest
) -> ModelSettings:
    """What a provider applies to ``request``: the request's own fields
    (``max_tokens``, ``temperature``, ``stop_sequences``), then the model's
    settings, then ``request.settings`` (the role's), each over the one before.
    """
    base = ModelSettings(
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        stop_sequences=request.stop_sequences or None,
    )
    return base.merge(model_settings).merge(request.settings)


def extra_tools(settings: ModelSettings) -> tuple[list[JsonObject], dict[str, object] | None]:
    """The tools ``settings.extra`` adds to a request's own, and the rest of ``extra``
    as the body fields to send (``None``: none)."""
    rest: dict[str, object] = {k: v for k, v in settings.extra.items() if k != "tools"}
    return cast("list[JsonObject]", settings.extra.get("tools", [])), rest or None


class _BadSetting(ConfigError):
    """A setting out of range: ``setting 'top_p' must be ...``; ``key`` and ``problem``
    let ``from_mapping`` put the key in the path (``team.toml: settings.top_p: must be ...``)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"setting {key!r} {problem}")
        self.key = key
        self.problem = problem


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key_text(key: object) -> str:
    """A key as a file writes it in a key path: bare when it can be, else JSON-quoted."""
    text = str(key)
    return text if _BARE.fullmatch(text) else json.dumps(text)


def _check(settings: ModelSettings) -> None:
    _at_least("max_tokens", settings.max_tokens, 1)
    _at_least("thinking_budget", settings.thinking_budget, 1024)
    _within("temperature", settings.temperature, 0.0, 2.0, low_open=False)
    _within("top_p", settings.top_p, 0.0, 1.0, low_open=True)
    timeout: object = settings.timeout
    if timeout is not None and not (
        isinstance(timeout, (int, float))
        and not isinstance(timeout, bool)
        and math.isfinite(timeout)
        and timeout > 0
    ):
        raise _BadSetting("timeout", f"must be a number of seconds above 0, got {timeout!r}")
    for stop in settings.stop_sequences or ():
        if not stop:
            raise _BadSetting("stop_sequences", "holds an empty string; remove it")
    built = sorted(set(settings.extra) & set(_BUILT))
    if built:
        raise _BadSetting(
            "extra",
            f"may not give {', '.join(repr(b) for b in built)}: every call "
            "builds them (the model's id, the conversation, whether it streams)",
        )
    tools = settings.extra.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise _BadSetting(
            "extra.tools",
            "must be a list of tool objects (e.g. "
            '[{"type": "web_search_20250305", "name": "web_search"}]), sent after the '
            f"request's own tools; got {tools!r:.80}",
        )
    clashes = sorted(set(settings.extra) & set(_NAMED))
    if clashes:
        raise _BadSetting(
            "extra",
            f"repeats {', '.join(repr(c) for c in clashes)}; set "
            f"{'it' if len(clashes) == 1 else 'them'} as a named setting instead",
        )


def _at_least(name: str, value: int | None, low: int) -> None:
    given: object = value  # typed, but given by hand: "5" was a TypeError from the `<`
    if given is not None and (isinstance(given, bool) or not isinstance(given, int)):
        raise _BadSetting(name, f"must be a whole number, at least {low}, got {given!r}")
    if value is not None and value < low:
        raise _BadSetting(name, f"must be at least {low}, got {value}")


def _within(name: str, value: float | None, low: float, high: float, *, low_open: bool) -> None:
    if value is None:
        return
    given: object = value  # typed, but given by hand: "hot" was a TypeError from the `>=`
    if isinstance(given, bool) or not isinstance(given, (int, float)):
        bound = f"above {low:g}" if low_open else f"at least {low:g}"
        raise _BadSetting(name, f"must be a number {bound} and at most {high:g}, got {given!r}")
    above_low = value > low if low_open else value >= low
    if not (math.isfinite(value) and above_low and value <= high):
        bound = f"above {low:g}" if low_open else f"at least {low:g}"
        raise _BadSetting(name, f"must be {bound} and at most {high:g}, got {value!r}")

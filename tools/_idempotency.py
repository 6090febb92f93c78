"""Idempotency keys: which side effect a call performs, derived from its arguments."""

from __future__ import annotations

import json

from regiment._json import JsonObject, JsonValue
from regiment._stray import raised, users_failure
from regiment.errors import ConfigError, ToolError
from regiment.tools._policy import IdempotencyKey

__all__ = ("check_key_names", "derive_key")


def check_key_names(spec: IdempotencyKey | None, names: tuple[str, ...], tool_name: str) -> None:
    """Refuse a key spec that names no parameters, or names one the tool does not have.

    Raises:
        ConfigError: with the parameters to choose from.
    """
    if spec is None or callable(spec):
        return
    unknown = [name for name in spec if name not in names]
    if unknown or not spec:
        raise ConfigError(
            f"idempotency_key of tool {tool_name!r} names {unknown or 'no'} parameters; "
            f"choose among: {', '.join(names) or '(none)'}"
        )


def derive_key(spec: IdempotencyKey | None, tool_name: str, arguments: JsonObject) -> str | None:
    """The key for one call: ``"issue_refund:order_id=88213"``, or what ``spec`` returns.

    ``arguments`` are the validated ones (defaults filled in), so two calls that
    mean the same side effect get the same key however the model spelled them.
    """
    if spec is None:
        return None
    if callable(spec):
        try:
            key = spec(arguments)
        except BaseException as exc:  # its bug fails the step, saying whose code raised
            if not users_failure(exc):
                raise  # a real cancellation, or an interrupt
            raise ToolError(
                f"the idempotency_key function of tool {tool_name!r} {raised(exc)}; fix it "
                "to return the key (a str) for the call's arguments",
                fatal=True,
            ) from exc
        if not isinstance(key, str):  # journaled and sent to the tool: it must be text
            raise ToolError(
                f"the idempotency_key function of tool {tool_name!r} returned the "
                f"{type(key).__name__} {key!r:.100}, not the key (a str); fix it to return a str",
                fatal=True,
            )
        return key
    return f"{tool_name}:" + ",".join(f"{name}={_part(arguments[name])}" for name in spec)


def _part(value: JsonValue) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

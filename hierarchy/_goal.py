"""What a goal must be before a run starts: text every model, journal and trace can carry."""

from __future__ import annotations

from regiment.errors import ConfigError

__all__ = ("check_goal",)


def check_goal(goal: object) -> None:
    """Refuse a goal that is not text, is blank, or cannot be encoded as UTF-8."""
    if not isinstance(goal, str):
        raise ConfigError(f"the goal must be text (a str), not {type(goal).__name__}: {goal!r}")
    if not goal.strip():
        raise ConfigError("the goal is empty; say what the team should do")
    try:
        goal.encode()
    except UnicodeEncodeError as exc:  # no model, journal or trace could carry it
        raise ConfigError(
            f"the goal is not valid text: {goal[exc.start]!r} at position {exc.start} is a lone "
            "surrogate (bytes that were not UTF-8, decoded with surrogateescape?)"
        ) from None

"""What a goal must be before a run starts: text every model, journal and trace can carry."""

from __future__ import annotations

from regiment.errors import ConfigError

__all__ = ("check_goal", "check_session")


def check_goal(goal: object, session: object = None) -> None:
    """Refuse a goal that is not text, is blank, cannot be encoded as UTF-8, or holds a
    NUL character; and the run's ``session``, see :func:`check_session`."""
    if not isinstance(goal, str):
        raise ConfigError(f"the goal must be text (a str), not {type(goal).__name__}: {goal!r}")
    if not goal.strip():
        raise ConfigError("the goal is empty; say what the team should do")
    _valid("the goal", goal)
    if session is not None:  # (no call for a run of no session: every run starts here, #22)
        check_session(session)


def check_session(session: object) -> None:
    """Refuse a session id that is not text, is blank, cannot be encoded as UTF-8, or
    holds a NUL character (``None``: the run belongs to no session)."""
    if session is None:
        return
    if not isinstance(session, str):
        raise ConfigError(
            f"the session must be text (a str) or None, not {type(session).__name__}: {session!r}"
        )
    if not session.strip():
        # Every run given the same blank id would see the others' goals and answers.
        raise ConfigError(
            f"the session is blank ({session!r}); give the id the run's conversation "
            "goes by, or None (in the service: leave the key out) for a run of no session"
        )
    _valid("the session", session)


def _valid(what: str, text: str) -> None:
    try:
        text.encode()
    except UnicodeEncodeError as exc:  # no model, journal or trace could carry it
        raise ConfigError(
            f"{what} is not valid text: {text[exc.start]!r} at position {exc.start} is a lone "
            "surrogate (bytes that were not UTF-8, decoded with surrogateescape?)"
        ) from None
    # SQLite stores a NUL, but PostgreSQL refuses it in a text column: refused everywhere
    # alike, before anything starts, not as a journal failure that a retry never cures.
    at = text.find("\x00")
    if at >= 0:
        raise ConfigError(
            f"{what} holds a NUL character ('\\x00') at position {at}, which a journal "
            "cannot store (PostgreSQL refuses it in text); remove it"
        )

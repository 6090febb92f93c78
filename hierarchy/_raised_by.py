"""Which model of the application's raised an exception: set on it when raised, read
when a step's or run's error text (or a log line) is written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from regiment.errors import ModelError, RegimentError
from regiment.models import Usage

if TYPE_CHECKING:
    from regiment.models import Model

__all__ = ("described", "name_model", "raised_class", "spent_by")

_NONE_KNOWN = Usage()

# Set on what a model of the application's raised (not a ModelError): the model, named.
_RAISED_BY = "_regiment_raised_by"


def name_model(model: Model, exc: BaseException) -> None:
    """Mark ``exc``, raised by ``model``'s own code (not a ``ModelError``), with the model
    that raised it: the step's or run's error names it (:func:`described`), and so does
    the traceback (a note). The exception itself passes on unchanged, so spans keep its
    class as ``error.type``."""
    if not isinstance(exc, Exception) or isinstance(exc, ModelError):
        return
    if getattr(exc, _RAISED_BY, None) is not None:  # a nested call's, named already
        return
    who = f"model {model.name!r} ({type(model).__name__})"
    try:
        setattr(exc, _RAISED_BY, who)
    except AttributeError:  # an exception class that takes no attributes: unnamed
        return
    exc.add_note(f"raised by {who}")


def described(exc: BaseException) -> str:
    """``exc`` as an error text: ``"<Class>: <message>"``, led by the model that raised
    it when a model of the application's did (``"model 'mine' (MyModel) raised ..."``)."""
    return f"{raised_class(exc)}: {exc}"


def raised_class(exc: BaseException) -> str:
    """``exc``'s class, led by the model that raised it as in :func:`described`, without
    its message (which may quote the user's text): for a log line whose traceback, not
    exported with it, has the message."""
    who = getattr(exc, _RAISED_BY, None)
    return f"{who} raised {type(exc).__name__}" if isinstance(who, str) else type(exc).__name__


def spent_by(exc: BaseException | None) -> tuple[Usage, int] | None:
    """What the failed model call that raised ``exc`` spent, and in how many model calls;
    ``None`` when no model call raised it. A call was made whether or not its provider
    said what it cost: one that failed saying nothing (an error status, a broken
    connection, a model of the application's that raised) counts as a model call, its
    tokens unknown (none charged). Not a ``ConfigError`` (settings that contradict each
    other): no request was sent."""
    if isinstance(exc, ModelError):
        return (_NONE_KNOWN if exc.usage is None else exc.usage), exc.model_calls
    if isinstance(exc, RegimentError) or getattr(exc, _RAISED_BY, None) is None:
        return None
    return _NONE_KNOWN, 1  # a model of the application's raised it

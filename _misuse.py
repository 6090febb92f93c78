"""The public API given the wrong thing: a ``ConfigError`` that says what to pass.

Python's and msgspec's own words for a slip (``Unexpected keyword argument 'foo'``,
``'int' object is not callable``) name neither the call nor what it takes. These
classes are ``ConfigError`` s (the programmer has to fix the call) and also the
builtin a caller may already catch (``TypeError``, ``RuntimeError``), as before.
"""

from __future__ import annotations

from typing import Any

import msgspec

from regiment.errors import ConfigError

__all__ = ("ConfigStruct", "KnownFields", "Misused", "WrongType", "a_kind")


class WrongType(ConfigError, TypeError):
    """A call given a value of the wrong kind, or an argument it does not take."""


class Misused(ConfigError, RuntimeError):
    """An object used in a way its state does not allow (entered twice, say)."""


def a_kind(value: object) -> str:
    """What ``value`` is, in a few words, not its value: ``an int``, ``None``."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


class KnownFields(msgspec.StructMeta):
    """The metaclass of a config struct users build (``Budget``): a keyword it has no
    field for, a positional argument past those it takes, or a field left out, is a ``WrongType``
    naming its fields (the closest to a misspelt one first), not msgspec's bare
    ``Unexpected keyword argument 'foo'``. Decoding a team file does not come here."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except TypeError:
            fields, positional = cls.__struct_fields__, cls.__match_args__
            unknown = [name for name in kwargs if name not in fields]
            if unknown or len(args) > len(positional):
                raise WrongType(_refused(cls, unknown, len(args))) from None
            given = {*positional[: len(args)], *kwargs}
            absent = [name for name in _required(cls) if name not in given]
            if not absent:
                raise
            raise WrongType(
                f"{cls.__name__} needs {', '.join(absent)} too: "
                f"{cls.__name__}({', '.join(f'{name}=...' for name in _required(cls))})"
            ) from None


class ConfigStruct(msgspec.Struct, metaclass=KnownFields, frozen=True):
    """A base for frozen config structs users build by keyword (``Budget``, ``Price``).

    Building one costs a few microseconds more than a plain struct (the metaclass's
    ``__call__`` is Python), so a struct built on a run's path (``ModelSettings``, one a
    capped call) is none; decoding one (a team file, a journal) does not come here."""


def _required(cls: type) -> list[str]:
    """The fields of a struct class that have no default."""
    return [f.name for f in msgspec.structs.fields(cls) if f.required]


def _refused(cls: Any, unknown: list[str], given: int) -> str:
    import difflib  # on the error path only

    owner, fields, positional = cls.__name__, cls.__struct_fields__, cls.__match_args__
    named = ", ".join(fields)
    if not fields:
        return f"{owner} takes no arguments: {owner}()"
    if not unknown:
        takes = (
            f"keyword arguments only ({owner}({fields[0]}=...))"
            if not positional
            else f"at most {len(positional)} positional ({', '.join(positional)})"
        )
        return f"{owner} takes {takes}, got {given} positional; its fields are {named}"
    said = []
    for name in unknown:
        close = difflib.get_close_matches(name, fields, n=1)
        said.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"{owner} has no field {', '.join(said)}; its fields are {named}"

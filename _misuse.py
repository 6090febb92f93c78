"""The public API given the wrong thing: a ``ConfigError`` that says what to pass.

Python's and msgspec's own words for a slip (``Unexpected keyword argument 'foo'``,
``'int' object is not callable``) name neither the call nor what it takes. These
classes are ``ConfigError`` s (the programmer has to fix the call) and also the
builtin a caller may already catch (``TypeError``, ``RuntimeError``), as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from regiment.errors import ConfigError

__all__ = (
    "ConfigStruct",
    "EnterFirst",
    "KnownFields",
    "Misused",
    "NotEntered",
    "WrongType",
    "a_kind",
)


class WrongType(ConfigError, TypeError):
    """A call given a value of the wrong kind, or an argument it does not take."""


class Misused(ConfigError, RuntimeError):
    """An object used in a way its state does not allow (entered twice, say)."""


class NotEntered(ConfigError, AttributeError):
    """An async context manager asked for what only the object it yields has
    (``team.start().run``): the ``AttributeError`` it was, saying to enter it first."""


class EnterFirst:
    """A base for an async context manager users enter (``team.start()``): used as what it
    yields (an attribute only that has, ``await``, a plain ``with``), it raises a
    ``ConfigError`` showing the ``async with`` line, not Python's ``AttributeError:
    '_AsyncGeneratorContextManager' object has no attribute 'run'``. Python consults
    ``__getattr__`` only for an attribute the object lacks, so a right use pays nothing.
    """

    __slots__ = ()

    # What the caller wrote, and a name for what the block yields: ("team.start()", "running").
    entered_as: ClassVar[tuple[str, str]] = ("it", "it")
    after: ClassVar[str] = ""  # said after the line: what leaving the block does, say

    def entry(self) -> tuple[str, str]:
        """``entered_as``; an object whose call reads otherwise says so here."""
        return self.entered_as

    if not TYPE_CHECKING:  # for the run-time error only: type checkers refuse these uses as is

        def __getattr__(self, name):
            if name.startswith("_"):  # Python's own probes (copy, pickle, reprs): as ever
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            call, held = self.entry()
            raise NotEntered(
                f"{call} is an async context manager, which has no {name!r}: enter it, "
                f"`async with {call} as {held}:`, and use `{held}.{name}`{self.after}"
            )

        def __await__(self):
            raise self.not_entered("await")

        def __enter__(self):
            raise self.not_entered("with")

        def __exit__(self, *exc_info):  # Python looks for it before it calls __enter__
            return None

    def not_entered(self, how: str) -> WrongType:
        """``await`` or a plain ``with`` of it: the ``TypeError`` Python raised, saying how."""
        call, held = self.entry()
        return WrongType(
            f"`{how} {call}` does not enter it: write `async with {call} as {held}:`{self.after}"
        )


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

"""Resolving ``module:attribute`` paths and nested team file paths from team files,
with errors that help."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from regiment.errors import ConfigError
from regiment.hierarchy.guard import Guardrail, as_guardrail
from regiment.tools import Tool

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = (
    "IncludeChain",
    "import_callable",
    "import_guardrails",
    "import_object",
    "import_output_type",
    "import_tool",
    "nested_team_file",
)

IncludeChain = Sequence[tuple[Path, str]]
"""The team files being loaded, outermost first: each one's resolved path and its name in messages."""


def import_object(spec: str, *, where: str) -> object:
    """The object ``spec`` (``"package.module:attribute"``) names.

    Args:
        spec: the import path.
        where: ``"file: key.path"``, the start of any error message.

    Raises:
        ConfigError: the path is malformed, the module cannot be imported, or
            it has no such attribute (the message lists what it does have).
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(
            f"{where}: expected 'module:attribute' (e.g. 'myapp.tools:lookup'), got {spec!r}"
        )
    module = _import_module(module_name, spec, where)
    target: object = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            have = ", ".join(_offered(target)) or "nothing public"
            raise ConfigError(
                f"{where}: cannot import {spec!r}: no attribute {part!r} (it has: {have})"
            )
        target = getattr(target, part)
    return target


def import_tool(spec: str, *, where: str) -> Tool[..., object]:
    """A ``Tool`` from its path; a plain function is wrapped with ``Tool(fn)``."""
    found = import_object(spec, where=where)
    if isinstance(found, Tool):
        return found
    if inspect.isfunction(found) or inspect.ismethod(found):
        try:
            return Tool(found)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {spec!r} cannot be a tool: {exc}") from exc
    raise ConfigError(
        f"{where}: {spec!r} is {_kind(found)}; expected a Tool (made with @tool) or a function"
    )


def import_guardrails(specs: Sequence[str], *, where: str) -> tuple[Guardrail, ...]:
    """The guardrails at ``specs``: ``Guardrail`` objects, or functions whose
    parameter is annotated with a subject type."""
    found: list[Guardrail] = []
    for i, spec in enumerate(specs):
        here = f"{where}[{i}]"
        target = import_object(spec, where=here)
        try:
            # the path goes with it: a Ray replica imports it from there
            found.append(dataclasses.replace(as_guardrail(target), source=spec))
        except ConfigError as exc:
            raise ConfigError(f"{here}: {spec!r}: {exc}") from exc
    return tuple(found)


def import_callable(spec: str, *, where: str, expected: str) -> Callable[..., object]:
    """A function (or other callable) from its path.

    Args:
        spec: the import path.
        where: the start of any error message.
        expected: what it should be, for the message ("a function of a StepReport").
    """
    found = import_object(spec, where=where)
    if isinstance(found, Tool):  # callable, so it passed, and failed each call of a run
        raise ConfigError(
            f"{where}: {spec!r} is the tool {found.name!r} (made with @tool), which a worker "
            f"calls; expected {expected}, a plain function"
        )
    if not callable(found) or inspect.isclass(found):
        raise ConfigError(f"{where}: {spec!r} is {_kind(found)}; expected {expected}")
    # Each is called with one argument: a function that cannot take it would fail every
    # call of every run, with a TypeError that names neither the file nor the key.
    try:
        signature = inspect.signature(found)
    except (TypeError, ValueError):  # a builtin without one: it is called as it is
        return found
    try:
        signature.bind(None)
    except TypeError:
        name = getattr(found, "__name__", type(found).__name__)
        shown = str(signature).split(" -> ", 1)[0]
        raise ConfigError(
            f"{where}: {spec!r} is {name}{shown}, which cannot be called with one argument; "
            f"expected {expected}"
        ) from None
    return found


def import_output_type(spec: str | None, *, where: str) -> type[BaseModel] | None:
    """The pydantic model class an ``output_type = "module:Model"`` entry names."""
    if spec is None:
        return None
    found = import_object(spec, where=where)
    # pydantic loads with a file's first output type or tool, not with every team file.
    from pydantic import BaseModel

    if inspect.isclass(found) and issubclass(found, BaseModel):
        return found
    raise ConfigError(
        f"{where}: {spec!r} is {_kind(found)}; expected a pydantic model class "
        "(a subclass of pydantic.BaseModel)"
    )


def _import_module(name: str, spec: str, where: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or name
        if not (name == missing or name.startswith(f"{missing}.")):  # found; its import not
            raise ConfigError(
                f"{where}: cannot import {spec!r}: importing {name!r} raised "
                f"ModuleNotFoundError: no module named {missing!r}, which it imports (install "
                "the package that provides it, or put its directory on the import path)"
            ) from exc
        raise ConfigError(
            f"{where}: cannot import {spec!r}: no module named {missing!r} "
            "(is its directory on the import path? `regiment` adds the current directory, "
            "or the one --app-dir DIR names; a program that calls load_team or build_team "
            "adds it to sys.path itself)"
        ) from exc
    except SystemExit as exc:  # a script's top level, say: its exit is not the command's
        raise ConfigError(
            f"{where}: cannot import {spec!r}: importing {name!r} called sys.exit({exc.code!r}); "
            "a module a team file names must not exit when imported (put a script's work "
            "under `if __name__ == '__main__':`)"
        ) from exc
    except Exception as exc:  # the user's module raised while importing
        raise ConfigError(
            f"{where}: cannot import {spec!r}: importing {name!r} raised "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _offered(target: object) -> list[str]:
    """Public tools, guardrails, functions and classes defined in ``target``, the likely
    meant names (a ``Guardrail`` made with ``guardrail()`` or a built-in is no function)."""
    home = getattr(target, "__name__", None)
    names = []
    for name, value in vars(target).items() if hasattr(target, "__dict__") else ():
        if name.startswith("_"):
            continue
        own = getattr(value, "__module__", None) == home
        if isinstance(value, Tool | Guardrail) or (own and callable(value)):
            names.append(name)
    return sorted(names)


def _kind(value: object) -> str:
    if inspect.isclass(value):
        return f"the class {value.__name__}"
    if isinstance(value, ModuleType):
        return f"the module {value.__name__}"
    kind = type(value).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


def nested_team_file(spec: str, *, source: str, where: str, chain: IncludeChain) -> Path:
    """The team file a ``team = "..."`` entry of ``source`` names, as ``source``'s directory sees it.

    Args:
        spec: the entry's value, a path relative to the directory of ``source``
            (the current directory when ``source`` is not a file, e.g. ``"<config>"``).
        source: the declaring file's name, as its messages start.
        where: ``"file: key.path"``, the start of any error message.
        chain: the files being loaded, ``source`` last (empty when it is not a file).

    Raises:
        ConfigError: the path is not a ``.toml``/``.yaml``/``.yml`` file's, the
            file does not exist, or it is one of ``chain``: a team
            that contains itself (the message prints the chain, ``a -> b -> a``).
    """
    path = Path(source).parent / spec
    if path.suffix.lower() not in (".toml", ".yaml", ".yml"):
        raise ConfigError(
            f"{where}: {spec!r} is not a team file: expected a path ending in .toml, .yaml or .yml"
        )
    try:
        found = path.is_file()
        resolved = path.resolve()
    except (OSError, ValueError) as exc:  # a name too long, a loop of links, a NUL byte
        raise ConfigError(f"{where}: cannot use the path {spec!r}: {exc}") from exc
    if not found:
        raise ConfigError(
            f"{where}: the team file {str(path)!r} does not exist ({spec!r} is read relative "
            f"to the directory of {source}); fix the path or create the file"
        )
    if any(seen == resolved for seen, _ in chain):
        names = " -> ".join([name for _, name in chain] + [str(path)])
        raise ConfigError(
            f"{where}: {spec!r} makes a team contain itself: {names}; "
            "a team file cannot include itself, directly or through other files; remove one of these entries"
        )
    return path

"""The package's shape, checked: small units, no import cycles, arrows that point one way.

Read from the source with ``ast`` (nothing is imported), so a violation names
the file and line to fix.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("actors", "tools", "models", "telemetry", "hierarchy", "journal", "config", "cli", "serve")
MAX_MODULE, MAX_CLASS, MAX_FUNCTION = 400, 250, 60

# Which rooms each room must never import (DESIGN.md: cli -> serve -> config ->
# hierarchy -> journal -> models/tools/telemetry/actors, never back).
_ABOVE_JOURNAL = {"hierarchy", "config", "serve", "cli"}
FORBIDDEN = {
    "actors": {"journal", *_ABOVE_JOURNAL},
    "tools": {"journal", *_ABOVE_JOURNAL},
    "models": {"journal", *_ABOVE_JOURNAL},
    "telemetry": {"journal", *_ABOVE_JOURNAL},
    "journal": _ABOVE_JOURNAL,
    "hierarchy": {"config", "serve", "cli"},
    "config": {"serve", "cli"},
    "serve": {"cli"},
}
# The one allowed exception: ``regiment.hierarchy`` still offers the team-file names
# (``from regiment.hierarchy import load_team``) by loading ``regiment.config`` on
# first use, inside its module ``__getattr__`` (and for type checkers only).
ALLOWED = {("regiment.hierarchy", "regiment.config")}


@dataclass(frozen=True)
class Import:
    target: str
    line: int
    at_import_time: bool  # module level, not inside a function
    type_checking: bool  # inside ``if TYPE_CHECKING:``


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    paths = list(ROOT.glob("*.py"))
    for room in ROOMS:
        paths += (ROOT / room).rglob("*.py")
    for path in paths:
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(("regiment", *parts))] = path
    return found


MODULES = _modules()


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else "root"


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports(module: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for inner in child.body:
                    yield from visit_one(inner, in_function, True)
                for inner in child.orelse:
                    yield from visit_one(inner, in_function, type_checking)
                continue
            yield from visit_one(child, in_function, type_checking)

    def visit_one(child: ast.AST, in_function: bool, type_checking: bool) -> Iterator[Import]:
        if isinstance(child, ast.Import):
            for alias in child.names:
                yield Import(alias.name, child.lineno, not in_function, type_checking)
        elif isinstance(child, ast.ImportFrom):
            base = _resolve(module, is_package, child)
            for alias in child.names:
                sub = f"{base}.{alias.name}"
                target = sub if sub in MODULES else base
                yield Import(target, child.lineno, not in_function, type_checking)
        else:
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            yield from visit(child, nested, type_checking)

    yield from visit(tree, False, False)


@functools.cache
def _all_imports() -> dict[str, list[Import]]:
    """Every module's imports, parsed on first use: at collection time every xdist worker
    would parse the whole package, though only the worker running this file reads them."""
    return {module: list(_imports(module, path)) for module, path in MODULES.items()}


def test_the_scan_sees_the_package() -> None:
    assert "regiment.hierarchy.run._actor" in MODULES
    targets = {i.target for i in _all_imports()["regiment.hierarchy.run._actor"]}
    assert "regiment.hierarchy.run._book" in targets
    assert any(i.type_checking for i in _all_imports()["regiment.hierarchy"])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_units_are_small(module: str) -> None:
    path = MODULES[module]
    source = path.read_text()
    where = path.relative_to(ROOT)
    lines = len(source.splitlines())
    assert lines <= MAX_MODULE, f"{where} has {lines} lines (at most {MAX_MODULE}); split it"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            limit = MAX_CLASS if isinstance(node, ast.ClassDef) else MAX_FUNCTION
            assert size <= limit, (
                f"{where}:{node.lineno} {node.name} has {size} lines (at most {limit}); split it"
            )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_rooms_import_only_downwards(module: str) -> None:
    forbidden = FORBIDDEN.get(_room(module), set())
    for imp in _all_imports()[module]:
        if not imp.target.startswith("regiment") or (module, imp.target) in ALLOWED:
            continue
        room = _room(imp.target)
        assert room not in forbidden, (
            f"{MODULES[module].relative_to(ROOT)}:{imp.line} imports {imp.target}: "
            f"the {_room(module)} room must not import {room}"
        )


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_rooms_meet_only_through_their_public_surface(module: str) -> None:
    """A room imports another room's package (``regiment.hierarchy``), never its private modules.

    The root's own helpers (``regiment._json``, ``regiment.errors``) belong to no room.
    """
    for imp in _all_imports()[module]:
        room = _room(imp.target)
        if not imp.target.startswith("regiment.") or room in ("root", _room(module)):
            continue
        assert not _private(imp.target), (
            f"{MODULES[module].relative_to(ROOT)}:{imp.line} imports {imp.target}, a private "
            f"module of the {room} room: import it from regiment.{room} (export it there if needed)"
        )


def test_the_private_import_rule_sees_a_private_module() -> None:
    assert _private("regiment.hierarchy.workers._worker")
    assert not _private("regiment.hierarchy.workers")
    assert _room("regiment.hierarchy.run._actor") == "hierarchy"


def test_no_import_cycles_outside_type_checking() -> None:
    graph = {
        module: {
            i.target
            for i in imports
            if i.at_import_time and not i.type_checking and i.target in MODULES
        }
        for module, imports in _all_imports().items()
    }
    cycles = [sorted(c) for c in _strongly_connected(graph) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                found.append(component)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [c for c in _strongly_connected(graph) if len(c) > 1] == [{"a", "b", "c"}]


def test_every_package_is_installed() -> None:
    """pyproject lists the packages one by one: a sub-package left out of that list is
    missing from an installed copy, whose first import of it fails."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {
        ".".join(("regiment", *init.parent.relative_to(ROOT).parts))
        for room in ROOMS
        for init in (ROOT / room).rglob("__init__.py")
    }
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"

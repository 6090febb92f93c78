"""Every public module declares ``__all__`` as a tuple, and it names only what exists."""

from __future__ import annotations

import importlib

import pytest

PUBLIC_MODULES = (
    "regiment",
    "regiment.errors",
    "regiment.actors",
    "regiment.tools",
    "regiment.models",
    "regiment.telemetry",
    "regiment.hierarchy",
    "regiment.hierarchy.events",
    "regiment.hierarchy.plan",
    "regiment.hierarchy.workers",
    "regiment.config",
    "regiment.cli",
    "regiment.journal",
)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_a_sorted_tuple_of_existing_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert isinstance(exported, tuple)
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names {attr!r}, which does not exist"
    assert len(set(exported)) == len(exported)


@pytest.mark.parametrize("name", PUBLIC_MODULES[2:])
def test_room_reexports_every_public_name_of_its_private_modules(name: str) -> None:
    module = importlib.import_module(name)
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_") and getattr(value, "__module__", "").startswith(name + "._")
    }
    missing = public - set(module.__all__)
    assert not missing, f"{name} imports {sorted(missing)} but does not list them in __all__"

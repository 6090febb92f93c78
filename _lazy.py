"""Names a package offers but loads on first use (imports nothing from regiment).

``import regiment`` should cost a few milliseconds, not the whole library: a
package lists which module holds each of its public names, and its module
``__getattr__`` imports that module the first time the name is asked for
(PEP 562). Type checkers see the same names through ``if TYPE_CHECKING:``
imports in the package, so ``from regiment import Team`` is typed as before.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Mapping

__all__ = ("LazyNames",)


class LazyNames:
    """Where each lazily offered name of one package lives.

    Args:
        package: The package's ``__name__``.
        modules: For each module, the names of it the package offers.
    """

    __slots__ = ("_package", "_where")

    def __init__(self, package: str, modules: Mapping[str, Iterable[str]]) -> None:
        self._package = package
        self._where = {name: module for module, names in modules.items() for name in names}

    @property
    def names(self) -> frozenset[str]:
        """Every name this package loads on first use."""
        return frozenset(self._where)

    def load(self, name: str) -> object:
        """Import the module holding ``name``, keep the value on the package, and return it.

        Raises:
            AttributeError: The package offers no such name (what ``getattr`` expects).
        """
        module = self._where.get(name)
        if module is None:
            raise AttributeError(f"module {self._package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        # The next lookup finds it in the package's namespace and skips __getattr__.
        setattr(sys.modules[self._package], name, value)
        return value

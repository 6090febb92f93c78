"""The seam through which telemetry carries trace context across actors."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

__all__ = ("ContextPropagator",)


@runtime_checkable
class ContextPropagator(Protocol):
    """Carries context (e.g. a W3C ``traceparent``) from a sender to a handler.

    The runtime calls :meth:`inject` in the sender's task when a message is sent
    or asked without explicit headers, and stores the result in
    ``Envelope.headers``. It enters :meth:`activate` around each ``receive()``
    call, so the handler, and every task it starts, sees that context. Handlers
    never deal with headers themselves.
    """

    def inject(self) -> dict[str, str]:
        """Return headers describing the caller's current context."""
        ...

    def activate(self, headers: Mapping[str, str]) -> contextlib.AbstractContextManager[None]:
        """Return a context manager that makes ``headers`` the current context."""
        ...

"""cli room: the ``regiment`` command (also ``python -m regiment``).

``main`` is the console script's entry point; ``run_async`` runs the same
command inside an event loop the caller already has.
"""

from regiment.cli._main import main, run_async

__all__ = ("main", "run_async")

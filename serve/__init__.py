"""The team as a web service: a mountable Starlette app and ``regiment serve``.

Needs the ``serve`` extra (``pip install 'regiment[serve]'``); a plain
``import regiment`` never loads it.
"""

from regiment.serve._deps import require_serve

require_serve()

from regiment.serve._app import create_app  # noqa: E402
from regiment.serve._registry import MemoryRunStore, RunRecord, RunState, RunStore  # noqa: E402
from regiment.serve._serve import serve_command  # noqa: E402

__all__ = (
    "MemoryRunStore",
    "RunRecord",
    "RunState",
    "RunStore",
    "create_app",
    "require_serve",
    "serve_command",
)

"""The ``regiment`` command."""

from __future__ import annotations

import sys

__all__ = ("main",)


def main(argv: list[str] | None = None) -> int:
    """Run the ``regiment`` command line; returns the exit code."""
    args = sys.argv[1:] if argv is None else argv
    print(f"regiment: the command line is not built yet (got {args!r})", file=sys.stderr)
    return 2

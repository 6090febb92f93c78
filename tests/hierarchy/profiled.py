"""Exact counts of the Python calls a piece of a run makes (issue #22): the
interpreter's profiler sees every call, so a count does not depend on the machine."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from types import FrameType

__all__ = ("CallCounter", "Matches")

Matches = Callable[[FrameType, str, object], bool]
"""Whether to count a profiler event: the frame, ``"call"`` or ``"c_call"``, and for a
``c_call`` the builtin called."""


class CallCounter:
    """Counts the calls (Python ones, and builtins with ``"c_call"``) that ``matches``
    accepts while it profiles (``with counter:``). The garbage collector is held off
    meanwhile (garbage of earlier tests collected first): a collection that ran a
    finalizer inside the counted code was counted as that code's call, so a count
    depended on which tests ran before in the same process."""

    def __init__(self, matches: Matches) -> None:
        self.matches = matches
        self.count = 0
        self._collecting = True

    def __enter__(self) -> None:
        gc.collect()
        self._collecting = gc.isenabled()
        gc.disable()
        sys.setprofile(self._profile)

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        if self._collecting:
            gc.enable()

    def _profile(self, frame: FrameType, event: str, arg: object) -> None:
        if event in ("call", "c_call") and self.matches(frame, event, arg):
            self.count += 1

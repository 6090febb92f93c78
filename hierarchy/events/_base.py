"""What every event carries."""

from __future__ import annotations

import msgspec

from regiment.models import Usage

__all__ = ("NO_USAGE", "Base")

NO_USAGE = Usage()  # events journaled before steps' events carried their usage


class Base(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    run_id: str

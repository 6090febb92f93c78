"""A cProfile of the per-step loop, split into the parts issue #22 names.

Every function's own time (cProfile's ``tottime``) goes to one part, chosen by
the file it is in. Built-ins (``len``, ``dict.get``, a msgspec constructor) have
no file; msgspec's codecs and copies count as message copying, the others'
time goes to the part of each caller, in the share cProfile
recorded per caller. So the parts add up to the whole profiled time and a part's
figure is everything spent *in* its code, not below it.
"""

from __future__ import annotations

import pstats
import re
from collections import Counter

__all__ = ("PARTS", "by_part", "part_of")

# (part, path fragments); the first part whose fragment is in the path wins.
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("OpenTelemetry SDK and API (the floor of tracing)", ("/opentelemetry/",)),
    ("span bookkeeping (regiment's telemetry/, run/_trace)", ("/telemetry/", "run/_trace.py")),
    ("event construction (events/, run/_channel)", ("hierarchy/events/", "run/_channel.py")),
    ("budget ledger (_budget, run/_fan_out)", ("hierarchy/_budget.py", "run/_fan_out.py")),
    (
        "plan-version checks (run/_versions, run/_verify, plan/)",
        ("run/_versions.py", "run/_verify.py", "hierarchy/plan/"),
    ),
    ("run journal hooks (run/_journaling, journal/)", ("run/_journaling.py", "/journal/")),
    (
        "run state: record, book, dispatch (run/_actor, _book, _dispatch, _phase, _changes)",
        ("/hierarchy/run/",),
    ),
    (
        "actor hops: mailboxes, asks, runners (actors/, workers/_step_actor)",
        ("/actors/", "workers/_step_actor.py"),
    ),
    (
        "event loop (anyio, asyncio, trio)",
        ("/anyio/", "/asyncio/", "/trio/", "/sniffio/", "selectors.py"),
    ),
    (
        "worker step: tool loop, prompts, model call (workers/, _model_call, models/, tools/)",
        (
            "/hierarchy/workers/",
            "hierarchy/_model_call.py",
            "/models/",
            "/tools/",
            "hierarchy/_prompts.py",
            "hierarchy/_text.py",
        ),
    ),
    ("team and run front (_team, _supervisor, _planner, _result, _memory)", ("/hierarchy/",)),
    ("message copying and encoding (msgspec, json, copy)", ("/msgspec/", "/json/", "copy.py")),
)
COPYING = PARTS[-1][0]
# Built-ins that build or copy messages: msgspec's constructors and codecs, copies.
_COPY_NAMES = re.compile(r"msgspec|copy|replace|to_builtins|convert|encode|decode")
OTHER = "other (stdlib: contextvars, logging, dataclasses, ...)"


def part_of(path: str) -> str | None:
    """The part a file's code belongs to; None for built-ins (no file)."""
    if path == "~" or path.startswith("<"):
        return None
    path = path.replace("\\", "/")
    for part, fragments in PARTS:
        if any(fragment in path for fragment in fragments):
            return part
    return OTHER


def by_part(stats: pstats.Stats) -> Counter[str]:
    """Seconds of own time per part, built-ins charged to their callers."""
    totals: Counter[str] = Counter()
    table = stats.stats  # type: ignore[attr-defined]
    for (path, _line, name), (_cc, _nc, tottime, _ct, callers) in table.items():
        part = COPYING if path == "~" and _COPY_NAMES.search(name) else part_of(path)
        if part is not None:
            totals[part] += tottime
            continue
        if not callers:
            totals[OTHER] += tottime
            continue
        for (caller_path, _l, _n), entry in callers.items():
            totals[part_of(caller_path) or OTHER] += entry[2]  # this caller's share of tottime
    return totals

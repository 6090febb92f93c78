"""Every public message type resolves its fields in a fresh program.

A ``msgspec.Struct`` whose field names a type imported only for type checkers
cannot be decoded into (``msgspec.json.decode(..., type=T)``), and ``help(T)`` /
``inspect.signature(T)`` raise ``NameError``, unless something else happened to
import that type first. A fresh interpreter shows it whatever the test order.
"""

from __future__ import annotations

import subprocess
import sys

ROOMS = (
    "regiment",
    "regiment.actors",
    "regiment.tools",
    "regiment.models",
    "regiment.telemetry",
    "regiment.hierarchy",
    "regiment.journal",
    "regiment.config",
    "regiment.errors",
)

_PROGRAM = """
import importlib, inspect, sys
import msgspec
room = importlib.import_module(sys.argv[1])
checked = 0
for name in room.__all__:
    obj = getattr(room, name)
    if inspect.isclass(obj) and issubclass(obj, msgspec.Struct):
        try:
            inspect.signature(obj)
            msgspec.json.Decoder(obj)
        except Exception as exc:
            print(f"{sys.argv[1]}.{name}: {exc!r}")
        checked += 1
print("checked", checked)
"""


def test_public_structs_resolve_their_fields_in_a_fresh_program() -> None:
    seen = 0
    for room in ROOMS:
        done = subprocess.run(
            [sys.executable, "-c", _PROGRAM, room], capture_output=True, text=True, check=True
        )
        *problems, last = done.stdout.splitlines()
        assert problems == []
        seen += int(last.split()[1])
    assert seen > 100  # the rooms' messages, events, records and results

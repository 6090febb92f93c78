"""Tools whose parameters are all plain JSON types: checking their arguments as Python values.

``ArgumentSpec.validate`` checks arguments by dumping them to JSON text and
validating that in pydantic's strict JSON mode, so a date arrives as a ``date``
and a nested model as a model. A tool whose every parameter is a plain type
(``str``, ``int``, ``float``, ``bool``, ``None``, lists and string-keyed dicts of
those, optional or not) needs no such round trip: when the arguments are plain
JSON data too, pydantic's strict Python mode accepts the same values and makes
the same of them. Anything else (a whole-number float, a tuple, a non-string
key, a huge integer, NaN) is left to the JSON path, and so is every failure, so
error messages stay the JSON path's.
"""

from __future__ import annotations

import math
import types
from typing import Annotated, Union, get_args, get_origin

__all__ = ("is_plain_annotation", "is_plain_data")

_SCALARS: frozenset[object] = frozenset({str, int, float, bool, type(None), None})
_BIGGEST = 2**63  # integers past this are left to the JSON path (and its big-number rules)


def is_plain_annotation(annotation: object) -> bool:
    """Whether a parameter's type is plain: see the module's docstring.

    ``Annotated`` is plain when its type is and its metadata is only pydantic
    ``Field`` information (a description, a bound); a validator or any other
    marker is not, since it may treat a Python value and a JSON one differently.
    """
    from pydantic.fields import FieldInfo  # loaded already: a spec is being built

    origin = get_origin(annotation)
    if origin is None:
        return annotation in _SCALARS
    args = get_args(annotation)
    if origin is Annotated:
        return all(isinstance(m, FieldInfo) for m in args[1:]) and is_plain_annotation(args[0])
    if origin is list:
        return len(args) == 1 and is_plain_annotation(args[0])
    if origin is dict:
        return len(args) == 2 and args[0] is str and is_plain_annotation(args[1])
    if origin is Union or origin is types.UnionType:
        # ``X | None`` only: a union of two value types picks by pydantic's smart mode.
        others = [a for a in args if a is not type(None)]
        return len(others) == 1 and len(args) == 2 and is_plain_annotation(others[0])
    return False


def is_plain_data(value: object) -> bool:
    """Whether ``value`` is JSON data that a JSON round trip would give back unchanged.

    Exact types only (no subclasses, no tuples), string keys, finite floats that
    are not whole numbers (the JSON path reads ``5.0`` as ``5``), integers of at
    most 64 bits.
    """
    if value is None or type(value) is str or type(value) is bool:
        return True
    if type(value) is int:
        return -_BIGGEST < value < _BIGGEST
    if type(value) is float:
        return math.isfinite(value) and not value.is_integer()
    if type(value) is list:
        for item in value:  # noqa: SIM110 - a loop: no generator frame per list
            if not is_plain_data(item):
                return False
        return True
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str or not is_plain_data(item):
                return False
        return True
    return False

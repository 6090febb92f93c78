"""A small grammar of broken team files: a valid team, one mistake, TOML or YAML text.

Each mistake knows what the error must name (the key path, or the line for
bytes that never became text), so a test can check the message, not just
the exit code.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass
from typing import Literal

import yaml
from hypothesis import strategies as st

Format = Literal["toml", "yaml"]
Path_ = tuple[str | int, ...]

DEEP = "__deep_nesting__"  # replaced by the brackets after the text is written


def base() -> dict[str, object]:
    """A valid team (it validates with the repository root as the app dir)."""
    return {
        "name": "t",
        "model": "scripted",
        "brain": "examples.refund.brain:refund_brain",
        "planner": {"max_steps": 6},
        "workers": [
            {
                "name": "billing",
                "description": "Checks refunds.",
                "tools": ["examples.refund.tools:check_eligibility"],
            },
            {"name": "comms", "description": "Writes e-mails."},
        ],
        "checks": {
            "c": {"description": "eligible", "predicate": "examples.refund.checks:eligible"}
        },
        "budget": {"model_calls": 40},
        "compression": {"context_window": 1000},
    }


# Every numeric and text field of the schema, with the kind of value it takes.
FIELDS: dict[Path_, str] = {
    ("name",): "text",
    ("concurrency",): "at_least_1",
    ("planner", "max_steps"): "at_least_1",
    ("planner", "max_plan_attempts"): "at_least_1",
    ("workers", 0, "max_iterations"): "at_least_1",
    ("workers", 1, "max_concurrent_steps"): "at_least_1",
    ("workers", 0, "step_timeout"): "seconds",
    ("workers", 1, "description"): "text",
    ("workers", 0, "artifact"): "flag",
    ("budget", "tokens"): "count",
    ("budget", "tool_calls"): "count",
    ("budget", "replans"): "count",
    ("budget", "rounds"): "at_least_1",
    ("budget", "wall_clock"): "seconds",
    ("compression", "context_window"): "at_least_1",
    ("compression", "threshold_tokens"): "at_least_1",
    ("compression", "window_fraction"): "fraction",
    ("checks", "c", "description"): "text",
}
SECTIONS: list[Path_] = [(), ("planner",), ("workers", 0), ("budget",), ("checks", "c")]
IMPORTS: list[Path_] = [
    ("brain",),
    ("workers", 0, "tools", 0),
    ("checks", "c", "predicate"),
    ("checks", "c", "explain"),
]
REQUIRED: list[Path_] = [("name",), ("workers", 1, "description"), ("checks", "c", "predicate")]
KNOWN = {str(part) for path in FIELDS for part in path} | {
    "model", "brain", "workers", "checks", "tools", "explain", "predicate", "team", "prompts",
    "system_prompt", "synthesizer_model", "critic", "prompt", "on_exhausted", "input_tokens",
    "output_tokens", "model_calls", "max_steps", "concurrency", "artifact", "compression",
}  # fmt: skip


@dataclass(frozen=True)
class Broken:
    """One broken file: its data (or bytes to splice in), its format, what the error must name."""

    data: dict[str, object]
    fmt: Format
    names: tuple[str, ...]
    splice: bytes = b""  # invalid UTF-8 inserted into the written text
    depth: int = 0  # how deep the DEEP placeholder nests


def path_text(path: Path_) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def put(data: dict[str, object], path: Path_, value: object) -> dict[str, object]:
    new = copy.deepcopy(data)
    node: object = new
    for part in path[:-1]:
        node = node[part]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]
    return new


def drop(data: dict[str, object], path: Path_) -> dict[str, object]:
    new = copy.deepcopy(data)
    node: object = new
    for part in path[:-1]:
        node = node[part]  # type: ignore[index]
    del node[path[-1]]  # type: ignore[attr-defined]
    return new


def out_of_range(kind: str) -> st.SearchStrategy[object]:
    bad_floats = st.sampled_from([math.nan, math.inf, -math.inf])
    match kind:
        case "at_least_1":
            return st.integers(max_value=0)
        case "count":
            return st.integers(max_value=-1)
        case "seconds":
            return st.floats(max_value=0) | bad_floats | st.integers(max_value=0)
        case "fraction":
            return st.floats(min_value=1, exclude_min=True) | st.floats(max_value=0) | bad_floats
    return st.nothing()


def wrong_type(kind: str) -> st.SearchStrategy[object]:
    words = st.text("abcxyz ", min_size=1, max_size=8)
    others = st.lists(st.integers(), max_size=2) | st.dictionaries(words, st.integers(), max_size=1)
    match kind:
        case "text":
            return st.integers() | st.booleans() | others
        case "flag":
            return st.integers() | words | others
        case "seconds" | "fraction":
            return words | st.booleans() | others
    return words | st.booleans() | others | st.floats(allow_nan=False).filter(lambda f: f % 1 != 0)


def _field_mistakes() -> st.SearchStrategy[tuple[dict[str, object], tuple[str, ...]]]:
    def one(path: Path_) -> st.SearchStrategy[tuple[dict[str, object], tuple[str, ...]]]:
        kind = FIELDS[path]
        values = wrong_type(kind) | out_of_range(kind)
        return values.map(lambda v: (put(base(), path, v), (path_text(path),)))

    return st.sampled_from(sorted(FIELDS, key=str)).flatmap(one)


def _unknown_keys() -> st.SearchStrategy[tuple[dict[str, object], tuple[str, ...]]]:
    keys = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10).filter(
        lambda k: k not in KNOWN
    )
    values = st.integers() | st.dictionaries(keys, st.integers(), max_size=2) | st.just([{"a": 1}])

    def one(section: Path_, key: str, value: object) -> tuple[dict[str, object], tuple[str, ...]]:
        return put(base(), (*section, key), value), (path_text(section), key)

    return st.builds(one, st.sampled_from(SECTIONS), keys, values)


def _misspelt_tables() -> st.SearchStrategy[tuple[dict[str, object], tuple[str, ...]]]:
    def one(pair: tuple[str, str]) -> tuple[dict[str, object], tuple[str, ...]]:
        right, wrong = pair
        data = base()
        data[wrong] = data.pop(right)
        return data, (wrong, right)

    pairs = [
        ("workers", "worker"),
        ("planner", "planer"),
        ("budget", "budgets"),
        ("checks", "check"),
    ]
    return st.sampled_from(pairs).map(one)


def _bad_imports() -> st.SearchStrategy[tuple[dict[str, object], tuple[str, ...]]]:
    specs = st.sampled_from(
        [
            "nocolon",
            ":x",
            "x:",
            "no_such_module_zz:f",
            "examples.refund.tools:nope",
            "examples.refund.tools:ORDERS",
            "examples.refund.tools:Ledger",
            "..:x",
            "a\x00b:c",
        ]
    )
    return st.builds(
        lambda path, spec: (put(base(), path, spec), (path_text(path),)),
        st.sampled_from(IMPORTS),
        specs,
    )


def _bad_nesting() -> st.SearchStrategy[tuple[dict[str, object], tuple[str, ...]]]:
    cases: list[tuple[Path_, object]] = [
        (("workers",), {"name": "x"}),
        (("planner",), [{"max_steps": 3}]),
        (("checks", "c"), "a check"),
        (("budget",), 5),
        (("workers", 0), "billing"),
        (("workers", 0, "tools"), "examples.refund.tools:check_eligibility"),
    ]
    return st.sampled_from(cases).map(lambda c: (put(base(), c[0], c[1]), (path_text(c[0]),)))


def _missing() -> st.SearchStrategy[tuple[dict[str, object], tuple[str, ...]]]:
    return st.sampled_from(REQUIRED).map(lambda p: (drop(base(), p), (path_text(p),)))


def _nested() -> st.SearchStrategy[tuple[dict[str, object], tuple[str, ...]]]:
    def one(spec: str) -> tuple[dict[str, object], tuple[str, ...]]:
        entry = {"name": "comms", "description": "A team.", "team": spec}
        return put(base(), ("workers", 1), entry), ("workers[1].team", spec)

    extra = put(
        base(),
        ("workers", 1),
        {"name": "c", "description": "d", "team": "s.toml", "max_iterations": 3},
    )
    specs = st.sampled_from(["missing.toml", "x.txt", "", "sub/../nope.yaml", "x" * 300 + ".toml"])
    return specs.map(one) | st.just((extra, ("workers[1].max_iterations",)))


def _deep() -> st.SearchStrategy[tuple[dict[str, object], tuple[str, ...], int]]:
    places: list[Path_] = [("budget", "tokens"), ("x",), ("workers", 0, "tools")]
    return st.builds(
        lambda path, depth: (put(base(), path, DEEP), (str(path[-1]),), depth),
        st.sampled_from(places),
        st.integers(min_value=33, max_value=6000),
    )


def broken_files() -> st.SearchStrategy[Broken]:
    """Every kind of mistake, in TOML and in YAML."""
    fmts: st.SearchStrategy[Format] = st.sampled_from(["toml", "yaml"])
    mistakes = (
        _field_mistakes()
        | _unknown_keys()
        | _misspelt_tables()
        | _bad_imports()
        | _bad_nesting()
        | _missing()
        | _nested()
    )
    plain = st.builds(lambda m, fmt: Broken(m[0], fmt, m[1]), mistakes, fmts)
    deep = st.builds(lambda m, fmt: Broken(m[0], fmt, m[1], depth=m[2]), _deep(), fmts)
    bad_bytes = st.sampled_from(
        [b"\xff", b"\x80", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80", b"\x00", b"\x07", b"\x7f"]
    )
    undecodable = st.builds(
        lambda b, fmt: Broken(base(), fmt, ("line",), splice=b), bad_bytes, fmts
    )
    # Mistakes in the data are the most varied kind, so they get most of the examples.
    return st.sampled_from([plain, plain, plain, plain, deep, undecodable]).flatmap(lambda s: s)


def render(broken: Broken, position: int = 0) -> bytes:
    """The file's bytes: the data as TOML or YAML, with the deep nesting and bad bytes put in."""
    text = toml_text(broken.data) if broken.fmt == "toml" else yaml.safe_dump(broken.data)
    if broken.depth:
        quoted = json.dumps(DEEP) if broken.fmt == "toml" else DEEP
        text = text.replace(quoted, "[" * broken.depth + "]" * broken.depth)
    data = text.encode("utf-8")
    if broken.splice:
        at = position % (len(data) + 1)
        data = data[:at] + broken.splice + data[at:]
    return data


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: object) -> str:
    return str(key) if _BARE.fullmatch(str(key)) else json.dumps(str(key))


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else ("inf" if value > 0 else "-inf")
            if math.isinf(value)
            else repr(value)
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"


def _is_tables(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def toml_text(table: dict[str, object], prefix: str = "") -> str:
    """A minimal TOML writer: keys first, then sub-tables and arrays of tables."""
    lines = [
        f"{_key(k)} = {_value(v)}"
        for k, v in table.items()
        if not isinstance(v, dict) and not _is_tables(v)
    ]
    for k, v in table.items():
        name = f"{prefix}.{_key(k)}" if prefix else _key(k)
        if isinstance(v, dict):
            lines += [f"[{name}]", toml_text(v, name)]
        elif _is_tables(v):
            assert isinstance(v, list)
            for item in v:
                lines += [f"[[{name}]]", toml_text(item, name)]
    return "\n".join(lines) + "\n"

"""Run every benchmark case (one process each) and print one Markdown table.

Run it with the peers' interpreter, ``bench/.venv-peers/bin/python bench/table.py``
(``bench/run_all.py`` makes that environment and does so). ``--only regiment``
(a comma list of frameworks) runs a subset, e.g. in the main virtualenv.
Every row is measured in this one run; ratios are the other figure divided by
regiment's, so above 1 means regiment spends less.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from bench_util import median

__all__ = ("main",)

HERE = Path(__file__).resolve().parent
FRAMEWORKS = ("regiment", "langgraph", "autogen", "pydantic_ai", "openai_agents")
LABELS = {
    "regiment": "regiment",
    "langgraph": "LangGraph",
    "autogen": "AutoGen core",
    "pydantic_ai": "Pydantic AI",
    "openai_agents": "OpenAI Agents",
}
IMPORTS = {
    "regiment": "regiment",
    "langgraph": "langgraph.graph",
    "autogen": "autogen_core",
    "pydantic_ai": "pydantic_ai",
    "openai_agents": "agents",
}
IMPORT_REPEATS = 5
TEAM_IMPORT = "from regiment import Team, Worker, ScriptedModel"


@dataclass(frozen=True)
class Line:
    """One line of the table."""

    row: str
    measure: str
    who: str
    value: float | None
    unit: str
    ratio: str = ""
    target: str = ""


def run_case(name: str) -> Mapping[str, float]:
    """Run ``cases.py name`` in a fresh process; its last stdout line is the figures."""
    done = subprocess.run(
        [sys.executable, str(HERE / "cases.py"), name],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(f"case {name} failed:\n{done.stderr}\n")
        return {}
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def import_seconds(statement: str) -> float | None:
    """Median seconds of an import ``statement`` in a fresh interpreter (bytecode cached)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    samples = []
    for _ in range(IMPORT_REPEATS + 1):  # the first one writes the bytecode cache
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
        )
        if done.returncode != 0:
            return None
        samples.append(float(done.stdout.strip()))
    return median(samples[1:])


def validate_seconds() -> float | None:
    """Median wall seconds of ``python -m regiment validate`` on the example (bytecode cached)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    team = HERE.parent / "examples" / "refund" / "team.toml"
    samples = []
    for _ in range(IMPORT_REPEATS + 1):  # the first one writes the bytecode cache
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "regiment", "validate", str(team)],
            capture_output=True,
            env=env,
            check=False,
        )
        if done.returncode != 0:
            return None
        samples.append(time.perf_counter() - started)
    return median(samples[1:])


def ratio(value: float | None, base: float | None) -> str:
    """``value / base`` as ``2.15x``, or blank when either is missing."""
    if value is None or base is None or base == 0:
        return ""
    return f"{value / base:.2f}x"


def pct(counts: Mapping[str, float]) -> float | None:  # ours as a % of others, or None
    ours, others = counts.get("ours"), counts.get("others")
    return None if ours is None or not others else 100 * ours / others


def verdict(ok: bool, text: str) -> str:
    """A target with whether regiment met it."""
    return f"{text}: {'met' if ok else 'MISSED'}"


class Table:
    """Collects the lines, running the cases of the frameworks asked for."""

    def __init__(self, frameworks: Sequence[str]) -> None:
        self.frameworks = frameworks
        self.lines: list[Line] = []

    def case(self, framework: str, name: str) -> Mapping[str, float]:
        if framework not in self.frameworks:
            return {}
        started = time.perf_counter()
        figures = run_case(f"{framework}.{name}")
        sys.stderr.write(f"  {framework}.{name}: {time.perf_counter() - started:.1f}s\n")
        return figures

    def add(self, *lines: Line) -> None:
        self.lines.extend(line for line in lines if line.value is not None)

    def roundtrip(self) -> None:
        ours = self.case("regiment", "roundtrip")
        autogen = self.case("autogen", "roundtrip")
        base = ours.get("regiment_us")
        row, measure = "1", "message round trip (µs)"
        self.add(
            Line(row, measure, "regiment actor ask", base, "µs", "1.00x"),
            Line(row, measure, "raw anyio stream pair", ours.get("anyio_us"), "µs"),
            Line(row, measure, "raw asyncio.Queue pair", ours.get("queue_us"), "µs"),
            Line(row, measure, "AutoGen core send_message", autogen.get("us"), "µs"),
        )
        self._ratios(base, start=-3)

    def _ratios(self, base: float | None, *, start: int) -> None:
        for index in range(len(self.lines) + start, len(self.lines)):
            line = self.lines[index]
            if not line.ratio:
                self.lines[index] = Line(
                    line.row, line.measure, line.who, line.value, line.unit, ratio(line.value, base)
                )

    def per_step(self) -> None:
        ours = self.case("regiment", "per_step")
        graph = self.case("langgraph", "per_step")
        hops = self.case("regiment", "floor").get("step_us")
        step = ours.get("step_us")
        self.add(
            Line(
                "2",
                "10-step sequential plan, per step (µs)",
                "regiment",
                step,
                "µs",
                "1.00x",
                verdict((step or 1e9) <= 60, "≤ 60 µs"),
            ),
            Line("2", "10-step sequential plan, per step (µs)", "LangGraph StateGraph",
                 graph.get("step_us"), "µs", ratio(graph.get("step_us"), step)),
            Line("2", "10-step sequential plan, per step (µs)",
                 "floor: planner -> runner -> planner, bare mailboxes (bench/floor.py)", hops, "µs",
                 ratio(hops, step)),
            Line("2", "10-step sequential plan, per run (µs)", "regiment", ours.get("run_us"),
                 "µs", "1.00x"),
            Line("2", "10-step sequential plan, per run (µs)", "LangGraph StateGraph",
                 graph.get("run_us"), "µs", ratio(graph.get("run_us"), ours.get("run_us"))),
        )  # fmt: skip

    def one_tool(self) -> None:
        ours = self.case("regiment", "one_tool").get("run_us")
        measure = "one-tool worker run, model→tool→model (µs)"
        self.add(
            Line("3", measure, "regiment worker actor", ours, "µs", "1.00x",
                 verdict((ours or 1e9) <= 60, "≤ 60 µs")),
        )  # fmt: skip
        for peer, who in (
            ("pydantic_ai", "Pydantic AI Agent + FunctionModel"),
            ("openai_agents", "OpenAI Agents Runner + fake model"),
        ):
            value = self.case(peer, "one_tool").get("run_us")
            self.add(Line("3", measure, who, value, "µs", ratio(value, ours)))

    def overlap(self) -> None:
        for steps in (10, 100):
            ours = self.case("regiment", f"overlap.{steps}").get("wall_ms")
            measure = f"{steps} independent 50 ms steps, wall (ms; ideal 50)"
            target = verdict((ours or 1e9) <= 53, "≤ 53 ms") if steps == 100 else ""
            self.add(Line("4", measure, "regiment", ours, "ms", "1.00x", target))
            for peer, who in (("langgraph", "LangGraph Send fan-out"),
                              ("autogen", "AutoGen concurrent sends")):  # fmt: skip
                value = self.case(peer, f"overlap.{steps}").get("wall_ms")
                self.add(Line("4", measure, who, value, "ms", ratio(value, ours)))

    def scale(self) -> Mapping[str, float]:
        ours = self.case("regiment", "scale")
        rss, runs = ours.get("peak_rss_mb"), ours.get("runs_per_s")
        lag = ours.get("lag_p99_ours_ms")  # the bench's own start_soon turn left out
        self.add(
            Line("5", "1,000 concurrent 5-step runs: throughput", "regiment",
                 runs, "runs/s", "", verdict((runs or 0) >= 2500, "≥ 2,500 runs/s")),
            Line("5", "1,000 concurrent 5-step runs: peak RSS", "regiment", rss, "MiB", "",
                 verdict((rss or 1e9) <= 60, "≤ 60 MiB")),
            Line("5", "1,000 concurrent 5-step runs: loop lag p99 (10 ms ticker), the bench's "
                 "own start_soon turn left out", "regiment", lag, "ms", "",
                 verdict((lag or 1e9) <= 5, "≤ 5 ms")),
            Line("5", "the same ticks with that turn in (the figure before perf31)", "regiment",
                 ours.get("lag_p99_ms"), "ms"),
            Line("5", "that turn: the bench's own 1,000 start_soon calls",
                 "anyio", ours.get("spawn_turn_ms"), "ms"),
            Line("5", "loop lag p99, the 1,000 callers arriving 100 per loop turn", "regiment",
                 ours.get("arriving_lag_p99_ms"), "ms"),
            Line("5", "full garbage collections during those bursts (count)", "CPython",
                 ours.get("full_collections"), ""),
            Line("5", "the longest of them: the loop held as long (ms)", "CPython",
                 ours.get("full_collection_max_ms"), "ms"),
            Line("5", "loop lag p99, arriving 100 per turn, heap frozen as `regiment serve` does",
                 "regiment", ours.get("frozen_arriving_lag_p99_ms"), "ms"),
            Line("5", "the longest full collection then (ms)", "CPython",
                 ours.get("frozen_full_collection_max_ms"), "ms"),
            Line("5", "throughput, arriving 100 per turn, heap frozen", "regiment",
                 ours.get("frozen_arriving_runs_per_s"), "runs/s"),
        )  # fmt: skip
        return ours

    def tracing(self, scale: Mapping[str, float]) -> None:
        both = self.case("regiment", "per_step.tracing")
        traced, off = both.get("on_step_us"), both.get("off_step_us")
        span, spans = both.get("sdk_span_us"), both.get("spans_per_step")
        floor = None if span is None or spans is None else span * spans
        own = None if None in (traced, off, floor) else traced - off - floor  # type: ignore[operator]
        share = None if own is None or not floor else 100 * own / floor
        in_steps = both.get("sdk_spans_in_steps_us")
        own_in_steps = None if None in (traced, off, in_steps) else traced - off - in_steps  # type: ignore[operator]
        share_in_steps = (
            None if own_in_steps is None or not in_steps else 100 * own_in_steps / in_steps
        )
        self.add(
            Line("6", "row 2 per step, tracing off (µs)", "regiment", off, "µs", "1.00x"),
            Line("6", "row 2 per step, tracing on (µs)", "regiment", traced, "µs",
                 ratio(traced, off)),
            Line("6", "floor: spans per step x one SDK span (same attribute count), same run (µs)",
                 f"OpenTelemetry SDK ({spans or 0:.2f} x {span or 0:.1f} µs)", floor, "µs"),
            Line("6", "tracing: regiment's own cost above the SDK floor (% of the floor)",
                 "regiment", share, "%", "",
                 verdict(share is not None and share <= 25, "≤ 25%")),
            Line("6", "floor 2: as many bare SDK spans made inside row 2's steps, per step (µs)",
                 "OpenTelemetry SDK", in_steps, "µs"),
            Line("6", "tracing: regiment's own cost above floor 2 (% of floor 2)",
                 "regiment", share_in_steps, "%"),
            Line("6", "bytecodes a traced step adds: regiment's, % of the SDK's and the rest's "
                 "(exact, tracing_share.py)", "regiment", pct(self.case("regiment",
                 "tracing_share")), "%"),
        )  # fmt: skip
        traced_scale = self.case("regiment", "scale.traced")
        runs, runs_off = traced_scale.get("runs_per_s"), scale.get("runs_per_s")
        slower = ratio(runs_off, runs)
        self.add(
            Line("6", "tracing on, row 5 throughput", "regiment", runs, "runs/s", slower),
            Line("6", "tracing on, row 5 peak RSS", "regiment", traced_scale.get("peak_rss_mb"),
                 "MiB"),
        )  # fmt: skip

    def imports(self) -> None:
        base: float | None = None
        for framework in self.frameworks:
            seconds = import_seconds(f"import {IMPORTS[framework]}")
            ms = None if seconds is None else seconds * 1e3
            target = ""
            if framework == "regiment":
                target = verdict((ms or 1e9) <= 120, "≤ 120 ms")
                self.add(Line("7", "import time (ms)", "regiment (`import regiment`)", ms, "ms",
                              "", target))  # fmt: skip
                # `import regiment` loads each room on first use; a program that runs a
                # team loads them at its first `from regiment import Team`, and the peers'
                # imports load their main classes, so the ratios are against that.
                team = import_seconds(TEAM_IMPORT)
                base = None if team is None else team * 1e3
                self.add(Line("7", "import time (ms)", f"regiment (`{TEAM_IMPORT}`)", base, "ms",
                              "1.00x"))  # fmt: skip
                continue
            self.add(
                Line("7", "import time (ms)", f"{LABELS[framework]} (`import {IMPORTS[framework]}`)",
                     ms, "ms", ratio(ms, base), target)
            )  # fmt: skip

    def validate(self) -> None:
        if "regiment" not in self.frameworks:
            return
        seconds = validate_seconds()
        ms = None if seconds is None else seconds * 1e3
        self.add(
            Line("8", "`regiment validate examples/refund/team.toml` (ms)", "regiment", ms,
                 "ms", "", verdict((ms or 1e9) <= 500, "≤ 500 ms")),
        )  # fmt: skip

    def service(self) -> None:
        ours = self.case("regiment", "service")
        if not ours:
            return
        row, measure = "9", "served 1-step run, one keep-alive connection (µs per request)"
        self.add(
            Line(row, measure, "regiment serve: POST /runs?wait=true", ours.get("service_us"), "µs"),
            Line(row, measure, "floor: a bare Starlette endpoint, same server", ours.get("bare_us"),
                 "µs"),
            Line(row, measure, "floor: an endpoint that streams the same run",
                 ours.get("stream_in_endpoint_us"), "µs"),
            Line(row, measure, "the service's own part (first line less the one above)",
                 ours.get("adapter_us"), "µs"),
        )  # fmt: skip

    def instructions(self) -> None:
        if "regiment" not in self.frameworks or shutil.which("valgrind") is None:
            return  # callgrind counts need valgrind; the wall-clock rows stand without it
        import instructions

        started = time.perf_counter()
        thousands = instructions.per_step("regiment")
        sys.stderr.write(f"  regiment instructions: {time.perf_counter() - started:.1f}s\n")
        self.add(
            Line("2", "10-step plan, CPU instructions per step (callgrind, exact)", "regiment",
                 thousands, "k", "", verdict((thousands or 1e9) <= 200, "≤ 200k")),
        )  # fmt: skip

    def render(self) -> str:
        out = [
            "| row | measure | who | figure | vs regiment | target |",
            "|---|---|---|---:|---:|---|",
        ]
        for line in self.lines:
            figure = f"{line.value:,.1f} {line.unit}" if line.value is not None else "n/a"
            out.append(
                f"| {line.row} | {line.measure} | {line.who} | {figure} | {line.ratio} | {line.target} |"
            )
        return "\n".join(out)


def machine() -> str:
    """nproc, the CPU model and the Python version, as one line."""
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for text in cpuinfo.read_text().splitlines():
            if text.startswith("model name"):
                model = text.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}"


def main(argv: Sequence[str]) -> None:
    """Run the suite and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default=",".join(FRAMEWORKS), help="comma list of frameworks")
    frameworks = [f for f in parser.parse_args(argv).only.split(",") if f]
    unknown = sorted(set(frameworks) - set(FRAMEWORKS))
    if unknown:
        raise SystemExit(f"unknown frameworks {unknown}; choose from {', '.join(FRAMEWORKS)}")
    started = time.perf_counter()
    table = Table(frameworks)
    table.roundtrip()
    table.per_step()
    table.one_tool()
    table.overlap()
    scale = table.scale()
    table.tracing(scale)
    table.imports()
    table.validate()
    table.service()
    table.instructions()
    print(f"regiment benchmarks, {date.today().isoformat()}; {machine()}")
    print(f"medians over repeats; ratio = figure / regiment's figure ({', '.join(frameworks)})\n")
    print(table.render())
    print(f"\n(suite took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Rows 7 and 8 side by side: this tree against an older copy, alternated, in one sitting.

Wall clock on a shared machine drifts over minutes, so each repeat times the
older tree and this one back to back (bytecode cached: one unrecorded warm-up
each) and the medians are compared. ``--instructions`` adds callgrind counts
of each command above a bare interpreter, which repeat exactly.

    git archive <commit> --prefix=regiment/ | tar -x -C /tmp/base
    .venv/bin/python bench/startup.py --base /tmp/base               # wall, median of 15
    .venv/bin/python bench/startup.py --base /tmp/base --instructions

The wall figures end with a team's start and stop in a running program (a
one-worker team, started and stopped 60 times in one process, median of the
last 50): what a service that starts a team per request pays.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

__all__ = ("main",)

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
TIMED = "import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
IMPORTS = {
    "import regiment": "import regiment",
    "from regiment import Team, Worker, ScriptedModel": (
        "from regiment import Team, Worker, ScriptedModel"
    ),
    # What a program pays before its first answer: the import, then one scripted run
    # (the engine a team needs loads when it first starts).
    "... and a first scripted run": (
        "from regiment import Planner, ScriptedModel, Team, Worker, text_response; "
        "import anyio; "
        'm = ScriptedModel(lambda r: \'{"steps": [{"description": "hi"}]}\' '
        "if r.role == 'planner' else text_response('hi')); "
        "anyio.run(Team(name='t', planner=Planner(model=m), "
        "workers=[Worker(name='w', description='d', model=m)]).run, 'go')"
    ),
}
VALIDATE = ("-m", "regiment", "validate", "examples/refund/team.toml")
# The floors beside them, timed in the same rounds: the interpreter alone, and our chosen
# dependencies imported (what `regiment validate` cannot get below: it also builds the
# tools' pydantic models, which cost more than importing pydantic).
FLOORS = {
    "python -c pass": ("-c", "pass"),
    "python -c 'import anyio, pydantic, msgspec'": ("-c", "import anyio, pydantic, msgspec"),
}


def _env(base: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if base is not None:  # a plain directory on the path wins over the editable install's finder
        env["PYTHONPATH"] = str(base)
    return env


def _cwd(base: Path | None) -> Path:
    return TREE if base is None else base / "regiment"


def _in_process(code: str, base: Path | None) -> float:
    done = subprocess.run(
        [sys.executable, "-c", TIMED.format(code=code)],
        capture_output=True, text=True, env=_env(base), cwd=_cwd(base), check=True,
    )  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def _whole_process(args: tuple[str, ...], base: Path | None) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, *args], capture_output=True, env=_env(base), cwd=_cwd(base), check=True
    )
    return time.perf_counter() - started


def _instructions(args: tuple[str, ...], base: Path | None) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, *args],
            capture_output=True, env=_env(base), cwd=_cwd(base), check=True,
        )  # fmt: skip
        totals = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        assert totals is not None, "callgrind wrote no totals"
        return int(totals.group(1))


TEAM_STARTS, TEAM_WARM_UP = 60, 10


def _team_start_child() -> None:
    """In the child: the median seconds of a team's start and stop, printed."""
    import anyio

    from regiment import Planner, ScriptedModel, Team, Worker, text_response

    model = ScriptedModel(lambda request: text_response("hi"))
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="d", model=model)],
    )

    async def starts() -> list[float]:
        times = []
        for _ in range(TEAM_STARTS):
            started = time.perf_counter()
            async with team.start():
                pass
            times.append(time.perf_counter() - started)
        return times[TEAM_WARM_UP:]

    print(median(anyio.run(starts)))


def _team_start(base: Path | None) -> float:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--team-start-child"],
        capture_output=True, text=True, env=_env(base), cwd=_cwd(base), check=True,
    )  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def _wall(base: Path, repeats: int) -> None:
    sides: dict[str, Path | None] = {"base": base, "this tree": None}
    for code in IMPORTS.values():
        for side in sides.values():
            _in_process(code, side)  # writes the bytecode cache
    _whole_process(VALIDATE, base)
    _whole_process(VALIDATE, None)
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeats):
        for name, args in FLOORS.items():
            samples.setdefault((name, "floor"), []).append(_whole_process(args, None))
        deps = "python -c 'import anyio, pydantic, msgspec'"
        samples.setdefault((deps + ", in process", "floor"), []).append(
            _in_process(FLOORS[deps][1], None)
        )
        for name, code in IMPORTS.items():
            for label, where in sides.items():
                samples.setdefault((name, label), []).append(_in_process(code, where))
        for label, where in sides.items():
            samples.setdefault(("regiment validate (whole process)", label), []).append(
                _whole_process(VALIDATE, where)
            )
        for label, where in sides.items():
            samples.setdefault(("a team's start and stop, in process", label), []).append(
                _team_start(where)
            )
    for name in [*FLOORS, "python -c 'import anyio, pydantic, msgspec', in process"]:
        print(f"floor, {name}: {median(samples[name, 'floor']) * 1e3:.2f} ms "
              f"(fastest {min(samples[name, 'floor']) * 1e3:.2f} ms; median of {repeats})")  # fmt: skip
    for name in [
        *IMPORTS,
        "regiment validate (whole process)",
        "a team's start and stop, in process",
    ]:
        old, new = median(samples[name, "base"]), median(samples[name, "this tree"])
        print(
            f"{name}: {old * 1e3:.2f} ms -> {new * 1e3:.2f} ms ({new / old:.2f}x); "
            f"fastest {min(samples[name, 'base']) * 1e3:.2f} -> "
            f"{min(samples[name, 'this tree']) * 1e3:.2f} ms; median of {repeats}"
        )


def _counted(base: Path) -> None:
    bare = _instructions(("-c", "pass"), None)
    floor = _instructions(FLOORS["python -c 'import anyio, pydantic, msgspec'"], None)
    print(f"floor, import anyio, pydantic, msgspec: {(floor - bare) / 1e6:,.0f}M instructions "
          "above a bare interpreter")  # fmt: skip
    commands: dict[str, tuple[str, ...]] = {name: ("-c", code) for name, code in IMPORTS.items()}
    commands["regiment validate (whole process)"] = VALIDATE
    for name, args in commands.items():
        _instructions(args, base)
        _instructions(args, None)  # bytecode cached on both sides
        old, new = _instructions(args, base) - bare, _instructions(args, None) - bare
        print(f"{name}: {old / 1e6:,.0f}M -> {new / 1e6:,.0f}M instructions above a bare "
              f"interpreter ({new / old:.2f}x)")  # fmt: skip


def main() -> None:
    """Print this tree's import and validate figures beside ``--base``'s."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="a directory holding regiment/")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--instructions", action="store_true", help="callgrind counts (valgrind)")
    if sys.argv[1:] == ["--team-start-child"]:
        _team_start_child()
        return
    options = parser.parse_args()
    if options.instructions:
        if shutil.which("valgrind") is None:
            raise SystemExit("--instructions needs valgrind on the PATH")
        _counted(options.base)
    else:
        _wall(options.base, options.repeats)


if __name__ == "__main__":
    main()

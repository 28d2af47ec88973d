"""Start-up time of the command line: the wall time of ``vocmatch --version`` and of the demo
report (``vocmatch fixtures/demo/gt fixtures/demo/pred``, as a table and as JSON), the median
of 15 interleaved runs each, beside the bare interpreter (``python -c pass``: site and its
``.pth`` files, the floor no command can go under) and the import floor (``python -c "import
numpy, lxml.etree, rich, click"``: the libraries the report cannot do without). Every command
runs with one BLAS and OpenMP thread (``OPENBLAS_NUM_THREADS=1`` and the like), as the
command line sets for itself, so the floor pays the same numpy set-up. Beside wall time
stands processor time (user + system of the child, from ``os.wait4``); the last lines give
the demo report over the import floor in both.

Run from the repository root: ``python bench/startup.py`` (``--runs N`` for another count).
``--profile`` prints instead where the demo report's time goes beyond the import floor: the
phases of the run (wall time, median of the runs), the modules it imports that the floor
does not (``python -X importtime``, the smallest self time of each module over the runs,
summed by package) and the time spent building dataclasses while importing.
``--against DIR`` (repeatable) times another checkout of vocmatch the same way, in the same
rounds: one run of every command in every checkout, then the next round, so that a busy
machine slows all of them alike. Bytecode is cached in a temporary folder and warmed before
timing, as an installed package has its ``.pyc`` files (with ``PYTHONDONTWRITEBYTECODE``
every run would compile the source).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: One thread for every BLAS and OpenMP library, on every side.
ONE_THREAD = {
    name: "1"
    for name in (
        "OPENBLAS_NUM_THREADS",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
    )
}
#: What the demo report cannot do without: the import floor.
FLOOR_CODE = "import numpy, lxml.etree, rich, click"
FLOOR = "import floor"
DEMO = "demo report"
DEMO_ARGS = ["fixtures/demo/gt", "fixtures/demo/pred"]

COMMANDS: dict[str, list[str] | None] = {
    "python -c pass": None,  # the interpreter alone (site, .pth files): the floor
    FLOOR: ["-c", FLOOR_CODE],
    "vocmatch --version": ["--version"],
    DEMO: DEMO_ARGS,
    "demo report, json": ["fixtures/demo/gt", "fixtures/demo/pred", "--format", "json"],
}


def run_times(tree: Path, args: list[str] | None, cache: str) -> tuple[float, float]:
    """Wall and processor seconds (user + system) for one run of ``python -m vocmatch ARGS``
    from the checkout ``tree`` (of ``python -c pass`` for None)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": cache, **ONE_THREAD}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if args is None:
        command = ["-c", "pass"]
    elif args[0] == "-c":
        command = args
    else:
        command = ["-m", "vocmatch", *args]
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *command],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # wait4 gives this child's own processor time, which a busy machine disturbs less.
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = 0  # reaped above: keep Popen from waiting for it again
    return wall, usage.ru_utime + usage.ru_stime


#: Runs the demo report in this interpreter with a clock at each phase and around every
#: dataclass built; prints the phases and the dataclass time as JSON on stderr.
PHASES = """
import dataclasses, gc, json, os, sys, time
marks = [("start", time.perf_counter())]
built = [0.0]
process_class = dataclasses._process_class
def timed(cls, *args, **kwargs):
    began = time.perf_counter()
    try:
        return process_class(cls, *args, **kwargs)
    finally:
        built[0] += time.perf_counter() - began
dataclasses._process_class = timed
gc.set_threshold(100_000, 50, 100)
import numpy, lxml.etree, rich, click
marks.append(("import floor (numpy, lxml, rich, click)", time.perf_counter()))
from vocmatch.cli.app import run
marks.append(("import vocmatch.cli.app", time.perf_counter()))
import vocmatch.cli.eval_cmd as command
import vocmatch.cli.eval_report as report
import vocmatch.run.evaluate as run_evaluate  # the command imports it when the run starts
marks.append(("import the eval command", time.perf_counter()))
def wrap(module, name, before, after):
    function = getattr(module, name)
    def wrapped(*args, **kwargs):
        marks.append((before, time.perf_counter()))
        try:
            return function(*args, **kwargs)
        finally:
            marks.append((after, time.perf_counter()))
    setattr(module, name, wrapped)
wrap(run_evaluate, "evaluate", "parse the options, build the request",
     "read, match, accumulate (imports too)")
wrap(report, "print_report", "build the tables (rich.console, rich.table imports too)",
     "measure and print the tables")
sys.argv = ["vocmatch", "fixtures/demo/gt", "fixtures/demo/pred"]
try:
    run(handle_interrupt=True)
except SystemExit:
    pass
marks.append(("exit", time.perf_counter()))
phases = [(name, end - begin) for (_, begin), (name, end) in zip(marks, marks[1:])]
sys.stderr.write("PHASES " + json.dumps({"phases": phases, "dataclasses": built[0]}) + "\\n")
"""


def importtime(tree: Path, code: list[str], cache: str) -> dict[str, int]:
    """Self time in microseconds of each module a command imports (``-X importtime``)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": cache, **ONE_THREAD}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    process = subprocess.run(
        [sys.executable, "-X", "importtime", *code],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    times = {}
    for line in process.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            self_us, _, name = line.removeprefix("import time:").split("|")
            times[name.strip()] = int(self_us)
    return times


def profile(runs: int) -> None:
    """Print where the demo report's time goes beyond the import floor."""
    demo = ["-m", "vocmatch", "fixtures/demo/gt", "fixtures/demo/pred"]
    floor = ["-c", FLOOR_CODE]
    phases: dict[str, list[float]] = {}
    built: list[float] = []
    demo_modules: dict[str, int] = {}
    floor_modules: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": cache, **ONE_THREAD}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        run_times(ROOT, DEMO_ARGS, cache)  # write the bytecode
        for _ in range(runs):
            for name, self_us in importtime(ROOT, demo, cache).items():
                demo_modules[name] = min(self_us, demo_modules.get(name, self_us))
            for name, self_us in importtime(ROOT, floor, cache).items():
                floor_modules[name] = min(self_us, floor_modules.get(name, self_us))
            process = subprocess.run(
                [sys.executable, "-c", PHASES], cwd=ROOT, env=env, capture_output=True, text=True
            )
            line = next(x for x in process.stderr.splitlines() if x.startswith("PHASES "))
            measured = json.loads(line.removeprefix("PHASES "))
            for name, seconds in measured["phases"]:
                phases.setdefault(name, []).append(seconds)
            built.append(measured["dataclasses"])
    load = os.getloadavg()[0]
    print(f"demo report, medians of {runs} runs; load average {load:.2f} at the end\n")
    print("| phase | ms |\n|---|---:|")
    for name, seconds in phases.items():
        print(f"| {name} | {1000 * statistics.median(seconds):.1f} |")
    print(f"| of which: building dataclasses | {1000 * statistics.median(built):.1f} |")
    extra = {name: us for name, us in demo_modules.items() if name not in floor_modules}
    by_package: dict[str, int] = {}
    for name, self_us in extra.items():
        package = ".".join(name.split(".")[:2]) if name.startswith("vocmatch.") else name
        package = package if name.startswith("vocmatch.") else name.split(".")[0]
        by_package[package] = by_package.get(package, 0) + self_us
    total = sum(extra.values())
    print(
        f"\nimported beyond the floor: {len(extra)} modules, {total / 1000:.1f} ms "
        "(smallest self time of each over the runs)\n"
    )
    print("| package | modules | ms |\n|---|---:|---:|")
    for package, self_us in sorted(by_package.items(), key=lambda item: -item[1])[:15]:
        count = sum(1 for name in extra if name == package or name.startswith(package + "."))
        print(f"| {package} | {count} | {self_us / 1000:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--profile", action="store_true", help="where the demo's time goes")
    parser.add_argument(
        "--against",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="another checkout to time in the same rounds (repeatable)",
    )
    options = parser.parse_args()
    if options.profile:
        profile(options.runs)
        return
    trees = {"this": ROOT, **{str(path): path.resolve() for path in options.against}}
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as cache:
        for tree in trees.values():
            for args in COMMANDS.values():
                run_times(tree, args, cache)  # warm the file cache and write the bytecode
        for _ in range(options.runs):
            for label, tree in trees.items():
                for name, args in COMMANDS.items():
                    if (args is None or args[0] == "-c") and label != "this":
                        continue  # one interpreter floor and one import floor are enough
                    times.setdefault((label, name), []).append(run_times(tree, args, cache))
    load = os.getloadavg()[0]
    print(f"{options.runs} interleaved runs each; load average {load:.2f} at the end\n")
    print(f"{'':<22} {'wall median':>11} {'wall min':>9} {'cpu median':>11}")
    for (label, name), runs in times.items():
        wall = [w for w, _ in runs]
        cpu = statistics.median(c for _, c in runs)
        where = "" if label == "this" else f"  [{label}]"
        line = f"{statistics.median(wall):>9.3f} s {min(wall):>7.3f} s {cpu:>9.3f} s"
        print(f"{name:<22} {line}{where}")
    floor = times[("this", FLOOR)]
    for label in trees:
        demo = times[(label, DEMO)]
        wall_ratio = statistics.median(w for w, _ in demo) / statistics.median(w for w, _ in floor)
        cpu_ratio = statistics.median(c for _, c in demo) / statistics.median(c for _, c in floor)
        where = "" if label == "this" else f"  [{label}]"
        print(
            f"demo report / import floor: {wall_ratio:.2f}x wall, {cpu_ratio:.2f}x processor{where}"
        )


if __name__ == "__main__":
    main()

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
``--against DIR`` (repeatable) times another checkout of vocmatch the same way, in the same
rounds: one run of every command in every checkout, then the next round, so that a busy
machine slows all of them alike. Bytecode is cached in a temporary folder and warmed before
timing, as an installed package has its ``.pyc`` files (with ``PYTHONDONTWRITEBYTECODE``
every run would compile the source).
"""

from __future__ import annotations

import argparse
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

COMMANDS: dict[str, list[str] | None] = {
    "python -c pass": None,  # the interpreter alone (site, .pth files): the floor
    FLOOR: ["-c", FLOOR_CODE],
    "vocmatch --version": ["--version"],
    DEMO: ["fixtures/demo/gt", "fixtures/demo/pred"],
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--against",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="another checkout to time in the same rounds (repeatable)",
    )
    options = parser.parse_args()
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

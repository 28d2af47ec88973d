"""Start-up time of the command line: the wall time of ``vocmatch --version`` and of the demo
report (``vocmatch fixtures/demo/gt fixtures/demo/pred``), the median of 10 runs each.

Run from the repository root: ``python bench/startup.py`` (``--runs N`` for another count).
Bytecode is cached in a temporary folder and warmed before timing, as an installed package
has its ``.pyc`` files (with ``PYTHONDONTWRITEBYTECODE`` every run would compile the source).
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

COMMANDS = {
    "python -c pass": None,  # the interpreter alone (site, .pth files): the floor
    "vocmatch --version": ["--version"],
    "demo report": ["fixtures/demo/gt", "fixtures/demo/pred"],
    "demo report, json": ["fixtures/demo/gt", "fixtures/demo/pred", "--format", "json"],
}


def wall_time(args: list[str] | None, cache: str) -> float:
    """Seconds for one run of ``python -m vocmatch ARGS`` from the repository root (of
    ``python -c pass`` for None)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = ["-c", "pass"] if args is None else ["-m", "vocmatch", *args]
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as cache:
        for args in COMMANDS.values():
            wall_time(args, cache)  # warm the file cache and write the bytecode
        for name, args in COMMANDS.items():
            times = [wall_time(args, cache) for _ in range(runs)]
            median = statistics.median(times)
            print(f"{name:<22} median {median:.3f} s  (min {min(times):.3f} s)")


if __name__ == "__main__":
    main()

"""Time ``vocmatch eval --dask local:N`` against one process reading with ``--jobs N``.

Each run is the whole command, as a user starts it (for ``--dask local:N`` that includes
starting and stopping the cluster's N worker processes), on the bundled demo set and on a
generated set (``bench/generate.py``); the JSON reports of both runs must be equal byte for
byte, or the script stops.

Usage::

    python bench/dask_bench.py [--images 5000] [--workers 2] [--repeat 3] [--work DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(args: list[str]) -> tuple[float, bytes]:
    """Seconds of wall time of one run, and its stdout."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "vocmatch", *args], capture_output=True, check=False, cwd=ROOT
    )
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 3):
        sys.exit(f"vocmatch {' '.join(args)} exited {done.returncode}: {done.stderr.decode()}")
    return elapsed, done.stdout


def compare(name: str, gt: Path, pred: Path, workers: int, repeat: int) -> None:
    base = ["eval", str(gt), str(pred), "--format", "json", "--quiet"]
    plain = [timed([*base, "--jobs", str(workers)]) for _ in range(repeat)]
    dask = [timed([*base, "--dask", f"local:{workers}"]) for _ in range(repeat)]
    if any(out != plain[0][1] for _, out in [*plain, *dask]):
        sys.exit(f"{name}: the --dask report differs from the single process's")
    print(
        f"{name:<22} --jobs {workers}: {min(t for t, _ in plain):6.2f} s   "
        f"--dask local:{workers}: {min(t for t, _ in dask):6.2f} s   (best of {repeat}; "
        "reports equal)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--pred-per-image", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None, help="Keep the generated set here.")
    options = parser.parse_args()
    demo = ROOT / "fixtures" / "demo"
    compare("demo (6 images)", demo / "gt", demo / "pred", options.workers, options.repeat)
    with tempfile.TemporaryDirectory() as scratch:
        work = options.work or Path(scratch) / "set"
        if not (work / "gt").is_dir():
            subprocess.run(
                [sys.executable, str(ROOT / "bench" / "generate.py"), str(work), "--images",
                 str(options.images), "--pred-per-image", str(options.pred_per_image),
                 "--seed", "0"],
                check=True, capture_output=True,
            )  # fmt: skip
        name = f"generated ({options.images:,} images)"
        compare(name, work / "gt", work / "pred", options.workers, options.repeat)


if __name__ == "__main__":
    main()

"""Time the JSON report alone: ``render_chunks(report, "json")`` of one evaluation (the bytes
``vocmatch eval --format json`` writes), with the compiled writer and without it.

Usage::

    python bench/json_render.py bench/data/objects365-80000 --protocol coco --runs 5
    python bench/json_render.py /tmp/cache-bench/80000 --runs 5

Reads and evaluates the set once (``DIR/gt`` and ``DIR/pred``, as ``vocmatch eval`` does),
then renders its JSON report ``--runs`` times with the compiled writer and as many times
without it (``VOCMATCH_PURE_ENGINE=1``), in turns; checks that both give the same text and
prints the least and the median wall and processor time of each, and the text's size.
Processor time stays meaningful on a loaded machine, where wall time does not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

from vocmatch.compiled import PURE_ENGINE_VARIABLE
from vocmatch.evidence.run_report import EvalReport
from vocmatch.render.outputs import render_chunks
from vocmatch.run.evaluate import evaluate


def _timed(report: EvalReport, pure: bool) -> tuple[float, float, bytes]:
    """One rendering's wall and processor time, and its bytes (joined after the timing)."""
    if pure:
        os.environ[PURE_ENGINE_VARIABLE] = "1"
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        chunks = render_chunks(report, "json")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return wall, cpu, b"".join(chunks)
    finally:
        os.environ.pop(PURE_ENGINE_VARIABLE, None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a set with gt/ and pred/ folders")
    parser.add_argument("--protocol", default="default")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2, help="reading workers")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    report = evaluate(
        args.folder / "gt", args.folder / "pred", protocol=args.protocol, jobs=args.jobs
    )
    print(f"read and evaluated {len(report.evaluation.images)} images in "
          f"{time.perf_counter() - start:.2f} s")  # fmt: skip
    times: dict[str, list[tuple[float, float]]] = {"compiled": [], "python": []}
    texts: set[bytes] = set()
    _timed(report, pure=False)  # imports and first allocations out of the figures
    for _ in range(args.runs):
        for name in times:
            wall, cpu, text = _timed(report, pure=name == "python")
            times[name].append((wall, cpu))
            texts.add(text)
    if len(texts) != 1:
        sys.exit("the compiled and the Python writer gave different text")
    print(f"JSON text: {len(texts.pop()) / 1e6:.1f} MB, the same with and without the kernel")
    print("writer      wall min  wall median  cpu min  cpu median")
    for name, pairs in times.items():
        walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
        print(f"{name:<10} {min(walls):9.3f} {statistics.median(walls):12.3f} "
              f"{min(cpus):8.3f} {statistics.median(cpus):11.3f}")  # fmt: skip


if __name__ == "__main__":
    main()

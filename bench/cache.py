"""Time ``vocmatch eval --cache DIR``: a cold run, a warm run with nothing changed, and a
run after a few files were edited, each against a run without a cache, and check that every
run prints the same bytes.

Usage::

    python bench/cache.py /tmp/cache-bench --images 80000 --edits 10 --runs 3

Generates the set (``bench/generate.py``, 20 predictions an image) under the folder unless
it is there, then for each of ``--runs`` rounds: a run without a cache, a cold run with an
empty cache folder, a warm run, and a run after ``--edits`` prediction files each had one
score digit changed (their size kept). Prints the median wall time of each, in seconds,
and the cache's size. Every run is ``python -m vocmatch eval GT PRED --format json`` in a
new process, as a user runs it.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _generate(folder: Path, images: int) -> None:
    spec = importlib.util.spec_from_file_location("bench_generate", HERE / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.generate(folder, images, pred_per_image=20)


def _run(gt: Path, pred: Path, *extra: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "vocmatch", "eval", str(gt), str(pred), "--format", "json", *extra],
        capture_output=True,
        check=False,
    )
    took = time.perf_counter() - start
    if done.returncode not in (0, 3):
        raise SystemExit(done.stderr.decode())
    return took, done.stdout


def _edit(path: Path) -> None:
    """One score digit changed, the size kept."""
    text = path.read_text()
    start = text.index("<score>") + len("<score>") + 2
    digit = "1" if text[start] != "1" else "2"
    path.write_text(text[:start] + digit + text[start + 1 :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--images", type=int, default=80_000)
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    data = args.folder / str(args.images)
    if not (data / "gt").is_dir():
        _generate(data, args.images)
    gt, pred = data / "gt", data / "pred"
    cache = args.folder / "cache"
    files = sorted(pred.glob("*.xml"))
    times: dict[str, list[float]] = {"no cache": [], "cold": [], "warm": [], "edited": []}
    for round_ in range(args.runs):
        shutil.rmtree(cache, ignore_errors=True)
        took, expected = _run(gt, pred)
        times["no cache"].append(took)
        for name in ("cold", "warm"):
            took, out = _run(gt, pred, "--cache", str(cache))
            assert out == expected, f"{name}: not the bytes of a run without a cache"
            times[name].append(took)
        step = max(1, len(files) // args.edits)
        for path in files[round_::step][: args.edits]:
            _edit(path)
        _, expected = _run(gt, pred)
        took, out = _run(gt, pred, "--cache", str(cache))
        assert out == expected, "edited: not the bytes of a run without a cache"
        times["edited"].append(took)
    size = sum(p.stat().st_size for p in cache.iterdir())
    print(f"{args.images:,} images, {args.edits} edited files, medians of {args.runs} runs")
    for name, found in times.items():
        each = ", ".join(f"{t:.2f}" for t in found)
        print(f"  {name:9} {statistics.median(found):6.2f} s  ({each})")
    cold = statistics.median(times["no cache"])
    print(f"  edited / no cache: {statistics.median(times['edited']) / cold:.3f}")
    print(f"  cache: {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()

"""Time ``vocmatch eval --cache DIR``: a cold run, a warm run with nothing changed, and a
run after a few files were edited, each against a run without a cache, and check that every
run prints the same bytes.

Usage::

    python bench/cache.py /tmp/cache-bench --images 80000 --edits 10 --runs 3

Generates the set (``bench/generate.py``, 20 predictions an image) under the folder unless
it is there, then for each of ``--runs`` rounds: a run without a cache, a cold run with an
empty cache folder, a warm run, and a run after ``--edits`` prediction files each had one
score digit changed (their size kept). Prints the median wall and processor time (user +
system, of the run and its worker processes) of each, in seconds, and the cache's size.
Every run is ``python -m vocmatch eval GT PRED --format json`` in a new process, as a user
runs it.
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def _bench(name: str) -> ModuleType:
    """Another script of bench/, loaded as a module."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(gt: Path, pred: Path, *extra: str) -> tuple[tuple[float, float], bytes]:
    start, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(
        [sys.executable, "-m", "vocmatch", "eval", str(gt), str(pred), "--format", "json", *extra],
        capture_output=True,
        check=False,
    )
    took = time.perf_counter() - start, _cpu() - cpu
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
        _bench("generate").generate(data, args.images, pred_per_image=20)
    # As bench/run.py does: under PYTHONDONTWRITEBYTECODE a checkout's modules would be
    # compiled again by every run (an installed package never does).
    _bench("run").byte_compile_vocmatch()
    gt, pred = data / "gt", data / "pred"
    cache = args.folder / "cache"
    files = sorted(pred.glob("*.xml"))
    times: dict[str, list[tuple[float, float]]] = {
        "no cache": [], "cold": [], "warm": [], "edited": []
    }  # fmt: skip
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
    print(f"  {'':9} {'wall':>8} {'CPU':>8}")
    for name, found in times.items():
        wall = statistics.median(t for t, _ in found)
        cpu = statistics.median(c for _, c in found)
        each = ", ".join(f"{t:.2f}/{c:.2f}" for t, c in found)
        print(f"  {name:9} {wall:6.2f} s {cpu:6.2f} s  ({each})")
    for at in (0, 1):
        cold = statistics.median(t[at] for t in times["no cache"])
        edited = statistics.median(t[at] for t in times["edited"])
        print(f"  edited / no cache ({('wall', 'CPU')[at]}): {edited / cold:.3f}")
    print(f"  cache: {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()

"""Time vocmatch's bootstrap intervals against re-evaluating each resample.

    python bench/bootstrap_bench.py                          # 5,000 images, 1,000 resamples
    python bench/bootstrap_bench.py --images 500 --resamples 200 --protocols coco
    python bench/bootstrap_bench.py --jobs 1

A resample draws the images with replacement. The direct way to evaluate one is to build
the dataset holding each image as often as it was drawn and evaluate it; vocmatch instead
recomputes every metric from weighted sums over the one evaluation's arrays. This script
reads the medium set once, evaluates it, then for each protocol:

1. materialises a few resamples as copied datasets, evaluates each with vocmatch's own
   (vectorised) evaluator, and checks that the weighted metrics equal them (mAP, precision,
   recall, F1 and every class's AP to 1e-12) before any time is printed;
2. times the bootstrap (resampler set-up and every resample) over several runs;
3. prints the median and fastest time and the time one resample takes each way.

The dataset is generated under ``bench/data/<images>`` when missing (``bench/generate.py``).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import generate  # noqa: E402

from vocmatch.core.protocol import protocol  # noqa: E402
from vocmatch.evaluation.engine import evaluate_columns  # noqa: E402
from vocmatch.evaluation.matched import evaluate_matched  # noqa: E402
from vocmatch.evidence.bootstrap import bootstrap, image_weights, resampler  # noqa: E402
from vocmatch.readers.scan import ColumnSet, read_column_pair  # noqa: E402


def copied(columns: ColumnSet, weights: np.ndarray, keys: tuple[str, ...]) -> ColumnSet:
    """The column set holding image ``keys[i]`` ``weights[i]`` times, copies in image order."""
    index = {key: i for i, key in enumerate(columns.keys)}
    starts = np.searchsorted(columns.image, np.arange(len(columns.keys) + 1))
    rows: list[np.ndarray] = []
    new_keys: list[str] = []
    paths: list[str] = []
    sizes = []
    filenames = []
    images: list[np.ndarray] = []
    for i, key in enumerate(keys):
        j = index.get(key)
        if j is None:
            continue
        for c in range(int(weights[i])):
            new_keys.append(f"{i:06d}-{c:03d}")
            paths.append(f"{columns.paths[j]}#{c}")
            sizes.append(columns.sizes[j])
            filenames.append(columns.filenames[j])
            span = np.arange(starts[j], starts[j + 1])
            rows.append(span)
            images.append(np.full(span.size, len(new_keys) - 1, dtype=np.int32))
    take = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    return replace(
        columns,
        keys=tuple(new_keys),
        paths=tuple(paths),
        sizes=tuple(sizes),
        filenames=tuple(filenames),
        image=np.concatenate(images) if images else np.zeros(0, dtype=np.int32),
        labels=columns.labels[take],
        boxes=columns.boxes[take],
        difficult=columns.difficult[take],
        truncated=columns.truncated[take],
        occluded=columns.occluded[take],
        pose=columns.pose[take],
        scores=columns.scores[take],
        skipped=(),
        shapes=(),
    )


def check(gt: ColumnSet, pred: ColumnSet, name: str, draws: int) -> float:
    """Weighted metrics against copied datasets; returns seconds per copied evaluation."""
    conventions = protocol(name)
    done = evaluate_matched(gt, pred, conventions, keep_matches=False)
    evaluation = done.evaluation
    sampler = resampler(evaluation, done.records, conventions)
    seconds = []
    for weights in next(image_weights(len(sampler.images), draws, seed=123)):
        got = sampler.metrics(weights[None, :])
        start = time.perf_counter()
        copy_gt = copied(gt, weights, sampler.images)
        copy_pred = copied(pred, weights, sampler.images)
        expected = evaluate_columns(copy_gt, copy_pred, conventions, keep_matches=False)
        seconds.append(time.perf_counter() - start)
        pairs = [
            (float(got.map[0]), expected.summary.map),
            (float(got.precision[0]), expected.summary.precision),
            (float(got.recall[0]), expected.summary.recall),
            (float(got.f1[0]), expected.summary.f1),
        ]
        by_name = {c.name: c for c in expected.classes}
        for c, class_name in enumerate(sampler.class_names):
            found = by_name.get(class_name)
            pairs.append((float(got.class_ap[0, c]), None if found is None else found.ap))
        for weighted, direct in pairs:
            same = math.isnan(weighted) if direct is None else abs(weighted - direct) <= 1e-12
            if not same:
                raise SystemExit(f"{name}: weighted {weighted!r} != copied dataset's {direct!r}")
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--protocols", default="default,voc07,coco")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--checks", type=int, default=2, help="copied datasets to check")
    args = parser.parse_args()

    data = HERE / "data" / str(args.images)
    if not (data / "gt").is_dir():
        generate(data, images=args.images)
    gt, pred = read_column_pair(data / "gt", data / "pred", args.jobs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{len(gt.keys):,} images, {gt.boxes.shape[0]:,} objects, {pred.boxes.shape[0]:,} "
        f"predictions; {args.resamples:,} resamples, {args.jobs} thread(s), "
        f"{args.runs} runs; load average {load:.2f}"
    )
    rows = []
    for name in args.protocols.split(","):
        per_copy = check(gt, pred, name, args.checks)
        done = evaluate_matched(gt, pred, protocol(name), keep_matches=False)
        evaluation = done.evaluation
        times = []
        result = None
        for _ in range(args.runs):
            start = time.perf_counter()
            sampler = resampler(evaluation, done.records, protocol(name))
            result = bootstrap(evaluation, sampler, args.resamples, seed=0, jobs=args.jobs)
            times.append(time.perf_counter() - start)
        assert result is not None
        median = statistics.median(times)
        rows.append(
            (
                name,
                median,
                min(times),
                median / args.resamples * 1000,
                per_copy * 1000,
                per_copy * args.resamples,
                f"{result.map.value:.4f} [{result.map.low:.4f}, {result.map.high:.4f}]",
            )
        )
    print(f"weighted metrics equal {args.checks} copied datasets' to 1e-12 under every protocol")
    print()
    header = (
        f"{'protocol':<9}{'median s':>10}{'min s':>8}{'ms/resample':>13}"
        f"{'copied ms':>11}{'copied x N s':>14}  mAP [95 % interval]"
    )
    print(header)
    for name, median, fastest, each, copy_ms, copy_total, interval in rows:
        print(
            f"{name:<9}{median:>10.2f}{fastest:>8.2f}{each:>13.2f}{copy_ms:>11.0f}"
            f"{copy_total:>14.0f}  {interval}"
        )
    print()
    print(
        "copied: building one resample as a copied dataset and evaluating it with vocmatch's "
        "vectorised evaluator (reading excluded); x N: for every resample"
    )


if __name__ == "__main__":
    main()

"""Time semantic-segmentation evaluation on generated VOC-sized masks.

Writes ``--images`` ground-truth and prediction masks of 500x375 (the common PASCAL VOC image
size) into a temporary directory, then times:

* ``evaluate_masks`` end to end (finding, pairing, PNG decoding, counting), in process and
  with a process pool;
* PNG decoding alone (``read_mask`` on every file);
* the counting alone, on masks already in memory: ``confusion_matrix`` next to the plain
  formulation ``np.bincount(gt[valid] * C + pred[valid])`` with ``valid = gt != 255``, and
  a histogram-of-intersection formulation as mmsegmentation uses, as peers; all three must
  give the same per-class IoU.

Run: ``python bench/seg_bench.py [--images 1000] [--jobs 2] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image

from vocmatch.evaluation.labels_and_masks.seg import (
    VOC_CLASSES,
    VOID,
    class_iou,
    confusion_matrix,
    evaluate_masks,
    read_mask,
)

WIDTH, HEIGHT = 500, 375
N_CLASSES = len(VOC_CLASSES)
Mask = npt.NDArray[np.uint8]


def palette() -> list[int]:
    """The PASCAL VOC colour map, so the files look like real ``SegmentationClass`` masks."""
    colours: list[int] = []
    for index in range(256):
        rgb = [0, 0, 0]
        value = index
        for shift in range(7, -1, -1):
            for channel in range(3):
                rgb[channel] |= ((value >> channel) & 1) << shift
            value >>= 3
        colours.extend(rgb)
    return colours


def random_pair(rng: np.random.Generator) -> tuple[Mask, Mask]:
    """A ground truth of a few ellipses with void outlines, and a shifted, noisy prediction."""
    ys, xs = np.ogrid[:HEIGHT, :WIDTH]
    gt = np.zeros((HEIGHT, WIDTH), dtype=np.uint8)
    pred = np.zeros((HEIGHT, WIDTH), dtype=np.uint8)
    for _ in range(int(rng.integers(1, 5))):
        cls = int(rng.integers(1, N_CLASSES))
        cy, cx = rng.uniform(0, HEIGHT), rng.uniform(0, WIDTH)
        ry, rx = rng.uniform(20, 150), rng.uniform(20, 200)
        d = ((ys - cy) / ry) ** 2 + ((xs - cx) / rx) ** 2
        # VOC outlines objects with a band of void pixels.
        gt[d <= 1.1] = VOID
        gt[d <= 1.0] = cls
        dy, dx = rng.normal(0, 10, size=2)
        d_pred = ((ys - cy - dy) / (ry * rng.uniform(0.8, 1.2))) ** 2 + (
            (xs - cx - dx) / (rx * rng.uniform(0.8, 1.2))
        ) ** 2
        wrong = rng.random() < 0.2
        pred[d_pred <= 1.0] = int(rng.integers(1, N_CLASSES)) if wrong else cls
    # Scattered wrong labels.
    noise = rng.random((HEIGHT, WIDTH)) < 0.01
    pred[noise] = rng.integers(0, N_CLASSES, size=int(noise.sum()), dtype=np.uint8)
    return gt, pred


def write_dataset(root: Path, n_images: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    colours = palette()
    for directory in ("gt", "pred"):
        (root / directory).mkdir(parents=True)
    for i in range(n_images):
        gt, pred = random_pair(rng)
        for directory, values in (("gt", gt), ("pred", pred)):
            image = Image.fromarray(values).convert("P")
            image.putpalette(colours)
            image.save(root / directory / f"{i:06d}.png")


def best_of(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def plain_bincount(pairs: list[tuple[Mask, Mask]]) -> npt.NDArray[np.int64]:
    total = np.zeros((N_CLASSES, N_CLASSES), dtype=np.int64)
    for gt, pred in pairs:
        valid = gt != VOID
        index = gt[valid].astype(np.intp) * N_CLASSES + pred[valid]
        total += np.bincount(index, minlength=N_CLASSES * N_CLASSES).reshape(N_CLASSES, -1)
    return total


def intersection_histograms(pairs: list[tuple[Mask, Mask]]) -> npt.NDArray[np.float64]:
    bins = np.arange(N_CLASSES + 1)
    intersect = np.zeros(N_CLASSES)
    union = np.zeros(N_CLASSES)
    for gt, pred in pairs:
        valid = gt != VOID
        g, p = gt[valid], pred[valid]
        i = np.histogram(p[p == g], bins=bins)[0]
        intersect += i
        union += np.histogram(p, bins=bins)[0] + np.histogram(g, bins=bins)[0] - i
    iou = np.full(N_CLASSES, np.nan)
    np.divide(intersect, union, out=iou, where=union > 0)
    return iou


def ours(pairs: list[tuple[Mask, Mask]]) -> npt.NDArray[np.int64]:
    total = np.zeros((N_CLASSES, N_CLASSES), dtype=np.int64)
    for gt, pred in pairs:
        total += confusion_matrix(gt, pred, N_CLASSES)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="vocmatch-seg-bench-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        write_dataset(root, args.images, args.seed)
        written = time.perf_counter() - start
        gt_dir, pred_dir = root / "gt", root / "pred"
        n = args.images
        print(f"{n} pairs of {WIDTH}x{HEIGHT} P-mode masks, {N_CLASSES} classes")
        print(f"  generated and written in {written:.1f} s (not timed below)")
        print(f"  best of {args.repeat}; {os.cpu_count()} CPUs")
        print()

        rows: list[tuple[str, float]] = []
        serial = evaluate_masks(gt_dir, pred_dir)
        rows.append(
            (
                "evaluate_masks, jobs=1",
                best_of(args.repeat, lambda: evaluate_masks(gt_dir, pred_dir)),
            )
        )
        if args.jobs > 1:
            parallel = evaluate_masks(gt_dir, pred_dir, jobs=args.jobs)
            if parallel != serial:
                raise SystemExit("jobs > 1 changed the result")
            rows.append(
                (
                    f"evaluate_masks, jobs={args.jobs}",
                    best_of(args.repeat, lambda: evaluate_masks(gt_dir, pred_dir, jobs=args.jobs)),
                )
            )
        paths = sorted(gt_dir.glob("*.png")) + sorted(pred_dir.glob("*.png"))
        rows.append(
            ("read_mask on every file", best_of(args.repeat, lambda: [read_mask(p) for p in paths]))
        )

        pairs = [(read_mask(gt_dir / p.name), read_mask(p)) for p in sorted(pred_dir.glob("*.png"))]
        reference = class_iou(ours(pairs))
        if not np.allclose(reference, class_iou(plain_bincount(pairs)), equal_nan=True):
            raise SystemExit("plain bincount disagrees")
        if not np.allclose(reference, intersection_histograms(pairs), equal_nan=True):
            raise SystemExit("intersection histograms disagree")
        if not np.allclose(
            reference, [np.nan if c.iou is None else c.iou for c in serial.classes], equal_nan=True
        ):
            raise SystemExit("evaluate_masks disagrees with confusion_matrix")
        rows.append(
            ("confusion_matrix (vocmatch), in memory", best_of(args.repeat, lambda: ours(pairs)))
        )
        rows.append(
            (
                "plain bincount(gt[valid]*C + pred[valid])",
                best_of(args.repeat, lambda: plain_bincount(pairs)),
            )
        )
        rows.append(
            (
                "intersection histograms (mmseg style)",
                best_of(args.repeat, lambda: intersection_histograms(pairs)),
            )
        )

        width = max(len(name) for name, _ in rows)
        print(f"{'':{width}}  {'total':>9}  {'per pair':>9}")
        for name, seconds in rows:
            print(f"{name:{width}}  {seconds:8.3f}s  {seconds / n * 1e3:7.3f}ms")
        print()
        print(
            f"mIoU {serial.miou:.4f}, pixel accuracy {serial.pixel_accuracy:.4f}, "
            f"skipped {len(serial.skipped)}"
        )


if __name__ == "__main__":
    main()

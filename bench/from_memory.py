"""From arrays in memory to the 12 COCO numbers: vocmatch's Evaluator beside hotcoco's
StreamingEval, vernier's Evaluator and torchmetrics' MeanAveragePrecision, on the same boxes.

    python bench/from_memory.py                          # 5,000 images x 100 predictions
    python bench/from_memory.py --images 500 --runs 5

The data is what a detector hands a training loop: per image, float32 boxes (x1, y1, x2, y2),
float32 scores and integer labels, fed in batches of ``--batch`` images. Each tool is timed
from those arrays to its 12 numbers, converting them to the form it takes inside the timed
region, as a user would:

- vocmatch: ``Evaluator.add_batch`` per batch (torchmetrics' layout), then ``result()``;
- hotcoco: ``StreamingEval.update`` per batch (ground truth as annotation dicts, detections as
  an ``(N, 7)`` array), then ``finalize``, ``accumulate``, ``summarize``;
- vernier: every image's ground truth as COCO JSON bytes and the detections as one ``(N, 7)``
  float64 matrix, then ``Evaluator(parity_mode="strict").evaluate`` (it has no per-batch
  form);
- torchmetrics: ``MeanAveragePrecision(backend="faster_coco_eval").update`` per batch with
  torch tensors, then ``compute()``.

Every tool runs in turn, one run of each per round (``--runs`` rounds), in this process;
medians are printed. Before the times, the 12 numbers of every peer are compared with
vocmatch's. torchmetrics keeps boxes in float32 and computes areas from them, so its numbers
may differ from pycocotools' by about 1e-4: the difference is printed, not required to be 0.
A peer that is not installed is left out with a line saying so. torchmetrics needs torch and
torchvision; this machine's note says how to install them (in a separate environment:
``python -m venv tm && tm/bin/pip install torch==2.14.1 torchvision==0.29.1 torchmetrics
faster-coco-eval hotcoco vernier numpy lxml click rich``, then run this script with
``tm/bin/python`` and ``PYTHONPATH`` at the repository).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from incremental_bench import synthetic

from vocmatch.evaluation.shards.incremental import Evaluator

Image = tuple[str, Any, Any, Any, Any, Any]
Batches = list[list[Image]]


def run_vocmatch(batches: Batches, names: list[str]) -> list[float]:
    evaluator = Evaluator("coco", class_names=names)
    for batch in batches:
        evaluator.add_batch(
            [{"boxes": pb, "scores": ps, "labels": pl} for _, _, _, pb, ps, pl in batch],
            [{"boxes": gb, "labels": gl} for _, gb, gl, _, _, _ in batch],
            image_ids=[key for key, *_ in batch],
        )
    coco = evaluator.result().coco
    assert coco is not None
    return coco.as_list()


def _coco_gt(batch: list[Image], first_id: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """Image dicts and annotation dicts of a batch's ground truth (COCO ids from 1)."""
    images, annotations = [], []
    for offset, (_, gb, gl, _, _, _) in enumerate(batch):
        image_id = first_id + offset
        images.append({"id": image_id, "width": 1000, "height": 1000})
        boxes = gb.astype(np.float64)
        wh = boxes[:, 2:] - boxes[:, :2]
        for box, size, label in zip(boxes.tolist(), wh.tolist(), gl.tolist(), strict=True):
            annotations.append(
                {"image_id": image_id, "category_id": label + 1, "iscrowd": 0,
                 "bbox": [box[0], box[1], size[0], size[1]], "area": size[0] * size[1]}
            )  # fmt: skip
    return images, annotations


def _detection_matrix(batch: list[Image], first_id: int) -> np.ndarray:
    """``(N, 7)`` float64: image_id, x, y, w, h, score, category_id."""
    parts = []
    for offset, (_, _, _, pb, ps, pl) in enumerate(batch):
        boxes = pb.astype(np.float64)
        part = np.empty((boxes.shape[0], 7))
        part[:, 0] = first_id + offset
        part[:, 1:3] = boxes[:, :2]
        part[:, 3:5] = boxes[:, 2:] - boxes[:, :2]
        part[:, 5] = ps.astype(np.float64)
        part[:, 6] = pl + 1
        parts.append(part)
    return np.ascontiguousarray(np.concatenate(parts))


def run_hotcoco(batches: Batches, names: list[str]) -> list[float]:
    import contextlib
    import io

    from hotcoco import StreamingEval

    categories = [{"id": k + 1, "name": name} for k, name in enumerate(names)]
    streaming = StreamingEval(categories, iou_type="bbox")
    first_id = 1
    for batch in batches:
        images, annotations = _coco_gt(batch, first_id)
        for n, annotation in enumerate(annotations):
            annotation["id"] = first_id * 1000 + n
        streaming.update(images, annotations, _detection_matrix(batch, first_id))
        first_id += len(batch)
    evaluation = streaming.finalize()
    with contextlib.redirect_stdout(io.StringIO()):
        evaluation.accumulate()
        evaluation.summarize()
    return [float(x) for x in evaluation.stats]


def run_vernier(batches: Batches, names: list[str]) -> list[float]:
    from vernier.instance import Evaluator as VernierEvaluator

    images, annotations, matrices = [], [], []
    first_id = 1
    for batch in batches:
        batch_images, batch_annotations = _coco_gt(batch, first_id)
        images += batch_images
        annotations += batch_annotations
        matrices.append(_detection_matrix(batch, first_id))
        first_id += len(batch)
    for n, annotation in enumerate(annotations, start=1):
        annotation["id"] = n
    gt = {
        "images": images,
        "annotations": annotations,
        "categories": [{"id": k + 1, "name": name} for k, name in enumerate(names)],
    }
    summary = VernierEvaluator(parity_mode="strict").evaluate(
        json.dumps(gt).encode(), np.ascontiguousarray(np.concatenate(matrices))
    )
    return [float(x) for x in summary.stats]


def run_torchmetrics(batches: Batches, names: list[str]) -> list[float]:
    import torch
    from torchmetrics.detection import MeanAveragePrecision

    metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="faster_coco_eval")
    for batch in batches:
        preds = [
            {"boxes": torch.from_numpy(pb), "scores": torch.from_numpy(ps),
             "labels": torch.from_numpy(pl)}
            for _, _, _, pb, ps, pl in batch
        ]  # fmt: skip
        targets = [
            {"boxes": torch.from_numpy(gb), "labels": torch.from_numpy(gl)}
            for _, gb, gl, _, _, _ in batch
        ]
        metric.update(preds, targets)
    out = metric.compute()
    keys = (
        "map", "map_50", "map_75", "map_small", "map_medium", "map_large",
        "mar_1", "mar_10", "mar_100", "mar_small", "mar_medium", "mar_large",
    )  # fmt: skip
    return [float(out[key]) for key in keys]


TOOLS: dict[str, Callable[[Batches, list[str]], list[float]]] = {
    "vocmatch Evaluator": run_vocmatch,
    "hotcoco StreamingEval": run_hotcoco,
    "vernier Evaluator": run_vernier,
    "torchmetrics (faster_coco_eval)": run_torchmetrics,
}
_MODULES = {
    "hotcoco StreamingEval": "hotcoco",
    "vernier Evaluator": "vernier",
    "torchmetrics (faster_coco_eval)": "torchmetrics",
}


def available() -> dict[str, Callable[[Batches, list[str]], list[float]]]:
    import importlib

    tools = {}
    for name, run in TOOLS.items():
        module = _MODULES.get(name)
        try:
            if module:
                importlib.import_module(module)
                if module == "torchmetrics":
                    importlib.import_module("torchvision")
                    importlib.import_module("faster_coco_eval")
        except ImportError as error:
            print(f"{name}: not installed ({error})")
            continue
        tools[name] = run
    return tools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--classes", type=int, default=20)
    parser.add_argument("--gt-per-image", type=int, default=7)
    parser.add_argument("--pred-per-image", type=int, default=100)
    parser.add_argument("--batch", type=int, default=16, help="images a batch")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    names = [f"class{k:02d}" for k in range(args.classes)]
    data = synthetic(args.images, args.classes, args.gt_per_image, args.pred_per_image, args.seed)
    data = [(key, gb, gl.astype(np.int64), pb, ps, pl.astype(np.int64))
            for key, gb, gl, pb, ps, pl in data]  # fmt: skip
    batches = [data[i : i + args.batch] for i in range(0, len(data), args.batch)]
    n_pred = sum(len(d[5]) for d in data)
    tools = available()
    times: dict[str, list[float]] = {name: [] for name in tools}
    numbers: dict[str, list[float]] = {}
    for _ in range(args.runs):
        for name, run in tools.items():
            gc.collect()
            start = time.perf_counter()
            numbers[name] = run(batches, names)
            times[name].append(time.perf_counter() - start)
    print(
        f"{args.images:,} images, {n_pred:,} predictions, {args.classes} classes, "
        f"batches of {args.batch}, {args.runs} run(s) each, interleaved"
    )
    reference = numbers["vocmatch Evaluator"]
    print("AP " + "  ".join(f"{x:.4f}" for x in reference[:3]))
    for name in tools:
        if name == "vocmatch Evaluator":
            continue
        difference = max(abs(a - b) for a, b in zip(numbers[name], reference, strict=True))
        print(f"12 COCO numbers of {name}: largest difference from vocmatch {difference:.1e}")
    ours = statistics.median(times["vocmatch Evaluator"])
    print(f"\n{'tool':<34}{'median s':>10}{'min s':>8}{'/ vocmatch':>12}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<34}{median:>10.2f}{min(values):>8.2f}{median / ours:>11.2f}x")


if __name__ == "__main__":
    main()

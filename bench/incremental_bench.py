"""Time the incremental Evaluator (add per image, result) and measure its saved state.

Usage:
    python bench/incremental_bench.py --images 5000 --pred-per-image 100 --shards 4

Boxes and scores are float32, as a detector's tensors are. Prints the time to add every
image, the time of ``result()`` on one evaluator and on shards merged through their saved
bytes (which must agree to the bit), the memory ``result()`` of the merged shards takes
beyond their records (its tracemalloc peak, numpy's arrays included), the state's size in
bytes per prediction, and, when hotcoco is installed, its COCOeval on the same boxes (COCO
JSON built in memory).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from vocmatch.evaluation.shards.incremental import Evaluator


def synthetic(
    images: int, classes: int, gt_per_image: int, pred_per_image: int, seed: int
) -> list[Any]:
    """Per image: ground truth, and predictions jittered from it plus background boxes."""
    rng = np.random.default_rng(seed)
    data = []
    for i in range(images):
        n_gt = int(rng.poisson(gt_per_image))
        xy = rng.uniform(0, 500, (n_gt, 2))
        wh = rng.uniform(4, 200, (n_gt, 2))
        gt_boxes = np.hstack([xy, xy + wh]).astype(np.float32)
        gt_labels = rng.integers(0, classes, n_gt)
        source = rng.integers(0, max(n_gt, 1), pred_per_image)
        hit = (rng.random(pred_per_image) < 0.3) & (n_gt > 0)
        jitter = rng.normal(0, 6, (pred_per_image, 4))
        background_xy = rng.uniform(0, 500, (pred_per_image, 2))
        background = np.hstack(
            [background_xy, background_xy + rng.uniform(4, 200, (pred_per_image, 2))]
        )
        base = gt_boxes[source] if n_gt else background
        pred_boxes = np.where(hit[:, None], base + jitter, background).astype(np.float32)
        pred_boxes[:, 2:] = np.maximum(pred_boxes[:, 2:], pred_boxes[:, :2] + 1)
        pred_labels = np.where(
            hit, gt_labels[source] if n_gt else 0, rng.integers(0, classes, pred_per_image)
        )
        scores = np.where(
            hit, rng.uniform(0.3, 1.0, pred_per_image), rng.uniform(0, 0.6, pred_per_image)
        )
        data.append(
            (
                f"img_{i:06d}",
                gt_boxes,
                gt_labels,
                pred_boxes,
                scores.astype(np.float32),
                pred_labels,
            )
        )
    return data


def fed(data: list[Any], names: list[str]) -> Evaluator:
    evaluator = Evaluator("coco", class_names=names)
    for key, gb, gl, pb, ps, pl in data:
        evaluator.add(key, gb, gl, pb, ps, pl)
    return evaluator


def merged_result_peak(shards: list[bytes]) -> int:
    """Bytes ``result()`` allocates at its peak beyond the records it starts from (the
    tracemalloc peak, numpy's arrays included), for shards merged last first: their images
    out of key order, as a cluster's states come."""
    merged = Evaluator.from_bytes(shards[-1])
    for blob in reversed(shards[:-1]):
        merged.merge(Evaluator.from_bytes(blob))
    tracemalloc.start()
    try:
        merged.result()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run_hotcoco(data: list[Any], names: list[str]) -> float:
    """Seconds for hotcoco's COCOeval (evaluate, accumulate, summarize) on the same boxes."""
    from hotcoco import COCO, COCOeval

    annotations: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for image_id, (_, gb, gl, pb, ps, pl) in enumerate(data, start=1):
        for box, label in zip(gb.tolist(), gl.tolist(), strict=True):
            w, h = box[2] - box[0], box[3] - box[1]
            annotations.append(
                {"id": len(annotations) + 1, "image_id": image_id, "category_id": label + 1,
                 "bbox": [box[0], box[1], w, h], "area": w * h, "iscrowd": 0}
            )  # fmt: skip
        for box, score, label in zip(pb.tolist(), ps.tolist(), pl.tolist(), strict=True):
            results.append(
                {"image_id": image_id, "category_id": label + 1, "score": score,
                 "bbox": [box[0], box[1], box[2] - box[0], box[3] - box[1]]}
            )  # fmt: skip
    gt_json = {
        "images": [{"id": i, "width": 1000, "height": 1000} for i in range(1, len(data) + 1)],
        "categories": [{"id": k + 1, "name": n} for k, n in enumerate(names)],
        "annotations": annotations,
    }
    with tempfile.TemporaryDirectory() as folder:
        gt_path, pred_path = Path(folder) / "gt.json", Path(folder) / "pred.json"
        gt_path.write_text(json.dumps(gt_json))
        pred_path.write_text(json.dumps(results))
        with contextlib.redirect_stdout(io.StringIO()):
            start = time.perf_counter()
            coco_gt = COCO(str(gt_path))
            evaluation = COCOeval(coco_gt, coco_gt.load_res(str(pred_path)), "bbox")
            evaluation.evaluate()
            evaluation.accumulate()
            evaluation.summarize()
            return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--classes", type=int, default=20)
    parser.add_argument("--gt-per-image", type=int, default=7)
    parser.add_argument("--pred-per-image", type=int, default=100)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    names = [f"class{k:02d}" for k in range(args.classes)]
    data = synthetic(args.images, args.classes, args.gt_per_image, args.pred_per_image, args.seed)
    n_pred = sum(len(d[5]) for d in data)
    n_gt = sum(len(d[2]) for d in data)

    start = time.perf_counter()
    single = fed(data, names)
    add_s = time.perf_counter() - start
    start = time.perf_counter()
    expected = single.result()
    result_s = time.perf_counter() - start
    state = single.to_bytes()

    shards = [fed(data[k :: args.shards], names).to_bytes() for k in range(args.shards)]
    start = time.perf_counter()
    merged = Evaluator.from_bytes(shards[0])
    for blob in shards[1:]:
        merged.merge(Evaluator.from_bytes(blob))
    merged_result = merged.result()
    merge_s = time.perf_counter() - start
    same = merged_result.coco == expected.coco and merged_result.images == expected.images
    same = same and [c.ap for c in merged_result.classes] == [c.ap for c in expected.classes]
    if not same:
        raise SystemExit("merged shards differ from the single run")

    result_peak = merged_result_peak(shards)

    print(f"{args.images} images, {n_gt} ground truth, {n_pred} predictions (coco protocol)")
    print(f"add, every image        {add_s:8.2f} s  ({add_s / args.images * 1e6:.0f} us an image)")
    print(f"result()                {result_s:8.2f} s  (AP {expected.summary.map:.4f})")
    print(f"load+merge {args.shards} shards+result {merge_s:5.2f} s  (identical to the single run)")
    print(
        f"result() memory         {result_peak / 2**20:8.1f} MiB peak beyond the merged records "
        f"({result_peak / n_pred:.1f} bytes a prediction)"
    )
    print(
        f"state                   {len(state)} bytes, {len(state) / n_pred:.1f} bytes a prediction"
    )
    try:
        hotcoco_s = run_hotcoco(data, names)
    except ImportError:
        print("hotcoco                 not installed")
    else:
        print(f"hotcoco COCOeval        {hotcoco_s:8.2f} s  (JSON load, evaluate, accumulate)")


if __name__ == "__main__":
    main()

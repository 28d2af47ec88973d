"""Seeded random datasets written both as vocmatch records and as COCO JSON, for oracle tests."""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path

from vocmatch.model import Box, ImageAnnotation
from vocmatch.parse import AnnotationSet


def random_dataset(
    seed: int, images: int = 12, classes: tuple[str, ...] = ("cat", "dog", "bird", "fish")
) -> tuple[AnnotationSet, AnnotationSet]:
    """GT and predictions with every awkward case: empty images, tied scores, crowd
    (difficult) objects, classes missing on one side, and boxes of every COCO area range."""
    rng = random.Random(seed)
    gt_images = []
    pred_images = []
    gt_classes = classes[:-1]  # the last class appears only in predictions
    for i in range(images):
        key = f"img{i:03d}"
        gt_boxes = []
        for _ in range(rng.choice([0, 1, 3, 8, 20, 50])):
            w = rng.choice([rng.randint(2, 30), rng.randint(30, 100), rng.randint(100, 300)])
            h = rng.choice([rng.randint(2, 30), rng.randint(30, 100), rng.randint(100, 300)])
            x = rng.randint(0, 400)
            y = rng.randint(0, 400)
            gt_boxes.append(
                Box(rng.choice(gt_classes), x, y, x + w, y + h, difficult=rng.random() < 0.08)
            )
        pred_boxes = []
        if rng.random() > 0.15:
            for g in gt_boxes:
                for _ in range(rng.choice([0, 1, 1, 2])):
                    dx, dy = rng.randint(-15, 15), rng.randint(-15, 15)
                    name = g.name if rng.random() > 0.1 else rng.choice(classes)
                    pred_boxes.append(
                        Box(
                            name,
                            g.x1 + dx,
                            g.y1 + dy,
                            max(g.x2 + dx + rng.randint(-10, 10), g.x1 + dx + 1),
                            max(g.y2 + dy + rng.randint(-10, 10), g.y1 + dy + 1),
                            score=round(rng.random(), 1),
                        )
                    )
            for _ in range(rng.randint(0, 6)):
                x, y = rng.randint(0, 450), rng.randint(0, 450)
                pred_boxes.append(
                    Box(
                        rng.choice(classes),
                        x,
                        y,
                        x + rng.randint(1, 150),
                        y + rng.randint(1, 150),
                        score=round(rng.random(), 1),
                    )
                )
            rng.shuffle(pred_boxes)
            pred_images.append(ImageAnnotation(key, f"pred/{key}.xml", tuple(pred_boxes)))
        gt_images.append(ImageAnnotation(key, f"gt/{key}.xml", tuple(gt_boxes)))
    return (
        AnnotationSet("gt", tuple(gt_images), ()),
        AnnotationSet("pred", tuple(pred_images), ()),
    )


def coco_json(gt: AnnotationSet, pred: AnnotationSet) -> tuple[dict[str, object], list[object]]:
    """The same data as COCO ground truth and results (difficult becomes iscrowd)."""
    names = sorted({b.name for a in (*gt.annotations, *pred.annotations) for b in a.boxes})
    cat = {n: i + 1 for i, n in enumerate(names)}
    img = {a.key: i + 1 for i, a in enumerate(sorted(gt.annotations, key=lambda a: a.key))}
    annotations = []
    for a in gt.annotations:
        for b in a.boxes:
            w, h = b.x2 - b.x1, b.y2 - b.y1
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": img[a.key],
                    "category_id": cat[b.name],
                    "bbox": [b.x1, b.y1, w, h],
                    "area": w * h,
                    "iscrowd": int(b.difficult),
                }
            )
    results = [
        {
            "image_id": img[a.key],
            "category_id": cat[b.name],
            "bbox": [b.x1, b.y1, b.x2 - b.x1, b.y2 - b.y1],
            "score": b.score,
        }
        for a in pred.annotations
        if a.key in img
        for b in a.boxes
    ]
    gt_json = {
        "images": [{"id": i, "width": 1000, "height": 1000} for i in img.values()],
        "categories": [{"id": i, "name": n} for n, i in cat.items()],
        "annotations": annotations,
    }
    return gt_json, results


def pycocotools_stats(gt_json: dict[str, object], results: list[object], tmp: Path) -> list[float]:
    """Run pycocotools' COCOeval on the JSON and return its 12 stats."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    path = tmp / "gt.json"
    path.write_text(json.dumps(gt_json))
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(str(path))
        coco_pred = coco_gt.loadRes(results) if results else COCO()
        evaluator = COCOeval(coco_gt, coco_pred, "bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return [float(v) for v in evaluator.stats]


def write_voc(annotations: AnnotationSet, directory: Path) -> None:
    """Write records as LabelImg-style XML files (scores as <score> children of <object>)."""
    directory.mkdir(parents=True, exist_ok=True)
    for a in annotations.annotations:
        objects = []
        for b in a.boxes:
            score = f"<score>{b.score!r}</score>" if b.score is not None else ""
            objects.append(
                f"<object><name>{b.name}</name><difficult>{int(b.difficult)}</difficult>{score}"
                f"<bndbox><xmin>{b.x1!r}</xmin><ymin>{b.y1!r}</ymin><xmax>{b.x2!r}</xmax>"
                f"<ymax>{b.y2!r}</ymax></bndbox></object>"
            )
        text = f"<annotation><filename>{a.key}.jpg</filename>{''.join(objects)}</annotation>"
        (directory / f"{a.key}.xml").write_text(text, encoding="utf-8")

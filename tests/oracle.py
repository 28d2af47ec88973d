"""Seeded random datasets written both as vocmatch records and as COCO JSON, for oracle tests."""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
from dataclasses import replace
from pathlib import Path

from vocmatch.core.geometry import polygon_problem
from vocmatch.core.model import Box, ImageAnnotation, Polygon, RotatedBox
from vocmatch.readers.parse import AnnotationSet


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


def without_scores(annotations: AnnotationSet, share: float = 1.0, seed: int = 0) -> AnnotationSet:
    """The same set with the scores of a share of the boxes (all by default) removed."""
    rng = random.Random(seed)
    return replace(
        annotations,
        annotations=tuple(
            replace(
                a,
                boxes=tuple(replace(b, score=None) if rng.random() < share else b for b in a.boxes),
            )
            for a in annotations.annotations
        ),
    )


def with_shapes(annotations: AnnotationSet, seed: int, share: float = 0.5) -> AnnotationSet:
    """The same set with a share of the boxes turned into rotated boxes (any angle) or convex
    polygons (3 to 8 points on the box's inscribed ellipse), each carried by a box of its
    bounds, as the parser gives them."""
    rng = random.Random(seed)

    def shape(b: Box) -> Box:
        draw = rng.random()
        if draw >= share:
            return b
        w, h = b.x2 - b.x1, b.y2 - b.y1
        cx, cy = (b.x1 + b.x2) / 2, (b.y1 + b.y2) / 2
        region: Polygon | RotatedBox
        if draw < share / 2:
            region = RotatedBox(cx, cy, w, h, rng.uniform(0, 2 * math.pi))
        else:
            angles = sorted(rng.uniform(0, 2 * math.pi) for _ in range(rng.randint(3, 8)))
            points = tuple((cx + w / 2 * math.cos(a), cy + h / 2 * math.sin(a)) for a in angles)
            if polygon_problem(points) is not None:
                return b
            region = Polygon(points)
        x1, y1, x2, y2 = region.bounds
        return replace(b, x1=x1, y1=y1, x2=x2, y2=y2, shape=region)

    return replace(
        annotations,
        annotations=tuple(
            replace(a, boxes=tuple(shape(b) for b in a.boxes)) for a in annotations.annotations
        ),
    )


def dense_dataset(
    seed: int, gt_boxes: int = 40, pred_boxes: int = 50, images: int = 2
) -> tuple[AnnotationSet, AnnotationSet]:
    """Images where every box overlaps most others: jittered copies of three boxes, a third
    of them exact copies (ties of IoU 1), two classes, difficult objects, tied scores."""
    rng = random.Random(seed)
    gt_images, pred_images = [], []
    for i in range(images):
        centres = [(rng.randint(0, 30), rng.randint(0, 30)) for _ in range(3)]

        def box(jitter: int, centres: list[tuple[int, int]] = centres, **fields: object) -> Box:
            x, y = rng.choice(centres)
            d = (
                [0, 0, 0, 0]
                if rng.random() < 0.3
                else [rng.randint(-jitter, jitter) for _ in "abcd"]
            )
            return Box(rng.choice("ab"), x + d[0], y + d[1], x + 40 + d[2], y + 40 + d[3], **fields)  # type: ignore[arg-type]

        gt = [box(5, difficult=rng.random() < 0.15) for _ in range(gt_boxes)]
        pred = [box(8, score=round(rng.random(), 1)) for _ in range(pred_boxes)]
        gt_images.append(ImageAnnotation(f"d{i}", f"gt/d{i}.xml", tuple(gt)))
        pred_images.append(ImageAnnotation(f"d{i}", f"pred/d{i}.xml", tuple(pred)))
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

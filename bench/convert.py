"""Write an XML prediction folder in every other prediction format vocmatch reads.

    python bench/convert.py GT_DIR PRED_DIR OUT_DIR

For the ground truth in ``GT_DIR`` and the scored predictions in ``PRED_DIR`` (LabelImg XML,
as ``bench/derive_predictions.py`` writes them), writes the same boxes as:

* ``OUT_DIR/coco/results.json``: a COCO results list (``image_id``, ``category_id``,
  ``bbox = [x1, y1, x2 - x1, y2 - y1]``, ``score``), and ``OUT_DIR/coco/gt.json`` naming the
  ids (``images``: id from 1 in key order, ``file_name`` the key plus ``.jpg``;
  ``categories``: id from 1 in sorted name order);
* ``OUT_DIR/yolo/<key>.txt``: ``class cx cy w h conf`` normalised by the ground truth's
  ``<size>``, and ``OUT_DIR/yolo/classes.txt``;
* ``OUT_DIR/voc-results/comp4_det_test_<class>.txt``: ``image_id score x1 y1 x2 y2``;
* ``OUT_DIR/txt/<key>.txt``: ``class score x1 y1 x2 y2`` in pixels, one file per prediction
  file, and ``OUT_DIR/txt-xywh/<key>.txt``: ``class score x y w h``.

Numbers are written with ``repr``, so the COCO and VOC files hold exactly the XML's values;
YOLO's normalised centre form is exact up to float rounding (a box comes back within about
1e-13 pixel). Then ``vocmatch GT_DIR OUT_DIR/coco/results.json --pred-format coco --coco-gt
OUT_DIR/coco/gt.json`` (and the same for the others; ``--box-format xywh`` for
``txt-xywh``) gives the XML run's numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vocmatch.readers.parse import read_directory


def convert(gt_dir: Path, pred_dir: Path, out_dir: Path) -> dict[str, int]:
    """Write the other formats; returns the number of predictions written to each."""
    gt = {a.key: a for a in read_directory(gt_dir).annotations}
    pred = {a.key: a for a in read_directory(pred_dir).annotations if a.key in gt}
    names = sorted({b.name for a in pred.values() for b in a.boxes})
    image_ids = {key: i for i, key in enumerate(sorted(gt), start=1)}
    category_ids = {name: i for i, name in enumerate(names, start=1)}

    coco = out_dir / "coco"
    coco.mkdir(parents=True, exist_ok=True)
    images = [{"id": image_ids[key], "file_name": f"{key}.jpg"} for key in sorted(gt)]
    categories = [{"id": category_ids[n], "name": n} for n in names]
    (coco / "gt.json").write_text(
        json.dumps({"images": images, "categories": categories, "annotations": []}, indent=1),
        encoding="utf-8",
    )
    records = [
        {
            "image_id": image_ids[key],
            "category_id": category_ids[b.name],
            "bbox": [b.x1, b.y1, b.x2 - b.x1, b.y2 - b.y1],
            "score": b.score,
        }
        for key in sorted(pred)
        for b in pred[key].boxes
    ]
    (coco / "results.json").write_text(
        "[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]\n", encoding="utf-8"
    )

    yolo = out_dir / "yolo"
    yolo.mkdir(parents=True, exist_ok=True)
    (yolo / "classes.txt").write_text("".join(f"{n}\n" for n in names), encoding="utf-8")
    yolo_boxes = 0
    for key in sorted(pred):
        size = gt[key].size
        if size is None:
            continue  # vocmatch reports the image as skipped: no <size> to normalise by
        lines = []
        for b in pred[key].boxes:
            cx = (b.x1 + b.x2) / 2 / size.width
            cy = (b.y1 + b.y2) / 2 / size.height
            w = (b.x2 - b.x1) / size.width
            h = (b.y2 - b.y1) / size.height
            lines.append(f"{names.index(b.name)} {cx!r} {cy!r} {w!r} {h!r} {b.score!r}\n")
        target = yolo / f"{key}.txt"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(lines), encoding="utf-8")
        yolo_boxes += len(lines)

    results = out_dir / "voc-results"
    results.mkdir(parents=True, exist_ok=True)
    by_class: dict[str, list[str]] = {n: [] for n in names}
    for key in sorted(pred):
        for b in pred[key].boxes:
            by_class[b.name].append(f"{key} {b.score!r} {b.x1!r} {b.y1!r} {b.x2!r} {b.y2!r}\n")
    for name, lines in by_class.items():
        (results / f"comp4_det_test_{name}.txt").write_text("".join(lines), encoding="utf-8")
    txt_boxes = 0
    for folder, box_form in (
        ("txt", "{x1!r} {y1!r} {x2!r} {y2!r}"),
        ("txt-xywh", "{x1!r} {y1!r} {w!r} {h!r}"),
    ):
        for key in sorted(pred):
            lines = [
                f"{b.name} {b.score!r} "
                + box_form.format(x1=b.x1, y1=b.y1, x2=b.x2, y2=b.y2, w=b.x2 - b.x1, h=b.y2 - b.y1)
                + "\n"
                for b in pred[key].boxes
            ]
            target = out_dir / folder / f"{key}.txt"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("".join(lines), encoding="utf-8")
            txt_boxes += len(lines)
    return {
        "txt": txt_boxes // 2,
        "coco": len(records),
        "yolo": yolo_boxes,
        "voc-results": sum(len(v) for v in by_class.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gt_dir", type=Path)
    parser.add_argument("pred_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    counts = convert(args.gt_dir, args.pred_dir, args.out_dir)
    print(", ".join(f"{fmt}: {n} predictions" for fmt, n in counts.items()))


if __name__ == "__main__":
    main()

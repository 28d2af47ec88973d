"""Derive a scored prediction set from a ground-truth folder, reproducibly.

    python bench/derive_predictions.py ../shared/datasets/bccd /tmp/bccd_pred --seed 0

For each ground-truth file, writes a prediction file of the same name (LabelImg layout, a
``<score>`` in each ``<object>``):

* each object is kept with probability ``--keep`` (default 0.9) and its edges jittered by a
  normal offset of ``--jitter`` (default 4 %) of the box's width or height, then clamped to
  the image; its score falls with the jitter, so better boxes tend to rank higher;
* with probability ``--relabel`` (default 0.03) a kept object gets another class of the set;
* ``--extra`` (default 0.3) false alarms per image on average, placed anywhere in the image
  with low scores.

The same seed and input always give byte-identical files.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vocmatch.readers.parse import read_directory


def _object(name: str, box: tuple[float, float, float, float], score: float) -> str:
    x1, y1, x2, y2 = (round(v) for v in box)
    return (
        "\t<object>\n"
        f"\t\t<name>{name}</name>\n"
        "\t\t<pose>Unspecified</pose>\n"
        "\t\t<truncated>0</truncated>\n"
        "\t\t<difficult>0</difficult>\n"
        "\t\t<bndbox>\n"
        f"\t\t\t<xmin>{x1}</xmin>\n\t\t\t<ymin>{y1}</ymin>\n"
        f"\t\t\t<xmax>{x2}</xmax>\n\t\t\t<ymax>{y2}</ymax>\n"
        "\t\t</bndbox>\n"
        f"\t\t<score>{score:.4f}</score>\n"
        "\t</object>\n"
    )


def derive(
    gt_dir: Path,
    out_dir: Path,
    seed: int = 0,
    keep: float = 0.9,
    jitter: float = 0.04,
    relabel: float = 0.03,
    extra: float = 0.3,
) -> int:
    """Write the derived predictions; returns the number of files written."""
    rng = random.Random(seed)
    annotations = read_directory(gt_dir).annotations
    classes = sorted({b.name for a in annotations for b in a.boxes})
    written = 0
    for annotation in annotations:
        width = annotation.size.width if annotation.size else 640.0
        height = annotation.size.height if annotation.size else 480.0
        objects = []
        for box in annotation.boxes:
            if rng.random() > keep:
                continue
            w, h = box.x2 - box.x1, box.y2 - box.y1
            offsets = [rng.gauss(0.0, jitter) for _ in range(4)]
            # Clamped to the image, as a detector's boxes are.
            x1 = min(max(box.x1 + offsets[0] * w, 0.0), width - 1)
            y1 = min(max(box.y1 + offsets[1] * h, 0.0), height - 1)
            x2 = min(max(box.x2 + offsets[2] * w, x1 + 1), width)
            y2 = min(max(box.y2 + offsets[3] * h, y1 + 1), height)
            error = math.sqrt(sum(o * o for o in offsets))
            score = max(0.05, min(0.99, 0.95 - 3 * error + rng.gauss(0.0, 0.05)))
            name = box.name
            if rng.random() < relabel and len(classes) > 1:
                name = rng.choice([c for c in classes if c != box.name])
            objects.append(_object(name, (x1, y1, x2, y2), score))
        for _ in range(_poisson(rng, extra)):
            w = rng.uniform(0.05, 0.3) * width
            h = rng.uniform(0.05, 0.3) * height
            x1 = rng.uniform(0, width - w)
            y1 = rng.uniform(0, height - h)
            score = rng.uniform(0.05, 0.5)
            objects.append(_object(rng.choice(classes), (x1, y1, x1 + w, y1 + h), score))
        target = out_dir / f"{annotation.key}.xml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            "<annotation>\n"
            f"\t<filename>{annotation.filename or annotation.key}</filename>\n"
            f"\t<size>\n\t\t<width>{width:g}</width>\n\t\t<height>{height:g}</height>\n"
            "\t\t<depth>3</depth>\n\t</size>\n" + "".join(objects) + "</annotation>\n",
            encoding="utf-8",
        )
        written += 1
    return written


def _poisson(rng: random.Random, mean: float) -> int:
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gt_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=float, default=0.9)
    parser.add_argument("--jitter", type=float, default=0.04)
    parser.add_argument("--relabel", type=float, default=0.03)
    parser.add_argument("--extra", type=float, default=0.3)
    args = parser.parse_args()
    count = derive(
        args.gt_dir, args.out_dir, args.seed, args.keep, args.jitter, args.relabel, args.extra
    )
    print(f"wrote {count} prediction files to {args.out_dir}")


if __name__ == "__main__":
    main()

"""Reference numbers of the ``ultralytics`` package's detection metrics on VOC sets.

``python bench/ultralytics_oracle.py sets`` writes the sets (standard library only): ground
truth copied from ../shared/datasets (the first 60 files of bccd and cards, their licences
beside them) and a dense generated set (difficult objects, tied scores), each with
predictions made from the ground truth by seeded jitter, drops and extra boxes.

``python bench/ultralytics_oracle.py oracle`` (where ``ultralytics`` and torch are installed)
computes, on those and on the VOC sets of fixtures/ (:data:`FIXTURE_SETS`), with the
package's own ``box_iou``, ``BaseValidator.match_predictions`` and
``ap_per_class``, P, R, mAP50, mAP50-95 and each class's AP on every set, and writes them to
``fixtures/reference/ultralytics/numbers-8.4.190.json`` (named by the release), which tests read;
``oracle numbers-8.4.175.json`` with release 8.4.175 first on ``PYTHONPATH`` (``pip install
--no-deps --target DIR ultralytics==8.4.175``) records that release's numbers, and likewise
8.4.36.

Images are taken in key order; an image's detections in descending float32 confidence,
ties in class-name order then file order; classes are numbered in name order; difficult
objects are dropped (the package's VOC converter leaves them out).
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "reference" / "ultralytics"
DATASETS = ROOT.parent / "shared" / "datasets"
SETS = ("bccd", "cards", "dense", "crowded")
#: Sets already in fixtures/ (VOC XML with scored predictions), checked as they are.
FIXTURE_SETS = {
    "demo": ROOT / "fixtures" / "demo",
    "object-detection-metrics": ROOT / "fixtures" / "reference" / "object-detection-metrics",
    "tensorflow-object-detection": ROOT / "fixtures" / "reference" / "tensorflow-object-detection",
    "chainercv": ROOT / "fixtures" / "reference" / "chainercv",
}

#: An object read from a file: class, corners, difficult, score (None in ground truth).
Entry = tuple[str, tuple[float, ...], bool, float | None]


def _object_xml(name: str, box: tuple[float, ...], difficult: bool, score: float | None) -> str:
    score_line = "" if score is None else f"\t\t<score>{score}</score>\n"
    x1, y1, x2, y2 = box
    return (
        f"\t<object>\n\t\t<name>{name}</name>\n\t\t<difficult>{int(difficult)}</difficult>\n"
        f"{score_line}\t\t<bndbox>\n\t\t\t<xmin>{x1:g}</xmin>\n\t\t\t<ymin>{y1:g}</ymin>\n"
        f"\t\t\t<xmax>{x2:g}</xmax>\n\t\t\t<ymax>{y2:g}</ymax>\n\t\t</bndbox>\n\t</object>\n"
    )


def _write(path: Path, key: str, objects: list[str]) -> None:
    path.write_text(
        f"<annotation>\n\t<filename>{key}.jpg</filename>\n\t<size>\n\t\t<width>640</width>\n"
        f"\t\t<height>480</height>\n\t\t<depth>3</depth>\n\t</size>\n{''.join(objects)}"
        "</annotation>\n",
        encoding="utf-8",
    )


def _read(path: Path) -> list[Entry]:
    found: list[Entry] = []
    for obj in ET.parse(path).getroot().iter("object"):
        box = obj.find("bndbox")
        assert box is not None
        coords = tuple(float(box.findtext(k) or "nan") for k in ("xmin", "ymin", "xmax", "ymax"))
        score = obj.findtext("score")
        found.append(
            (
                (obj.findtext("name") or "").strip(),
                coords,
                (obj.findtext("difficult") or "0").strip() == "1",
                None if score is None else float(score),
            )
        )
    return found


def _predictions(
    rng: random.Random,
    gt: list[Entry],
    names: list[str],
    decimals: int,
) -> list[str]:
    out = []
    for name, (x1, y1, x2, y2), _, _ in gt:
        if rng.random() < 0.15:
            continue  # missed
        w, h = max(x2 - x1, 1.0), max(y2 - y1, 1.0)
        for _ in range(1 if rng.random() < 0.8 else 2):  # some duplicates
            jitter = [rng.gauss(0, 0.08) for _ in range(4)]
            box = (
                round(x1 + jitter[0] * w, 1), round(y1 + jitter[1] * h, 1),
                round(x2 + jitter[2] * w, 1), round(y2 + jitter[3] * h, 1),
            )  # fmt: skip
            if box[2] <= box[0] or box[3] <= box[1]:
                continue
            label = name if rng.random() < 0.92 else rng.choice(names)
            score = round(rng.uniform(0.05, 1.0), decimals)
            out.append(_object_xml(label, box, False, score))
    for _ in range(rng.randint(0, 3)):  # background false positives
        x, y = rng.uniform(0, 560), rng.uniform(0, 400)
        box = (
            round(x, 1),
            round(y, 1),
            round(x + rng.uniform(5, 80), 1),
            round(y + rng.uniform(5, 80), 1),
        )
        out.append(
            _object_xml(rng.choice(names), box, False, round(rng.uniform(0.01, 0.6), decimals))
        )
    return out


def make_sets() -> None:
    """Write every set's ground truth and predictions under :data:`OUT`."""
    for name in SETS:
        shutil.rmtree(OUT / name, ignore_errors=True)
        (OUT / name / "gt").mkdir(parents=True)
        (OUT / name / "pred").mkdir(parents=True)
        rng = random.Random(f"ultralytics-{name}")
        if name == "crowded":
            _crowded(rng, OUT / name)
            continue
        if name == "dense":
            names = ["car", "dog", "person", "zebra"]
            for i in range(40):
                key = f"img_{i:03d}"
                gt_objects: list[str] = []
                gt: list[Entry] = []
                for _ in range(rng.randint(0, 30)):
                    x, y = rng.uniform(0, 600), rng.uniform(0, 440)
                    box = (
                        round(x),
                        round(y),
                        round(x + rng.uniform(8, 120)),
                        round(y + rng.uniform(8, 120)),
                    )
                    label = rng.choice(names[:3])  # zebra only ever predicted
                    difficult = rng.random() < 0.1
                    gt.append((label, tuple(float(v) for v in box), difficult, None))
                    gt_objects.append(_object_xml(label, box, difficult, None))
                _write(OUT / name / "gt" / f"{key}.xml", key, gt_objects)
                if i % 13 != 5:  # a few images without a prediction file
                    _write(OUT / name / "pred" / f"{key}.xml", key, _predictions(rng, gt, names, 1))
            continue
        source = DATASETS / name
        shutil.copy(source / "LICENSE", OUT / name / "LICENSE")
        files = sorted(source.rglob("*.xml"), key=lambda f: f.name)[:60]
        names = sorted({entry[0] for f in files for entry in _read(f)})
        for f in files:
            shutil.copy(f, OUT / name / "gt" / f.name)
            gt = _read(f)
            _write(OUT / name / "pred" / f.name, f.stem, _predictions(rng, gt, names, 2))


def _crowded(rng: random.Random, root: Path) -> None:
    """Clusters of overlapping objects of one class, where a detection's best object is
    often taken: the match rules of the releases part there."""
    names = ["bird", "cell"]
    for i in range(30):
        key = f"crowd_{i:03d}"
        gt_objects: list[str] = []
        gt: list[Entry] = []
        for _ in range(rng.randint(1, 4)):
            label = rng.choice(names)
            x, y = rng.uniform(0, 500), rng.uniform(0, 340)
            w, h = rng.uniform(30, 90), rng.uniform(30, 90)
            for _ in range(rng.randint(1, 4)):
                dx, dy = rng.uniform(-0.3, 0.3) * w, rng.uniform(-0.3, 0.3) * h
                box = (round(x + dx), round(y + dy), round(x + dx + w), round(y + dy + h))
                difficult = rng.random() < 0.05
                gt.append((label, tuple(float(v) for v in box), difficult, None))
                gt_objects.append(_object_xml(label, box, difficult, None))
        _write(root / "gt" / f"{key}.xml", key, gt_objects)
        _write(root / "pred" / f"{key}.xml", key, _predictions(rng, gt, names, 2))


def _image_inputs(set_dir: Path) -> tuple[list[str], list[Any]]:
    gt_files = sorted((set_dir / "gt").glob("*.xml"), key=lambda p: p.stem)
    names = set()
    images = []
    for f in gt_files:
        gt = [entry for entry in _read(f) if not entry[2]]  # difficult dropped
        pred_file = set_dir / "pred" / f.name
        pred = _read(pred_file) if pred_file.exists() else []
        names |= {e[0] for e in gt} | {e[0] for e in pred}
        images.append((gt, pred))
    return sorted(names), images


def oracle(output: str = "numbers-8.4.190.json") -> None:
    """The package's numbers on every set, written to ``output`` beside the sets (another
    release of the package is put first on ``PYTHONPATH``)."""
    import ultralytics

    results: dict[str, Any] = {"ultralytics": ultralytics.__version__}
    for name in SETS:
        results[name] = oracle_numbers(OUT / name)
    for name, path in FIXTURE_SETS.items():
        results[name] = oracle_numbers(path)
    (OUT / output).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


def oracle_numbers(set_dir: Path) -> dict[str, Any]:
    """The package's numbers on one set (``gt/`` and ``pred/`` folders of VOC XML)."""
    import numpy as np
    import torch
    from ultralytics.engine.validator import BaseValidator
    from ultralytics.utils.metrics import ap_per_class, box_iou

    class _Matcher:
        iouv = torch.linspace(0.5, 0.95, 10)

    names, images = _image_inputs(set_dir)
    index = {n: i for i, n in enumerate(names)}
    tps, confs, pred_cls, target_cls = [], [], [], []
    for gt, pred in images:
        conf = np.array([p[3] for p in pred], dtype=np.float32)
        label = [index[p[0]] for p in pred]
        order = sorted(range(len(pred)), key=lambda j: (-conf[j], label[j], j))
        pred = [pred[j] for j in order]
        p_cls = torch.tensor([index[p[0]] for p in pred], dtype=torch.float32)
        t_cls = torch.tensor([index[g[0]] for g in gt], dtype=torch.float32)
        if pred and gt:
            iou = box_iou(
                torch.tensor([g[1] for g in gt], dtype=torch.float64),
                torch.tensor([p[1] for p in pred], dtype=torch.float64),
            )
            tp = BaseValidator.match_predictions(_Matcher(), p_cls, t_cls, iou).numpy()
        else:
            tp = np.zeros((len(pred), 10), dtype=bool)
        tps.append(tp)
        confs.append(np.array([p[3] for p in pred], dtype=np.float32))
        pred_cls.append(p_cls.numpy())
        target_cls.append(t_cls.numpy())
    out = ap_per_class(
        np.concatenate(tps, 0), np.concatenate(confs), np.concatenate(pred_cls),
        np.concatenate(target_cls),
    )  # fmt: skip
    p, r, ap, classes = out[2], out[3], out[5], out[6]
    return {
        "P": float(p.mean()) if len(p) else 0.0,
        "R": float(r.mean()) if len(r) else 0.0,
        "mAP50": float(ap[:, 0].mean()) if len(ap) else 0.0,
        "mAP50-95": float(ap.mean()) if len(ap) else 0.0,
        "classes": {names[int(c)]: [float(v) for v in ap[i]] for i, c in enumerate(classes)},
    }


if __name__ == "__main__":
    if sys.argv[1] == "sets":
        make_sets()
    else:
        oracle(*sys.argv[2:3])

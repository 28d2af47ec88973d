"""The report fits the terminal: at 80 and 60 columns no line of stdout is wider, on a set
with the 20 VOC class names and counts in the thousands."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import run_cli

VOC_CLASSES = (
    "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
    "train", "tvmonitor",
)  # fmt: skip

#: Images, and objects of each class in each image: counts such as ``1170 (+30)``.
IMAGES, PER_CLASS = 40, 30


def _xml(objects: list[tuple[str, tuple[int, int, int, int], bool, float | None]]) -> str:
    parts = ["<annotation><size><width>2000</width><height>2000</height><depth>3</depth></size>"]
    for name, (x1, y1, x2, y2), difficult, score in objects:
        scored = "" if score is None else f"<score>{score}</score>"
        parts.append(
            f"<object><name>{name}</name><difficult>{int(difficult)}</difficult>"
            f"<bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax>"
            f"</bndbox>{scored}</object>"
        )
    return "".join(parts) + "</annotation>\n"


@pytest.fixture(scope="module")
def voc20(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A seeded set: 40 images, 30 objects of each of the 20 VOC classes in each (one in 40
    difficult), predictions jittered, some dropped, some extra."""
    root = tmp_path_factory.mktemp("voc20")
    gt_dir, pred_dir = root / "gt", root / "pred"
    gt_dir.mkdir()
    pred_dir.mkdir()
    rng = random.Random(0)
    for image in range(IMAGES):
        gt, pred = [], []
        for c, name in enumerate(VOC_CLASSES):
            for k in range(PER_CLASS):
                x, y = 60 * k + 10, 95 * c + 10
                box = (x, y, x + 50, y + 80)
                gt.append((name, box, rng.random() < 1 / 40, None))
                if rng.random() < 0.85:
                    moved = tuple(v + rng.randint(-8, 8) for v in box)
                    pred.append((name, moved, False, round(rng.random(), 4)))
                if rng.random() < 0.3:
                    pred.append((name, (x + 30, y + 50, x + 55, y + 90), False, 0.1))
        (gt_dir / f"2008_{image:06d}.xml").write_text(_xml(gt), encoding="utf-8")
        (pred_dir / f"2008_{image:06d}.xml").write_text(_xml(pred), encoding="utf-8")
    return gt_dir, pred_dir


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("protocol", ["default", "coco"])
def test_every_line_fits_the_terminal(
    voc20: tuple[Path, Path], columns: int, protocol: str
) -> None:
    """With COLUMNS set, every line of the report is at most that wide: the class table, the
    per-image table and the operating points take narrower forms, and the text wraps."""
    code, out, _ = run_cli(
        "eval", *map(str, voc20), "--protocol", protocol, "--max-rows", "5", columns=columns
    )
    assert code == 0
    wide = [(len(line), line) for line in out.splitlines() if len(line) > columns]
    assert wide == [], "\n".join(line for _, line in wide)
    assert "diningtable" in out and "more images not shown" in out


def test_wide_terminal_keeps_the_full_tables(voc20: tuple[Path, Path]) -> None:
    """At 120 columns the class table is whole: precision and recall spelled out."""
    code, out, _ = run_cli("eval", *map(str, voc20), columns=120)
    assert code == 0
    assert "precision" in out.split("Operating points")[0]
    assert "Classes: precision, recall, F1, AP" not in out


def test_a_note_naming_a_long_path_folds_rather_than_widen_the_report(
    voc20: tuple[Path, Path], tmp_path: Path
) -> None:
    """A note that names a file under a path longer than the terminal (negative coordinates
    here) is folded at the width; the tables keep the forms that fit."""
    deep = tmp_path / ("d" * 70)
    gt = deep / "gt"
    pred = deep / "pred"
    gt.mkdir(parents=True)
    pred.mkdir()
    for path in sorted(voc20[0].glob("*.xml")):
        (gt / path.name).write_bytes(path.read_bytes())
    for path in sorted(voc20[1].glob("*.xml")):
        text = path.read_text(encoding="utf-8")
        (pred / path.name).write_text(text.replace("<xmin>10<", "<xmin>-3<", 1))
    code, out, _ = run_cli("eval", str(gt), str(pred), "--max-rows", "5", columns=80)
    assert code == 0
    assert "negative coordinates" in out
    assert [line for line in out.splitlines() if len(line) > 80] == []

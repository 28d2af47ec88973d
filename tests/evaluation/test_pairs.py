"""Dense images: pairs scored in bounded pieces give the reference's results, and a large
image-class evaluates in bounded memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.evaluation.test_batch import assert_identical
from tests.oracle import without_scores
from tests.reference import evaluate as reference_evaluate
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import protocol
from vocmatch.evaluation import pair_space as pairs
from vocmatch.evaluation.pair_space import Block, PairSpace, Tile
from vocmatch.evaluation.result import COCO_KEPT_VALUES
from vocmatch.evaluation.scoring import evaluate
from vocmatch.readers.parse import AnnotationSet


def one_image(
    gt: np.ndarray, pred: np.ndarray, scores: np.ndarray | None
) -> tuple[AnnotationSet, AnnotationSet]:
    """One image of one class from ``(N, 4)`` and ``(M, 4)`` corner boxes."""
    gt_boxes = tuple(Box("object", *b) for b in gt.tolist())
    pred_boxes = tuple(
        Box("object", *b, score=None if scores is None else float(s))
        for b, s in zip(
            pred.tolist(),
            (scores if scores is not None else np.zeros(len(pred))).tolist(),
            strict=True,
        )
    )
    return (
        AnnotationSet("gt", (ImageAnnotation("dense", "gt/dense.xml", gt_boxes),), ()),
        AnnotationSet("pred", (ImageAnnotation("dense", "pred/dense.xml", pred_boxes),), ()),
    )


def overlapping(n: int, seed: int) -> np.ndarray:
    """Jittered copies of one box, rounded to tenths: every pair overlaps, with ties."""
    rng = np.random.default_rng(seed)
    corner = 200 + rng.normal(0, 6, (n, 2))
    size = 120 + rng.normal(0, 6, (n, 2))
    return np.round(np.concatenate([corner, corner + size], axis=1), 1)


def scattered(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    corner = rng.uniform(0, 3000, (n, 2))
    return np.round(np.concatenate([corner, corner + rng.uniform(20, 80, (n, 2))], axis=1), 1)


@pytest.mark.parametrize("layout", ["overlapping", "scattered"])
@pytest.mark.parametrize("scored", [True, False], ids=["scored", "unscored"])
@pytest.mark.parametrize("name", ["default", "voc12"])
def test_a_large_image_class_equals_the_reference(layout: str, scored: bool, name: str) -> None:
    """1,200 x 1,900 boxes of one class (2.3 million pairs, more than a piece holds, so
    scored in blocks with the real piece sizes) give the reference's evaluation to the bit."""
    make = overlapping if layout == "overlapping" else scattered
    rng = np.random.default_rng(5)
    gt, pred = one_image(make(1200, 1), make(1900, 2), np.round(rng.random(1900), 2))
    assert pairs.TILE_PAIRS < 1200 * 1900
    if not scored:
        pred = without_scores(pred)
    assert_identical(
        reference_evaluate(gt, pred, protocol(name)), evaluate(gt, pred, protocol(name))
    )


def test_tiles_and_blocks_score_every_pair_once() -> None:
    """Small cells in tiles, a large one in blocks (dense, or the pairs that meet): every
    pair of the same cell is scored once, with the IoU the matrix gives it."""
    rng = np.random.default_rng(0)
    gt_cell = np.array([0, 0, 1, 2, 2, 2] + [3] * 40, dtype=np.int64)
    pred_cell = np.array([0, 1, 1, 2] + [3] * 50, dtype=np.int64)
    gt_boxes = np.concatenate([scattered(6, 1) / 10, overlapping(40, 2)])
    pred_boxes = np.concatenate([scattered(4, 3) / 10, overlapping(25, 4), scattered(25, 5)])
    crowd = rng.random(gt_cell.size) < 0.2
    for tile_pairs in (8, 1000, 10**6):
        for sparse in (False, True):
            original = pairs.TILE_PAIRS
            pairs.TILE_PAIRS = tile_pairs
            try:
                space = PairSpace(gt_boxes, gt_cell, crowd, pred_boxes, pred_cell, False)
                seen: dict[tuple[int, int], float] = {}
                for piece in space.tiles():
                    found = (
                        [piece] if isinstance(piece, Tile) else list(space.blocks(piece, sparse))
                    )
                    for part in found:
                        if isinstance(part, Block):
                            for (r, c), value in np.ndenumerate(part.iou):
                                key = (part.gt_start + r, part.pred_start + c)
                                assert key not in seen
                                seen[key] = value
                        else:
                            for g, p, value in zip(
                                part.gt.tolist(), part.pred.tolist(), part.iou.tolist(), strict=True
                            ):
                                assert (g, p) not in seen
                                seen[(g, p)] = value
            finally:
                pairs.TILE_PAIRS = original
            for g in range(gt_cell.size):
                for p in range(pred_cell.size):
                    if gt_cell[g] != pred_cell[p]:
                        assert (g, p) not in seen
                        continue
                    expected = space.rows(np.array([g]), p, p + 1)[0, 0]
                    # Pairs that do not meet are left out of a sparse piece: their IoU is 0.
                    assert seen.get((g, p), 0.0) == expected


def test_coco_summed_class_by_class_agrees_with_the_kept_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the entries kept to average as pycocotools does, the 12 numbers come from exact
    sums of class sums: equal to 1e-15."""
    from tests.oracle import random_dataset
    from vocmatch.evaluation import result

    gt, pred = random_dataset(3, images=20)
    kept = evaluate(gt, pred, protocol("coco")).coco
    assert COCO_KEPT_VALUES > 10**6
    monkeypatch.setattr(result, "COCO_KEPT_VALUES", 0)
    summed = evaluate(gt, pred, protocol("coco")).coco
    assert kept is not None and summed is not None
    np.testing.assert_allclose(summed.as_list(), kept.as_list(), rtol=0, atol=1e-15)


def test_dense_image_is_evaluated_in_bounded_memory(tmp_path: Path) -> None:
    """In a fresh process, one image with 6,000 ground-truth and 6,000 predicted boxes that
    all overlap (36 million pairs, every one able to match) is evaluated, scored and not,
    in well under 900 MB: listing every pair at once would take several gigabytes."""
    code = (
        "import json, sys, numpy as np\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from tests.evaluation.test_pairs import one_image, overlapping\n"
        "from vocmatch.evaluation.scoring import evaluate\n"
        "gt, pred = one_image(overlapping(6000, 1), overlapping(6000, 2), np.linspace(0, 1, 6000))\n"
        "scored = evaluate(gt, pred).summary\n"
        "from tests.oracle import without_scores\n"
        "unscored = evaluate(gt, without_scores(pred)).summary\n"
        "peak = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) * 1024\n"
        "print(json.dumps({'peak': peak, 'scored': [scored.tp, scored.fp, scored.fn],\n"
        "    'unscored': [unscored.tp, unscored.fp, unscored.fn]}))\n"
    )
    if not Path("/proc/self/status").exists():
        pytest.skip("VmHWM is read from /proc (Linux)")
    result = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    measured = json.loads(result.stdout)
    assert measured["scored"][0] + measured["scored"][2] == 6000
    assert measured["unscored"][0] + measured["unscored"][2] == 6000
    assert measured["peak"] < 900 * 1024 * 1024

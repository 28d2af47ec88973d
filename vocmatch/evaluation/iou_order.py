"""The ``"iou-order"`` match rule: the ``ultralytics`` package's ``match_predictions`` up to
release 8.4.175.

At each threshold, every pair of one image whose IoU reaches it is ranked by IoU, highest
first; each detection keeps its first pair (its ground truth of highest IoU, taken or not),
and each ground truth the first of those detections in the image's detection order (the
highest confidence). That is the VOC devkit's rule (:func:`vocmatch.core.match.match_devkit`)
but for one thing: the package ranks the pairs with numpy's default sort, which is not
stable, so among equal IoUs the ground truth a detection keeps depends on the sort. Here
the devkit's matching stands wherever no detection has two ground truth objects at its
highest IoU; the images where one does are matched again, threshold by threshold, with the
same sort on the same array: the image's pairs in the package's order (ground truth in
file order, detections by descending float32 confidence, then class name, then file order),
their IoUs as float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.match import Hits, match_devkit
from vocmatch.evaluation.candidates import Candidates, Matching, PairScan
from vocmatch.evaluation.pair_space import Block, Tile
from vocmatch.evaluation.stage_inputs import Prepared

__all__ = ["match_iou_order"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def match_iou_order(
    prepared: Prepared, scan: PairScan, rank: npt.NDArray[np.integer[Any]], score: FloatArray
) -> Matching:
    """Every image matched under the ``"iou-order"`` rule at every threshold.

    Args:
        prepared: The sorted inputs.
        scan: The pairs, scored.
        rank: Each prediction's place in its image-class's ranking.
        score: Each (kept) prediction's score, ``-inf`` for none.
    """
    gt, pred = prepared.gt, prepared.pred
    thresholds = prepared.levels.thresholds
    strict = prepared.conventions.strict_threshold
    shape = (thresholds.size, gt.rows.size, pred.rows.size)
    base = match_devkit(scan.pred_best_gt, scan.pred_best_iou, rank, gt.ignore, thresholds, strict)
    pairs = _pairs(scan)
    # A detection with two ground truth objects at its highest IoU (one that can match).
    at_best = (pairs.iou == scan.pred_best_iou[pairs.pred]) & (pairs.iou > 0)
    counted = np.bincount(pairs.pred[at_best], minlength=pred.rows.size)
    tied_images = np.unique(pred.image[counted > 1])
    if tied_images.size == 0:
        return Matching(base, gt.ignore, shape)
    redo = np.isin(pred.image[base.pred], tied_images)
    kept = Hits(base.level[~redo], base.pred[~redo], base.gt[~redo], base.iou[~redo])
    parts = [kept]
    pair_image = pred.image[pairs.pred]
    with np.errstate(over="ignore"):  # float32 as the package holds it; beyond: ±inf
        conf = score.astype(np.float32)
    for image in tied_images.tolist():
        mine = pair_image == image
        g, p, v = pairs.gt[mine], pairs.pred[mine], pairs.iou[mine]
        # The package's order: ground truth in file order (row), detections by descending
        # confidence, class name and file order (rank in the image-class).
        row = gt.rows[g]
        detections = np.flatnonzero(pred.image == image)
        order = np.lexsort((rank[detections], pred.label[detections], -conf[detections]))
        place = np.empty(pred.rows.size, dtype=np.int64)
        place[detections[order]] = np.arange(detections.size)
        column = place[p]
        by_place = np.lexsort((column, row))
        g, p, v, column = g[by_place], p[by_place], v[by_place], column[by_place]
        for level, threshold in enumerate(thresholds.tolist()):
            passing = v > threshold if strict else v >= threshold
            parts.append(_level_hits(level, g[passing], p[passing], v[passing], column[passing]))
    return Matching(Hits.join(parts), gt.ignore, shape)


def _level_hits(level: int, g: IntArray, p: IntArray, v: FloatArray, column: IntArray) -> Hits:
    """One image's pairs at one threshold (in the package's order) matched: the pairs ranked
    by float32 IoU with numpy's default sort, highest first; each detection's first pair;
    of those, each ground truth's detection of the lowest place."""
    if g.size > 1:
        # Ascending, then read backwards: the package's ranking, ties as its sort leaves them.
        ranked = np.argsort(v.astype(np.float32))[::-1]
        g, p, v, column = g[ranked], p[ranked], v[ranked], column[ranked]
    # Each detection's first pair in the ranking.
    _, first = np.unique(p, return_index=True)
    g, p, v, column = g[first], p[first], v[first], column[first]
    # Each ground truth's detection of the lowest place.
    by_place = np.lexsort((column, g))
    lead = by_place[np.append(True, g[by_place][1:] != g[by_place][:-1])] if g.size else by_place
    return Hits(np.full(lead.size, level, dtype=np.int64), p[lead], g[lead], v[lead])


def _pairs(scan: PairScan) -> Candidates:
    """Every pair that reaches the scan's lowest threshold."""
    found: list[Candidates] = []
    for piece in scan.pieces(whole=False):
        if isinstance(piece, Candidates):
            found.append(piece)
            continue
        for block in scan.space.blocks(piece, scan.sparse):
            if isinstance(block, Tile):
                keep = block.iou > scan.lowest if scan.strict else block.iou >= scan.lowest
                found.append(Candidates(block.gt[keep], block.pred[keep], block.iou[keep]))
            elif isinstance(block, Block):
                passing = block.iou > scan.lowest if scan.strict else block.iou >= scan.lowest
                rows, cols = np.nonzero(passing)
                found.append(
                    Candidates(
                        rows + block.gt_start, cols + block.pred_start, block.iou[rows, cols]
                    )
                )
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return Candidates(empty, empty, np.zeros(0))
    return Candidates(
        np.concatenate([c.gt for c in found]).astype(np.int64),
        np.concatenate([c.pred for c in found]).astype(np.int64),
        np.concatenate([c.iou for c in found]),
    )

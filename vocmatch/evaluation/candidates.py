"""One pass over every ground-truth/prediction pair of the same image and class, and the
matching at every threshold that follows it.

:class:`PairScan` scores every pair once (each box's best IoU on the other side of its
image-class, read by the per-box records and the devkit rule) and keeps the pairs that can
match while they fit in :data:`CANDIDATE_BUDGET`; :func:`match_all` matches every image-class
at every threshold from them, under the protocol's rule, into a :class:`Matching` (the
matched pairs). The evaluator (:mod:`vocmatch.evaluation.engine`) runs them once for the
evaluation and once more for each of pycocotools' area ranges; the match records of an
:class:`~vocmatch.evaluation.shards.incremental.Evaluator` (:mod:`vocmatch.evaluation.records`)
run them for their area ranges.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core import match_kernels
from vocmatch.core.match import (
    Hits,
    MatchRule,
    RankedMatcher,
    match_devkit,
    match_unscored,
    match_unscored_rows,
)
from vocmatch.evaluation import pair_space as pairs
from vocmatch.evaluation.pair_space import Block, PairSpace, Tile

__all__ = ["CANDIDATE_BUDGET", "Candidates", "Matching", "PairScan", "match_all", "match_cells"]

FloatArray = npt.NDArray[np.float64]
# Indices: int32 where they come from the columns, int64 where computed.
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]


class Matching:
    """The matching at every threshold, kept as the matched pairs (few predictions match).

    Per-prediction flags are built one threshold at a time, when asked for: on large sets a
    dense (T, P) array of them is sizeable, and most uses need one threshold.
    """

    __slots__ = ("_gt_ignore", "_gt_matched", "_shape", "hit_gt", "hit_iou", "hit_pred", "hit_t")

    def __init__(self, hits: Hits, gt_ignore: BoolArray, shape: tuple[int, int, int]) -> None:
        # int32 where it holds every index (half the memory of a large set's matches).
        index: type[np.integer[Any]] = np.int32 if max(shape) < 2**31 else np.int64
        self.hit_t = hits.level.astype(index)  # (H,) threshold index of each matched pair
        self.hit_pred = hits.pred.astype(index)  # (H,)
        self.hit_gt = hits.gt.astype(index)  # (H,)
        self.hit_iou = hits.iou  # (H,)
        self._gt_ignore = gt_ignore
        self._shape = shape  # thresholds, ground truth, predictions
        self._gt_matched: BoolArray | None = None

    def pred_flags(self, level: int) -> tuple[BoolArray, BoolArray]:
        """``(P,)`` at one threshold: the prediction matched a ground truth (TP or ignored),
        and it matched an ignored one."""
        n_pred = self._shape[2]
        at = self.hit_t == level
        preds = self.hit_pred[at]
        matched = np.zeros(n_pred, dtype=bool)
        matched[preds] = True
        ignored = np.zeros(n_pred, dtype=bool)
        ignored[preds[self._gt_ignore[self.hit_gt[at]]]] = True
        return matched, ignored

    @property
    def gt_matched(self) -> BoolArray:
        """``(T, G)`` the ground truth was matched."""
        if self._gt_matched is None:
            n_t, n_gt, _ = self._shape
            fast = kernels(match_kernels.MODULE)
            if fast is not None:
                self._gt_matched = match_kernels.mark_pairs(
                    fast, (n_t, n_gt), self.hit_t, self.hit_gt
                )
            else:
                self._gt_matched = np.zeros((n_t, n_gt), dtype=bool)
                self._gt_matched[self.hit_t, self.hit_gt] = True
        return self._gt_matched

    def of(self, level: int, preds: IntArray) -> tuple[IntArray, FloatArray]:
        """The ground truth matched to each of ``preds`` (all matched) at one threshold, and
        the pair's IoU."""
        at = np.flatnonzero(self.hit_t == level)
        # A prediction is matched at most once a threshold: each one's pair, by a scatter.
        pair = np.zeros(self._shape[2], dtype=np.int64)
        pair[self.hit_pred[at]] = at
        found = pair[preds]
        return self.hit_gt[found].astype(np.int64), self.hit_iou[found]


#: Pairs that can match, kept from the first pass over all pairs for the matchings that
#: follow (pycocotools' area ranges match four more times); beyond, they are scored again.
#: Each costs 16 bytes.
CANDIDATE_BUDGET = 1 << 24


@dataclass(frozen=True, slots=True)
class Candidates:
    """Pairs whose IoU passes the lowest threshold, of whole image-classes."""

    gt: IntArray
    pred: IntArray
    iou: FloatArray


#: A large image-class whose pairs that can match are too many to keep:
#: ``(gt_start, gt_stop, pred_start, pred_stop)``.
_LargeCell = tuple[int, int, int, int]


class PairScan:
    """One pass over every pair: each box's best IoU on the other side of its image-class
    (the devkit rule reads them), and the pairs that can match, kept for the matchings while
    they fit in :data:`CANDIDATE_BUDGET`.

    The best IoUs (``pred_best_iou``, ``gt_best_iou``) are exact where they reach the space's
    IoU floor, which is all matching reads; the per-box records read
    :meth:`exact_pred_best_iou` and :meth:`exact_gt_best_iou`, exact whatever their value.

    Args:
        space: The boxes and how to score them.
        lowest: The lowest threshold of any matching.
        strict: Matching at ``IoU > t``.
        first: A matcher fed every piece as it is scored (the first matching rides along,
            so a large image-class whose pairs are not kept is scored once less).
        rank: Each prediction's place in its image-class's ranking, for ``first``.
    """

    def __init__(
        self,
        space: PairSpace,
        lowest: float,
        strict: bool,
        first: RankedMatcher | None = None,
        rank: IntArray | None = None,
    ) -> None:
        self.space = space
        self._first = first
        self._rank = rank
        self.lowest = lowest
        self.strict = strict
        # Boxes that do not meet have IoU 0, which then never matches: an STR tree finds
        # the pairs that meet in a large image-class.
        self.sparse = lowest > 0 or strict
        n_gt, n_pred = space.n_gt, space.n_pred
        self.pred_best_iou = np.zeros(n_pred)
        self.pred_best_gt = np.full(n_pred, -1, dtype=np.int32)
        self.gt_best_iou = np.zeros(n_gt)
        self.gt_best_pred = np.full(n_gt, -1, dtype=np.int32)
        # Kept: the pairs that can match of whole image-classes, in parts of whole
        # predictions (a large image-class's part per block); else the bounds to score again.
        self._pieces: list[list[Candidates] | _LargeCell] = []
        self._kept = 0
        for piece in space.tiles():
            if isinstance(piece, Tile):
                self._tile(piece)
            else:
                self._large(piece)

    def _passing(self, iou: FloatArray) -> BoolArray:
        return np.asarray(iou > self.lowest if self.strict else iou >= self.lowest)

    def _keep(self, parts: list[Candidates]) -> bool:
        size = sum(part.gt.size for part in parts)
        if self._kept + size > CANDIDATE_BUDGET:
            return False
        self._kept += size
        self._pieces.append(parts)
        return True

    def _tile(self, tile: Tile) -> None:
        if tile.gt.size == 0:
            return
        if self._first is not None and self._rank is not None:
            self._first.add(tile.gt, tile.pred, tile.iou, self._rank)
        preds, best, best_gt = _best_of_each_prediction(tile)
        self.pred_best_iou[preds] = best
        self.pred_best_gt[preds] = best_gt
        np.maximum.at(self.gt_best_iou, tile.gt, tile.iou)
        keep = self._passing(tile.iou)
        candidates = Candidates(
            tile.gt[keep].astype(np.int32), tile.pred[keep].astype(np.int32), tile.iou[keep]
        )
        if not self._keep([candidates]):
            self._pieces.append(_tile_bounds(tile))

    def _large(self, cell: _LargeCell) -> None:
        g0, g1, p0, p1 = cell
        # Before any piece: every IoU 0, the first box on the other side the best.
        self.gt_best_pred[g0:g1] = p0
        parts: list[Candidates] | None = []
        count = scored = 0
        for piece in self.space.blocks(cell, self.sparse):
            if self._first is not None and self._rank is not None:
                if isinstance(piece, Tile):
                    self._first.add(piece.gt, piece.pred, piece.iou, self._rank)
                else:
                    self._first.add_block(piece.iou, piece.gt_start, piece.pred_start)
            if isinstance(piece, Tile):
                row_best, row_pred = self._sparse(piece, g0, g1)
                gt, pred, iou = piece.gt, piece.pred, piece.iou
            else:
                iou = piece.iou
                columns = slice(piece.pred_start, piece.pred_start + iou.shape[1])
                self.pred_best_gt[columns] = g0 + np.argmax(iou, axis=0)
                self.pred_best_iou[columns] = iou.max(axis=0)
                row_best = iou.max(axis=1)
                row_pred = piece.pred_start + np.argmax(iou, axis=1)
            # Pieces come in prediction order: a later one wins only with a higher IoU.
            better = row_best > self.gt_best_iou[g0:g1]
            self.gt_best_iou[g0:g1][better] = row_best[better]
            self.gt_best_pred[g0:g1][better] = row_pred[better]
            if parts is None:
                continue
            passing = self._passing(iou)
            count += int(np.count_nonzero(passing))
            scored += iou.size if isinstance(piece, Block) else piece.pred.size
            # The share that can match so far, over every pair of the image-class, foretells
            # whether they will fit: when they will not, none is gathered.
            foreseen = (
                count / max(scored, 1) * (g1 - g0) * (p1 - p0)
                if isinstance(piece, Block)
                else count
            )
            if self._kept + max(count, foreseen) > CANDIDATE_BUDGET:
                parts = None  # too many to keep: scored again for each matching
                continue
            if isinstance(piece, Tile):
                found = Candidates(gt[passing], pred[passing], iou[passing])
            else:
                rows, cols = np.nonzero(passing)
                found = Candidates(rows + g0, cols + piece.pred_start, iou[rows, cols])
            del passing
            parts.append(
                Candidates(found.gt.astype(np.int32), found.pred.astype(np.int32), found.iou)
            )
        if parts is None or not self._keep(parts):
            self._pieces.append(cell)

    def _sparse(self, tile: Tile, g0: int, g1: int) -> tuple[FloatArray, IntArray]:
        """Best IoUs from the pairs that meet, of a run of a large cell's predictions (the
        others have IoU 0): each prediction's, set; each ground truth's best in the run and
        its prediction, returned."""
        self.pred_best_iou[tile.pred_start : tile.pred_stop] = 0.0
        # With no IoU above 0, the first ground truth of the cell is the first maximum.
        self.pred_best_gt[tile.pred_start : tile.pred_stop] = g0
        if tile.gt.size:
            preds, best, best_gt = _best_of_each_prediction(tile)
            positive = best > 0
            self.pred_best_iou[preds] = best
            self.pred_best_gt[preds[positive]] = best_gt[positive]
        row_best = np.zeros(g1 - g0)
        row_pred = np.zeros(g1 - g0, dtype=np.int64)
        if tile.gt.size:
            # Per ground truth: highest IoU, the first prediction on ties.
            order = np.lexsort((tile.pred, -tile.iou, tile.gt))
            lead = order[np.append(True, tile.gt[order][1:] != tile.gt[order][:-1])]
            row_best[tile.gt[lead] - g0] = tile.iou[lead]
            row_pred[tile.gt[lead] - g0] = tile.pred[lead]
        return row_best, row_pred

    def exact_pred_best_iou(self) -> FloatArray:
        """``(P,)`` each prediction's highest IoU with the ground truth of its image-class
        (0.0 without any), exact whatever its value.

        :attr:`pred_best_iou` is exact where it reaches the space's IoU floor (every pair that
        can reach it was clipped); below, pairs left out by their bound may hold more. Of
        those, each one whose bound reaches the prediction's best so far is clipped now: a
        pair still left out cannot hold more.
        """
        return self._exact_best(self.pred_best_iou, gt=False, among=None)

    def exact_gt_best_iou(self) -> FloatArray:
        """``(G,)`` each ground truth's highest IoU with the predictions of its image-class,
        exact whatever its value (see :meth:`exact_pred_best_iou`)."""
        return self._exact_best(self.gt_best_iou, gt=True, among=None)

    def _exact_best(self, best: FloatArray, gt: bool, among: BoolArray | None) -> FloatArray:
        space = self.space
        if space.iou_floor <= 0:
            return best
        unsure = np.flatnonzero((best < space.iou_floor) & space.region_rows(gt))
        if unsure.size == 0:
            return best
        out = best.copy()
        for g, p, which in space.cell_pairs(unsure, gt):
            if among is not None:
                counting = among[p]
                g, p, which = g[counting], p[counting], which[counting]
            owner = unsure[which]
            # The pairs scored in the scan are in ``best`` already.
            np.maximum.at(out, owner, space.left_out_iou(g, p, best[owner]))
        return out

    def gt_best_iou_among(self, preds: BoolArray) -> FloatArray:
        """Each ground truth's highest IoU with the predictions flagged in ``preds`` (0.0
        without any), exact whatever its value: one more pass over every pair."""
        best = np.zeros(self.space.n_gt)
        for piece in self.space.tiles():
            if isinstance(piece, Tile):
                counting = preds[piece.pred]
                np.maximum.at(best, piece.gt[counting], piece.iou[counting])
                continue
            g0, g1, _, _ = piece
            for block in self.space.blocks(piece, self.sparse):
                if isinstance(block, Tile):
                    counting = preds[block.pred]
                    np.maximum.at(best, block.gt[counting], block.iou[counting])
                    continue
                columns = preds[block.pred_start : block.pred_start + block.iou.shape[1]]
                if columns.any():
                    np.maximum(best[g0:g1], block.iou[:, columns].max(axis=1), out=best[g0:g1])
        return self._exact_best(best, gt=True, among=preds)

    def pieces(self, whole: bool) -> Iterator[Candidates | _LargeCell]:
        """The pairs that can match, piece by piece: kept ones joined a few million at a
        time, others scored again; a large image-class whose pairs were not kept is given
        as its bounds, to be read in blocks (:meth:`PairSpace.blocks`) or by rows.

        Args:
            whole: Every piece holds whole image-classes (the unscored pairing needs them);
                else whole predictions suffice (ranked matching), which keeps pieces small.
        """
        batch: list[Candidates] = []
        size = 0
        for piece in self._pieces:
            if isinstance(piece, list):
                for part in piece:
                    batch.append(part)
                    size += part.gt.size
                    if not whole and size >= 2 * pairs.TILE_PAIRS:
                        yield _joined(batch)
                        batch, size = [], 0
                if whole and size >= 2 * pairs.TILE_PAIRS:
                    yield _joined(batch)
                    batch, size = [], 0
                continue
            _, g1, p0, p1 = piece
            if g1 < 0:  # a tile of small image-classes, scored again
                tile = self.space.tile(p0, p1)
                keep = self._passing(tile.iou)
                yield Candidates(tile.gt[keep], tile.pred[keep], tile.iou[keep])
            else:
                yield piece
        if batch:
            yield _joined(batch)


def _joined(parts: list[Candidates]) -> Candidates:
    if len(parts) == 1:
        return parts[0]
    return Candidates(
        np.concatenate([c.gt for c in parts]),
        np.concatenate([c.pred for c in parts]),
        np.concatenate([c.iou for c in parts]),
    )


def _tile_bounds(tile: Tile) -> _LargeCell:
    # A tile not kept is recorded by its predictions (-1 marks it as a tile).
    return (-1, -1, tile.pred_start, tile.pred_stop)


def match_all(
    scan: PairScan,
    rank: IntArray,
    gt_ignore: BoolArray,
    gt_crowd: BoolArray,
    thresholds: FloatArray,
    rule: MatchRule,
    strict: bool,
    scored: bool,
) -> Matching:
    """Every image-class matched at every threshold, under the rule of the protocol."""
    space = scan.space
    shape = (thresholds.size, space.n_gt, space.n_pred)
    # "iou-order" differs from the devkit's rule only in ties of IoU, which it breaks with
    # the image's own sort (vocmatch.evaluation.iou_order): matched here, the devkit's way.
    if scored and rule in ("devkit", "iou-order"):
        hits = match_devkit(
            scan.pred_best_gt, scan.pred_best_iou, rank, gt_ignore, thresholds, strict
        )
        return Matching(hits, gt_ignore, shape)
    parts: list[Hits] = []
    first = rule == "unmatched-first"
    matcher = RankedMatcher(space.n_gt, gt_ignore, gt_crowd, thresholds, strict, first)
    for piece in scan.pieces(whole=not scored):
        if isinstance(piece, Candidates):
            if scored:
                matcher.add(piece.gt, piece.pred, piece.iou, rank)
            else:
                parts.append(
                    match_unscored(
                        piece.gt, piece.pred, piece.iou, gt_ignore, gt_crowd, thresholds, strict
                    )
                )
            continue
        g0, g1, p0, p1 = piece
        if scored:
            for block in space.blocks(piece, scan.sparse):
                if isinstance(block, Tile):
                    matcher.add(block.gt, block.pred, block.iou, rank)
                else:
                    matcher.add_block(block.iou, block.gt_start, block.pred_start)
            continue

        def row(g: int, g0: int = g0, p0: int = p0, p1: int = p1) -> FloatArray:
            values: FloatArray = space.rows(np.array([g0 + g]), p0, p1)[0]
            return values

        found = match_unscored_rows(
            scan.gt_best_pred[g0:g1].astype(np.int64) - p0,
            scan.gt_best_iou[g0:g1],
            row,
            p1 - p0,
            gt_ignore[g0:g1],
            gt_crowd[g0:g1],
            thresholds,
            strict,
        )
        parts.append(found.shifted(g0, p0))
    if scored:
        parts.append(matcher.hits())
    return Matching(Hits.join(parts), gt_ignore, shape)


def match_cells(
    scan: PairScan,
    rank: IntArray,
    gt_ignore: BoolArray,
    gt_crowd: BoolArray,
    thresholds: FloatArray,
    strict: bool,
    cells: BoolArray,
) -> Hits:
    """The ``"unmatched"`` rule of ranked predictions, as :func:`match_all` matches it, in
    the image-classes of the ground truth in ``cells`` alone (``(G,)``, alike for every
    ground truth of an image-class)."""
    space = scan.space
    matcher = RankedMatcher(space.n_gt, gt_ignore, gt_crowd, thresholds, strict)
    for piece in scan.pieces(whole=False):
        if isinstance(piece, Candidates):
            keep = cells[piece.gt]
            matcher.add(piece.gt[keep], piece.pred[keep], piece.iou[keep], rank)
            continue
        g0, g1, _, _ = piece
        if g1 <= g0 or not cells[g0]:
            continue
        for block in space.blocks(piece, scan.sparse):
            if isinstance(block, Tile):
                matcher.add(block.gt, block.pred, block.iou, rank)
            else:
                matcher.add_block(block.iou, block.gt_start, block.pred_start)
    return matcher.hits()


def _best_of_each_prediction(tile: Tile) -> tuple[IntArray, FloatArray, IntArray]:
    """Each prediction of a non-empty ``tile``, its best IoU and the ground truth giving it.

    Pairs run prediction by prediction, each over its image-class's ground truth in order:
    the best of a prediction is a maximum over its run, the first ground truth on ties.
    """
    starts = np.flatnonzero(np.append(True, tile.pred[1:] != tile.pred[:-1]))
    best = np.maximum.reduceat(tile.iou, starts)
    runs = np.diff(np.append(starts, tile.iou.size))
    at_best = np.flatnonzero(tile.iou == np.repeat(best, runs))
    first = at_best[np.append(True, tile.pred[at_best][1:] != tile.pred[at_best][:-1])]
    return tile.pred[starts], best, tile.gt[first]

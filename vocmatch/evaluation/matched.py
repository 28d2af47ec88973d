"""The arrays of an evaluation's matching, for what inspects the stages rather than the match
records every analysis reads: :class:`MatchedColumns`, built by :func:`matched_columns` when
:class:`~vocmatch.evaluation.to_records.Asked` asks for it, and :func:`evaluate_matched`, an
evaluation with its records and these arrays.

A module of its own, imported only where the arrays are asked for: a run, which keeps only
its match records, does not build these records' classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.match import Hits
from vocmatch.evaluation.candidates import Matching
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.stages import score_floor

if TYPE_CHECKING:
    from vocmatch.core.preparation import Preparation
    from vocmatch.core.protocol import Conventions
    from vocmatch.evaluation.candidates import PairScan
    from vocmatch.evaluation.engine import StageProgress
    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.evaluation.result import Evaluation
    from vocmatch.evaluation.slice_records import SliceSpec
    from vocmatch.evaluation.stage_inputs import Areas, Paired, Prepared, RankingScores
    from vocmatch.evaluation.thresholds import ScoreThresholds
    from vocmatch.readers.scan import ColumnSet

__all__ = ["Evaluated", "MatchedColumns", "evaluate_matched", "matched_columns"]

FloatArray = npt.NDArray[np.float64]
# Indices: int32 where they come from the columns, int64 where computed.
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class MatchedColumns:
    """The evaluator's arrays once every image is matched: the pairs that can match and
    the matching at every threshold, for what inspects the stages (every analysis reads the
    match records instead).

    Ground truth is sorted by (image, class, file order), kept predictions by (image, class,
    descending score, file order).

    Attributes:
        conventions: The conventions of the evaluation.
        thresholds: ``(T,)`` the IoU thresholds matched at, ascending (the evaluation
            threshold, the sweep and the AP thresholds).
        pairs: The same-image, same-class pairs that can match (kept or scored again in
            bounded pieces).
        scored: The predictions carry scores (else they were paired highest IoU first).
        gt_rows: ``(G,)`` each ground truth's row in the ground-truth columns.
        gt_ignore: ``(G,)`` ignored under the protocol (``difficult``).
        gt_crowd: ``(G,)`` a crowd region (``--difficult crowd``).
        gt_area: ``(G,)`` continuous area (a rotated box's or polygon's own region's), as
            COCO's area ranges read it.
        pred_rows: ``(P,)`` each kept prediction's row in the prediction columns.
        pred_rank: ``(P,)`` its place among its image-class's predictions by score.
        pred_area: ``(P,)`` continuous area, as ``gt_area``.
        hit_threshold: ``(H,)`` threshold index of each matched pair of the matching.
        hit_pred: ``(H,)`` its prediction.
        hit_gt: ``(H,)`` its ground truth.
        hit_iou: ``(H,)`` the pair's IoU.
        pred_counted: ``(P,)`` the prediction counts towards TP and FP (its score is at or
            above its class's score threshold; every one without thresholds). AP keeps all.
    """

    conventions: Conventions
    thresholds: FloatArray
    pairs: PairScan
    scored: bool
    gt_rows: IntArray
    gt_ignore: BoolArray
    gt_crowd: BoolArray
    gt_area: FloatArray
    pred_rows: IntArray
    pred_rank: IntArray
    pred_area: FloatArray
    hit_threshold: IntArray
    hit_pred: IntArray
    hit_gt: IntArray
    hit_iou: FloatArray
    pred_counted: BoolArray

    @property
    def matching(self) -> Matching:
        """The evaluation's own matching, at every threshold of :attr:`thresholds`."""
        return Matching(
            Hits(self.hit_threshold, self.hit_pred, self.hit_gt, self.hit_iou),
            self.gt_ignore,
            (self.thresholds.size, self.gt_rows.size, self.pred_rows.size),
        )


def matched_columns(
    prepared: Prepared, paired: Paired, areas: Areas, scores: RankingScores
) -> MatchedColumns:
    """The evaluation's arrays, for what inspects the stages."""
    gt, pred, m = prepared.gt, prepared.pred, paired.matching
    floor = score_floor(prepared)
    return MatchedColumns(
        conventions=prepared.conventions,
        thresholds=prepared.levels.thresholds,
        pairs=paired.scan,
        scored=prepared.scored,
        gt_rows=gt.rows,
        gt_ignore=gt.ignore,
        gt_crowd=gt.crowd,
        gt_area=areas.gt,
        pred_rows=pred.rows,
        pred_rank=pred.rank,
        pred_area=areas.pred,
        hit_threshold=m.hit_t,
        hit_pred=m.hit_pred,
        hit_gt=m.hit_gt,
        hit_iou=m.hit_iou,
        pred_counted=(
            scores.kept >= floor[pred.label]
            if floor is not None
            else np.ones(pred.label.size, dtype=bool)
        ),
    )


@dataclass(frozen=True, slots=True)
class Evaluated:
    """An evaluation and what the analyses read of it.

    Attributes:
        evaluation: The evaluation.
        records: Its match records (the bootstrap and calibration read them, as they read
            records merged from shards).
        matched: The arrays of its matching, of every prediction (for what inspects the
            stages); None when no image was evaluated.
    """

    evaluation: Evaluation
    records: MatchRecords
    matched: MatchedColumns | None


def evaluate_matched(
    gt: ColumnSet,
    pred: ColumnSet,
    conventions: Conventions | None = None,
    keep_matches: bool = True,
    *,
    fold_case: bool = False,
    progress: StageProgress | None = None,
    score_thresholds: ScoreThresholds | None = None,
    slices: tuple[SliceSpec, ...] = (),
    calibration: bool = False,
    preparation: Preparation | None = None,
) -> Evaluated:
    """:func:`evaluate_columns`, its match records and the arrays of its matching, which
    hold every pair that can match (a run keeps only the records:
    :func:`evaluate_columns`'s ``kept``). With ``calibration`` the records keep what OCE
    and D-ECE read (:class:`~vocmatch.evaluation.calibration_inputs.CalibrationInputs`)."""
    found: list[MatchedColumns] = []
    kept: list[MatchRecords] = []
    evaluation = evaluate_columns(
        gt, pred, conventions, keep_matches, fold_case=fold_case, progress=progress,
        matched=found.append, score_thresholds=score_thresholds,
        kept=kept.append, slices=slices, calibration=calibration, preparation=preparation,
    )  # fmt: skip
    return Evaluated(evaluation, kept[0], found[0] if found else None)

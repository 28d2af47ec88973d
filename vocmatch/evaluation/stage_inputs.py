"""What the stages of the column evaluator (:mod:`vocmatch.evaluation.stages`) hand on: each
stage's result, read by the stages after it.

The selection of images and boxes (stage *select*), the inputs sorted into image-class cells
(*prepare*), the pairs and their matching (*pair and match*), the continuous areas COCO's
area ranges read, the scores for ranking and each kept prediction's outcome at the IoU
threshold (*count*). The per-image stage (:mod:`vocmatch.evaluation.per_image`) and the
match records (:mod:`vocmatch.evaluation.records`) read them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.model import SkippedFile
from vocmatch.core.protocol import Conventions
from vocmatch.evaluation.accumulate import ClassRanking
from vocmatch.evaluation.candidates import Matching, PairScan
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.scan import ColumnSet

__all__ = [
    "Areas",
    "Counted",
    "IouLevels",
    "Paired",
    "Prepared",
    "RankingScores",
    "Selection",
    "SortedGroundTruth",
    "SortedPredictions",
    "ranking_scores",
]

FloatArray = npt.NDArray[np.float64]
# Indices: int32 where they come from the columns, int64 where computed.
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]
FlagArray = npt.NDArray[np.integer[Any]]
Int32Array = npt.NDArray[np.int32]


def ranking_scores(scores: FloatArray, rows: IntArray) -> FloatArray:
    """Scores of ``rows`` for ranking: NaN (no score) as -inf, ranked last."""
    taken = scores[rows]
    return np.where(np.isnan(taken), -math.inf, taken)


@dataclass(frozen=True, slots=True)
class Selection:
    """The images and boxes an evaluation reads (stage *select*).

    Attributes:
        images: Each evaluated image's index in ``gt.keys``: every ground-truth file that was
            read, in key order.
        pred_of_image: Each evaluated image's index in ``pred.keys``, None without a file.
        gt_rows: ``(G,)`` rows of ``gt`` in evaluated images, in column order.
        gt_image: ``(G,)`` the evaluated image of each.
        pred_rows: ``(P,)`` rows of ``pred`` in evaluated images, in column order.
        pred_image: ``(P,)`` the evaluated image of each.
        scored: Some of those predictions have a score.
        missing: Keys of evaluated images without a prediction file.
        orphan: Paths of prediction files without ground truth.
        skipped: Files that could not be read, by path and line.
    """

    images: tuple[int, ...]
    pred_of_image: tuple[int | None, ...]
    gt_rows: IntArray
    gt_image: IntArray
    pred_rows: IntArray
    pred_image: IntArray
    scored: bool
    missing: tuple[str, ...]
    orphan: tuple[str, ...]
    skipped: tuple[SkippedFile, ...]


@dataclass(frozen=True, slots=True)
class SortedGroundTruth:
    """The evaluated ground truth sorted by (image, class, file order).

    Attributes:
        rows: ``(G,)`` each one's row in the ground-truth columns.
        image: ``(G,)`` its evaluated image.
        label: ``(G,)`` its class index.
        ignore: ``(G,)`` ignored under the protocol (``difficult`` unless counted).
        crowd: ``(G,)`` a crowd region (``--difficult crowd``).
    """

    rows: IntArray
    image: IntArray
    label: IntArray
    ignore: BoolArray
    crowd: BoolArray

    def per_class(self, n_classes: int) -> tuple[IntArray, IntArray]:
        """``(K,)`` ground truth that counts, and ``(K,)`` ignored, of each class."""
        ignored = np.bincount(self.label[self.ignore], minlength=n_classes)
        return np.bincount(self.label, minlength=n_classes) - ignored, ignored


@dataclass(frozen=True, slots=True)
class SortedPredictions:
    """The evaluated predictions sorted by (image, class, descending score, file order).

    ``*_all`` arrays hold every one; the others only those kept (pycocotools' ``maxDets``
    highest-scored of each image-class; every one when nothing is cut, the same arrays).

    Attributes:
        rows_all: ``(P_all,)`` each one's row in the prediction columns.
        image_all: ``(P_all,)`` its evaluated image.
        label_all: ``(P_all,)`` its class index.
        kept: ``(P_all,)`` kept.
        rows: ``(P,)``.
        image: ``(P,)``.
        label: ``(P,)``.
        rank: ``(P,)`` its place in its image-class's run, by score.
        score_all: ``(P_all,)`` its score for ranking (:func:`ranking_scores`: -inf for
            none), converted once for every stage that reads it.
    """

    rows_all: Int32Array
    image_all: IntArray
    label_all: IntArray
    kept: BoolArray
    rows: Int32Array
    image: IntArray
    label: IntArray
    rank: IntArray
    score_all: FloatArray


@dataclass(frozen=True, slots=True)
class IouLevels:
    """The IoU thresholds matched at: the evaluation threshold, the sweep and the AP
    thresholds, ascending.

    Attributes:
        thresholds: ``(T,)``.
        index: Each threshold's place in ``thresholds``.
        evaluation: The place of the evaluation's own threshold.
    """

    thresholds: FloatArray
    index: dict[float, int]
    evaluation: int

    @classmethod
    def of(cls, conv: Conventions) -> IouLevels:
        """The thresholds a protocol matches at."""
        values = sorted({conv.iou_threshold, *conv.sweep_thresholds, *conv.ap_thresholds})
        index = {value: i for i, value in enumerate(values)}
        return cls(np.array(values, dtype=np.float64), index, index[conv.iou_threshold])


@dataclass(frozen=True, slots=True)
class Prepared:
    """The inputs sorted into image-class cells (stage *prepare*): what every later stage
    reads.

    Attributes:
        conventions: The protocol.
        gt_columns: The ground-truth columns.
        pred_columns: The prediction columns.
        score_thresholds: Per-class score thresholds, if any.
        class_names: The classes of the evaluated boxes, sorted.
        gt: The ground truth, sorted.
        pred: The predictions, sorted.
        levels: The IoU thresholds matched at.
        scored: The predictions carry scores (else they are paired highest IoU first).
    """

    conventions: Conventions
    gt_columns: ColumnSet
    pred_columns: ColumnSet
    score_thresholds: ScoreThresholds | None
    class_names: tuple[str, ...]
    gt: SortedGroundTruth
    pred: SortedPredictions
    levels: IouLevels
    scored: bool


@dataclass(frozen=True, slots=True)
class Paired:
    """Every image-class paired and matched at every threshold (stage *pair and match*).

    Attributes:
        scan: The pairs that can match, and each box's best IoU on the other side.
        matching: The matched pairs at every threshold.
        ranking: Each class's predictions and their ranking by score.
        range_flags: ``(P, A)`` flags matched and matched to ignored ground truth under each
            of COCO's area ranges at the AP thresholds, where they were matched along
            (:func:`vocmatch.evaluation.range_flags.scan_ranges`); else None.
    """

    scan: PairScan
    matching: Matching
    ranking: ClassRanking
    range_flags: tuple[FlagArray, FlagArray] | None = None


@dataclass(frozen=True, slots=True)
class Areas:
    """Continuous areas (a shape's own region's), as COCO's area ranges read them.

    Attributes:
        gt: ``(G,)`` of the sorted ground truth.
        pred: ``(P,)`` of the kept predictions.
    """

    gt: FloatArray
    pred: FloatArray


@dataclass(frozen=True, slots=True)
class RankingScores:
    """Scores for ranking (``-inf`` for none) of the sorted predictions.

    Attributes:
        kept: ``(P,)`` of the kept ones.
        all: ``(P_all,)`` of every one.
    """

    kept: FloatArray
    all: FloatArray

    @classmethod
    def of(cls, prepared: Prepared) -> RankingScores:
        """The sorted predictions' scores (converted when they were sorted)."""
        pred = prepared.pred
        every = pred.score_all
        return cls(every if pred.rows is pred.rows_all else every[pred.kept], every)


@dataclass(frozen=True, slots=True)
class Counted:
    """The outcome of the kept predictions at the evaluation's IoU threshold.

    Attributes:
        matched: ``(P,)`` matched a ground truth (TP or ignored).
        ignored: ``(P,)`` matched an ignored ground truth.
        counted: ``(P,)`` a TP that counts (at or above its score threshold).
        ignored_counted: ``(P,)`` matched an ignored ground truth and counts.
        missed: ``(T, G)`` ground truth that counts and was not matched, at each threshold.
        passing: ``(P,)`` at or above its class's score threshold; None without thresholds.
        passing_all: ``(P_all,)`` the same of every prediction.
    """

    matched: BoolArray
    ignored: BoolArray
    counted: BoolArray
    ignored_counted: BoolArray
    missed: BoolArray
    passing: BoolArray | None
    passing_all: BoolArray | None

"""Match records: what an evaluation keeps of each image once it is matched, without boxes.

Every per-image number (an :class:`~vocmatch.evaluation.result.ImageResult`) depends on that
image alone, and so does each prediction's matching, at every IoU threshold and in every
COCO area range (pycocotools matches each image-class apart). What crosses images is the
accumulation of each class (AP, the precision/recall curve, pycocotools' numbers), which
reads, of each kept prediction, only its class, score, image and rank, and whether it matched
ground truth that counts or that is ignored. :func:`match_records` matches a set of images
(the engine's stages: select, prepare, pair and match, per-area-range matchings, per image)
and keeps just that; :meth:`MatchRecords.join` puts records of disjoint images together;
:func:`evaluation_of` accumulates them (:mod:`vocmatch.evaluation.accumulate`, the engine's
own functions) into the :class:`~vocmatch.evaluation.result.Evaluation` that
:func:`~vocmatch.evaluation.engine.evaluate_columns` gives on the same images, bit for bit.

Two facts of a run are global and are settled when records are accumulated:

* whether any prediction has a score. With none, predictions are paired highest IoU first
  and nothing is cut by ``max_dets``; with some, those without one rank last. Records of
  images whose predictions all lack a score keep their per-image and per-class counts under
  both readings (their per-prediction records are those of the scored reading).
* the notes: their ingredients (counts, the used class names, each file's count of odd
  values) are kept, and worded once, from the merged counts.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import Curve, average_precision, precision_recall_curve
from vocmatch.core.match import Hits
from vocmatch.core.model import SkippedFile
from vocmatch.core.protocol import Conventions
from vocmatch.errors import InputError
from vocmatch.evaluation import per_image, stages
from vocmatch.evaluation.accumulate import (
    ClassBits,
    ClassCounts,
    class_members,
    class_results,
)
from vocmatch.evaluation.candidates import match_all, match_cells
from vocmatch.evaluation.per_image import PerImageCounts
from vocmatch.evaluation.result import (
    AREA_NAMES,
    COCO_AREAS,
    CocoStats,
    CocoSummary,
    Evaluation,
    ImageResult,
    Match,
    SweepResult,
    case_notes,
    finish,
    odd_value_counts,
    odd_value_notes,
    score_notes,
    shape_notes,
)
from vocmatch.evaluation.stage_inputs import (
    Areas,
    IouLevels,
    Paired,
    Prepared,
    RankingScores,
    Selection,
)
from vocmatch.evaluation.stages import MatchedColumns
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.scan import ColumnSet

__all__ = [
    "Asked",
    "Findings",
    "ImageCounts",
    "MatchRecords",
    "NoteCounts",
    "PredRecords",
    "check_thresholds",
    "evaluation_of",
    "match_records",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: Integers in the narrowest dtype of their role (labels int32, flags :func:`flag_dtype`).
FlagArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]
#: The per-image integers of :class:`ImageCounts`, before the sweep's.
IMAGE_FIELDS = ("gt", "gt_ignored", "pred", "tp", "fp", "fn", "pred_ignored")
#: Bit flags fit in an int64: at most this many IoU thresholds are matched at.
MAX_THRESHOLDS = 63


@dataclass(frozen=True, slots=True)
class ImageCounts:
    """Each image's result as numbers, and each class's counts, under one reading of scores.

    Attributes:
        values: ``(I, 7 + 3 S)`` per image :data:`IMAGE_FIELDS`, then TP, FP and FN at each
            of the protocol's ``S`` sweep thresholds.
        mean_iou: ``(I,)`` the mean IoU of the image's true positives, NaN without any.
        classes: Each class's counts (sums over the images).
    """

    values: IntArray
    mean_iou: FloatArray
    classes: ClassCounts


@dataclass(frozen=True, slots=True)
class PredRecords:
    """Each kept prediction's match record, by (image, class, rank): its rank in its
    image-class is its place in that run.

    Attributes:
        count: ``(I,)`` the records of each image.
        label: ``(P,)`` class index.
        score: ``(P,)`` NaN without a score (float32 when read from a state holding every
            score as one).
        matched: ``(P,)`` bit ``t`` set: matched at the ``t``-th IoU threshold of the
            engine's levels (ascending: the evaluation threshold, the sweep, AP's).
        ignored: ``(P,)`` bit ``t`` set: matched to ignored ground truth there.
        area: ``(P,)`` bit ``a`` set: the area lies in COCO's ``a``-th area range.
        coco_matched: ``(P, A)`` per COCO area range (``A`` = 4 under the ``coco`` summary, else
            0), bit ``t`` set: matched at the ``t``-th AP threshold with the ground truth
            outside the range ignored.
        coco_ignored: ``(P, A)`` likewise, matched to ignored ground truth.
    """

    count: IntArray
    label: FlagArray
    score: npt.NDArray[np.floating[Any]]
    matched: FlagArray
    ignored: FlagArray
    area: FlagArray
    coco_matched: FlagArray
    coco_ignored: FlagArray


@dataclass(frozen=True, slots=True)
class NoteCounts:
    """What the notes of a run are worded from, as counts that add across images.

    Attributes:
        names: The class names used, as read (before any folding), sorted.
        scored: Some prediction has a score.
        preds: Predictions evaluated.
        unscored: Predictions without a score.
        unscored_files: Prediction files holding those.
        odd: Per kind of odd value (:data:`~vocmatch.evaluation.result.ODD_VALUES`), the
            count of each file having any, as ``(path, count)`` sorted by path.
        shapes: Evaluated objects that are a rotated box or a polygon (none in a state file,
            which holds records of plain boxes).
    """

    names: tuple[str, ...]
    scored: bool
    preds: int
    unscored: int
    unscored_files: int
    odd: tuple[tuple[tuple[str, int], ...], ...]
    shapes: int = 0


@dataclass(frozen=True, slots=True)
class MatchRecords:
    """The match records of a set of images (see the module doc).

    Attributes:
        keys: The image keys.
        gt_paths: Each image's ground-truth file.
        pred_paths: Each image's prediction file, None without one.
        class_names: The classes (folded when the run folds case), sorted.
        preds: The kept predictions' records (of the scored reading).
        counts: Per image and per class, when some prediction has a score.
        unscored: Per image and per class when none has (None when some has).
        coco_gt: ``(K, 4)`` each class's ground truth that counts in each COCO area range.
        beyond: Some box's area lies beyond COCO's area "all" (class AP is then computed,
            not read from pycocotools' numbers).
        notes: The notes' ingredients.
        detail: Each image's per-box records (the report's ``ImageResult.matches``), when
            they were asked for; None otherwise (never in a state file).
    """

    keys: tuple[str, ...]
    gt_paths: tuple[str, ...]
    pred_paths: tuple[str | None, ...]
    class_names: tuple[str, ...]
    preds: PredRecords
    counts: ImageCounts
    unscored: ImageCounts | None
    coco_gt: IntArray
    beyond: bool
    notes: NoteCounts
    detail: tuple[tuple[Match, ...], ...] | None = None

    @staticmethod
    def join(parts: Sequence[MatchRecords], conv: Conventions) -> MatchRecords:
        """The records of every part (disjoint images), in part order; classes by name."""
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return _empty(conv)
        names = tuple(sorted({name for p in parts for name in p.class_names}))
        index = {name: k for k, name in enumerate(names)}
        remaps = [np.array([index[n] for n in p.class_names], dtype=np.int64) for p in parts]
        unscored = [p.unscored for p in parts]
        return MatchRecords(
            keys=tuple(k for p in parts for k in p.keys),
            gt_paths=tuple(k for p in parts for k in p.gt_paths),
            pred_paths=tuple(k for p in parts for k in p.pred_paths),
            class_names=names,
            preds=_join_preds([p.preds for p in parts], remaps),
            counts=_join_counts([p.counts for p in parts], remaps, len(names)),
            unscored=(
                None
                if any(u is None for u in unscored)
                else _join_counts([u for u in unscored if u is not None], remaps, len(names))
            ),
            coco_gt=_class_sum([p.coco_gt for p in parts], remaps, len(names)),
            beyond=any(p.beyond for p in parts),
            notes=_join_notes([p.notes for p in parts]),
            detail=_join_detail([p.detail for p in parts]),
        )

    @staticmethod
    def taken_in_key_order(parts: list[MatchRecords], conv: Conventions) -> MatchRecords:
        """What ``join(parts, conv).in_key_order()`` gives, taking the parts out of
        ``parts`` (which it empties): each part's predictions are copied to their places
        and the part let go, so the records are held about once, not three times.
        """
        if len(parts) <= 1:
            return MatchRecords.join(parts[:1] and [parts.pop()], conv).in_key_order()
        # Every per-image and per-class field, in part order (no predictions).
        images = MatchRecords.join(
            [replace(p, preds=_empty_preds(p.preds.count.size, 0)) for p in parts], conv
        )
        index = {name: k for k, name in enumerate(images.class_names)}
        order = sorted(range(len(images.keys)), key=images.keys.__getitem__)
        counts = np.concatenate([p.preds.count for p in parts])
        # Where each image's predictions go: images in key order, each one's together.
        place = np.empty(len(order), dtype=np.int64)
        place[order] = np.arange(len(order))
        out_start = np.concatenate([[0], np.cumsum(counts[order])])[place]
        n_pred = int(counts.sum())
        columns = zip(*(_pred_columns(p.preds)[2:] for p in parts), strict=True)
        preds = PredRecords(
            counts[order],
            np.empty(n_pred, dtype=np.int32),
            *(np.empty((n_pred, *c[0].shape[1:]), dtype=np.result_type(*c)) for c in columns),
        )
        start = 0
        while parts:
            part = parts.pop(0)
            p = part.preds
            n_images = p.count.size
            starts = out_start[start : start + n_images]
            size = int(p.count.sum())
            rows: slice | IntArray
            if n_images and bool((starts[1:] == starts[:-1] + p.count[:-1]).all()):
                rows = slice(int(starts[0]), int(starts[0]) + size)  # images kept together
            else:
                source = np.concatenate([[0], np.cumsum(p.count)[:-1]]).astype(np.int64)
                rows = np.arange(size, dtype=np.int64) + np.repeat(starts - source, p.count)
            remap = np.array([index[n] for n in part.class_names], dtype=np.int32)
            preds.label[rows] = remap[p.label]
            for out, column in zip(_pred_columns(preds)[2:], _pred_columns(p)[2:], strict=True):
                out[rows] = column
            start += n_images
            del part, p, rows
        return replace(images.in_key_order(), preds=preds)

    def in_key_order(self) -> MatchRecords:
        """The same records with the images sorted by key (as a single run lists them)."""
        order = sorted(range(len(self.keys)), key=self.keys.__getitem__)
        if order == list(range(len(self.keys))):
            return self
        rows = _rows(self.preds.count, order)
        p = self.preds
        preds = PredRecords(
            p.count[order], p.label[rows], p.score[rows], p.matched[rows], p.ignored[rows],
            p.area[rows], np.take(p.coco_matched, rows, axis=0),
            np.take(p.coco_ignored, rows, axis=0),
        )  # fmt: skip
        return replace(
            self,
            keys=tuple(self.keys[i] for i in order),
            gt_paths=tuple(self.gt_paths[i] for i in order),
            pred_paths=tuple(self.pred_paths[i] for i in order),
            preds=preds,
            counts=_counts_of_images(self.counts, order),
            unscored=None if self.unscored is None else _counts_of_images(self.unscored, order),
            detail=None if self.detail is None else tuple(self.detail[i] for i in order),
        )


@dataclass(frozen=True, slots=True)
class Asked:
    """What :func:`match_records` is asked for beyond the records themselves.

    Attributes:
        whole_run: The records are the whole run, never joined with others': only the run's
            own reading of scores is kept (see the module doc), and a score threshold without
            scored predictions is refused before matching.
        detail: Keep each image's per-box records (:attr:`MatchRecords.detail`).
        stage: Told each stage as it starts, by name.
        matched: Given the :class:`~vocmatch.evaluation.stages.MatchedColumns` of the
            images' own reading of scores, once they are matched.
    """

    whole_run: bool = False
    detail: bool = False
    stage: Callable[[str], None] | None = None
    matched: Callable[[MatchedColumns], None] | None = None


def match_records(
    gt: ColumnSet,
    pred: ColumnSet,
    conv: Conventions,
    *,
    fold_case: bool = False,
    score_thresholds: ScoreThresholds | None = None,
    asked: Asked = Asked(),
) -> MatchRecords:
    """Match every image of the column sets and keep their records (the stages up to the
    per-image results; see the module doc).

    Args:
        gt: Ground-truth columns.
        pred: Prediction columns of the same images.
        conv: The protocol.
        fold_case: Lower-case every class name before matching.
        score_thresholds: Count only predictions at or above their class's threshold.
        asked: What is wanted beyond the records.

    Returns:
        The records, images in the order of ``gt``.

    Raises:
        InputError: The protocol matches at more than :data:`MAX_THRESHOLDS` thresholds; a
            score threshold is given for a whole run without scored predictions.
    """
    stage = asked.stage or _no_stage
    stage("selecting boxes")
    levels = IouLevels.of(conv)
    if levels.thresholds.size > MAX_THRESHOLDS or len(conv.ap_thresholds) > MAX_THRESHOLDS:
        raise InputError(f"match records hold at most {MAX_THRESHOLDS} IoU thresholds")
    used = {*gt.label_names, *pred.label_names}
    if fold_case:
        gt, pred = stages.fold_columns(gt), stages.fold_columns(pred)
        score_thresholds = score_thresholds.folded() if score_thresholds else score_thresholds
    selection = stages.select_images(gt, pred)
    if asked.whole_run:
        check_thresholds(score_thresholds, selection.scored, int(selection.pred_rows.size))
    notes = _note_counts(gt, pred, selection, tuple(sorted(used)))
    # Unscored images, unless they are the whole run, are read both ways: the scored
    # reading's predictions are kept, and the unscored one's counts and asked-for parts.
    both = not selection.scored and not asked.whole_run
    first = _reading(gt, pred, replace(selection, scored=True) if both else selection, conv,
                     score_thresholds, Asked() if both else asked)  # fmt: skip
    second = _reading(gt, pred, selection, conv, score_thresholds, asked) if both else None
    return MatchRecords(
        keys=tuple(gt.keys[i] for i in selection.images),
        gt_paths=tuple(gt.paths[i] for i in selection.images),
        pred_paths=tuple(None if q is None else pred.paths[q] for q in selection.pred_of_image),
        class_names=first.class_names,
        preds=first.preds,
        counts=first.counts,
        unscored=None if second is None else second.counts,
        coco_gt=first.coco_gt,
        beyond=first.beyond,
        notes=notes,
        detail=(second or first).detail,
    )


def _no_stage(name: str) -> None:
    """Told a stage's name when nobody asked to be."""


def check_thresholds(thresholds: ScoreThresholds | None, scored: bool, n_pred: int) -> None:
    """Refuse score thresholds over predictions none of which has a score.

    Raises:
        InputError: A threshold is set, there are predictions, and none has a score.
    """
    if thresholds and not scored and n_pred:
        raise InputError(
            f"a score threshold ({thresholds.describe()}) needs scored predictions, "
            "and none of the predictions has a <score> or <confidence>"
        )


@dataclass(frozen=True, slots=True)
class _Reading:
    """The records of one reading of scores (see :func:`_reading`)."""

    class_names: tuple[str, ...]
    preds: PredRecords
    counts: ImageCounts
    coco_gt: IntArray
    beyond: bool
    detail: tuple[tuple[Match, ...], ...] | None


def _reading(
    gt: ColumnSet,
    pred: ColumnSet,
    selection: Selection,
    conv: Conventions,
    score_thresholds: ScoreThresholds | None,
    asked: Asked,
) -> _Reading:
    """The stages under one reading of scores (``selection.scored``)."""
    stage = asked.stage or _no_stage
    stage("sorting boxes")
    prepared, by_score = stages.prepare_cells(gt, pred, selection, conv, score_thresholds)
    stage("pairing boxes")
    paired = stages.pair_and_match(prepared, by_score, stage)
    del by_score
    areas = Areas(*paired.scan.space.region_areas())
    # Without scores nothing is ranked: a whole run then reads no area range's matching.
    flags = _area_flags(prepared, paired, areas, stage, prepared.scored or not asked.whole_run)
    scores = RankingScores.of(prepared)
    if asked.matched is not None:
        asked.matched(stages.matched_columns(prepared, selection, paired, areas, scores))
    counted = stages.count_outcomes(prepared, paired.matching, scores)
    n_images = len(selection.images)
    image_counts = per_image.per_image_counts(prepared, paired.matching, counted, n_images)
    stage("per-image results")
    counts = ImageCounts(
        _image_values(prepared, image_counts, n_images),
        _mean_iou(image_counts),
        stages.class_counts(prepared, counted),
    )
    detail = None
    if asked.detail:
        detail = tuple(per_image.per_box_matches(prepared, paired, counted, n_images))
    preds = _pred_records(prepared, paired, scores, flags, n_images)
    high = COCO_AREAS[0][1]
    beyond = bool((areas.gt > high).any() or (areas.pred > high).any())
    return _Reading(prepared.class_names, preds, counts, flags.gt_counting, beyond, detail)


@dataclass(frozen=True, slots=True)
class _AreaFlags:
    """The kept predictions in COCO's area ranges.

    Attributes:
        inside: ``(P,)`` bit ``a`` set: the area lies in range ``a``.
        matched: ``(P, A)`` per range (none without the ``coco`` summary), bit ``t`` set: matched
            at the ``t``-th AP threshold, the ground truth outside the range ignored.
        ignored: ``(P, A)`` likewise, matched to ignored ground truth.
        gt_counting: ``(K, 4)`` each class's ground truth that counts in each range.
    """

    inside: FlagArray
    matched: FlagArray
    ignored: FlagArray
    gt_counting: IntArray


def _area_flags(
    prepared: Prepared, paired: Paired, areas: Areas, stage: Callable[[str], None], match: bool
) -> _AreaFlags:
    """Each area range matched again (unless not ``match``: no prediction then has a flag),
    as pycocotools matches it, with the ground truth outside the range ignored."""
    conv, gt, pred = prepared.conventions, prepared.gt, prepared.pred
    n_pred = pred.label.size
    inside = np.zeros(n_pred, dtype=np.uint8)
    for a, (low, high) in enumerate(COCO_AREAS):
        inside |= ((areas.pred >= low) & (areas.pred <= high)).astype(np.uint8) << a
    n_areas = len(COCO_AREAS) if conv.summary == "coco" else 0
    n_ap = len(conv.ap_thresholds)
    matched = np.zeros((n_pred, n_areas), dtype=flag_dtype(n_ap))
    ignored = np.zeros((n_pred, n_areas), dtype=flag_dtype(n_ap))
    gt_counting = np.zeros((len(prepared.class_names), len(COCO_AREAS)), dtype=np.int64)
    own = _ap_places(prepared)
    for a in range(n_areas):
        stage(f"COCO area {AREA_NAMES[a]}")
        low, high = COCO_AREAS[a]
        ignore = gt.ignore | (areas.gt < low) | (areas.gt > high)
        gt_counting[:, a] = np.bincount(gt.label[~ignore], minlength=gt_counting.shape[0])
        if not match:
            continue
        found = _range_hits(prepared, paired, ignore, own)
        hit_pred, hit_t, hit_gt = found.pred, found.level, found.gt
        hit_ignored = ignore[hit_gt]
        matched[:, a] = _bits(hit_pred, hit_t, n_pred, n_ap)
        ignored[:, a] = _bits(hit_pred[hit_ignored], hit_t[hit_ignored], n_pred, n_ap)
    return _AreaFlags(inside, matched, ignored, gt_counting)


def _range_hits(
    prepared: Prepared, paired: Paired, ignore: BoolArray, own: IntArray | None
) -> Hits:
    """The matching of one area range at the AP thresholds (``ignore``: the ground truth
    it ignores), as :func:`match_all` gives it.

    The evaluation's own matching (``own``: see :func:`_ap_places`) stands for it in every
    image-class where the range ignores the same ground truth. Under the unmatched rule it
    also stands where each of the two ignores all or none of the image-class's ground truth:
    a prediction prefers ground truth that counts only over ignored ground truth of its
    image-class. Only the other image-classes are matched again.
    """
    conv, gt, pred = prepared.conventions, prepared.gt, prepared.pred
    thresholds = np.asarray(conv.ap_thresholds, dtype=np.float64)
    unmatched = conv.match_rule == "unmatched"
    again = None
    if own is not None:
        cell = gt.image.astype(np.int64) * len(prepared.class_names) + gt.label
        again = _cells_again(cell, ignore, gt.ignore, uniform_alike=unmatched)
    if own is None or again is None or (again.any() and not unmatched):
        found = match_all(
            paired.scan, pred.rank, ignore, gt.crowd, thresholds, conv.match_rule,
            conv.strict_threshold, prepared.scored,
        )  # fmt: skip
        return Hits(found.hit_t, found.hit_pred, found.hit_gt, found.hit_iou)
    m = paired.matching
    hit_t = own[m.hit_t]
    kept = (hit_t >= 0) & ~again[m.hit_gt]
    reused = Hits(hit_t[kept], m.hit_pred[kept], m.hit_gt[kept], m.hit_iou[kept])
    if not again.any():
        return reused
    matched = match_cells(
        paired.scan, pred.rank, ignore, gt.crowd, thresholds, conv.strict_threshold, again
    )
    return Hits.join([reused, matched])


def _cells_again(
    cell: IntArray, ignore: BoolArray, own_ignore: BoolArray, *, uniform_alike: bool
) -> BoolArray:
    """``(G,)`` the ground truth of the image-classes (``cell``) where ``ignore`` and
    ``own_ignore`` differ; with ``uniform_alike``, not where each is all or none of the
    image-class."""
    differs: BoolArray = np.not_equal(ignore, own_ignore)
    if not differs.any():
        return differs
    _, inverse, size = np.unique(cell, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    again = np.bincount(inverse, differs, minlength=size.size) > 0
    if uniform_alike:
        in_range = np.bincount(inverse, ignore, minlength=size.size)
        in_own = np.bincount(inverse, own_ignore, minlength=size.size)
        uniform = ((in_range == 0) | (in_range == size)) & ((in_own == 0) | (in_own == size))
        again &= ~uniform
    flags: BoolArray = again[inverse]
    return flags


def _ap_places(prepared: Prepared) -> IntArray | None:
    """``(L,)`` the place among the AP thresholds of each threshold the evaluation matched
    at (-1 for none), when its matching of ranked predictions can stand for a range's."""
    conv = prepared.conventions
    levels = prepared.levels
    if not prepared.scored or len(set(conv.ap_thresholds)) != len(conv.ap_thresholds):
        return None
    places = np.full(levels.thresholds.size, -1, dtype=np.int64)
    for t, threshold in enumerate(conv.ap_thresholds):
        places[levels.index[threshold]] = t
    return places


def _pred_records(
    prepared: Prepared,
    paired: Paired,
    scores: RankingScores,
    flags: _AreaFlags,
    n_images: int,
) -> PredRecords:
    """The kept predictions' records."""
    gt, pred, m = prepared.gt, prepared.pred, paired.matching
    n_pred = pred.label.size
    n_levels = IouLevels.of(prepared.conventions).thresholds.size
    ignored_hit = gt.ignore[m.hit_gt]
    return PredRecords(
        count=np.bincount(pred.image, minlength=n_images).astype(np.int64),
        label=pred.label.astype(np.int32),
        score=np.where(np.isneginf(scores.kept), math.nan, scores.kept),
        matched=_bits(m.hit_pred, m.hit_t, n_pred, n_levels),
        ignored=_bits(m.hit_pred[ignored_hit], m.hit_t[ignored_hit], n_pred, n_levels),
        area=flags.inside,
        coco_matched=flags.matched,
        coco_ignored=flags.ignored,
    )


def _bits(pred: npt.NDArray[Any], level: npt.NDArray[Any], n_pred: int, n_bits: int) -> FlagArray:
    """``(P,)`` bit ``t`` set where a prediction has a pair at threshold ``t`` (of
    ``n_bits``), in :func:`flag_dtype`."""
    bits = np.zeros(n_pred, dtype=flag_dtype(n_bits))
    # One threshold at a time (a prediction twice there sets the same bit).
    for t in np.unique(level).tolist():
        bits[pred[level == t]] |= bits.dtype.type(1 << t)
    return bits


def flag_dtype(n_bits: int) -> np.dtype[Any]:
    """The dtype records keep ``n_bits`` flags in: the narrowest that holds them, the same
    for every part of a run (records are most of an evaluator's memory)."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if n_bits <= np.iinfo(dtype).bits:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def _image_values(prepared: Prepared, counts: PerImageCounts, n_images: int) -> IntArray:
    """``(I, 7 + 3 S)`` each image's :data:`IMAGE_FIELDS`, then its sweep's counts (what its
    :class:`~vocmatch.evaluation.result.ImageResult` holds), from the stage's counts."""
    t, levels = prepared.levels.evaluation, prepared.levels.index
    columns = [
        counts.gt, counts.gt_ignored, counts.pred, counts.tp[t], counts.fp[t], counts.fn[t],
        counts.pred_ignored,
    ]  # fmt: skip
    for threshold in prepared.conventions.sweep_thresholds:
        level = levels[threshold]
        columns += [counts.tp[level], counts.fp[level], counts.fn[level]]
    values = np.array(columns, dtype=np.int64).reshape(len(columns), n_images)
    return np.ascontiguousarray(values.T)


def _mean_iou(counts: PerImageCounts) -> FloatArray:
    """``(I,)`` the mean IoU of each image's true positives (as its ``ImageResult`` has
    it), NaN without any."""
    ious, bounds = counts.tp_iou, counts.tp_bounds
    return np.array(
        [
            math.fsum(ious[start:stop]) / (stop - start) if stop > start else math.nan
            for start, stop in itertools.pairwise(bounds)
        ],
        dtype=np.float64,
    )


def _note_counts(
    gt: ColumnSet, pred: ColumnSet, selection: Selection, names: tuple[str, ...]
) -> NoteCounts:
    """The notes' ingredients of the selected images."""
    gt_rows, pred_rows = selection.gt_rows, selection.pred_rows
    unscored_rows = pred_rows[np.isnan(pred.scores[pred_rows])]
    gt_odd = gt_rows[stages.suspicious_boxes(gt.boxes, None)[gt_rows]]
    pred_odd = pred_rows[stages.suspicious_boxes(pred.boxes, pred.scores)[pred_rows]]
    odd = odd_value_counts(
        [*gt.paths, *pred.paths],
        np.concatenate([gt.image[gt_odd], len(gt.paths) + pred.image[pred_odd]]),
        np.concatenate([gt.boxes[gt_odd], pred.boxes[pred_odd]]),
        np.concatenate([np.full(gt_odd.size, np.nan), pred.scores[pred_odd]]),
    )
    return NoteCounts(
        names=names,
        scored=selection.scored,
        preds=int(pred_rows.size),
        unscored=int(unscored_rows.size),
        unscored_files=stages.distinct_count(pred.image[unscored_rows]),
        odd=tuple(tuple(sorted(per_file.items())) for per_file in odd),
        shapes=_shapes_evaluated(gt, pred, selection),
    )


def _shapes_evaluated(gt: ColumnSet, pred: ColumnSet, selection: Selection) -> int:
    """Rotated boxes and polygons among the evaluated boxes."""
    gt_evaluated = np.zeros(gt.image.size, dtype=bool)
    gt_evaluated[selection.gt_rows] = True
    pred_evaluated = np.zeros(pred.image.size, dtype=bool)
    pred_evaluated[selection.pred_rows] = True
    return sum(1 for row, _ in gt.shapes if gt_evaluated[row]) + sum(
        1 for row, _ in pred.shapes if pred_evaluated[row]
    )


@dataclass(frozen=True, slots=True)
class Findings:
    """What the reading of the files found, reported with the evaluation.

    Attributes:
        skipped: Files that could not be read.
        orphan_pred: Prediction files without ground truth (not evaluated).
        notes: The reader's notes, first among the notes.
    """

    skipped: tuple[SkippedFile, ...] = ()
    orphan_pred: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def evaluation_of(
    records: MatchRecords,
    conv: Conventions,
    *,
    fold_case: bool = False,
    score_thresholds: ScoreThresholds | None = None,
    findings: Findings | None = None,
) -> Evaluation:
    """The evaluation of the records' images: what
    :func:`~vocmatch.evaluation.engine.evaluate_columns` gives on them with
    ``keep_matches=False``.

    Args:
        records: Match records (of one set of images, or joined).
        conv: The protocol they were matched under.
        fold_case: The class names were folded (for the notes).
        score_thresholds: The score thresholds they were counted under.
        findings: What the reading of the files found (none by default).

    Raises:
        InputError: A score threshold is set and no prediction has a score.
    """
    records = records.in_key_order()
    notes_in = records.notes
    scored = notes_in.scored
    check_thresholds(score_thresholds, scored, notes_in.preds)
    counts = records.counts if scored or records.unscored is None else records.unscored
    n_class_gt: list[int] = counts.classes.gt.tolist()
    # Without scores nothing is ranked: no curve, no AP.
    done = _Accumulated([None] * len(n_class_gt), [[] for _ in n_class_gt], None)
    if scored:
        done = _accumulated(records, conv, n_class_gt)
    classes = class_results(
        conv, records.class_names, counts.classes, done.curves, done.ap_values, scored
    )
    coco = done.coco
    findings = findings or Findings()
    notes = [
        *findings.notes,
        *score_notes(scored, notes_in.unscored, notes_in.preds > 0, files=notes_in.unscored_files),
        *odd_value_notes([dict(kind) for kind in notes_in.odd]),
        *case_notes(notes_in.names, fold_case),
        *shape_notes(notes_in.shapes, conv),
    ]
    missing = tuple(k for k, p in zip(records.keys, records.pred_paths, strict=True) if p is None)
    skipped = tuple(sorted(findings.skipped, key=lambda s: (s.path, s.line or 0)))
    return finish(
        conv, _image_results(records, counts, conv), classes, coco, skipped, missing,
        findings.orphan_pred, notes,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Accumulated:
    """Each class's curve and AP values, and pycocotools' 12 numbers (None outside
    the ``coco`` summary)."""

    curves: list[Curve | None]
    ap_values: list[list[float]]
    coco: CocoStats | None


def _accumulated(
    records: MatchRecords, conv: Conventions, n_class_gt: Sequence[int]
) -> _Accumulated:
    """Each class's curve and AP and pycocotools' 12 numbers, one class at a time: only the
    order of the predictions by class is as long as all of them, every other array is one
    class's."""
    curves: list[Curve | None] = []
    ap_values: list[list[float]] = [[] for _ in n_class_gt]
    preds = records.preds
    levels = IouLevels.of(conv)
    n_t = len(conv.ap_thresholds)
    summary = CocoSummary(np.asarray(conv.ap_thresholds, dtype=np.float64))
    reusable = conv.summary == "coco" and _class_ap_reusable(conv, records.beyond)
    eps = float(np.spacing(1)) if conv.interpolation == "101-point" else None
    order, starts = class_members(preds.label, len(records.class_names))
    image_ends = np.cumsum(preds.count)
    for k in range(len(records.class_names)):
        bits = _class_bits(preds, order[starts[k] : starts[k + 1]], image_ends)
        coco_ap = None
        if conv.summary == "coco":
            # pycocotools adds class by class to each area's numbers: class order is kept.
            for a in range(len(COCO_AREAS)):
                n_gt = int(records.coco_gt[k, a])
                if n_gt == 0:
                    continue
                precision, recall = bits.coco_area(a, n_gt, n_t)
                summary.add(a, precision, recall)
                if a == 0:
                    coco_ap = [float(np.mean(precision[t, :, 2])) for t in range(n_t)]
        if n_class_gt[k] > 0:
            if reusable and coco_ap is not None:
                ap_values[k] = coco_ap
            else:
                for threshold in conv.ap_thresholds:
                    tp, score = bits.curve_input(levels.index[threshold])
                    c = precision_recall_curve(tp, score, n_class_gt[k], eps=eps)
                    ap = average_precision(c.recall, c.precision, conv.interpolation)
                    ap_values[k].append(ap)
        curves.append(precision_recall_curve(*bits.curve_input(levels.evaluation), n_class_gt[k]))
    return _Accumulated(curves, ap_values, summary.stats() if conv.summary == "coco" else None)


def _class_bits(preds: PredRecords, members: FlagArray, image_ends: IntArray) -> ClassBits:
    """A class's predictions (``members``, in (image, rank) order) in its ranking: stable,
    by descending score, a prediction without a score last."""
    image = np.searchsorted(image_ends, members, side="right")
    # A prediction's rank: its place in its image-class's run.
    run = np.flatnonzero(np.append(True, image[1:] != image[:-1])) if image.size else image
    rank = np.arange(image.size) - np.repeat(run, np.diff(np.append(run, image.size)))
    score = np.asarray(preds.score[members], dtype=np.float64)  # a copy, float32 or not
    score[np.isnan(score)] = -math.inf
    by_score = np.argsort(-score, kind="stable")
    ranked = members[by_score]
    # np.take: rows of the (P, A) flags, many times faster than indexing them with an array.
    return ClassBits(
        score[by_score], rank[by_score], preds.matched[ranked], preds.ignored[ranked],
        preds.area[ranked], np.take(preds.coco_matched, ranked, axis=0),
        np.take(preds.coco_ignored, ranked, axis=0),
    )  # fmt: skip


def _class_ap_reusable(conv: Conventions, beyond: bool) -> bool:
    """As the engine's ``_coco_class_ap_reusable``: class AP is pycocotools' area "all" entry
    when no box leaves that range."""
    return (
        conv.interpolation == "101-point"
        and (conv.max_dets is None or conv.max_dets <= 100)
        and not beyond
    )


def _image_results(
    records: MatchRecords, counts: ImageCounts, conv: Conventions
) -> list[ImageResult]:
    values: list[list[int]] = counts.values.tolist()
    mean_iou: list[float] = counts.mean_iou.tolist()
    n = len(IMAGE_FIELDS)
    results = []
    # Sweeps repeat (small counts): equal ones share one frozen record.
    sweeps: dict[tuple[int, ...], tuple[SweepResult, ...]] = {}
    detail = records.detail
    for j, key in enumerate(records.keys):
        row = values[j]
        counted = tuple(row[n:])
        sweep = sweeps.get(counted)
        if sweep is None:
            sweep = sweeps[counted] = tuple(
                SweepResult(threshold, *counted[3 * s : 3 * s + 3])
                for s, threshold in enumerate(conv.sweep_thresholds)
            )
        results.append(
            ImageResult(
                key=key, gt_path=records.gt_paths[j], pred_path=records.pred_paths[j],
                gt=row[0], gt_ignored=row[1], pred=row[2], tp=row[3], fp=row[4], fn=row[5],
                mean_iou=None if math.isnan(mean_iou[j]) else mean_iou[j], sweep=sweep,
                matches=() if detail is None else detail[j], pred_ignored=row[6],
            )
        )  # fmt: skip
    return results


def _rows(counts: IntArray, order: Sequence[int]) -> IntArray:
    """The rows of the images in ``order``, each image's together."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    taken = counts[list(order)]
    shift = np.repeat(starts[list(order)] - (np.cumsum(taken) - taken), taken)
    rows: IntArray = np.arange(int(taken.sum()), dtype=np.int64) + shift
    return rows


def _counts_of_images(counts: ImageCounts, order: Sequence[int]) -> ImageCounts:
    return ImageCounts(counts.values[list(order)], counts.mean_iou[list(order)], counts.classes)


def _class_sum(parts: Sequence[npt.NDArray[Any]], remaps: Sequence[IntArray], n_k: int) -> IntArray:
    """Per-class arrays of parts added into the joined classes."""
    width = parts[0].shape[1] if parts[0].ndim == 2 else 0
    total = np.zeros((n_k, width), dtype=np.int64)
    for values, remap in zip(parts, remaps, strict=True):
        np.add.at(total, remap, values.reshape(remap.size, width))
    return total


def _join_counts(parts: Sequence[ImageCounts], remaps: Sequence[IntArray], n_k: int) -> ImageCounts:
    classes = _class_sum([p.classes.stacked() for p in parts], remaps, n_k)
    return ImageCounts(
        np.concatenate([p.values for p in parts]),
        np.concatenate([p.mean_iou for p in parts]),
        ClassCounts.of_stacked(classes),
    )


def _join_preds(parts: Sequence[PredRecords], remaps: Sequence[IntArray]) -> PredRecords:
    return PredRecords(
        count=np.concatenate([p.count for p in parts]),
        label=np.concatenate(
            [r[p.label].astype(np.int32) for p, r in zip(parts, remaps, strict=True)]
        ),
        score=np.concatenate([p.score for p in parts]),
        matched=np.concatenate([p.matched for p in parts]),
        ignored=np.concatenate([p.ignored for p in parts]),
        area=np.concatenate([p.area for p in parts]),
        coco_matched=np.concatenate([p.coco_matched for p in parts]),
        coco_ignored=np.concatenate([p.coco_ignored for p in parts]),
    )


def _pred_columns(preds: PredRecords) -> tuple[npt.NDArray[Any], ...]:
    """The per-prediction columns of ``preds``, in field order (``count`` first)."""
    return (
        preds.count, preds.label, preds.score, preds.matched, preds.ignored, preds.area,
        preds.coco_matched, preds.coco_ignored,
    )  # fmt: skip


def _join_notes(parts: Sequence[NoteCounts]) -> NoteCounts:
    odd: list[dict[str, int]] = [{} for _ in parts[0].odd]
    for part in parts:
        for per_file, found in zip(odd, part.odd, strict=True):
            for path, count in found:
                per_file[path] = per_file.get(path, 0) + count
    return NoteCounts(
        names=tuple(sorted({n for p in parts for n in p.names})),
        scored=any(p.scored for p in parts),
        preds=sum(p.preds for p in parts),
        unscored=sum(p.unscored for p in parts),
        unscored_files=sum(p.unscored_files for p in parts),
        odd=tuple(tuple(sorted(per_file.items())) for per_file in odd),
        shapes=sum(p.shapes for p in parts),
    )


def _join_detail(
    parts: Sequence[tuple[tuple[Match, ...], ...] | None],
) -> tuple[tuple[Match, ...], ...] | None:
    """Every part's per-box records in part order; None unless every part kept them."""
    if any(p is None for p in parts):
        return None
    return tuple(d for p in parts if p is not None for d in p)


def _empty_preds(n_images: int, n_areas: int) -> PredRecords:
    none = np.zeros(0, dtype=np.int64)
    return PredRecords(
        np.zeros(n_images, dtype=np.int64), none, np.zeros(0), none, none, none,
        np.zeros((0, n_areas), dtype=np.int64), np.zeros((0, n_areas), dtype=np.int64),
    )  # fmt: skip


def _empty(conv: Conventions) -> MatchRecords:
    """The records of no image."""
    width = len(IMAGE_FIELDS) + 3 * len(conv.sweep_thresholds)
    none = np.zeros(0, dtype=np.int64)
    counts = ImageCounts(
        np.zeros((0, width), dtype=np.int64), np.zeros(0), ClassCounts(*([none] * 7))
    )
    return MatchRecords(
        keys=(),
        gt_paths=(),
        pred_paths=(),
        class_names=(),
        preds=_empty_preds(0, len(COCO_AREAS) if conv.summary == "coco" else 0),
        counts=counts,
        unscored=counts,
        coco_gt=np.zeros((0, len(COCO_AREAS)), dtype=np.int64),
        beyond=False,
        notes=NoteCounts((), False, 0, 0, 0, ((), (), ())),
    )

"""Matching a set of images into match records (:mod:`vocmatch.evaluation.records`): the
stages of :mod:`vocmatch.evaluation.stages` up to the per-image counts, then what records keep
of them (each kept prediction's match flags at every IoU threshold and COCO area range, the
per-image and per-class counts, the notes' ingredients, and what a request asks for beyond
them: per-box records, the matching's arrays, progress).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core import match_kernels
from vocmatch.core.match import Hits
from vocmatch.core.preparation import Preparation
from vocmatch.core.protocol import Conventions
from vocmatch.core.run_means import run_means
from vocmatch.errors import InputError
from vocmatch.evaluation import per_image, stages
from vocmatch.evaluation.candidates import match_all, match_cells
from vocmatch.evaluation.pair_space import PairSpace
from vocmatch.evaluation.per_image import PerImageCounts
from vocmatch.evaluation.records import (
    MAX_THRESHOLDS,
    FlagArray,
    GtCells,
    ImageCounts,
    MatchRecords,
    NoteCounts,
    PredRecords,
    Ranked,
    check_thresholds,
    flag_dtype,
)
from vocmatch.evaluation.result import (
    AREA_NAMES,
    COCO_AREAS,
    odd_value_counts,
)
from vocmatch.evaluation.stage_inputs import (
    Areas,
    Counted,
    IouLevels,
    Paired,
    Prepared,
    RankingScores,
    Selection,
)
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.scan import ColumnSet

if TYPE_CHECKING:  # imported where slices, calibration inputs, arrays or boxes are asked for
    from vocmatch.evaluation.box_outcomes import Match
    from vocmatch.evaluation.calibration_inputs import CalibrationInputs
    from vocmatch.evaluation.matched import MatchedColumns
    from vocmatch.evaluation.slice_records import SliceRecords, SliceSpec

__all__ = ["Asked", "match_records"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Asked:
    """What :func:`match_records` is asked for beyond the records themselves.

    Attributes:
        whole_run: The records are the whole run, never joined with others': only the run's
            own reading of scores is kept (see the module doc), and a score threshold without
            scored predictions is refused before matching.
        detail: Keep each image's per-box records (:attr:`MatchRecords.detail`).
        stage: Told each stage as it starts, by name.
        matched: Given the :class:`~vocmatch.evaluation.matched.MatchedColumns` of the
            images' own reading of scores, once they are matched.
        slices: Match each value of these slices too
            (:class:`~vocmatch.evaluation.slice_records.SliceRecords`).
        calibration: Keep what OCE and D-ECE read (:attr:`MatchRecords.calibration`): each
            object's IoU with the predictions of every class of its image, which costs.
        ranked: Keep the classes' rankings (:attr:`MatchRecords.ranked`) of images with a
            score although the records are to be joined: records that all keep theirs
            are joined with their rankings merged, not ranked again
            (:meth:`MatchRecords.taken_in_key_order`).
        orphans: Given the paths of the prediction files without ground truth
            (:attr:`~vocmatch.evaluation.stage_inputs.Selection.orphan`) once the images are
            selected, so that they are found once.
    """

    whole_run: bool = False
    detail: bool = False
    stage: Callable[[str], None] | None = None
    matched: Callable[[MatchedColumns], None] | None = None
    slices: tuple[SliceSpec, ...] = ()
    calibration: bool = False
    ranked: bool = False
    orphans: Callable[[tuple[str, ...]], None] | None = None


def match_records(
    gt: ColumnSet,
    pred: ColumnSet,
    conv: Conventions,
    *,
    fold_case: bool = False,
    score_thresholds: ScoreThresholds | None = None,
    asked: Asked = Asked(),
    preparation: Preparation | None = None,
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
        preparation: Prepare each image's predictions first (the score pre-filter, NMS, the
            cap per image; :mod:`vocmatch.evaluation.preparation`), the records counting
            what it removed.

    Returns:
        The records, images in the order of ``gt``.

    Raises:
        InputError: The protocol matches at more than :data:`MAX_THRESHOLDS` thresholds; a
            score threshold is given for a whole run without scored predictions; the
            preparation meets a prediction without a score, or NMS a rotated box or polygon.
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
    removed = None
    if preparation is not None and preparation.active:
        from vocmatch.evaluation.preparation import prepare_columns

        pred, removed = prepare_columns(pred, preparation)
    selection = stages.select_images(gt, pred, drop_difficult=conv.difficult == "drop")
    if asked.orphans is not None:
        asked.orphans(selection.orphan)
    if asked.whole_run:
        check_thresholds(score_thresholds, selection.scored, int(selection.pred_rows.size))
    notes = _note_counts(gt, pred, selection, tuple(sorted(used)))
    # Unscored images, unless they are the whole run, are read both ways: the scored
    # reading's predictions are kept, and the unscored one's counts and asked-for parts.
    both = not selection.scored and not asked.whole_run
    scored = selection.scored
    if len(selection.images) == len(gt.keys):  # every file's image (they are in order)
        keys, gt_paths = gt.keys, gt.paths
    else:
        keys = tuple(map(gt.keys.__getitem__, selection.images))
        gt_paths = tuple(map(gt.paths.__getitem__, selection.images))
    pred_paths = tuple(None if q is None else pred.paths[q] for q in selection.pred_of_image)
    second = None
    if both:
        first = _reading(gt, pred, [replace(selection, scored=True)], conv, score_thresholds,
                         Asked(slices=asked.slices, calibration=asked.calibration))  # fmt: skip
        second = _reading(gt, pred, [selection], conv, score_thresholds, asked)
    else:
        # Handed over: the reading lets the selection's row arrays go once they are sorted.
        handed = [selection]
        del selection
        first = _reading(gt, pred, handed, conv, score_thresholds, asked)
    return MatchRecords(
        keys=keys,
        gt_paths=gt_paths,
        pred_paths=pred_paths,
        class_names=first.class_names,
        preds=first.preds,
        counts=first.counts,
        unscored=None if second is None else second.counts,
        coco_gt=first.coco_gt,
        beyond=first.beyond,
        notes=notes,
        detail=(second or first).detail,
        gt_cells=first.gt_cells,
        ranked=first.ranked if (asked.whole_run or asked.ranked) and scored else None,
        slices=_with_unscored(first.slices, None if second is None else second.slices),
        calibration=first.calibration,
        removed=removed,
    )


def _with_unscored(first: SliceRecords | None, second: SliceRecords | None) -> SliceRecords | None:
    """The slices' records of the scored reading, with the unscored reading's counts."""
    if first is None or second is None:
        return first
    return replace(first, unscored=second.counts)


def _no_stage(name: str) -> None:
    """Told a stage's name when nobody asked to be."""


@dataclass(frozen=True, slots=True)
class _Reading:
    """The records of one reading of scores (see :func:`_reading`)."""

    class_names: tuple[str, ...]
    preds: PredRecords
    counts: ImageCounts
    coco_gt: IntArray
    beyond: bool
    detail: tuple[tuple[Match, ...], ...] | None
    ranked: Ranked
    gt_cells: GtCells
    slices: SliceRecords | None
    calibration: CalibrationInputs | None


def _reading(
    gt: ColumnSet,
    pred: ColumnSet,
    handed: list[Selection],
    conv: Conventions,
    score_thresholds: ScoreThresholds | None,
    asked: Asked,
) -> _Reading:
    """The stages under one reading of scores (the selection's ``scored``); ``handed``
    holds the selection, which is taken out of it."""
    stage = asked.stage or _no_stage
    stage("sorting boxes")
    selection = handed.pop()
    prepared, by_score = stages.prepare_cells(gt, pred, selection, conv, score_thresholds)
    # The sorted predictions hold rows and images from here on (as int32): the selection's
    # int64 copies, the size of the predictions, are let go (new empty arrays: an empty
    # slice would be a view holding the whole buffer).
    selection = replace(
        selection,
        pred_rows=np.zeros(0, dtype=selection.pred_rows.dtype),
        pred_image=np.zeros(0, dtype=selection.pred_image.dtype),
    )
    stage("pairing boxes")
    # Without scores nothing is ranked: a whole run then reads no area range's matching.
    match = prepared.scored or not asked.whole_run
    paired = stages.pair_and_match(prepared, by_score, stage, _scan_ranges(prepared, match))
    del by_score
    areas = Areas(*paired.scan.space.region_areas())
    flags = _area_flags(prepared, paired, areas, stage, match)
    scores = RankingScores.of(prepared)
    if asked.matched is not None:
        from vocmatch.evaluation.matched import matched_columns

        asked.matched(matched_columns(prepared, paired, areas, scores))
    counted = stages.count_outcomes(prepared, paired.matching, scores)
    inputs = None
    if asked.calibration:
        from vocmatch.evaluation.calibration_inputs import calibration_inputs

        inputs = calibration_inputs(prepared, selection, scores, counted.passing)
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
    ranking = paired.ranking
    ranked = Ranked(tuple(ranking.ranked(k) for k in range(len(prepared.class_names))),
                    prepared.pred.rank)  # fmt: skip
    slices = None
    if asked.slices:
        stage("slices")
        keys = tuple(gt.keys[i] for i in selection.images)
        slices = _slice_records(prepared, paired, areas, keys, counted, asked.slices)
    return _Reading(
        prepared.class_names, preds, counts, flags.gt_counting, beyond, detail, ranked,
        _gt_cells(prepared, areas), slices, inputs,
    )  # fmt: skip


def _slice_records(
    prepared: Prepared,
    paired: Paired,
    areas: Areas,
    keys: tuple[str, ...],
    counted: Counted,
    specs: tuple[SliceSpec, ...],
) -> SliceRecords:
    """Each value of each slice matched as COCO's area ranges are (the ground truth outside
    it ignored), at every IoU threshold the protocol matches at, and counted."""
    from vocmatch.evaluation.slice_records import (
        SLICE_COUNTS,
        SliceInputs,
        SliceRecords,
        memberships,
    )

    conv, gt, pred = prepared.conventions, prepared.gt, prepared.pred
    levels = prepared.levels
    n_pred, n_k, n_t = pred.label.size, len(prepared.class_names), levels.thresholds.size
    found = SliceInputs(keys, prepared.gt_columns, gt.rows, gt.image, areas.gt, pred.image,
                        areas.pred)  # fmt: skip
    passing = counted.passing if counted.passing is not None else np.ones(n_pred, dtype=bool)
    values: list[tuple[str, ...]] = []
    matched, ignored, out, counts = [], [], [], []
    for spec in specs:
        members = memberships(spec, found)
        values.append(tuple(m.value for m in members))
        for member in members:
            ignore = gt.ignore | ~member.gt_in
            m = match_all(
                paired.scan, pred.rank, ignore, gt.crowd, levels.thresholds, conv.match_rule,
                conv.strict_threshold, prepared.scored,
            )  # fmt: skip
            hit_ignored = ignore[m.hit_gt]
            matched.append(_bits(m.hit_pred, m.hit_t, n_pred, n_t))
            ignored.append(_bits(m.hit_pred[hit_ignored], m.hit_t[hit_ignored], n_pred, n_t))
            out.append(member.pred_out)
            hit, hit_ignore = m.pred_flags(levels.evaluation)
            counts.append(
                np.stack([
                    np.bincount(gt.label[~ignore], minlength=n_k),
                    np.bincount(gt.label[gt.ignore & member.gt_in], minlength=n_k),
                    np.bincount(pred.label[hit & ~hit_ignore & passing], minlength=n_k),
                    np.bincount(pred.label[~hit & ~member.pred_out & passing], minlength=n_k),
                ], axis=1)
            )  # fmt: skip
    dtype = flag_dtype(n_t)
    n_v = len(out)
    return SliceRecords(
        specs=specs,
        values=tuple(values),
        matched=np.stack(matched, axis=1) if n_v else np.zeros((n_pred, 0), dtype=dtype),
        ignored=np.stack(ignored, axis=1) if n_v else np.zeros((n_pred, 0), dtype=dtype),
        out=np.stack(out, axis=1) if n_v else np.zeros((n_pred, 0), dtype=bool),
        counts=(
            np.stack(counts, axis=1).astype(np.int64)
            if n_v
            else np.zeros((n_k, 0, len(SLICE_COUNTS)), dtype=np.int64)
        ),
        unscored=None,
    )


def _gt_cells(prepared: Prepared, areas: Areas) -> GtCells:
    """Each image-class's ground truth that counts, and of it what counts in COCO's area
    "all" (ground truth is sorted by image, then class)."""
    gt = prepared.gt
    if not gt.image.size:
        none = np.zeros(0, dtype=np.int64)
        return GtCells(none, none, none, none)
    counting = ~gt.ignore
    low, high = COCO_AREAS[0]
    in_all = counting & (areas.gt >= low) & (areas.gt <= high)
    cell = gt.image.astype(np.int64) * len(prepared.class_names) + gt.label
    starts = np.flatnonzero(np.append(True, cell[1:] != cell[:-1]))
    n_counting = np.add.reduceat(counting.astype(np.int64), starts)
    n_all = np.add.reduceat(in_all.astype(np.int64), starts)
    keep = n_counting > 0
    return GtCells(
        gt.image[starts][keep].astype(np.int64), gt.label[starts][keep].astype(np.int64),
        n_counting[keep], n_all[keep],
    )  # fmt: skip


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


def _scan_ranges(
    prepared: Prepared, match: bool
) -> Callable[[PairSpace], match_kernels.RangeMatcher | None] | None:
    """What gives COCO's area ranges to match along the evaluation's own matching
    (:func:`~vocmatch.evaluation.range_flags.scan_ranges`), where the protocol has them
    matched and the compiled kernels are built; else None."""
    conv = prepared.conventions
    fast = kernels(match_kernels.MODULE)
    if fast is None or not match or conv.summary != "coco":
        return None
    from vocmatch.evaluation.range_flags import scan_ranges

    dtype = flag_dtype(len(conv.ap_thresholds))
    return lambda space: scan_ranges(fast, prepared, space, dtype)


def _area_flags(
    prepared: Prepared, paired: Paired, areas: Areas, stage: Callable[[str], None], match: bool
) -> _AreaFlags:
    """Each area range matched again (unless not ``match``: no prediction then has a flag),
    as pycocotools matches it, with the ground truth outside the range ignored: every range
    in one pass by the compiled kernels (:mod:`vocmatch.evaluation.range_flags`) where they
    are built and match the protocol, else range by range with numpy."""
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
    if n_areas:  # the module of the compiled ranges is loaded only where there are ranges
        from vocmatch.evaluation.range_flags import range_flags, range_ignores

        ignores = range_ignores(gt.ignore, areas.gt, n_areas)
    else:
        ignores = np.zeros((0, gt.ignore.size), dtype=bool)
    for a, ignore in enumerate(ignores):
        gt_counting[:, a] = np.bincount(gt.label[~ignore], minlength=gt_counting.shape[0])
    if not match or not n_areas:
        for name in AREA_NAMES[:n_areas]:
            stage(f"COCO area {name}")
        return _AreaFlags(inside, matched, ignored, gt_counting)
    # Every range in one pass, where the compiled kernels match this protocol.
    fast = kernels(match_kernels.MODULE)
    stage(f"COCO area {AREA_NAMES[0]}")
    flags = None
    if fast is not None:
        flags = range_flags(fast, prepared, paired, ignores, matched.dtype)
    if flags is not None:
        for name in AREA_NAMES[1:n_areas]:
            stage(f"COCO area {name}")
        return _AreaFlags(inside, flags[0], flags[1], gt_counting)
    own = _ap_places(prepared)
    for a, ignore in enumerate(ignores):
        if a:
            stage(f"COCO area {AREA_NAMES[a]}")
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
    fast = kernels(match_kernels.MODULE)
    if fast is not None:
        return match_kernels.flag_bits(fast, pred, level, n_pred, flag_dtype(n_bits))
    bits = np.zeros(n_pred, dtype=flag_dtype(n_bits))
    # One threshold at a time (a prediction twice there sets the same bit); the thresholds
    # present, in order, by a count (np.unique would import numpy.ma on a small run).
    for t in np.flatnonzero(np.bincount(level)).tolist():
        bits[pred[level == t]] |= bits.dtype.type(1 << t)
    return bits


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
    values = np.empty((n_images, len(columns)), dtype=np.int64)
    for j, column in enumerate(columns):
        values[:, j] = column
    return values


def _mean_iou(counts: PerImageCounts) -> FloatArray:
    """``(I,)`` the mean IoU of each image's true positives (as its ``ImageResult`` has
    it: the exactly rounded sum, ``math.fsum``'s, over their number), NaN without any."""
    return run_means(counts.tp_iou, counts.tp_bounds)


def _note_counts(
    gt: ColumnSet, pred: ColumnSet, selection: Selection, names: tuple[str, ...]
) -> NoteCounts:
    """The notes' ingredients of the selected images."""
    gt_rows, pred_rows = selection.gt_rows, selection.pred_rows
    unscored_rows = _rows_where(np.isnan(pred.scores), pred_rows)
    gt_odd = _rows_where(stages.suspicious_boxes(gt.boxes, None), gt_rows)
    pred_odd = _rows_where(stages.suspicious_boxes(pred.boxes, pred.scores), pred_rows)
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


def _rows_where(
    flags: BoolArray, rows: npt.NDArray[np.integer[Any]]
) -> npt.NDArray[np.integer[Any]]:
    """The rows among ``rows`` (sorted, distinct) whose flag is set: where ``rows`` are all
    of them (the usual case), the flags' own rows, without a gather."""
    if rows.size == flags.size:
        return np.flatnonzero(flags)
    found: npt.NDArray[np.integer[Any]] = rows[flags[rows]]
    return found


def _shapes_evaluated(gt: ColumnSet, pred: ColumnSet, selection: Selection) -> int:
    """Rotated boxes and polygons among the evaluated boxes."""
    if not gt.shapes and not pred.shapes:
        return 0
    gt_evaluated = np.zeros(gt.image.size, dtype=bool)
    gt_evaluated[selection.gt_rows] = True
    pred_evaluated = np.zeros(pred.image.size, dtype=bool)
    pred_evaluated[selection.pred_rows] = True
    return sum(1 for row, _ in gt.shapes if gt_evaluated[row]) + sum(
        1 for row, _ in pred.shapes if pred_evaluated[row]
    )

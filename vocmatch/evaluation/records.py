"""Match records: what an evaluation keeps of each image once it is matched, without boxes.

Every per-image number (an :class:`~vocmatch.evaluation.result.ImageResult`) depends on that
image alone, and so does each prediction's matching, at every IoU threshold and in every
COCO area range (pycocotools matches each image-class apart). What crosses images is the
accumulation of each class (AP, the precision/recall curve, pycocotools' numbers), which
reads, of each kept prediction, only its class, score, image and rank, and whether it matched
ground truth that counts or that is ignored.
:func:`~vocmatch.evaluation.to_records.match_records` matches a set of images (the stages:
select, prepare, pair and match, per-area-range matchings, per image) and keeps just that;
:meth:`MatchRecords.join` puts records of disjoint images together;
:func:`~vocmatch.evaluation.from_records.evaluation_of` accumulates them
(:mod:`vocmatch.evaluation.accumulate`) into the
:class:`~vocmatch.evaluation.result.Evaluation`. A local run is one set of images
(:func:`~vocmatch.evaluation.engine.evaluate_columns`), shards and an
:class:`~vocmatch.evaluation.shards.incremental.Evaluator` several: the same records, the same
numbers, bit for bit.

Two facts of a run are global and are settled when records are accumulated:

* whether any prediction has a score. With none, predictions are paired highest IoU first
  and nothing is cut by ``max_dets``; with some, those without one rank last. Records of
  images whose predictions all lack a score keep their per-image and per-class counts under
  both readings (their per-prediction records are those of the scored reading).
* the notes: their ingredients (counts, the used class names, each file's count of odd
  values) are kept, and worded once, from the merged counts.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np
import numpy.typing as npt

from vocmatch.core.protocol import Conventions
from vocmatch.errors import InputError
from vocmatch.evaluation.accumulate import (
    ClassCounts,
)
from vocmatch.evaluation.result import COCO_AREAS, ODD_VALUES
from vocmatch.evaluation.thresholds import ScoreThresholds

if TYPE_CHECKING:
    # Imported where records that hold them are joined or made: a run that keeps no slice,
    # no calibration and no per-box record needs none of these modules.
    from vocmatch.evaluation.box_outcomes import Match
    from vocmatch.evaluation.calibration_inputs import CalibrationInputs
    from vocmatch.evaluation.preds_ahead import PredsAhead
    from vocmatch.evaluation.preparation import Removed
    from vocmatch.evaluation.slice_records import SliceRecords

__all__ = [
    "IMAGE_FIELDS",
    "MAX_THRESHOLDS",
    "FlagArray",
    "GtCells",
    "ImageCounts",
    "MatchRecords",
    "NoteCounts",
    "PredRecords",
    "Ranked",
    "check_thresholds",
    "flag_dtype",
    "image_rows",
    "join_notes",
    "odd_counts_valid",
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
class GtCells:
    """Each image-class's ground truth that counts, for every image-class with any: what a
    resample of images (the bootstrap) weighs besides the predictions' records.

    Attributes:
        image: ``(C,)`` the image (its place among the records' images).
        label: ``(C,)`` the class.
        counting: ``(C,)`` ground truth that counts (not ignored).
        counting_all: ``(C,)`` of those, the ones that count in COCO's area "all" (its
            area at most :data:`~vocmatch.evaluation.result.COCO_AREAS`' bound).
    """

    image: IntArray
    label: IntArray
    counting: IntArray
    counting_all: IntArray

    def of_images(self, place: IntArray) -> GtCells:
        """The cells with each image moved to ``place[image]``, in (image, class) order."""
        if not self.image.size:
            return self
        image = place[self.image]
        order = np.lexsort((self.label, image))
        return GtCells(image[order], self.label[order], self.counting[order],
                       self.counting_all[order])  # fmt: skip


@dataclass(frozen=True, slots=True)
class Ranked:
    """Each class's ranking as the stages of a whole run found it, so that accumulating
    the run's own records does not sort its predictions again.

    Attributes:
        classes: Per class, its kept predictions (rows of :class:`PredRecords`) in its
            ranking: stable, by descending score, ties in image then file order; a
            prediction without a score last.
        rank: ``(P,)`` each prediction's place in its image-class's run.
    """

    classes: tuple[FlagArray, ...]
    rank: FlagArray


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
            they were asked for; None otherwise (in a state file, only one saved by an
            evaluator that keeps boxes).
        ranked: The classes' rankings of a whole run's records as made (None once records
            are joined or reordered, and in a state file).
        gt_cells: Each image-class's ground truth that counts (None in a state file of a
            version before they were kept).
        slices: Each slice value's matching and counts, when slices were asked for
            (:mod:`vocmatch.evaluation.slice_records`).
        calibration: What OCE and D-ECE read of the images, when it was asked for (None
            otherwise, and once joined with records that lack it).
        removed: The predictions a preparation removed before matching, per class and step
            (None when no preparation was asked for).
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
    ranked: Ranked | None = None
    gt_cells: GtCells | None = None
    slices: SliceRecords | None = None
    calibration: CalibrationInputs | None = None
    removed: Removed | None = None

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
        from vocmatch.evaluation.calibration_inputs import CalibrationInputs

        return MatchRecords(
            keys=tuple(chain.from_iterable(p.keys for p in parts)),
            gt_paths=tuple(chain.from_iterable(p.gt_paths for p in parts)),
            pred_paths=tuple(chain.from_iterable(p.pred_paths for p in parts)),
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
            notes=join_notes([p.notes for p in parts]),
            detail=_join_detail([p.detail for p in parts]),
            gt_cells=_join_cells(parts, remaps),
            slices=_join_slices(parts, remaps, len(names)),
            calibration=CalibrationInputs.join([p.calibration for p in parts], remaps),
            removed=_join_removed(parts),
        )

    @staticmethod
    def taken_in_key_order(
        parts: list[MatchRecords], conv: Conventions, ahead: PredsAhead | None = None
    ) -> MatchRecords:
        """What ``join(parts, conv).in_key_order()`` gives, taking the parts out of
        ``parts`` (which it empties): each part's predictions are copied to their places
        and the part let go, so the records are held about once, not three times;
        ``ahead``: the parts' predictions put end to end as they came back, taken as they
        are where the parts are those and in key order (only their classes numbered).
        """
        if len(parts) <= 1:
            return MatchRecords.join(parts[:1] and [parts.pop()], conv).in_key_order()
        # What ``ahead`` put end to end as the parts came back (let go by it either way).
        placed = None if ahead is None else ahead.columns_of(parts)
        cells = placed is not None and placed.cells is not None
        # Every per-image and per-class field, in part order (no predictions); the slices'
        # records joined whole, then taken in key order.
        images = MatchRecords.join(
            [
                replace(p, preds=_empty_preds(p.preds.count.size, 0), slices=None,
                        calibration=None, gt_cells=None if cells else p.gt_cells)
                for p in parts
            ],
            conv,
        )  # fmt: skip
        index = {name: k for k, name in enumerate(images.class_names)}
        by_name = [np.array([index[n] for n in p.class_names], dtype=np.int64) for p in parts]
        if placed is not None and cells:
            images = replace(images, gt_cells=placed.joined_cells(by_name))
        slices = _join_slices(parts, by_name, len(images.class_names))
        keys = images.keys
        # The parts of a local run come back in key order: nothing to sort.
        order: Sequence[int] = (
            range(len(keys))
            if all(map(operator.lt, keys, keys[1:]))
            else sorted(range(len(keys)), key=keys.__getitem__)
        )
        counts = np.concatenate([p.preds.count for p in parts])
        from vocmatch.evaluation.calibration_inputs import CalibrationInputs

        calibration = CalibrationInputs.join([p.calibration for p in parts], by_name)
        if calibration is not None:
            calibration = calibration.of_rows(image_rows(counts, order))
        # Where each image's predictions go: images in key order, each one's together.
        place = np.empty(len(order), dtype=np.int64)
        place[order] = np.arange(len(order))
        out_start = np.concatenate([[0], np.cumsum(counts[order])])[place]
        n_pred = int(counts.sum())
        columns = zip(*(_pred_columns(p.preds)[2:] for p in parts), strict=True)
        # The columns put end to end ahead, where the images stay in the order the parts
        # came back in.
        if not isinstance(order, range):
            placed = None
        preds = (
            PredRecords(counts[order], *placed.columns)
            if placed is not None
            else PredRecords(
                counts[order],
                np.empty(n_pred, dtype=np.int32),
                *(np.empty((n_pred, *c[0].shape[1:]), dtype=np.result_type(*c)) for c in columns),
            )
        )
        start = 0
        # The parts' rankings, when every part kept its own: merged rather than made again.
        rankings: list[tuple[Ranked, slice | IntArray, IntArray]] | None = (
            [] if all(p.ranked is not None for p in parts) else None
        )
        if placed is not None and placed.ranked is not None:
            rankings = None  # taken ahead
        remaps: list[npt.NDArray[np.int32]] = []
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
            if placed is None:
                preds.label[rows] = remap[p.label]
                for out, column in zip(_pred_columns(preds)[2:], _pred_columns(p)[2:], strict=True):
                    out[rows] = column
            else:  # in place already, the part's classes numbered by the joined names
                preds.label[rows] = remap[preds.label[rows]]
            if rankings is not None and part.ranked is not None:
                rankings.append((part.ranked, rows, remap.astype(np.int64)))
            remaps.append(remap)
            start += n_images
            del part, p, rows
        sliced = None
        if slices is not None:
            sliced = slices.rows(image_rows(counts, order))
        joined = replace(images.in_key_order(), preds=preds, slices=sliced, calibration=calibration)
        if placed is not None and placed.ranked is not None:
            return replace(joined, ranked=placed.rankings(remaps, len(joined.class_names)))
        if rankings is None:
            return joined
        return replace(joined, ranked=_merged_rankings(rankings, preds, len(joined.class_names)))

    def in_key_order(self) -> MatchRecords:
        """The same records with the images sorted by key (as a single run lists them)."""
        if all(map(operator.le, self.keys, self.keys[1:])):
            return self  # in key order already (as the parts of a local run join)
        order = sorted(range(len(self.keys)), key=self.keys.__getitem__)
        rows = image_rows(self.preds.count, order)
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
            ranked=None,
            gt_cells=None if self.gt_cells is None else self.gt_cells.of_images(_places(order)),
            slices=None if self.slices is None else self.slices.rows(rows),
            calibration=None if self.calibration is None else self.calibration.of_rows(rows),
        )


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


def flag_dtype(n_bits: int) -> np.dtype[Any]:
    """The dtype records keep ``n_bits`` flags in: the narrowest that holds them, the same
    for every part of a run (records are most of an evaluator's memory)."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if n_bits <= np.iinfo(dtype).bits:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def image_rows(counts: IntArray, order: Sequence[int]) -> IntArray:
    """The rows of the images in ``order`` (``counts``: the rows of each image, laid out
    image after image), each image's together, in their order."""
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


def odd_counts_valid(odd: object) -> TypeGuard[list[list[list[Any]]]]:
    """Whether ``odd`` is a header's odd values: per kind of
    :data:`~vocmatch.evaluation.result.ODD_VALUES`, a list of ``[path, count]`` pairs with
    a count of at least one."""
    return (
        isinstance(odd, list)
        and len(odd) == len(ODD_VALUES)
        and all(
            isinstance(kind, list)
            and all(
                isinstance(e, list)
                and len(e) == 2
                and isinstance(e[0], str)
                and type(e[1]) is int
                and e[1] > 0
                for e in kind
            )
            for kind in odd
        )
    )


def join_notes(parts: Sequence[NoteCounts]) -> NoteCounts:
    """The notes' ingredients of parts of one run, added up (each file is in one part)."""
    odd: list[dict[str, int]] = [{} for _ in ODD_VALUES]
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


def _join_cells(parts: Sequence[MatchRecords], remaps: Sequence[IntArray]) -> GtCells | None:
    """Every part's cells, images numbered on from the part before, classes by name; None
    unless every part kept them."""
    cells = [p.gt_cells for p in parts]
    if any(c is None for c in cells):
        return None
    offsets = np.cumsum([0, *(len(p.keys) for p in parts[:-1])]).tolist()
    known = [
        (c, remap, offset)
        for c, remap, offset in zip(cells, remaps, offsets, strict=True)
        if c is not None
    ]
    # Joined once: astype copies no more where the parts' arrays are int64 already.
    return GtCells(
        np.concatenate([c.image + offset for c, _, offset in known]).astype(np.int64, copy=False),
        np.concatenate([remap[c.label] for c, remap, _ in known]).astype(np.int64, copy=False),
        np.concatenate([c.counting for c, _, _ in known]).astype(np.int64, copy=False),
        np.concatenate([c.counting_all for c, _, _ in known]).astype(np.int64, copy=False),
    )


def _join_slices(
    parts: Sequence[MatchRecords], remaps: Sequence[IntArray], n_classes: int
) -> SliceRecords | None:
    """Every part's slice records joined; None unless every part kept them."""
    found = [p.slices for p in parts]
    if any(f is None for f in found):
        return None
    from vocmatch.evaluation.slice_records import SliceRecords

    return SliceRecords.join([f for f in found if f is not None], remaps, n_classes)


def _places(order: Sequence[int]) -> IntArray:
    """``(I,)`` where each image goes when the images are taken in ``order``."""
    place = np.empty(len(order), dtype=np.int64)
    place[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
    return place


def _join_detail(
    parts: Sequence[tuple[tuple[Match, ...], ...] | None],
) -> tuple[tuple[Match, ...], ...] | None:
    """Every part's per-box records in part order; None unless every part kept them."""
    if any(p is None for p in parts):
        return None
    return tuple(d for p in parts if p is not None for d in p)


def _merged_rankings(
    rankings: Sequence[tuple[Ranked, slice | IntArray, IntArray]], preds: PredRecords, n_k: int
) -> Ranked:
    """The rankings of joined records, from each part's: ``(ranked, rows, remap)``, its
    ranking, where its predictions went (rows one after another: a slice) and where its
    classes did.

    A class's ranking is stable by descending score, ties in row order (image then file
    order): each part's is that order restricted to its rows, so the parts' rankings,
    put end to end, are sorted runs that a stable sort by score merges (in far less than a
    sort of unsorted scores takes); predictions of equal scores from several parts are
    then put in row order.
    """
    from vocmatch.evaluation.from_records import ranking_score

    rank = np.empty(preds.label.size, dtype=np.int64)
    per_class: list[list[IntArray]] = [[] for _ in range(n_k)]
    for ranked, rows, remap in rankings:
        rank[rows] = ranked.rank
        for k, members in enumerate(ranked.classes):
            # A slice's rows: each member's row is the slice's start on (an addition, not
            # a gather).
            moved = (
                np.add(members, rows.start, dtype=np.int64)
                if isinstance(rows, slice)
                else rows[members]
            )
            per_class[int(remap[k])].append(moved)
    # Parts whose rows follow one another (parts of consecutive keys, joined in their order):
    # equal scores of several parts are in row order already, after the stable sort.
    in_row_order = _rows_follow([rows for _, rows, _ in rankings])
    classes = []
    for runs in per_class:
        members = np.concatenate(runs) if runs else np.zeros(0, dtype=np.int64)
        score = -ranking_score(preds, members)
        by_score = np.argsort(score, kind="stable")
        members, score = members[by_score], score[by_score]
        tied = score[1:] == score[:-1]  # -inf too: predictions without a score
        if len(runs) > 1 and not in_row_order and tied.any():
            in_tie = np.zeros(score.size, dtype=bool)
            in_tie[1:] |= tied
            in_tie[:-1] |= tied
            group = np.cumsum(np.append(True, ~tied))
            place = np.flatnonzero(in_tie)
            members[place] = members[place][np.lexsort((members[place], group[place]))]
        classes.append(members)
    return Ranked(tuple(classes), rank)


def _rows_follow(rows: Sequence[slice | IntArray]) -> bool:
    """Every part's rows ascend, and each part's come after those of the parts before."""
    last = -1
    for where in rows:
        if isinstance(where, slice):
            if where.stop > where.start:
                if where.start <= last:
                    return False
                last = where.stop - 1
        elif where.size:
            if int(where[0]) <= last or not bool((where[1:] > where[:-1]).all()):
                return False
            last = int(where[-1])
    return True


def _empty_preds(n_images: int, n_areas: int) -> PredRecords:
    none = np.zeros(0, dtype=np.int64)
    return PredRecords(
        np.zeros(n_images, dtype=np.int64), none, np.zeros(0), none, none, none,
        np.zeros((0, n_areas), dtype=np.int64), np.zeros((0, n_areas), dtype=np.int64),
    )  # fmt: skip


def _join_removed(parts: Sequence[MatchRecords]) -> Removed | None:
    """The parts' counts of what their preparation removed, added up (None without)."""
    found = [p.removed for p in parts if p.removed is not None]
    if not found:
        return None
    from vocmatch.evaluation.preparation import Removed

    return Removed.join(found)


def _empty(conv: Conventions) -> MatchRecords:
    """The records of no image."""
    from vocmatch.evaluation.calibration_inputs import OCE_THRESHOLDS, CalibrationInputs

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
        gt_cells=GtCells(none, none, none, none),
        calibration=CalibrationInputs(none, np.zeros((0, len(OCE_THRESHOLDS))), np.zeros((0, 4))),
    )

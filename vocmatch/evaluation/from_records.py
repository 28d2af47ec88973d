"""The evaluation of match records (:mod:`vocmatch.evaluation.records`), of one run or
merged from shards: each class's AP, curve and pycocotools' numbers accumulated one class at
a time (:mod:`vocmatch.evaluation.accumulate`), each image's result, and the notes worded
once from the merged counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core.ap import Curve
from vocmatch.core.model import SkippedFile
from vocmatch.core.protocol import Conventions
from vocmatch.evaluation.accumulate import (
    ClassBits,
    class_members,
    class_results,
)
from vocmatch.evaluation.class_curves import class_curves, ranked_flags, ranked_scores
from vocmatch.evaluation.records import (
    IMAGE_FIELDS,
    FlagArray,
    ImageCounts,
    MatchRecords,
    PredRecords,
    check_thresholds,
)
from vocmatch.evaluation.result import (
    COCO_AREAS,
    ClassResult,
    CocoSummary,
    Evaluation,
    ImageResult,
    SweepResult,
    case_notes,
    finish,
    odd_value_notes,
    score_notes,
    shape_notes,
    summary_map,
)
from vocmatch.evaluation.stage_inputs import (
    IouLevels,
)
from vocmatch.evaluation.summary_kernels import MODULE as SUMMARY_KERNELS
from vocmatch.evaluation.summary_kernels import class_ap
from vocmatch.evaluation.thresholds import ScoreThresholds

if TYPE_CHECKING:
    from vocmatch.evaluation.coco_tables import CocoTables, TablesAhead
    from vocmatch.evaluation.summary_stats import CocoStats, UltralyticsStats

__all__ = [
    "COCO_TABLE_VALUES",
    "THREADED_PREDICTIONS",
    "Findings",
    "class_rankings",
    "evaluation_of",
    "image_results",
    "map_of",
    "ranking_score",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


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
    images: list[ImageResult] | None = None,
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
        images: Each image's result, made already (in key order, under the counts read
            here: :mod:`~vocmatch.evaluation.part_images`), or None to make them here.

    Raises:
        InputError: A score threshold is set and no prediction has a score.
    """
    records = records.in_key_order()
    notes_in = records.notes
    scored = notes_in.scored
    check_thresholds(score_thresholds, scored, notes_in.preds)
    counts = records.counts if scored or records.unscored is None else records.unscored
    ahead = _tables_ahead(records, conv)
    try:
        # Each image's result made while the kernel makes the first classes' COCO tables.
        if images is None:
            images = image_results(records, counts, conv)
        classes, done = _classes(records, conv, counts, ahead)
    finally:
        if ahead is not None:
            ahead.close()
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
    evaluation = finish(
        conv, images, classes, coco, skipped, missing,
        findings.orphan_pred, notes, ultralytics=done.ultralytics,
    )  # fmt: skip
    return evaluation if records.removed is None else replace(evaluation, removed=records.removed)


def map_of(
    records: MatchRecords, conv: Conventions
) -> tuple[float | None, tuple[ClassResult, ...]]:
    """The summary's mAP and each class's result, as :func:`evaluation_of` gives them,
    without the per-image results (for a caller that compares many settings' mAP)."""
    counts = (
        records.counts if records.notes.scored or records.unscored is None else records.unscored
    )
    classes, done = _classes(records, conv, counts)
    return summary_map(classes, done.coco, done.ultralytics), tuple(classes)


def _classes(
    records: MatchRecords,
    conv: Conventions,
    counts: ImageCounts,
    ahead: TablesAhead | None = None,
) -> tuple[list[ClassResult], _Accumulated]:
    """Each class's result and what the accumulation gave (``ahead``: the COCO tables
    begun by :func:`_tables_ahead`)."""
    scored = records.notes.scored
    n_class_gt: list[int] = counts.classes.gt.tolist()
    # Without scores nothing is ranked: no curve, no AP.
    done = _Accumulated([None] * len(n_class_gt), [[] for _ in n_class_gt], None, None)
    if scored or (conv.summary == "ultralytics" and records.notes.preds == 0):
        # The ultralytics summary of no prediction at all: every class's AP, P and R 0.
        done = _accumulated(records, conv, n_class_gt, ahead)
    classes = class_results(
        conv, records.class_names, counts.classes, done.curves, done.ap_values, scored
    )
    return list(classes), done


#: Entries of the compiled accumulation's tables made at once (8 bytes each): classes are
#: accumulated in chunks of at most this many precision values (one class at least).
COCO_TABLE_VALUES = 1 << 21

#: Kept predictions from which the compiled accumulation's chunks of classes are made by
#: two threads at once (where two cores are): fewer cost less than a thread saves.
THREADED_PREDICTIONS = 200_000


@dataclass(frozen=True, slots=True)
class _Accumulated:
    """Each class's curve and AP values, pycocotools' 12 numbers (None outside the ``coco``
    summary) and the ``ultralytics`` package's four (None outside its summary)."""

    curves: list[Curve | None]
    ap_values: list[list[float]]
    coco: CocoStats | None
    ultralytics: UltralyticsStats | None


def _tables_ahead(records: MatchRecords, conv: Conventions) -> TablesAhead | None:
    """The compiled kernel's COCO tables of every class, begun in a thread (None where the
    accumulation makes none: no kernel, no ``coco`` summary, no score)."""
    if conv.summary != "coco" or not records.notes.scored:
        return None
    kernel = kernels("vocmatch.evaluation.fastaccumulate")
    if kernel is None:
        return None
    from vocmatch.evaluation.coco_tables import TablesAhead
    from vocmatch.readers.workers import available_cores

    # Classes a chunk at a time, so that the tables stay small whatever the classes; many
    # predictions in two threads where there are two cores, a few chunks each.
    per_class = len(COCO_AREAS) * len(conv.ap_thresholds) * 101 * 3
    chunk = COCO_TABLE_VALUES // per_class
    preds = records.preds
    n_k = len(records.class_names)
    threads = 2 if preds.label.size >= THREADED_PREDICTIONS and available_cores() > 1 else 1
    ahead = threads
    if threads > 1:
        # A few chunks each; as many begun at once as the tables' bound holds, so that the
        # threads go on while the caller makes each image's result and the curves.
        chunk = min(chunk, -(-n_k // (2 * threads)))
        ahead = max(threads, COCO_TABLE_VALUES // (per_class * chunk))
    return TablesAhead(
        kernel, list(class_rankings(records)), (preds.area, preds.coco_matched, preds.coco_ignored),
        records.coco_gt, len(conv.ap_thresholds), chunk, threads, ahead,
    )  # fmt: skip


def _accumulated(
    records: MatchRecords,
    conv: Conventions,
    n_class_gt: Sequence[int],
    ahead: TablesAhead | None = None,
) -> _Accumulated:
    """Each class's curve and AP and pycocotools' 12 numbers, a chunk of classes at a time
    (:data:`CURVE_CHUNK`): only the order of the predictions by class is as long as all of
    them; the COCO numbers from the compiled kernel's tables where it is built (``ahead``:
    begun already; else begun here)."""
    if ahead is None:
        ahead = _tables_ahead(records, conv)
        if ahead is not None:
            with ahead:
                return _accumulated(records, conv, n_class_gt, ahead)
    curves: list[Curve | None] = []
    ap_values: list[list[float]] = [[] for _ in n_class_gt]
    preds = records.preds
    levels = IouLevels.of(conv)
    n_t = len(conv.ap_thresholds)
    summary = CocoSummary(np.asarray(conv.ap_thresholds, dtype=np.float64))
    reusable = conv.summary == "coco" and _class_ap_reusable(conv, records.beyond)
    eps = float(np.spacing(1)) if conv.interpolation == "101-point" else None
    ultralytics = None
    if conv.summary == "ultralytics":
        from vocmatch.evaluation.ultralytics_summary import ultralytics_summary

        places = [levels.index[threshold] for threshold in conv.ap_thresholds]
        ap_values, ultralytics = ultralytics_summary(
            records, places, list(n_class_gt), conv.operating_point, conv.interpolation
        )
    rankings = class_rankings(records) if ahead is None else iter(ahead.rankings)
    fast = kernels(SUMMARY_KERNELS)
    tables: CocoTables | None = None
    first = 0
    # Where the COCO tables are being made in threads, they keep the other cores busy: the
    # curves are made in the calling thread alone (a split would only add its count).
    curve_threads = None if ahead is None else 1
    for k0, chunk in _class_chunks(rankings):
        # Every curve of the chunk's classes made at once (the AP thresholds' when read).
        flags = ranked_flags(preds.score, preds.matched, preds.ignored, [r for r, _ in chunk])
        n_gt = n_class_gt[k0 : k0 + len(chunk)]
        curves.extend(class_curves(flags, levels.evaluation, n_gt, threads=curve_threads))
        at_ap: list[list[Curve]] | None = None
        for k, (ranked, rank) in enumerate(chunk, start=k0):
            if ahead is not None and k % ahead.chunk == 0:
                first = k
                tables = ahead.tables(k)
            coco_ap = None
            if conv.summary == "coco":
                bits: ClassBits | None = None
                # pycocotools adds class by class to each area's numbers: class order is kept.
                for a in range(len(COCO_AREAS)):
                    n_gt_a = int(records.coco_gt[k, a])
                    if n_gt_a == 0:
                        continue
                    if tables is not None:
                        precision = tables.precision[k - first, a]
                        recall = tables.recall[k - first, a]
                    else:
                        if bits is None:
                            bits = _class_bits(preds, ranked, rank)
                        precision, recall = bits.coco_area(a, n_gt_a, n_t)
                    summary.add(a, precision, recall)
                    if a == 0:
                        # One reduction over the recall levels of every threshold: each row
                        # summed as np.mean sums one (pairwise, the same bits).
                        coco_ap = precision[:n_t, :, 2].mean(axis=1).tolist()
            if n_class_gt[k] > 0 and ultralytics is None:
                if reusable and coco_ap is not None:
                    ap_values[k] = coco_ap
                    continue
                if at_ap is None:
                    at_ap = [
                        class_curves(
                            flags, levels.index[threshold], n_gt, eps=eps, threads=curve_threads
                        )
                        for threshold in conv.ap_thresholds
                    ]
                for made in at_ap:
                    c = made[k - k0]
                    ap_values[k].append(class_ap(fast, c.recall, c.precision, conv.interpolation))
    coco = summary.stats() if conv.summary == "coco" else None
    return _Accumulated(curves, ap_values, coco, ultralytics)


#: Predictions whose flags :func:`_accumulated` gathers at once (a chunk of whole classes, one
#: class at least): every class's curves made together, the memory of a few arrays this long.
CURVE_CHUNK = 1 << 21


def _class_chunks(
    rankings: Iterator[tuple[FlagArray, FlagArray]],
) -> Iterator[tuple[int, list[tuple[FlagArray, FlagArray]]]]:
    """The rankings in runs of whole classes of at most :data:`CURVE_CHUNK` predictions (a
    larger class alone), with the first class of each."""
    chunk: list[tuple[FlagArray, FlagArray]] = []
    first = size = 0
    for ranking in rankings:
        if chunk and size + ranking[0].size > CURVE_CHUNK:
            yield first, chunk
            first, chunk, size = first + len(chunk), [], 0
        chunk.append(ranking)
        size += ranking[0].size
    if chunk:
        yield first, chunk


def class_rankings(records: MatchRecords) -> Iterator[tuple[FlagArray, FlagArray]]:
    """Each class's ranking, one class at a time: its predictions (rows of the records'
    :class:`~vocmatch.evaluation.records.PredRecords`) stable by descending score, ties in
    image then file order, a prediction without a score last; and each one's place in its
    image-class (pycocotools' maxDets keep those below the limit).

    A whole run's records carry the rankings its stages made; other records (joined,
    reordered, read from a state) are ranked here, the same way.
    """
    if records.ranked is not None:
        for ranked in records.ranked.classes:
            yield ranked, records.ranked.rank[ranked]
        return
    preds = records.preds
    order, starts = class_members(preds.label, len(records.class_names))
    image_ends = np.cumsum(preds.count)
    for k in range(len(records.class_names)):
        members = order[starts[k] : starts[k + 1]]  # in (image, rank) order
        image = np.searchsorted(image_ends, members, side="right")
        # A prediction's rank: its place in its image-class's run.
        run = np.flatnonzero(np.append(True, image[1:] != image[:-1])) if image.size else image
        rank = np.arange(image.size) - np.repeat(run, np.diff(np.append(run, image.size)))
        by_score = np.argsort(-ranking_score(preds, members), kind="stable")
        yield members[by_score], rank[by_score]


def ranking_score(preds: PredRecords, rows: FlagArray) -> FloatArray:
    """The scores of ``rows`` as rankings read them: float64, ``-inf`` for none."""
    return ranked_scores(preds.score, rows)


def _class_bits(preds: PredRecords, ranked: FlagArray, rank: FlagArray) -> ClassBits:
    """A class's predictions in its ranking (``ranked``, with their ``rank``), with their
    COCO flags (what pycocotools' accumulation reads where the compiled kernel does not)."""
    # np.take: rows of the (P, A) flags, many times faster than indexing with an array.
    coco_matched = np.take(preds.coco_matched, ranked, axis=0)
    coco_ignored = np.take(preds.coco_ignored, ranked, axis=0)
    return ClassBits(
        ranking_score(preds, ranked), rank, preds.matched[ranked], preds.ignored[ranked],
        preds.area[ranked], coco_matched, coco_ignored,
    )  # fmt: skip


def _class_ap_reusable(conv: Conventions, beyond: bool) -> bool:
    """As the engine's ``_coco_class_ap_reusable``: class AP is pycocotools' area "all" entry
    when no box leaves that range."""
    return (
        conv.interpolation == "101-point"
        and (conv.max_dets is None or conv.max_dets <= 100)
        and not beyond
    )


#: The fields the compiled kernel sets, in its order: ImageResult's (else numpy makes them).
_IMAGE_RESULT_FIELDS = ("key", "gt_path", "pred_path", "gt", "gt_ignored", "pred", "tp", "fp",
                        "fn", "mean_iou", "sweep", "matches", "pred_ignored")  # fmt: skip


def image_results(
    records: MatchRecords, counts: ImageCounts, conv: Conventions
) -> list[ImageResult]:
    """Each image's result, from its row of ``counts`` (``records``' counts under one
    reading of the scores) and its key and paths: in compiled code where it was built (the
    same objects)."""
    kernel = kernels("vocmatch.evaluation.fastaccumulate")
    if kernel is None or tuple(f.name for f in fields(ImageResult)) != _IMAGE_RESULT_FIELDS:
        return _image_results_numpy(records, counts, conv)

    # The kernel asks for each sweep it has not met; its results at one threshold repeat
    # more than whole sweeps do: equal ones share one frozen record.
    made: dict[tuple[int, ...], SweepResult] = {}
    at = [(3 * s, threshold) for s, threshold in enumerate(conv.sweep_thresholds)]

    def sweep_of(counted: tuple[int, ...]) -> tuple[SweepResult, ...]:
        sweep = []
        for s, threshold in at:
            key = (s, *counted[s : s + 3])
            result = made.get(key)
            if result is None:
                result = made[key] = SweepResult(threshold, *counted[s : s + 3])
            sweep.append(result)
        return tuple(sweep)

    results: list[ImageResult] = kernel.image_results(
        ImageResult, _IMAGE_RESULT_FIELDS, np.ascontiguousarray(counts.values, dtype=np.int64),
        np.ascontiguousarray(counts.mean_iou, dtype=np.float64), records.keys,
        records.gt_paths, records.pred_paths, records.detail, {}, sweep_of,
    )  # fmt: skip
    return results


def _image_results_numpy(
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

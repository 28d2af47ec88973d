"""Shards of a run: the evaluator of a part of the images, saved with what its reading
skipped (:func:`shard_state`, :func:`evaluator_for`), and saved states merged into the
report of one run on all the files (:func:`read_states`, also ``vocmatch.read_states``):
what ``vocmatch eval --shard K/N --save-state FILE`` and ``vocmatch merge`` do, as a library.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from vocmatch.checks import FIELD_BOUNDS, checked_bounded, checked_max_bytes
from vocmatch.errors import InputError, Message, Option, RequestError
from vocmatch.evaluation.shards.reading_notes import ReadingNotes
from vocmatch.evaluation.shards.shard_origin import ShardCheck, ShardOrigin, check_shards
from vocmatch.evidence.run_report import EvalReport
from vocmatch.run.evaluate import (
    EvalRequest,
    PathLike,
    Progress,
    prediction_suffixes,
    score_thresholds_of,
    slice_specs,
)
from vocmatch.run.extras import Extras, evidence_of, target_of
from vocmatch.run.read_stage import ListedColumns, chosen_columns, read_listed

if TYPE_CHECKING:
    from collections.abc import Sequence

    from vocmatch.core.model import SkippedFile
    from vocmatch.evaluation.scoring import Evaluation
    from vocmatch.evaluation.shards.incremental import Evaluator
    from vocmatch.evaluation.slice_records import SliceSpec
    from vocmatch.evaluation.thresholds import ScoreThresholds
    from vocmatch.evidence.gate_records import Gate
    from vocmatch.evidence.gates import GateReport
    from vocmatch.readers.parse import AnnotationSet
    from vocmatch.readers.scan import ColumnSet

__all__ = [
    "MergedStates",
    "ShardState",
    "evaluator_for",
    "read_states",
    "run_digest",
    "shard_state",
]


def evaluator_for(
    request: EvalRequest,
    *,
    shard: tuple[int, int] | None = None,
    progress: Progress | None = None,
    columns: tuple[ColumnSet, ColumnSet] | None = None,
    run_id: str | None = None,
) -> Evaluator:
    """An :class:`~vocmatch.evaluation.shards.incremental.Evaluator` holding the request's images
    (or the ``shard``-th part of them), to be saved and merged with the other shards.

    Args:
        request: What to read and how to score it (its extras are not computed here; the
            merged report computes them).
        shard: ``(k, n)``: only the k-th of n deterministic parts of the images (1-based).
        progress: Told how many files are read, of how many.
        columns: The ground truth and predictions already read (as :func:`evaluate` takes).
        run_id: A name of the run (a model's name), recorded with the shard: states of runs
            named otherwise are not merged (:func:`read_states`).

    Returns:
        The evaluator, ready to save, its
        :attr:`~vocmatch.evaluation.shards.incremental.Evaluator.origin` the shard
        (``(1, 1)`` for the whole run) and the run (:func:`run_digest`).

    Example:
        >>> from vocmatch.run.evaluate import evaluate
        >>> request = EvalRequest(gt="fixtures/demo/gt", pred="fixtures/demo/pred")
        >>> import warnings
        >>> from vocmatch.errors import MissingPredictionWarning
        >>> warnings.simplefilter("ignore", MissingPredictionWarning)  # street_05: no predictions
        >>> halves = [evaluator_for(request, shard=(k, 2)) for k in (1, 2)]
        >>> halves[0].merge(halves[1])
        >>> halves[0].result().summary.map == evaluate(request).evaluation.summary.map
        True
    """
    found = shard_state(request, shard=shard, progress=progress, columns=columns, run_id=run_id)
    return found.evaluator


@dataclass(frozen=True, slots=True)
class ShardState:
    """The evaluator of a shard's images, and what its reading skipped.

    Attributes:
        evaluator: The images of the shard, matched, with the files skipped recorded
            (:meth:`~vocmatch.evaluation.shards.incremental.Evaluator.add_skipped`), and for the
            first shard (or a whole run) the prediction files without ground truth
            (:meth:`~vocmatch.evaluation.shards.incremental.Evaluator.add_orphans`): its saved state
            carries them to the merge.
        skipped: The files of the shard's images that could not be read (those images are
            left out), files of no image (a duplicate), and for the first shard the
            prediction files of no ground-truth image that could not be read, sorted by path
            and line.
    """

    evaluator: Evaluator
    skipped: tuple[SkippedFile, ...]

    def image_gates(self, max_fp: int | None, max_fn: int | None) -> GateReport | None:
        """The per-image limits checked on the shard's images (they hold image by image,
        so every shard checks its own), or None when no limit is given. The gates on the
        whole set's numbers are checked on the merged states
        (:meth:`MergedStates.report`).

        Example:
            >>> request = EvalRequest(gt="fixtures/demo/gt", pred="fixtures/demo/pred")
            >>> shard_state(request, shard=(1, 2)).image_gates(0, None).passed
            False
        """
        if max_fp is None and max_fn is None:
            return None
        from vocmatch.evidence.gates import check_gates

        fold_case = self.evaluator.fold_case
        return check_gates(self.evaluator.result(), (), max_fp, max_fn, fold_case=fold_case)


def shard_state(
    request: EvalRequest,
    *,
    shard: tuple[int, int] | None = None,
    progress: Progress | None = None,
    columns: tuple[ColumnSet, ColumnSet] | None = None,
    run_id: str | None = None,
) -> ShardState:
    """As :func:`evaluator_for`, with the files the reading skipped (recorded in the
    evaluator too). Without ``columns``, only the shard's files are read
    (:func:`read_inputs`); inputs given as URLs, or a request's ``dask`` cluster, are read
    whole as :func:`vocmatch.evaluate` reads them.

    Example:
        >>> request = EvalRequest(gt="fixtures/demo/gt", pred="fixtures/demo/pred")
        >>> state = shard_state(request, shard=(2, 3), run_id="model-a")
        >>> state.evaluator.keys, state.skipped
        (['street_02', 'street_05'], ())
        >>> origin = state.evaluator.origin
        >>> str(origin), origin.run_id, origin.run == run_digest(request)
        ('2/3', 'model-a', True)
    """
    from vocmatch.evaluation.shards.incremental import Evaluator
    from vocmatch.evaluation.stages import orphan_files
    from vocmatch.readers.shards import column_keys, shard_keys

    if request.cache is not None:
        # A saved state is merged with other shards' elsewhere: no cache is kept for it.
        raise RequestError(
            "cache",
            "a cache is kept by a whole run, not by a shard's state",
            os.fspath(request.cache),
        )
    thresholds = score_thresholds_of(request)
    files = progress.files if progress is not None else None
    if columns is None and request.dask is not None:
        return _shard_on_dask(request, shard, run_id)
    if columns is None:
        # Inputs given as URLs: read whole, as vocmatch.evaluate reads them, and the
        # shard's images chosen below.
        from vocmatch.run.remote_inputs import read_elsewhere

        elsewhere = read_elsewhere(request)
        columns = elsewhere.columns if elsewhere is not None else None
    # Read here, the columns hold the shard's images only; given, they hold every image.
    part = shard if columns is not None else None
    if columns is not None:
        reading = _reading_of_part(*columns, request, part)
        gt, pred = chosen_columns(*columns, request)
    else:
        read = read_listed(request.inputs(), files, shard=shard)
        reading = read.reading(request)
        gt, pred = read.chosen(request, whole=shard is None)
    evaluator = Evaluator(
        request.conventions(), fold_case=request.fold_case, score_thresholds=thresholds or None,
        slices=slice_specs(request.slices),
        keep_boxes=request.keeps_boxes(),
        calibration=request.calibration_bins is not None, preparation=request.preparation(),
    )  # fmt: skip
    evaluator.add_columns(gt, pred, shard=part)
    skipped = sorted((*gt.skipped, *pred.skipped), key=lambda s: (s.path, s.line or 0))
    if part is not None:
        gt_keys = column_keys(gt)
        chosen = shard_keys(gt_keys, part)
        # A file of no ground-truth image is the first shard's to report.
        first = part[0] == 1
        listed = set(gt_keys)
        skipped = [
            s
            for s in skipped
            if s.key is None or s.key in chosen or (first and s.key not in listed)
        ]
    # The first shard reports the prediction files without ground truth, once for the run
    # (all shards read them from a COCO or YOLO file, only the first from a folder of XML).
    if shard is None or shard[0] == 1:
        evaluator.add_orphans(orphan_files(gt, pred))
    evaluator.add_skipped(skipped)
    k, n = shard if shard is not None else (1, 1)
    evaluator.origin = ShardOrigin(k, n, run_digest(request), run_id, reading)
    return ShardState(evaluator, tuple(skipped))


def _reading_of_part(
    gt: ColumnSet, pred: ColumnSet, request: EvalRequest, part: tuple[int, int] | None
) -> ReadingNotes:
    """What the reading's notes are worded from, of the images of a shard of columns that
    hold every image: its ground-truth images, and on the first shard the predictions
    without ground truth (which it reports)."""
    from vocmatch.evaluation.shards.image_columns import columns_of_keys
    from vocmatch.readers.shards import column_keys, shard_keys

    if part is not None:
        keys = shard_keys(column_keys(gt), part)
        if part[0] == 1:
            keys = keys | (set(pred.keys) - set(gt.keys))
        chosen = frozenset(keys)
        gt = replace(columns_of_keys(gt, chosen), notes=gt.notes)
        pred = replace(columns_of_keys(pred, chosen), notes=pred.notes)
    return ListedColumns(gt, pred).reading(request)


def _shard_on_dask(
    request: EvalRequest, shard: tuple[int, int] | None, run_id: str | None
) -> ShardState:
    """:func:`shard_state` of a request read on its cluster: the shard's files read and
    matched by the workers, their states merged."""
    from vocmatch.run.read_stage import refuse_unpaired_keys
    from vocmatch.run.remote_inputs import shard_on_dask

    found = shard_on_dask(request, shard)
    refuse_unpaired_keys(found.gt_keys, found.pred_keys, request.pred)
    evaluator = found.evaluator
    if shard is None or shard[0] == 1:
        evaluator.add_orphans(found.orphans)
    evaluator.add_skipped(found.skipped)
    k, n = shard if shard is not None else (1, 1)
    evaluator.origin = ShardOrigin(k, n, run_digest(request), run_id, found.reading)
    return ShardState(evaluator, tuple(sorted(found.skipped, key=lambda s: (s.path, s.line or 0))))


def run_digest(request: EvalRequest) -> str:
    """What every shard of one run shares and another run's differ in: a SHA-256 over the
    options the numbers depend on and the listings of the ground truth and the predictions
    (each file's path below its folder and its size; the class tables' and the split's
    files too).

    Files are listed, not read: two runs whose files have the same names and sizes (a
    model's predictions rewritten in place) are told apart by their run ids only.

    Returns:
        The digest, in hexadecimal.

    Example:
        >>> request = EvalRequest(gt="fixtures/demo/gt", pred="fixtures/demo/pred")
        >>> run_digest(request) == run_digest(replace(request, jobs=1))
        True
        >>> run_digest(request) == run_digest(replace(request, iou=0.7))
        False
        >>> run_digest(request) == run_digest(replace(request, nms=0.7))
        False
    """
    from vocmatch.evaluation.shards.state_options import conventions_header
    from vocmatch.evaluation.shards.state_preparation import preparation_header
    from vocmatch.readers.remote import file_sizes
    from vocmatch.readers.voc_layout import annotation_folder, split_file

    thresholds = score_thresholds_of(request)
    choice = request.class_choice
    options = {
        "conventions": conventions_header(request.conventions()),
        "fold_case": request.fold_case,
        "score_thresholds": [thresholds.default, [list(p) for p in thresholds.per_class]],
        "pred_format": request.pred_format,
        "geometry": request.geometry,
        "split": request.split,
        "max_file_size": request.max_file_size,
        "class_choice": None if choice is None else repr(choice),
    }
    preparation = request.preparation()
    if preparation is not None:  # absent without: the digests of earlier runs stay as they were
        options["preparation"] = preparation_header(preparation)
    digest = hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode())
    annotations, root = annotation_folder(request.gt)
    listed = [
        ("gt", file_sizes(annotations, (".xml",))),
        ("pred", file_sizes(request.pred, prediction_suffixes(request.pred_format))),
    ]
    split = split_file(request.split, root) if request.split is not None else None
    for name, path in (("coco_gt", request.coco_gt), ("names", request.names), ("split", split)):
        if path is not None:
            listed.append((name, file_sizes(os.fspath(path))))
    for name, files in listed:
        digest.update(json.dumps([name, files]).encode())
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class MergedStates:
    """Evaluator states merged, and their evaluation.

    Attributes:
        evaluator: Every state's images, merged.
        evaluation: Their evaluation as one run on all the files reports it: the files the
            shards skipped, and the note of the score thresholds; and, when the states were
            not checked to be one whole run or a partial merge was asked for and they are
            not, a note saying so.
        check: What the check that the states are every shard of one run found.
        without_boxes: The states that keep no boxes (saved without ``boxes=True``), in the
            order given: the merged states then keep none.
    """

    evaluator: Evaluator
    evaluation: Evaluation
    check: ShardCheck
    without_boxes: tuple[str, ...] = ()

    def report(
        self,
        gates: Sequence[Gate | str] = (),
        max_fp: int | None = None,
        max_fn: int | None = None,
        beta: float = 1.0,
        calibration_bins: int | None = None,
        bootstrap: int | None = None,
        seed: int = 0,
        *,
        count: bool = False,
        target_precision: float | None = None,
        target_recall: float | None = None,
        confidence_level: float = 0.95,
        boxes: bool = False,
        analysis: bool = False,
        background_iou: float = 0.1,
        reliability: bool = False,
    ) -> EvalReport:
        """The report of the merged states, its gates checked: what :func:`evaluate` gives
        for one run on every image with the same gates and extras, for every renderer of
        :mod:`vocmatch.render.outputs`. The slices are those the states were made with
        (:attr:`Evaluator.slices <vocmatch.evaluation.shards.incremental.Evaluator>`),
        computed in each shard. Each image's matches are listed when every state keeps boxes
        (saved from a request with ``boxes=True``); the boxes themselves and the error
        analysis need them.

        Args:
            gates: Lower bounds on the dataset's or a class's metrics (``map=0.5``).
            max_fp: Most false positives an image may have (None: no limit).
            max_fn: Most missed objects an image may have (None: no limit).
            beta: The F-beta each class's operating point maximises.
            calibration_bins: Add the scores' calibration over this many bins (read from
                the states' match records, as one run computes it; OCE and D-ECE only from
                states saved with calibration inputs, else left out).
            bootstrap: Add bootstrap intervals from this many resamples of the images (read
                from the states' match records: the intervals one run gives).
            seed: Seed of the bootstrap's resamples.
            count: Add the per-image count errors and presence of each class (with
                intervals when ``bootstrap`` is given), as one run computes them.
            target_precision: Give each class the threshold holding this precision at the
                bootstrap's lower bound (over ``bootstrap`` resamples, 1,000 when None).
            target_recall: The same for recall.
            confidence_level: The lower bound's confidence.
            boxes: Keep every box in the report (an HTML report draws them).
            analysis: Add the error analysis (TIDE types, confusion, tightness).
            background_iou: The error analysis's background threshold.
            reliability: Add the calibration an HTML report draws (over
                ``calibration_bins`` bins, or 10).

        Raises:
            RequestError: A gate that cannot be read (field ``gates``), or a value out of
                its range (field ``calibration_bins``, ``bootstrap``, ``seed`` or
                ``background_iou``).
            InputError: The bootstrap is asked of states that keep no per-image ground-truth
                counts (saved by a vocmatch before state format version 5); ``boxes`` or
                ``analysis`` of states that keep no boxes (naming them).
        """
        from vocmatch.evidence.gate_records import parse_gate
        from vocmatch.evidence.gates import check_gates

        try:
            parsed = [parse_gate(g) if isinstance(g, str) else g for g in gates]
        except ValueError as error:
            raise RequestError("gates", str(error)) from None
        thresholds: ScoreThresholds | None = self.evaluator.score_thresholds
        merge = None if self.check.complete else self.check
        extras = _extras(
            self.evaluator.slices, calibration_bins, bootstrap, seed, count,
            (target_precision, target_recall, confidence_level), reliability,
        )  # fmt: skip
        evaluator = self.evaluator
        evidence = evidence_of(
            self.evaluation, evaluator.records(), evaluator.conventions, thresholds, extras
        )
        checked = check_gates(
            self.evaluation, parsed, max_fp, max_fn, evidence.slices,
            fold_case=self.evaluator.fold_case, targets=evidence.targets,
        )  # fmt: skip
        if not (boxes or analysis):
            return EvalReport(
                self.evaluation, checked, evidence=evidence, thresholds=thresholds, beta=beta,
                merge=merge,
            )  # fmt: skip
        gt, pred = self._annotations()
        found = None
        if analysis:
            from vocmatch.evidence.analysis import error_analysis

            iou = checked_bounded("background_iou", background_iou, FIELD_BOUNDS["background_iou"])
            found = error_analysis(self.evaluation, gt, pred, float(iou or 0.0))
        return EvalReport(
            self.evaluation, checked, found, evidence=evidence, thresholds=thresholds,
            beta=beta, gt=gt, pred=pred, merge=merge,
        )  # fmt: skip

    def _annotations(self) -> tuple[AnnotationSet, AnnotationSet]:
        """The kept boxes as annotations (names lower-cased under ``fold_case``, as the
        matching saw them).

        Raises:
            InputError: A state keeps no boxes (the states that keep none named).
        """
        kept = self.evaluator.boxes()
        if kept is None:
            states = self.without_boxes or ("the states",)
            listed = ", ".join(states[:3]) + (
                f" and {len(states) - 3} more" if len(states) > 3 else ""
            )
            raise InputError(
                Message(
                    f"{listed} {'keeps' if len(states) == 1 else 'keep'} no boxes, which the "
                    "report asked for lists or draws: save the state of every shard with ",
                    Option("keep_boxes", True),
                )
            )
        from vocmatch.evaluation.scoring import fold_names

        gt, pred = (columns.to_annotations() for columns in kept)
        if self.evaluator.fold_case:
            gt, pred = fold_names(gt), fold_names(pred)
        return gt, pred


def _extras(
    slices: tuple[SliceSpec, ...],
    calibration_bins: int | None,
    bootstrap: int | None,
    seed: int,
    count: bool,
    target: tuple[float | None, float | None, float],
    reliability: bool,
) -> Extras:
    """The extras a merge report asks for, each number checked by its field's range.

    Raises:
        RequestError: A number out of its range, or two targets (its field named).
    """
    bins = checked_bounded(
        "calibration_bins", calibration_bins, FIELD_BOUNDS["calibration_bins"], optional=True
    )
    resamples = checked_bounded("bootstrap", bootstrap, FIELD_BOUNDS["bootstrap"], optional=True)
    drawn = int(checked_bounded("seed", seed, FIELD_BOUNDS["seed"]) or 0)
    names = ("target_precision", "target_recall", "confidence_level")
    for field, value in zip(names, target, strict=True):
        checked_bounded(field, value, FIELD_BOUNDS[field], optional=True)
    resampled = None if resamples is None else int(resamples)
    return Extras(
        bootstrap=resampled, seed=drawn, slices=slices,
        calibration_bins=None if bins is None else int(bins), reliability=reliability,
        count=count, target=target_of(*target, resampled, drawn),
    )  # fmt: skip


def read_states(
    paths: Sequence[PathLike], *, partial: bool = False, max_bytes: int | None = None
) -> MergedStates:
    """Read evaluator states (saved by shards: :func:`shard_state`, then
    :meth:`~vocmatch.evaluation.shards.incremental.Evaluator.save`) and merge them: all of
    ``vocmatch merge`` but the output. The order of ``paths`` does not change the result.

    The states must be every shard of one run, each once (the shard and the run each state
    records: :class:`~vocmatch.evaluation.shards.shard_origin.ShardOrigin`); states that record no
    shard (saved from an evaluator fed arrays, or by an earlier vocmatch) merge unchecked,
    and the evaluation's notes say so.

    Each file is read as :meth:`~vocmatch.evaluation.shards.incremental.Evaluator.load` reads it:
    a regular file only (a named pipe or a device is refused without blocking), of at most
    ``max_bytes`` (:data:`~vocmatch.limits.MAX_STATE_BYTES` by default), its
    signature checked before the rest is read.

    Args:
        paths: The state files.
        partial: Merge states that are not every shard of one run (a shard missing or
            repeated, states of other runs); the evaluation's notes say what was found.
        max_bytes: The largest state file read.

    Raises:
        InputError: ``paths`` is empty, is one path rather than a list, or holds something
            other than a path; the states are every shard of a run that chose a class none
            of them found (as one run of it refuses that class).
        StateError: A state cannot be read, or the states cannot be merged (other options,
            an image in two of them; without ``partial``: a shard missing or given twice,
            states of different runs).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from vocmatch.run.evaluate import evaluate
        >>> request = EvalRequest(gt="fixtures/demo/gt", pred="fixtures/demo/pred")
        >>> import warnings
        >>> from vocmatch.errors import MissingPredictionWarning
        >>> warnings.simplefilter("ignore", MissingPredictionWarning)  # street_05: no predictions
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     paths = [Path(folder, f"{k}.vms") for k in (1, 2)]
        ...     for k, path in enumerate(paths, 1):
        ...         shard_state(request, shard=(k, 2)).evaluator.save(path)
        ...     merged = read_states(paths[::-1])
        ...     half = read_states(paths[:1], partial=True)
        >>> merged.evaluation.summary.map == evaluate(request).evaluation.summary.map
        True
        >>> half.check.missing, half.evaluation.notes[-1]
        ((2,), 'partial merge: shard 2 of 2 missing: the numbers are not those of the whole run')
    """
    from vocmatch.evaluation.shards.incremental import Evaluator
    from vocmatch.evaluation.shards.state import MAX_STATE_BYTES

    if isinstance(paths, (str, bytes, os.PathLike)):
        # A string is a sequence too: its letters would be read as paths.
        raise InputError(
            f"Expected `paths` to be a sequence of paths, got the one path {os.fsdecode(paths)!r}"
            " (give [path] for one state)"
        )
    paths = list(paths)
    if not paths:
        raise InputError("no evaluator state to merge")
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise InputError(f"expected a state file's path, got {type(path).__name__}")
    limit = MAX_STATE_BYTES if max_bytes is None else checked_max_bytes(max_bytes)
    states = [Evaluator.load(path, max_bytes=limit) for path in paths]
    check = check_shards(
        [(os.fspath(path), state.origin) for path, state in zip(paths, states, strict=True)],
        partial=partial,
    )
    # Before the merge, which keeps boxes only when every state has them.
    without_boxes = tuple(
        os.fspath(path) for path, state in zip(paths, states, strict=True) if not state.keep_boxes
    )
    reading = ReadingNotes.total(
        [state.origin.reading if state.origin is not None else None for state in states]
    )
    evaluator = states[0]
    for state in states[1:]:
        evaluator.merge(state)
    evaluator.origin = None  # the merge of the shards is no shard
    # The notes of the reading, worded from every shard's counts as one run words them (a
    # class chosen that none found refused as one run refuses it).
    notes_read = reading.notes(whole=check.complete) if reading is not None else ()
    evaluation = evaluator.result(reader_notes=notes_read)
    thresholds = evaluator.score_thresholds
    if thresholds:
        # The note a single run adds (evaluate); the records' own notes are worded already.
        evaluation = replace(evaluation, notes=(*evaluation.notes, thresholds.note()))
    notes = check.notes()
    if notes:
        evaluation = replace(evaluation, notes=(*evaluation.notes, *notes))
    return MergedStates(evaluator, evaluation, check, without_boxes)

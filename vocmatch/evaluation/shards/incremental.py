"""An evaluator fed image by image, whose state can be saved and merged across shards.

:class:`Evaluator` takes arrays (numpy, or anything with ``detach().cpu()`` such as torch
tensors, converted without importing torch), one image at a time (:meth:`Evaluator.add`) or in
torchmetrics' layout (:meth:`Evaluator.add_batch`). :meth:`Evaluator.result` gives the same
:class:`~vocmatch.evaluation.result.Evaluation` as
:func:`~vocmatch.evaluation.engine.evaluate_columns` on the same data, number for number.

Shards of a dataset are evaluated apart and merged (:meth:`Evaluator.merge`, or a saved state
read back with :meth:`Evaluator.load`): any partition of the images, merged in any order, gives
the result of a single run bit for bit. The images added are matched where they were added,
a batch at a time (once :data:`MATCH_BATCH` boxes wait, or when the state is needed: saved,
merged or evaluated), their boxes then let go, and only their match records
travel (:mod:`vocmatch.evaluation.records`: per prediction its class, score and match flags;
per image and per class counts; no boxes); :meth:`Evaluator.result` accumulates the records
of every shard. Version 2 of the state (:mod:`vocmatch.evaluation.shards.state`) holds those
records, each column in the narrowest dtype that holds it exactly, and the files the reading
of the images could not read (:meth:`Evaluator.add_skipped`) and the prediction files
without ground truth (:meth:`Evaluator.add_orphans`): merged, the shards report every file
one run on all of them would have skipped or not evaluated.

>>> import numpy as np
>>> ev = Evaluator("voc12")
>>> ev.add("a", np.array([[0.0, 0, 10, 10]]), ["cat"], np.array([[0.0, 0, 10, 10]]), [0.9], ["cat"])
>>> ev.result().summary.map
1.0
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.checks import checked_flag, checked_max_bytes
from vocmatch.core.model import SkippedFile
from vocmatch.core.preparation import Preparation, checked_preparation
from vocmatch.core.protocol import Conventions, conventions_of
from vocmatch.errors import InputError, RequestError, StateError
from vocmatch.evaluation.from_records import Findings, evaluation_of
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.result import Evaluation
from vocmatch.evaluation.shards import state_preparation as prepared_state
from vocmatch.evaluation.shards.class_labels import ClassLabels, text_ids_of_header
from vocmatch.evaluation.shards.column_parts import boxes_of_state, columns_to_state, join_columns
from vocmatch.evaluation.shards.given_arrays import (
    bad_rows,
    batch_entry,
    box_array,
    checked_boxes,
    checked_image_size,
    checked_vector,
    class_table,
    image_key,
    numbered_key,
    to_numpy,
)
from vocmatch.evaluation.shards.image_columns import (
    COLUMN_ARRAYS,
    ImageColumns,
    column_sets,
    columns_of_keys,
)
from vocmatch.evaluation.shards.shard_origin import ShardOrigin
from vocmatch.evaluation.shards.state import (
    MAX_STATE_BYTES,
    RawState,
    read_state,
    read_state_file,
    write_state,
)
from vocmatch.evaluation.shards.state_options import (
    conventions_header,
    options_difference,
    options_of_header,
    slices_header,
    slices_of_header,
)
from vocmatch.evaluation.shards.state_records import (
    holdable_skipped,
    is_str_list,
    numbered_of_header,
    orphans_of_header,
    records_of_state,
    skipped_in_order,
    skipped_of_header,
    skipped_to_header,
    state_of_records,
    with_range,
)
from vocmatch.evaluation.slice_records import SliceSpec, checked_slices
from vocmatch.evaluation.stages import select_images
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.evaluation.to_records import Asked, match_records
from vocmatch.files import save_bytes
from vocmatch.readers.scan import ColumnSet
from vocmatch.readers.shards import column_keys, shard_keys
from vocmatch.words import shown_key

__all__ = ["ClassTable", "Evaluator"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
#: Class names of integer labels: a sequence (label ``i`` is ``names[i]``) or a mapping.
ClassTable = Sequence[str] | Mapping[int, str]
#: Boxes added (ground truth and predictions) that are matched at once: the images added
#: wait, boxes and all, until this many have come or the state is needed.
MATCH_BATCH = 1 << 20


@dataclass(frozen=True, slots=True)
class _Flags:
    """An image's per-object flags as given: ``difficult`` and ``crowd``, each or None."""

    difficult: Any
    crowd: Any


class Evaluator:
    """Evaluates detections added image by image; states of shards merge exactly.

    Args:
        conventions: The protocol, as conventions or a protocol name (``"voc07"``,
            ``"voc12"``, ``"default"``, ``"coco"``).
        fold_case: Lower-case every class name before matching.
        score_thresholds: Count only predictions at or above their class's score threshold.
        class_names: The names of integer labels (label ``i`` is ``class_names[i]``, or a
            mapping of ids to names); without, an integer label ``3`` is the class ``"3"``.
        slices: Match each value of these slices too (specs, or texts such as ``"size"``,
            ``"pose"``, ``"night_*"``), where the images are matched (their
            records travel with the state): :func:`vocmatch.evidence.slices.slice_evaluation`
            reads them from :meth:`records`. The values come from the files' attributes
            (:meth:`add_columns`); images added as arrays have none (no ``truncated``,
            ``occluded`` or ``pose``).
        keep_boxes: Keep each image's boxes and per-box records too (saved with the state,
            kept by a merge when both evaluators keep them): what a report that lists or
            draws boxes reads (:meth:`boxes`, and the matches of :meth:`result`'s images).
        calibration: Keep what OCE and D-ECE read of each image (each object's IoU with the
            predictions of every class of its image: it costs) in the records, so that a
            merge of states saved this way reports them (see
            :mod:`vocmatch.evaluation.calibration_inputs`). An evaluator read from a state
            keeps them when the state holds them.
        preparation: Prepare each image's predictions before matching (saved with the state:
            states of other preparations refuse to merge; :mod:`vocmatch.core.preparation`).

    Image keys must be distinct across the evaluators merged. :meth:`add_batch` without
    ``image_ids`` numbers images ``0, 1, 2, ...`` in each evaluator (continuing across its
    calls): one evaluator fed that way is fine, but two (one per process or rank) number
    different images alike, so merging them is refused, with a message that asks for
    ``image_ids``. Give each image its dataset id (a file name, a COCO image id): then any
    partition of the images merges to the single run's numbers, ties of score included.

    Arrays are checked as the XML reader checks a file: coordinates finite and within
    ±2^53, ``x1 <= x2`` and ``y1 <= y2``; class names are stripped and must not be empty
    (with ``fold_case`` they are also lower-cased before matching). A call refused leaves the
    evaluator as it was.

    Raises:
        RequestError: No protocol has that name, or an option has a value of the wrong
            type (``field`` names it).

    Example:
        Two shards of a set, evaluated apart and merged, give the single run's numbers:

        >>> import numpy as np
        >>> whole, first, second = Evaluator("coco"), Evaluator("coco"), Evaluator("coco")
        >>> box = np.array([[0.0, 0, 10, 10]])
        >>> for ev, key in [(whole, "a"), (whole, "b"), (first, "a"), (second, "b")]:
        ...     ev.add(key, box, ["cat"], box + 1, [0.8], ["cat"])
        >>> first.merge(Evaluator.from_bytes(second.to_bytes()))
        >>> first.result().coco.as_list() == whole.result().coco.as_list()
        True
    """

    def __init__(
        self,
        conventions: Conventions | str = "default",
        *,
        fold_case: bool = False,
        score_thresholds: ScoreThresholds | None = None,
        class_names: ClassTable | None = None,
        slices: Sequence[SliceSpec | str] = (),
        keep_boxes: bool = False,
        calibration: bool = False,
        preparation: Preparation | None = None,
    ) -> None:
        self.conventions = conventions_of(conventions, "conventions")
        #: The preparation of each image's predictions (None: none; saved with the state).
        self.preparation = checked_preparation(preparation)
        #: The slices matched with the images (saved with the state, compared on merge).
        self.slices = checked_slices(slices)
        self.calibration = bool(checked_flag("calibration", calibration))
        self.fold_case = bool(checked_flag("fold_case", fold_case))
        #: Each image's boxes and per-box records are kept (see the class doc).
        self.keep_boxes = bool(checked_flag("keep_boxes", keep_boxes))
        # With keep_boxes: the boxes of the images added from files (one pair of column
        # sets a call) and of those added as arrays (their columns).
        self._box_sets: list[tuple[ColumnSet, ColumnSet]] = []
        self._box_images: list[ImageColumns] = []
        if score_thresholds is not None and not isinstance(score_thresholds, ScoreThresholds):
            raise RequestError(
                "score_thresholds",
                f"expected ScoreThresholds, got {type(score_thresholds).__name__}",
            )
        # Class names are lower-cased under fold_case: so are the thresholds' names.
        folded = score_thresholds.folded() if fold_case and score_thresholds else None
        self.score_thresholds = folded or score_thresholds or None
        self._classes = ClassLabels(class_table(class_names))
        # Images added and not matched yet; the records of those matched (or merged).
        self._parts: list[ImageColumns] = []
        self._records: list[MatchRecords] = []
        self._boxes_added = 0
        self._match_batch = MATCH_BATCH
        self._keys: set[str] = set()
        # The images add_batch numbered itself, as [start, stop) ranges of numbers, so that a
        # merge refused for a shared key can say where the key came from.
        self._numbered: list[tuple[int, int]] = []
        self._skipped: frozenset[SkippedFile] = frozenset()
        # (key, path) of the prediction files recorded as having no ground-truth file.
        self._orphans: frozenset[tuple[str, str]] = frozenset()
        #: The shard of a run the images are (saved with the state; None once merged).
        self.origin: ShardOrigin | None = None

    def __len__(self) -> int:
        """The images added."""
        return len(self._keys)

    @property
    def keys(self) -> list[str]:
        """The keys of the images added or merged, sorted."""
        return sorted(self._keys)

    @property
    def skipped(self) -> tuple[SkippedFile, ...]:
        """The files recorded as skipped (:meth:`add_skipped`), each once, sorted by path and
        line."""
        return skipped_in_order(self._skipped)

    @property
    def orphan_pred(self) -> tuple[str, ...]:
        """The prediction files recorded as having no ground-truth file
        (:meth:`add_orphans`), each once, in the order of their image keys."""
        return tuple(path for _, path in sorted(self._orphans))

    @property
    def class_names(self) -> dict[int, str]:
        """The table of integer labels' names."""
        return dict(self._classes.table)

    def add(
        self,
        image_id: str | int,
        gt_boxes: Any,
        gt_labels: Any,
        pred_boxes: Any,
        pred_scores: Any,
        pred_labels: Any,
        *,
        difficult: Any = None,
        crowd: Any = None,
        image_size: Any = None,
    ) -> None:
        """Add one image's ground truth and predictions.

        Args:
            image_id: The image's key (an integer becomes its decimal text); results list
                images sorted by key, and ties of score rank in that order.
            gt_boxes: ``(N, 4)`` ``x1, y1, x2, y2``.
            gt_labels: ``(N,)`` class names, or integer ids (see ``class_names``).
            pred_boxes: ``(M, 4)``.
            pred_scores: ``(M,)`` confidences (NaN for none), or None: unscored predictions.
            pred_labels: ``(M,)``.
            difficult: ``(N,)`` flags, or None.
            crowd: ``(N,)`` flags, or None. vocmatch has one flag per object, read under the
                protocol's ``difficult`` rule (``coco``: a crowd region; ``voc``: ignored),
                so ``difficult`` and ``crowd`` are joined.
            image_size: ``(width, height)`` of the image, or None; D-ECE (with
                ``calibration``) places each box relative to it, and leaves out the
                predictions of images without one.

        Raises:
            InputError: An array has the wrong shape or values, a label has no name, the
                size is not two positive finite numbers, or the image was added already.
        """
        size = checked_image_size(image_size)
        with self._unchanged_if_refused():
            image = self._image(
                image_key(image_id), gt_boxes, gt_labels, pred_boxes, pred_scores, pred_labels,
                _Flags(difficult, crowd),
            )  # fmt: skip
        self._append(image if size is None else dataclasses.replace(image, sizes=(size,)))

    def add_batch(
        self,
        preds: Sequence[Mapping[str, Any]],
        targets: Sequence[Mapping[str, Any]],
        image_ids: Sequence[str | int] | None = None,
    ) -> None:
        """Add images in torchmetrics' ``MeanAveragePrecision.update`` layout.

        Args:
            preds: Per image, ``boxes`` ``(M, 4)`` (``xyxy``), ``scores`` ``(M,)`` and
                ``labels`` ``(M,)``.
            targets: Per image, ``boxes`` ``(N, 4)``, ``labels`` ``(N,)``, and optionally
                ``difficult`` and ``iscrowd`` ``(N,)``.
            image_ids: Each image's key. By default the images are numbered: the next
                number not yet a key, from the count of images added before (so
                ``0, 1, 2, ...`` across calls). Give keys when evaluators are merged: each
                numbers from 0, and a merge of numbered images is refused.

        Raises:
            InputError: The lists differ in length, or an image's arrays are wrong.
        """
        for name, given in (("preds", preds), ("targets", targets)):
            if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Sequence):
                raise InputError(
                    f"Expected `{name}` to be a list of mappings, one per image, got "
                    f"{type(given).__name__}"
                )
        if len(preds) != len(targets):
            raise InputError(
                f"Expected as many `preds` as `targets`, got {len(preds)} and {len(targets)}"
            )
        if image_ids is not None and len(image_ids) != len(preds):
            raise InputError(
                f"Expected one image id per image, got {len(image_ids)} for {len(preds)}"
            )
        ids = (
            [image_key(key, f"image_ids[{i}]") for i, key in enumerate(image_ids)]
            if image_ids is not None
            else None
        )
        if ids is not None:
            batch = self._batch(preds, targets, ids)
            if batch is not None:
                self._append(batch)
                return
        keys = ids if ids is not None else self._next_numbers(len(preds))
        images: list[ImageColumns] = []
        # Every image is checked before any is kept: a batch refused leaves the evaluator
        # as it was.
        with self._unchanged_if_refused():
            for i, (pred, gt, key) in enumerate(zip(preds, targets, keys, strict=True)):
                if any(key in image.keys for image in images):
                    raise InputError(f"image {key!r} is given twice in the batch")
                images.append(self._batch_image(i, key, pred, gt))
        for image in images:
            self._append(image)
        if image_ids is None:
            for key in keys:
                self._numbered = with_range(self._numbered, (int(key), int(key) + 1))

    def _batch_image(self, i: int, key: str, pred: object, gt: object) -> ImageColumns:
        """Image ``i`` of a batch, checked; messages name it by its place in the lists."""
        where = f" of image {i}"
        p, g = f"`preds[{i}]`", f"`targets[{i}]`"
        return self._image(
            key,
            batch_entry(gt, "boxes", g),
            batch_entry(gt, "labels", g),
            batch_entry(pred, "boxes", p),
            batch_entry(pred, "scores", p, optional=True),
            batch_entry(pred, "labels", p),
            _Flags(
                batch_entry(gt, "difficult", g, optional=True),
                batch_entry(gt, "iscrowd", g, optional=True),
            ),
            where,
        )

    @contextlib.contextmanager
    def _unchanged_if_refused(self) -> Iterator[None]:
        """The class names and label ids learnt while checking images, forgotten if one is
        refused: the evaluator is then exactly as it was."""
        classes = self._classes.copy()
        try:
            yield
        except BaseException:
            self._classes = classes
            raise

    def _batch(
        self,
        preds: Sequence[Mapping[str, Any]],
        targets: Sequence[Mapping[str, Any]],
        keys: list[str],
    ) -> ImageColumns | None:
        """The images of a batch checked at once, when they are plain: new keys, numeric
        boxes and scores, integer labels all seen before, no flags. None for any other
        batch, which :meth:`add` then takes image by image (with its messages)."""
        if not keys or len(set(keys)) != len(keys) or not self._keys.isdisjoint(keys):
            return None
        columns: dict[str, list[npt.NDArray[Any]]] = {name: [] for name in COLUMN_ARRAYS[2:]}
        for pred, gt in zip(preds, targets, strict=True):
            if not (isinstance(pred, Mapping) and isinstance(gt, Mapping)):
                return None
            if "difficult" in gt or "iscrowd" in gt or pred.get("scores") is None:
                return None
            if not {"boxes", "labels"} <= gt.keys() or not {"boxes", "labels"} <= pred.keys():
                return None
            g_boxes, p_boxes = box_array(gt["boxes"]), box_array(pred["boxes"])
            if g_boxes is None or p_boxes is None:
                return None
            n_gt, n_pred = g_boxes.shape[0], p_boxes.shape[0]
            parts = (
                ("gt_labels", gt["labels"], n_gt, "iu"),
                ("pred_labels", pred["labels"], n_pred, "iu"),
                ("pred_scores", pred["scores"], n_pred, "biuf"),
            )
            for name, given, n, kinds in parts:
                values = to_numpy(given)
                if values.ndim != 1 or values.shape[0] != n:
                    return None
                if n:  # the values of no box are not looked at
                    if values.dtype.kind not in kinds:
                        return None
                    columns[name].append(values)
            columns["gt_boxes"].append(g_boxes)
            columns["pred_boxes"].append(p_boxes)
        gt_boxes = np.concatenate(columns["gt_boxes"], dtype=np.float64)
        pred_boxes = np.concatenate(columns["pred_boxes"], dtype=np.float64)
        scores = np.concatenate([np.zeros(0), *columns["pred_scores"]], dtype=np.float64)
        # Every box's values at once: a batch with one the XML reader would refuse is left to
        # add, which says which and why.
        if bad_rows(gt_boxes).any() or bad_rows(pred_boxes).any():
            return None
        if np.isinf(scores).any():
            return None
        labels = []
        for name in ("gt_labels", "pred_labels"):
            if not columns[name]:
                labels.append(np.zeros(0, dtype=np.int64))
                continue
            values = np.concatenate(columns[name])
            known = self._classes.known_ids(values) if values.dtype.kind in "iu" else None
            if known is None:
                return None
            labels.append(known)
        return ImageColumns(
            tuple(keys), tuple(keys), tuple(keys),
            np.array([b.shape[0] for b in columns["gt_boxes"]], dtype=np.int64),
            np.array([b.shape[0] for b in columns["pred_boxes"]], dtype=np.int64),
            gt_boxes, labels[0], np.zeros(gt_boxes.shape[0], dtype=bool),
            pred_boxes, scores, labels[1],
        )  # fmt: skip

    def add_columns(
        self, gt: ColumnSet, pred: ColumnSet, *, shard: tuple[int, int] | None = None
    ) -> None:
        """Add the images of column sets read from files (as ``vocmatch eval`` evaluates
        them: every ground-truth file read, with the predictions of the same key).

        Args:
            gt: Ground-truth columns.
            pred: Prediction columns.
            shard: ``(k, n)``: only the ``k``-th of ``n`` shards (1-based), the images whose
                place among the ground-truth keys is ``k - 1`` modulo ``n``, counting the
                keys of files that could not be read (:mod:`vocmatch.readers.shards`: the
                shards ``vocmatch eval --shard`` reads).

        Rotated boxes and polygons are matched by their regions, as one run matches them
        (their images are matched at once, with the slices asked for).

        Raises:
            InputError: ``shard`` is out of range, an image was added already, or rotated
                boxes or polygons for an evaluator that keeps boxes (a state keeps plain
                boxes).
        """
        if (gt.shapes or pred.shapes) and self.keep_boxes:
            raise InputError(
                "rotated boxes and polygons cannot be kept as boxes in an evaluator state: "
                "evaluate them in one run for a report that lists or draws boxes"
            )
        chosen = shard_keys(column_keys(gt), shard) if shard is not None else None
        if self.slices or gt.shapes or pred.shapes:
            self._add_matched(gt, pred, chosen)
            return
        selection = select_images(gt, pred)
        gt_bounds = np.searchsorted(selection.gt_image, np.arange(len(selection.images) + 1))
        pred_bounds = np.searchsorted(selection.pred_image, np.arange(len(selection.images) + 1))
        gt_names, pred_names = np.array(gt.label_names), np.array(pred.label_names)
        added: set[str] = set()
        for j, i in enumerate(selection.images):
            if chosen is not None and gt.keys[i] not in chosen:
                continue
            g = selection.gt_rows[gt_bounds[j] : gt_bounds[j + 1]]
            p = selection.pred_rows[pred_bounds[j] : pred_bounds[j + 1]]
            image = self._image(
                gt.keys[i], gt.boxes[g], gt_names[gt.labels[g]], pred.boxes[p], pred.scores[p],
                pred_names[pred.labels[p]], _Flags(gt.difficult[g], None),
            )  # fmt: skip
            # The files the image was read from, as the report of a single run names them.
            q = selection.pred_of_image[j]
            added.add(gt.keys[i])
            # The ground truth's size, else the predictions' (as a single run reads them).
            size = gt.sizes[i]
            if size is None or not (size.width > 0 and size.height > 0):
                size = pred.sizes[q] if q is not None else None
            self._append(
                dataclasses.replace(
                    image,
                    gt_paths=(gt.paths[i],),
                    pred_paths=(pred.paths[q] if q is not None else None,),
                    sizes=(None if size is None else (size.width, size.height),),
                ),
                from_arrays=False,
            )
        if self.keep_boxes and added:
            kept = frozenset(added)
            self._box_sets.append((columns_of_keys(gt, kept), columns_of_keys(pred, kept)))

    def _add_matched(self, gt: ColumnSet, pred: ColumnSet, chosen: frozenset[str] | None) -> None:
        """Match the images of column sets (those of ``chosen``) at once, slices and shapes
        and all: the slices read the files' attributes and shapes are matched by their
        regions, which images waiting as arrays do not keep."""
        self._match_added()
        unreadable = {s.key for s in (*gt.skipped, *pred.skipped) if s.key is not None}
        keys = [k for k in gt.keys if k not in unreadable and (chosen is None or k in chosen)]
        shared = sorted(self._keys.intersection(keys))
        if shared:
            raise InputError(f"image {shared[0]!r} was added already")
        gt, pred = columns_of_keys(gt, frozenset(keys)), columns_of_keys(pred, frozenset(keys))
        for name in sorted({*gt.label_names, *pred.label_names}):
            self._classes.intern(name)
        records = match_records(
            gt, pred, self.conventions, fold_case=self.fold_case,
            score_thresholds=self.score_thresholds,
            asked=self._asked(),
            preparation=self.preparation,
        )  # fmt: skip
        self._records.append(records)
        self._keys.update(records.keys)
        if self.keep_boxes and records.keys:
            kept = frozenset(records.keys)
            self._box_sets.append((columns_of_keys(gt, kept), columns_of_keys(pred, kept)))

    def add_skipped(self, files: Iterable[SkippedFile]) -> None:
        """Record files that could not be read: their images are not in the evaluator, and
        the report says so. They are saved with the state, united when states merge (a file
        two evaluators recorded, such as one of no image that every shard lists, counts
        once), and reported by :meth:`result`.

        Args:
            files: The files, as the readers give them (``ColumnSet.skipped``).

        Raises:
            InputError: A file is not one a state can hold: its path, key or message not
                text, or its line not a whole number from 1 (or None). None is recorded.
        """
        given = list(files)
        for file in given:
            if not holdable_skipped(file):
                raise InputError(
                    "Expected `files` to hold skipped files (a path, a message, a line from 1"
                    f" or None, a key or None), got {file!r}"
                )
        self._skipped = self._skipped | frozenset(given)

    def add_orphans(self, files: Iterable[tuple[str, str]]) -> None:
        """Record prediction files that have no ground-truth file, which a single run reports
        as not evaluated: its result lists them (``orphan_pred``), its saved state carries
        them, and a merge keeps those of both evaluators (one shard of a run records them,
        :func:`~vocmatch.run.shard_states.shard_state`).

        Args:
            files: ``(key, path)`` of each file, as
                :func:`~vocmatch.evaluation.stages.orphan_files` gives them.
        """
        self._orphans = self._orphans | frozenset(files)

    def result(
        self,
        *,
        skipped: Sequence[SkippedFile] = (),
        orphan_pred: Sequence[str] = (),
        reader_notes: Sequence[str] = (),
    ) -> Evaluation:
        """The evaluation of every image added or merged: what
        :func:`~vocmatch.evaluation.engine.evaluate_columns` gives on the same data with
        ``keep_matches=False``.

        Args:
            skipped: Files the reading skipped, reported as a single run reports them, with
                those recorded (:meth:`add_skipped`).
            orphan_pred: Prediction files without ground truth (not evaluated), with those
                recorded (:meth:`add_orphans`).
            reader_notes: The reader's notes, first among the notes.

        Raises:
            InputError: A score threshold is set and no prediction has a score.
        """
        given = set(skipped)
        files = (*skipped, *(s for s in self.skipped if s not in given))
        given_orphans = set(orphan_pred)
        orphans = (*orphan_pred, *(p for p in self.orphan_pred if p not in given_orphans))
        return evaluation_of(
            self._matched(), self.conventions, fold_case=self.fold_case,
            score_thresholds=self.score_thresholds,
            findings=Findings(files, orphans, tuple(reader_notes)),
        )  # fmt: skip

    def records(self) -> MatchRecords:
        """The match records of every image added or merged, in key order (what
        :meth:`result` accumulates; the calibration reads them too)."""
        return self._matched()

    def _matched(self) -> MatchRecords:
        """The records of every image, in key order: those added since are matched now, and
        all kept joined, for the next call (each part let go once copied)."""
        self._match_added()
        parts, self._records = self._records, []
        records = MatchRecords.taken_in_key_order(parts, self.conventions)
        self._records = [records]
        return records

    def _image(
        self,
        key: str,
        gt_boxes: Any,
        gt_labels: Any,
        pred_boxes: Any,
        pred_scores: Any,
        pred_labels: Any,
        flags: _Flags,
        where: str = "",
    ) -> ImageColumns:
        """One image's arrays, checked (see :meth:`add`), its paths its key; ``where`` names
        the image in messages (`` of image 3``)."""
        if key in self._keys:
            raise InputError(f"image {key!r} was added already")
        g_boxes = checked_boxes(gt_boxes, f"`gt_boxes`{where}")
        p_boxes = checked_boxes(pred_boxes, f"`pred_boxes`{where}")
        n_gt, n_pred = g_boxes.shape[0], p_boxes.shape[0]
        g_labels = self._classes.indices(gt_labels, n_gt, f"`gt_labels`{where}")
        p_labels = self._classes.indices(pred_labels, n_pred, f"`pred_labels`{where}")
        if pred_scores is None:
            scores = np.full(n_pred, np.nan)
        else:
            scores = checked_vector(pred_scores, n_pred, f"`pred_scores`{where}")
            scores = scores.astype(np.float64)
            if np.isinf(scores).any():
                raise InputError(
                    f"Expected `pred_scores`{where} to be finite (or NaN for no score)"
                )
        flag = np.zeros(n_gt, dtype=bool)
        for given, name in ((flags.difficult, "difficult"), (flags.crowd, "crowd")):
            if given is not None:
                flag |= checked_vector(given, n_gt, f"`{name}`{where}").astype(bool)
        return ImageColumns(
            (key,),
            (key,),
            (key,),
            np.array([n_gt], dtype=np.int64),
            np.array([n_pred], dtype=np.int64),
            g_boxes,
            g_labels,
            flag,
            p_boxes,
            scores,
            p_labels,
        )

    def _append(self, image: ImageColumns, *, from_arrays: bool = True) -> None:
        """Keep an image added; past a batch of boxes, match those waiting (their records
        are kept instead of their boxes, unless :attr:`keep_boxes`)."""
        if self.keep_boxes and from_arrays:
            self._box_images.append(image)
        self._parts.append(image)
        self._keys.update(image.keys)
        self._boxes_added += int(image.gt_count.sum() + image.pred_count.sum())
        if self._boxes_added >= self._match_batch:
            self._match_added()

    def _asked(self) -> Asked:
        """What the matching keeps: the classes' rankings too, which the accumulation reads
        (joined with other records' rankings, not ranked again)."""
        keep = self.keep_boxes
        return Asked(slices=self.slices, detail=keep, calibration=self.calibration, ranked=True)

    def _match_added(self) -> None:
        """Match the images added since the last time (in one run of the engine's stages)
        and keep their records instead of their boxes."""
        if not self._parts:
            return
        gt, pred = column_sets(ImageColumns.join(self._parts), tuple(self._classes.names))
        asked = self._asked()
        records = match_records(
            gt, pred, self.conventions, fold_case=self.fold_case,
            score_thresholds=self.score_thresholds, asked=asked, preparation=self.preparation,
        )  # fmt: skip
        self._records.append(records)
        self._parts = []
        self._boxes_added = 0

    def merge(self, other: Evaluator) -> None:
        """Take in another evaluator's images, skipped files and prediction files without
        ground truth (``other`` is left as it is). Integer labels added after it are named by
        the joined class tables, as in the merged state read back (even an id seen before).

        Raises:
            StateError: The two were made with other options, give one class id two names,
                or share an image.
        """
        if self._options() != other._options():
            raise StateError(
                "cannot merge states made with other options: "
                f"{options_difference(self._options(), other._options())}"
            )
        merged = self._classes.copy()
        merged.merge(other._classes)
        shared = sorted(self._keys & other._keys)
        if shared:
            more = f" and {len(shared) - 3} more" if len(shared) > 3 else ""
            listed = ", ".join(shown_key(k) for k in shared[:3]) + more
            ranges = [*self._numbered, *other._numbered]
            if any(numbered_key(key, ranges) for key in shared):
                raise StateError(
                    f"cannot merge states that share images: {listed} (add_batch numbers "
                    "images from 0 in each evaluator: give each image its key in image_ids)"
                )
            raise StateError(f"cannot merge states that share images: {listed}")
        self._classes = merged
        self._records.append(other._matched())
        if self.keep_boxes and other.keep_boxes:
            self._box_sets.extend(other._boxes_added_sets())
        else:  # the merged images' boxes are not all there: none is kept
            self.keep_boxes = False
            self._box_sets, self._box_images = [], []
        # The calibration inputs of a merge are those of every part, or none.
        self.calibration = self.calibration and other.calibration
        self._keys |= other._keys
        for numbers in other._numbered:
            self._numbered = with_range(self._numbered, numbers)
        self._skipped = self._skipped | other._skipped
        self._orphans = self._orphans | other._orphans
        self.origin = None  # the images of two shards are no longer one shard

    def boxes(self) -> tuple[ColumnSet, ColumnSet] | None:
        """The boxes of every image added or merged, as the ground-truth and prediction
        columns (images sorted by key; the files each was read from), or None unless
        :attr:`keep_boxes`."""
        if not self.keep_boxes:
            return None
        sets = self._boxes_added_sets()
        self._box_sets, self._box_images = sets, []
        if not sets:
            return column_sets(ImageColumns.join([]), ())
        return join_columns([g for g, _ in sets]), join_columns([p for _, p in sets])

    def _boxes_added_sets(self) -> list[tuple[ColumnSet, ColumnSet]]:
        """The kept boxes as column sets, those added as arrays made into one pair."""
        sets = list(self._box_sets)
        if self._box_images:
            names = tuple(self._classes.names)
            sets.append(column_sets(ImageColumns.join(self._box_images), names))
        return sets

    def to_bytes(self) -> bytes:
        """The state, in the format of :mod:`vocmatch.evaluation.shards.state`: the images' match
        records (matched now, if they were not yet). A state holding images that
        :meth:`add_batch` numbered lists their numbers as ``[start, stop)`` ranges
        (``numbered`` in the header, absent otherwise; a reader that knows nothing of it
        loses only the reason a merge gives). The files recorded as skipped are the header's
        ``skipped`` list, the prediction files without ground truth its ``orphan_pred`` list of
        ``[key, path]``, in format version 3; a state with neither is version 2, as before
        those fields existed. A state whose :attr:`origin` is set records it in the header's
        ``shard`` object, in format version 4; records keeping each image-class's ground
        truth that counts (every image matched by this vocmatch) its ``gt_cells`` array, in
        format version 5; slices, records keeping the calibration inputs
        (:attr:`calibration`: their ``calibration_*`` arrays) and, for an evaluator that keeps
        boxes, its per-box records (``detail_*``) and its boxes (the header's ``boxes`` object
        and the ``boxes_gt_*`` and ``boxes_pred_*`` arrays), in format version 6
        (:data:`vocmatch.evaluation.shards.state.FORMAT_VERSION`)."""
        records = self._matched()
        if self.keep_boxes and not records.keys:  # the records of no image: no box either
            records = dataclasses.replace(records, detail=())
        header, arrays = state_of_records(records, self.conventions, self.slices)
        header = {
            "options": self._options(),
            "class_table": [[label, name] for label, name in sorted(self._classes.table.items())],
            "names": list(self._classes.names),
            **header,
        }
        if self._classes.text_ids:
            header["text_ids"] = sorted(self._classes.text_ids)
        if self._numbered:
            header["numbered"] = [list(numbers) for numbers in self._numbered]
        if self._skipped:
            header["skipped"] = skipped_to_header(self._skipped)
        if self._orphans:
            header["orphan_pred"] = [[key, path] for key, path in sorted(self._orphans)]
        version = 3 if self._skipped or self._orphans else 2
        if self.origin is not None:
            header["shard"] = self.origin.to_header()
            version = 4
        if "gt_cells" in arrays:
            version = 5
        boxes = self.boxes()
        if boxes is not None:
            sides = {}
            for side, columns in zip(("gt", "pred"), boxes, strict=True):
                sides[side], side_arrays = columns_to_state(columns, f"boxes_{side}_")
                arrays.update(side_arrays)
            header["boxes"] = sides
            version = 6
        if self.slices or "calibration" in header or "shapes" in header["notes"]:
            version = 6
        version = max(version, prepared_state.removed_to_header(header, self.preparation, records))
        return write_state(RawState(header, arrays), version=version)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "state") -> Evaluator:
        """An evaluator holding a saved state.

        Args:
            data: Bytes made by :meth:`to_bytes`.
            source: What to call them in errors (a file's path).

        Raises:
            StateError: The bytes are not a readable state (one line naming ``source``).
        """
        raw = read_state(data, source)
        header = raw.header
        options, table, names = (
            header.get("options"),
            header.get("class_table"),
            header.get("names"),
        )
        if not is_str_list(names):
            raise StateError(f"{source}: corrupted header (names)")
        if not (
            isinstance(table, list)
            and all(
                isinstance(e, list) and len(e) == 2 and type(e[0]) is int and isinstance(e[1], str)
                for e in table
            )
        ):
            raise StateError(f"{source}: corrupted header (class_table)")
        if len(set(names)) != len(names):
            raise StateError(f"{source}: corrupted header (a class repeats)")
        if len({label for label, _ in table}) != len(table):
            raise StateError(f"{source}: corrupted header (class_table: an id repeats)")
        conventions, fold_case, score_thresholds = options_of_header(options, source)
        slices = slices_of_header(options, source)
        preparation = prepared_state.preparation_of_header(options, source)
        evaluator = cls(
            conventions, fold_case=fold_case, score_thresholds=score_thresholds,
            class_names=dict(table), slices=slices, preparation=preparation,
        )  # fmt: skip
        stored = {n: a for n, a in raw.arrays.items() if not n.startswith("boxes_")}
        records = records_of_state(header, stored, conventions, source, slices)
        records = prepared_state.records_with_removed(records, header, preparation, source)
        evaluator.calibration = records.calibration is not None
        if "boxes" in header:
            evaluator._box_sets = [boxes_of_state(header["boxes"], raw.arrays, records, source)]
            evaluator.keep_boxes = True
        elif records.detail is not None:
            raise StateError(f"{source}: corrupted header (per-box records without boxes)")
        evaluator._classes.names = {name: k for k, name in enumerate(names)}
        evaluator._classes.text_ids = text_ids_of_header(
            header.get("text_ids", []), names, dict(table), source
        )
        evaluator._records = [records]
        evaluator._keys = set(records.keys)
        evaluator._numbered = numbered_of_header(header.get("numbered", []), source)
        evaluator._skipped = frozenset(skipped_of_header(header.get("skipped", []), source))
        evaluator._orphans = orphans_of_header(header.get("orphan_pred", []), source)
        if "shard" in header:
            evaluator.origin = ShardOrigin.of_header(header["shard"], source)
        return evaluator

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the state to ``path``, whole or not at all, by :mod:`vocmatch.files`: a
        temporary file in its folder, renamed over it (a symbolic link keeps pointing at its
        file; a device or named pipe is written in place, never replaced).

        Raises:
            OutputError: The file cannot be written (a missing folder, a full disk); an
                earlier file at ``path`` is left as it was and nothing else is left behind.
        """
        save_bytes(path, self.to_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, max_bytes: int = MAX_STATE_BYTES) -> Evaluator:
        """An evaluator holding the state saved at ``path``.

        Only a regular file is read (a named pipe or a device such as ``/dev/zero`` is
        refused without blocking), and only once its size (at most ``max_bytes``) and its
        first bytes say it is a state (:func:`~vocmatch.evaluation.shards.state.read_state_file`).

        Raises:
            StateError: The file cannot be read or is not a readable state (one line naming
                the path, and the header's field at fault).
        """
        data = read_state_file(path, max_bytes=checked_max_bytes(max_bytes))
        return cls.from_bytes(data, os.fspath(path))

    def _options(self) -> dict[str, Any]:
        """The options results depend on, as JSON values (compared when merging)."""
        conventions = conventions_header(self.conventions)
        thresholds = self.score_thresholds
        options: dict[str, Any] = {
            "conventions": conventions,
            "fold_case": self.fold_case,
            "score_thresholds": None
            if thresholds is None
            else {
                "default": thresholds.default,
                "per_class": [list(p) for p in thresholds.per_class],
            },
        }
        if self.slices:  # absent without: such a state reads in an earlier vocmatch
            options["slices"] = slices_header(self.slices)
        return prepared_state.with_preparation(options, self.preparation)

    def _next_numbers(self, count: int) -> list[str]:
        """The keys add_batch gives the next ``count`` images: the first numbers from the
        count of images that are no keys yet."""
        numbers: list[str] = []
        number = len(self._keys)
        while len(numbers) < count:
            if str(number) not in self._keys:
                numbers.append(str(number))
            number += 1
        return numbers

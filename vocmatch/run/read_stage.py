"""The read stage of a run: the ground truth and the predictions of a request, in any
format, as columns, after the class choice and the geometry; and the refusal of inputs of
which nothing pairs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from vocmatch.errors import InputError, Message, RequestError, no_annotation_files
from vocmatch.readers.formats import prediction_format

if TYPE_CHECKING:
    # Types only: the command line's help imports this module, without numpy.
    from vocmatch.evaluation.shards.reading_notes import ReadingNotes, SplitCount
    from vocmatch.readers.scan import ColumnSet
    from vocmatch.readers.voc_splits import Split
    from vocmatch.run.evaluate import EvalRequest, Inputs, PathLike, ReadOptions

__all__ = [
    "ListedColumns",
    "check_class_tables",
    "check_pred_path",
    "chosen_columns",
    "read_inputs",
    "read_listed",
    "reads_elsewhere",
    "refuse_unpaired",
    "refuse_unpaired_keys",
]


def reads_elsewhere(request: EvalRequest) -> bool:
    """Whether the request's inputs are read through
    :func:`~vocmatch.run.remote_inputs.read_elsewhere`: a cluster is named, or an input is a
    URL (told without importing that module)."""
    from vocmatch.readers.remote import is_url

    return request.dask is not None or is_url(request.gt) or is_url(request.pred)


def check_class_tables(options: ReadOptions) -> None:
    """The class tables go with their formats: COCO's ids, YOLO's indices; a class map whose
    names fold into one class is refused before any file is read."""
    chosen = options.class_selection()
    if chosen is not None and chosen.class_map is not None and options.folds_case():
        chosen.class_map.folded()
    record = prediction_format(options.pred_format)
    if record.table != "coco_gt" and options.coco_gt is not None:
        raise RequestError("coco_gt", "a COCO ground truth names the ids of COCO results only")
    if record.table != "names" and options.names is not None:
        raise RequestError("names", "class names by index are read for YOLO predictions only")
    if options.box_format != "xyxy" and options.pred_format != "txt":
        raise RequestError(
            "box_format", "a box form is read for txt predictions only", options.box_format
        )
    tables = {"coco_gt": options.coco_gt, "names": options.names}
    if record.table is not None and record.table_required and tables[record.table] is None:
        raise RequestError("pred_format", record.missing, record.name)


def check_pred_path(options: ReadOptions, pred: PathLike) -> None:
    """A missing prediction path, or a file where a folder is read, in one line.

    Raises:
        InputError: The path does not exist, or is no folder where one is read.
        RequestError: A file where the format reads a folder (field ``pred``, the path as
            value): a COCO results file, or one detector's txt file.
    """
    where = os.fspath(pred)
    if not os.path.exists(where):
        raise InputError(f"{where}: no such file or folder")
    if prediction_format(options.pred_format).one_file or os.path.isdir(where):
        return
    suffix = os.path.splitext(where)[1].lower()
    if os.path.isfile(where) and suffix in (".json", ".txt"):
        kind = "COCO results" if suffix == ".json" else "predictions"
        raise RequestError("pred", f"a file of {kind}, where a folder is read", where)
    raise InputError(f"{where}: not a directory")


def read_inputs(
    inputs: Inputs,
    progress: Callable[[int, int], None] | None = None,
    *,
    shard: tuple[int, int] | None = None,
) -> tuple[ColumnSet, ColumnSet]:
    """The ground truth and the predictions in any format, as columns.

    The ground truth comes from ``gt/Annotations`` for a VOC folder, restricted to the
    images of the split when one is given.

    Args:
        inputs: The paths and how to read them.
        progress: Told how many files are read, of how many.
        shard: ``(k, n)``: read only the files of the k-th of n parts of the images
            (1-based; :mod:`vocmatch.readers.shards`), chosen from the file names: the
            files of the other parts are not opened (a COCO results file, one file for
            every image, is read whole and its other images' detections left out).

    Returns:
        The ground truth and the predictions, paired by image key.

    Raises:
        RequestError: A class table given with the wrong format, or a missing one; a split
            that names no list; a file of predictions where the format reads a folder
            (field ``pred``).
        AnnotationError: Class names are folded to lower case and two prediction names of
            the class map fold to one with different ground-truth names.
        InputError: No annotation file, or not a single ground-truth image pairs with a
            prediction.

    Example:
        >>> from vocmatch.run.evaluate import Inputs
        >>> gt, pred = read_inputs(Inputs("fixtures/demo/gt", "fixtures/demo/pred"))
        >>> len(gt.keys), len(pred.keys)
        (6, 5)
    """
    listed = read_listed(inputs, progress, shard=shard)
    return listed.chosen(inputs.options, whole=shard is None)


@dataclass(frozen=True, slots=True)
class ListedColumns:
    """The ground truth and the predictions as read, before the class choice and the
    geometry: what the reading's notes are counted on.

    Attributes:
        gt: The ground truth (the notes of its folder's walk).
        pred: The predictions.
        split: The split's counts, when a split is read (its note not yet added).
    """

    gt: ColumnSet
    pred: ColumnSet
    split: SplitCount | None = None

    def chosen(self, options: ReadOptions, *, whole: bool = True) -> tuple[ColumnSet, ColumnSet]:
        """The columns of the run: the split's note added, then the class choice and the
        geometry (:func:`chosen_columns`)."""
        gt = self.gt
        if self.split is not None:
            gt = replace(gt, notes=(*gt.notes, self.split.note()))
        return chosen_columns(gt, self.pred, options, whole=whole)

    def reading(self, options: ReadOptions) -> ReadingNotes:
        """What the notes of this reading are worded from, under ``options``' choices: a
        shard's, which the merge of the run adds up."""
        from vocmatch.evaluation.shards.reading_notes import ReadCounts, ReadingNotes

        return ReadingNotes(
            ReadCounts.of(self.gt, self.pred), options.class_selection(), options.folds_case(),
            options.geometry, tuple(self.gt.notes), tuple(self.pred.notes), self.split,
        )  # fmt: skip


def read_listed(
    inputs: Inputs,
    progress: Callable[[int, int], None] | None = None,
    *,
    shard: tuple[int, int] | None = None,
) -> ListedColumns:
    """:func:`read_inputs` before the class choice and the geometry.

    Raises:
        RequestError: As :func:`read_inputs`.
        InputError: As :func:`read_inputs`.
    """
    from vocmatch.readers.scan import read_column_pair, read_columns
    from vocmatch.readers.voc_layout import annotation_folder, split_file

    options = inputs.options
    split_count: SplitCount | None = None
    check_class_tables(options)
    check_pred_path(options, inputs.pred)
    annotations, root = annotation_folder(inputs.gt)
    split = options.split
    listed = None
    if split is not None:
        from vocmatch.readers.voc_splits import read_split

        listed = read_split(split_file(split, root))
    jobs, max_bytes = options.workers(), options.max_file_size
    if shard is not None:
        (gt, pred), listed = _read_shard(inputs, annotations, listed, shard, progress)
    elif options.pred_format == "voc":
        gt, pred = read_column_pair(annotations, inputs.pred, jobs, max_bytes, progress)
    else:
        from vocmatch.readers.class_names import read_class_names
        from vocmatch.readers.pred_formats import read_detections

        names = read_class_names(options.names) if options.names is not None else None
        gt = read_columns(annotations, jobs, max_bytes, progress)
        if not gt.keys:
            raise no_annotation_files(str(annotations), gt.skipped)
        if listed is not None:
            from vocmatch.readers.voc_splits import only_split

            gt = only_split(gt, gt, listed)[0]
        pred = read_detections(
            options.pred_format, inputs.pred, gt, coco_gt=options.coco_gt, names=names,
            names_path=options.names, box_format=options.box_format, max_bytes=max_bytes,
        )  # fmt: skip
    if listed is not None:
        from vocmatch.evaluation.shards.reading_notes import SplitCount
        from vocmatch.readers.voc_splits import only_split

        gt, pred, left_out = only_split(gt, pred, listed)
        split_count = SplitCount(str(listed.path), len(listed.ids), left_out)
        if not gt.keys and shard is None:
            raise InputError(
                f"{listed.path}: none of its images has an annotation file in {annotations}"
            )
    if options.pred_format == "voc" and shard is None:
        refuse_unpaired(gt, pred, inputs.pred)
    return ListedColumns(gt, pred, split_count)


def chosen_columns(
    gt: ColumnSet, pred: ColumnSet, options: ReadOptions, *, whole: bool = True
) -> tuple[ColumnSet, ColumnSet]:
    """The columns as read, after the class choice and the geometry of ``options``: the
    last stage of :func:`read_inputs`, for columns read another way (on a cluster, from
    object storage), so that they are evaluated as the same files read here would be.

    Args:
        gt: The ground truth as read.
        pred: The predictions as read.
        options: The request's reading options.
        whole: The columns hold every image (not one shard's).

    Raises:
        RequestError: No prediction class is a ground-truth class (field ``classes``).
        AnnotationError: Class names are folded to lower case and two prediction names of
            the class map fold to one with different ground-truth names.

    Example:
        >>> from vocmatch.evaluation.class_map import ClassChoice
        >>> from vocmatch.run.evaluate import Inputs, ReadOptions
        >>> gt, pred = read_inputs(Inputs("fixtures/demo/gt", "fixtures/demo/pred"))
        >>> options = ReadOptions(class_choice=ClassChoice(classes=("cat",)))
        >>> chosen, _ = chosen_columns(gt, pred, options)
        >>> sorted({chosen.label_names[code] for code in chosen.labels})
        ['cat']
    """
    gt, pred = _chosen_classes(gt, pred, options, whole=whole)
    from vocmatch.readers.shapes import with_geometry

    return (
        with_geometry(gt, options.geometry, "ground truth"),
        with_geometry(pred, options.geometry, "predictions"),
    )


def _read_shard(
    inputs: Inputs,
    annotations: str,
    split: Split | None,
    shard: tuple[int, int],
    progress: Callable[[int, int], None] | None,
) -> tuple[tuple[ColumnSet, ColumnSet], Split | None]:
    """The ground truth and predictions of a shard's images, and the split restricted to
    them: the folders are listed, the shard's part of the listed keys chosen, and only its
    files read. Whether anything pairs is judged on the names of every image.

    Raises:
        InputError: No annotation file, none of the split, or no ground-truth name pairs
            with a prediction file's.
    """
    from vocmatch.readers.parse import list_directory
    from vocmatch.readers.scan import read_listings
    from vocmatch.readers.shards import listed_keys, shard_keys, shard_listing

    options = inputs.options
    listing = list_directory(annotations)
    if not listing.files:
        raise no_annotation_files(annotations, listing.skipped)
    present = listed_keys(listing)
    wanted = set(split.ids) if split is not None else None
    every = present if wanted is None else [k for k in present if k in wanted]
    if split is not None and not every:
        raise InputError(
            f"{split.path}: none of its images has an annotation file in {annotations}"
        )
    chosen = shard_keys(every, shard)
    gt_listing = shard_listing(listing, chosen)
    if split is not None:
        # A listed image without an annotation file has no place among the keys: the first
        # shard reports it, once for the run.
        found = set(present)
        kept = [
            (image, line)
            for image, line in zip(split.ids, split.lines, strict=True)
            if image in chosen or (shard[0] == 1 and image not in found)
        ]
        split = replace(split, ids=tuple(i for i, _ in kept), lines=tuple(line for _, line in kept))
    jobs, max_bytes = options.workers(), options.max_file_size
    if options.pred_format == "voc":
        pred_listing = list_directory(inputs.pred)
        pred_keys = listed_keys(pred_listing)
        refuse_unpaired_keys(every, pred_keys, inputs.pred)
        # The prediction files of no listed ground-truth image (orphans, or files that
        # cannot be read), and those of other splits: the first shard reads them, to report
        # (or count, as left out of the split) them once for the run.
        if shard[0] == 1:
            found = set(present)
            orphans = {k for k in pred_keys if k not in found and (wanted is None or k in wanted)}
            others = {k for k in pred_keys if wanted is not None and k not in wanted}
            chosen = chosen | orphans | others
        gt, pred = read_listings(
            [gt_listing, shard_listing(pred_listing, chosen)], jobs, max_bytes, progress
        )
        return (gt, pred), split
    from vocmatch.readers.class_names import read_class_names
    from vocmatch.readers.pred_formats import read_detections

    names = read_class_names(options.names) if options.names is not None else None
    (gt,) = read_listings([gt_listing], jobs, max_bytes, progress)
    pred = read_detections(
        options.pred_format, inputs.pred, gt, coco_gt=options.coco_gt, names=names,
        names_path=options.names, box_format=options.box_format, max_bytes=max_bytes, images=every,
    )  # fmt: skip
    return (gt, pred), split


def _chosen_classes(
    gt: ColumnSet, pred: ColumnSet, options: ReadOptions, *, whole: bool = True
) -> tuple[ColumnSet, ColumnSet]:
    """The columns after the class choice; refused when the predictions name their classes
    (a names file, a COCO category list, the devkit's file names) and none is a ground-truth
    class: every prediction would be a false positive and mAP 0 would mean nothing. XML
    predictions are compared as they are written (their classes are their own).

    Raises:
        RequestError: No prediction class is a ground-truth class (field ``classes``).
    """
    from vocmatch.evaluation.class_map import choose_classes, no_shared_class

    # Label sets compare lower-cased names (vocmatch.evaluation.labels_and_masks.labels): so
    # does the check.
    fold_case = options.folds_case()
    chosen = options.class_selection()
    if chosen:
        gt, pred = choose_classes(gt, pred, chosen, fold_case, whole=whole)
    # A shard's images may lack the classes its predictions share with the other shards'.
    judged = whole and options.pred_format != "voc"
    reason = no_shared_class(gt, pred, fold_case) if judged else None
    if reason is not None:
        raise RequestError("classes", reason)
    return gt, pred


def refuse_unpaired(gt: ColumnSet, pred: ColumnSet, pred_dir: PathLike) -> None:
    """Refuse a run where not a single ground-truth image pairs with a prediction: a wrong
    folder or a naming convention, not a model that missed everything.

    Raises:
        InputError: Nothing pairs; the message says what the prediction folder holds.
    """
    unreadable = {s.key for s in gt.skipped if s.key is not None}
    gt_keys = [k for k in gt.keys if k not in unreadable]
    pred_keys = [*pred.keys, *(s.key for s in pred.skipped if s.key is not None)]
    refuse_unpaired_keys(gt_keys, pred_keys, pred_dir)


def refuse_unpaired_keys(
    gt_keys: Sequence[str], pred_keys: Sequence[str], pred_dir: PathLike
) -> None:
    """:func:`refuse_unpaired` on the image keys of both sides: the ground-truth files read,
    every prediction file listed (read or not).

    Raises:
        InputError: Nothing pairs.
    """
    from vocmatch.readers.unpaired import no_pairs_reason, other_files, paired

    if not gt_keys or paired(gt_keys, pred_keys):
        return
    others = other_files(Path(pred_dir)) if not pred_keys else []
    reason = no_pairs_reason(gt_keys, sorted(set(pred_keys)), os.fspath(pred_dir), others)
    raise InputError(Message("no ground-truth image pairs with a prediction: ", reason))

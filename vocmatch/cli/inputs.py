"""Reading the inputs a command names: ground truth, predictions in any format, and the
refusal when nothing pairs."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vocmatch.cli.console import fail, xml_folders
from vocmatch.errors import no_annotation_files
from vocmatch.render.files import InputFolder
from vocmatch.words import plural

if TYPE_CHECKING:
    from vocmatch.evaluation.class_map import ClassChoice
    from vocmatch.readers.scan import ColumnSet


def read_inputs(
    gt_dir: Path,
    pred_dir: Path,
    pred_format: str,
    coco_gt: Path | None,
    names_file: Path | None,
    jobs: int,
    max_file_size: int,
    progress: Callable[[int, int], None] | None = None,
    split: str | None = None,
    geometry: str = "shape",
) -> tuple[ColumnSet, ColumnSet]:
    """The ground truth (from ``GT_DIR/Annotations`` for a VOC folder, restricted to the
    images of ``split``) and the predictions in any format, as columns; exit 2 when no
    ground-truth image pairs with a prediction. Call inside :func:`library_errors`."""

    from vocmatch.readers.scan import read_column_pair, read_columns
    from vocmatch.readers.voc_layout import annotation_folder, only_split, read_split, split_file

    if pred_format != "coco" and coco_gt is not None:
        raise click.UsageError("--coco-gt names the ids of --pred-format coco results")
    if pred_format != "yolo" and names_file is not None:
        raise click.UsageError("--names names the class indices of --pred-format yolo files")
    if pred_format == "yolo" and names_file is None:
        raise click.UsageError("--pred-format yolo needs --names FILE (class names, one per line)")
    annotations, root = annotation_folder(gt_dir)
    listed = read_split(split_file(split, root)) if split is not None else None
    if pred_format == "voc":
        gt, pred = read_column_pair(annotations, pred_dir, jobs, max_file_size, progress)
    else:
        from vocmatch.readers.class_names import read_class_names
        from vocmatch.readers.pred_formats import read_detections

        names = read_class_names(names_file) if names_file is not None else None
        gt = read_columns(annotations, jobs, max_file_size, progress)
        if not gt.keys:
            raise fail(str(no_annotation_files(str(annotations), gt.skipped)))
        if listed is not None:
            gt = only_split(gt, gt, listed)[0]
        pred = read_detections(
            pred_format,  # type: ignore[arg-type]  # one of click's choices
            pred_dir,
            gt,
            coco_gt=coco_gt,
            names=names,
            names_path=names_file,
            max_bytes=max_file_size,
        )
    if listed is not None:
        gt, pred, left_out = only_split(gt, pred, listed)
        note = f"split {listed.path}: {plural(len(listed.ids), 'image')} listed"
        if left_out:
            note += (
                f"; {plural(left_out, 'image')} of other splits in the predictions, not evaluated"
            )
        gt = replace(gt, notes=(*gt.notes, note))
        if not gt.keys:
            raise fail(f"{listed.path}: none of its images has an annotation file in {annotations}")
    if pred_format == "voc":
        refuse_unpaired(gt, pred, pred_dir)
    from vocmatch.readers.shapes import Geometry, with_geometry

    chosen: Geometry = "box" if geometry == "box" else "shape"
    return with_geometry(gt, chosen, "ground truth"), with_geometry(pred, chosen, "predictions")


def prediction_inputs(pred_dir: Path, pred_format: str) -> list[InputFolder]:
    """The folders a run reads predictions from (reports must not be written there)."""
    if pred_format == "voc":
        return xml_folders(pred_dir)
    if pred_format == "coco":
        return []
    return [InputFolder(os.fspath(pred_dir), (".txt",))]


def refuse_unpaired(gt: ColumnSet, pred: ColumnSet, pred_dir: Path) -> None:
    """Exit 2 with one line when not a single ground-truth image pairs with a prediction:
    a wrong folder or a naming convention, not a model that missed everything."""
    from vocmatch.readers.unpaired import no_pairs_reason, other_files, paired

    unreadable = {s.key for s in gt.skipped if s.key is not None}
    gt_keys = [k for k in gt.keys if k not in unreadable]
    pred_keys = [*pred.keys, *(s.key for s in pred.skipped if s.key is not None)]
    if not gt_keys or paired(gt_keys, pred_keys):
        return
    others = other_files(pred_dir) if not pred_keys else []
    reason = no_pairs_reason(gt_keys, sorted(set(pred_keys)), str(pred_dir), others)
    raise fail(f"no ground-truth image pairs with a prediction: {reason}")


def choose_inputs_classes(
    gt: ColumnSet, pred: ColumnSet, choice: ClassChoice, fold_case: bool, named: bool = True
) -> tuple[ColumnSet, ColumnSet]:
    """The columns after --class-map, --classes and --agnostic; exit 2 with one line when
    the predictions name classes and none is a ground-truth class (a names file or a map of
    another data set: every prediction would be a false positive, and mAP 0 mean nothing).
    The refusal applies when ``named``: the prediction names came from a names file, a
    COCO category list or file names (not XML files, whose names a run compares as they are).
    Call inside :func:`library_errors`."""
    from vocmatch.evaluation.class_map import choose_classes, no_shared_class

    if choice:
        gt, pred = choose_classes(gt, pred, choice, fold_case)
    reason = no_shared_class(gt, pred, fold_case) if named else None
    if reason is not None:
        raise fail(
            f"{reason} (--fold-case matches names that differ in case; --names names YOLO "
            "indices; --class-map renames classes, coco-to-voc for a COCO model on VOC)"
        )
    return gt, pred

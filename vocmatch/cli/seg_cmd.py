"""``vocmatch seg``: score segmentation masks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vocmatch.cli.app import main
from vocmatch.cli.console import check_outputs, echo_err, library_errors, option_words
from vocmatch.cli.eval_cmd import show_report
from vocmatch.cli.exits import EXIT_SKIPPED
from vocmatch.cli.options import format_option, max_rows_option, output_option
from vocmatch.cli.params import InputPath, WholeNumberRange
from vocmatch.files import InputFolder

if TYPE_CHECKING:
    from vocmatch.evaluation.labels_and_masks.seg import PredVoid


@main.command("seg")
@click.argument("gt_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_dir", type=InputPath(file_okay=False, path_type=Path))
@click.option(
    "--classes",
    "classes_file",
    type=InputPath(exists=True, dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Class names, one per line, in mask-index order (the first line is index 0). "
    "[default: the 21 PASCAL VOC classes, 0 background]",
)
@click.option(
    "--pred-void",
    type=click.Choice(["error", "miss"]),
    default="error",
    show_default=True,
    help="A prediction holding 255 (void): error skips that image, as the VOC devkit rejects "
    "it; miss counts such pixels as missed pixels of their ground-truth class.",
)
@format_option(["table", "json"], "table: the rich report; json: every number, for scripts.")
@output_option("Write the report to FILE; the terminal still shows the summary.")
@click.option(
    "--jobs",
    "-j",
    type=WholeNumberRange(min=1),
    default=1,
    show_default=True,
    help="Processes reading and counting masks; decoding the PNGs is most of the work, so "
    "on a large set up to one per core runs faster.",
)
@max_rows_option(20, "Rows of the per-image table (lowest mIoU first); 0 shows every image.")
def seg_command(
    gt_dir: Path,
    pred_dir: Path,
    classes_file: Path | None,
    pred_void: PredVoid,
    output_format: str,
    output: Path | None,
    jobs: int,
    max_rows: int,
) -> None:
    """Score the segmentation masks in PRED_DIR against those in GT_DIR.

    Masks are PASCAL VOC SegmentationClass-style PNGs (palette or greyscale) whose pixel
    values are class indices, 255 void (ignored in the ground truth); they are paired by
    their path relative to each directory, without the extension. Per-class IoU is
    TP / (TP + FP + FN) over all pixels of the dataset. A pair that cannot be evaluated
    (sizes that differ, an unreadable file, a value out of range, no partner) is named on
    stderr, the rest still count, and the exit code is 3.
    """
    from vocmatch.evaluation.labels_and_masks.seg import (
        VOC_CLASSES,
        evaluate_masks,
        read_class_names,
    )
    from vocmatch.render.label_tables import render_seg, seg_summary
    from vocmatch.render.labels_json import seg_to_json

    check_outputs(
        [output],
        files=[classes_file],
        folders=[InputFolder(os.fspath(d), (".png",)) for d in (gt_dir, pred_dir)],
    )
    with library_errors():
        names = read_class_names(classes_file) if classes_file is not None else VOC_CLASSES
        evaluation = evaluate_masks(gt_dir, pred_dir, names, pred_void=pred_void, jobs=jobs)
    for skipped in evaluation.skipped:
        echo_err(f"vocmatch: skipped {skipped}")
    show_report(
        output_format,
        output,
        lambda: seg_to_json(evaluation),
        lambda: render_seg(evaluation, max_rows, option_words),
        lambda: seg_summary(evaluation),
    )
    if evaluation.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)

"""``vocmatch eval``: score predictions against ground truth."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from vocmatch.cli.app import main
from vocmatch.cli.console import (
    PICTURE_SUFFIXES,
    check_outputs,
    echo_err,
    fail,
    library_errors,
    print_report,
    progress_display,
    reader_may_leave,
    report_gates,
    report_text,
    report_warnings,
    stdout_console,
    write_text,
    xml_folders,
)
from vocmatch.cli.evidence import Evidence, evidence_for, evidence_report, operating_thresholds
from vocmatch.cli.exits import EXIT_GATE, EXIT_SKIPPED
from vocmatch.cli.inputs import choose_inputs_classes, prediction_inputs, read_inputs
from vocmatch.cli.options import (
    DEFAULT_BACKGROUND_IOU,
    DEFAULT_MAX_BYTES,
    HTML_PICTURE_MAX_SIDE,
    class_options,
    convention_options,
    conventions_from,
    evidence_options,
    format_option,
    gate_option,
    max_rows_option,
    output_option,
    pred_format_options,
    slice_options,
)
from vocmatch.cli.params import (
    FiniteFloatRange,
    GrammarFloat,
    InputPath,
    OutputPath,
    WholeNumberRange,
    byte_size,
    finite_option,
)
from vocmatch.errors import VocmatchWarning
from vocmatch.render.files import InputFolder

if TYPE_CHECKING:
    from rich.console import RenderableType

    from vocmatch.evaluation.class_map import ClassChoice
    from vocmatch.evaluation.evaluate import Evaluation
    from vocmatch.evaluation.labels import LabelEvaluation
    from vocmatch.evaluation.thresholds import ScoreThresholds
    from vocmatch.evidence.analysis import ErrorAnalysis
    from vocmatch.evidence.gates import Gate, GateReport
    from vocmatch.evidence.slices import SliceSpec
    from vocmatch.readers.parse import AnnotationSet


def machine_text(
    output_format: str,
    evaluation: Evaluation,
    gates: GateReport,
    analysis: ErrorAnalysis | None = None,
    evidence: Evidence | None = None,
    thresholds: ScoreThresholds | None = None,
    beta: float = 1.0,
) -> str:
    """The evaluation in one of the file formats (every ``--format`` but ``table``); JSON
    carries the error analysis and the evidence when given, the score thresholds and the
    operating points."""
    from vocmatch.render.machine import to_csv_images, to_json, to_junit, to_markdown

    if output_format == "json":
        found = evidence or Evidence()
        return to_json(
            evaluation,
            analysis,
            bootstrap=found.bootstrap,
            thresholds=thresholds,
            beta=beta,
            slices=found.slices,
            calibration=found.calibration,
        )
    if output_format == "csv":
        return to_csv_images(evaluation)
    if output_format == "markdown":
        return to_markdown(evaluation, gates, (evidence or Evidence()).bootstrap)
    return to_junit(evaluation, gates)


@main.command("eval")
@click.argument("gt_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_dir", type=InputPath(path_type=Path))
@click.option(
    "--mode",
    type=click.Choice(["boxes", "labels"]),
    default="boxes",
    show_default=True,
    help="boxes: match boxes per class, AP; labels: compare the set of class names of each "
    "image (per-image Jaccard, per-class IoU over images; --difficult, --format table or "
    "json, --output, --max-rows, --only-failing and --jobs apply, box options do not).",
)
@pred_format_options
@class_options
@convention_options
@format_option(
    ["table", "json", "csv", "markdown", "junit"],
    "table: the rich report; json: every number, for scripts; csv: one row per image; "
    "markdown: summary, classes and gates, for a pull request or a CI job summary; junit: a "
    "test case per image and per gate, for CI test reports.",
)
@output_option("Write the report to FILE; the terminal still shows the summary.")
@max_rows_option(20, "Rows of the per-image table (worst first); 0 shows every image.")
@click.option("--only-failing", is_flag=True, help="List only images with an FP or an FN.")
@click.option(
    "--classes-csv",
    type=OutputPath(),
    default=None,
    metavar="FILE",
    help="Also write one CSV row per class to FILE (with any --format).",
)
@click.option(
    "--html",
    "html_file",
    type=OutputPath(),
    default=None,
    metavar="FILE",
    help="Also write a self-contained HTML report to FILE: summary, curves, confusion matrix "
    "and every image's boxes drawn (with any --format).",
)
@click.option(
    "--images",
    "images_dir",
    type=InputPath(exists=True, file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="With --html: draw the boxes on the pictures in DIR (found by <filename> or by "
    f"name; JPEG or PNG, embedded scaled to {HTML_PICTURE_MAX_SIDE} px).",
)
@click.option(
    "--fail-under",
    multiple=True,
    callback=gate_option,
    metavar="[CLASS:]METRIC=VALUE",
    help="Exit 1 unless METRIC (map, precision, recall or f1; ap50 or ap75 under --protocol "
    "coco) is at least VALUE, a fraction in [0, 1]; CLASS:METRIC for one class (ap = map). "
    "Repeatable.",
)
@click.option(
    "--max-fp",
    type=WholeNumberRange(min=0),
    default=None,
    metavar="N",
    help="Exit 1 if any image has more than N false positives.",
)
@click.option(
    "--max-fn",
    type=WholeNumberRange(min=0),
    default=None,
    metavar="N",
    help="Exit 1 if any image has more than N missed objects.",
)
@click.option(
    "--score-threshold",
    type=GrammarFloat(),
    callback=finite_option,
    default=None,
    metavar="T",
    help="Count only predictions with score >= T: TP, FP, FN, precision, recall, the tables, "
    "gates, confusion, errors and HTML overlays. AP uses every prediction. A prediction "
    "without a score passes no threshold.",
)
@click.option(
    "--score-thresholds",
    "score_thresholds_file",
    type=InputPath(exists=True, dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Per-class score thresholds: CSV lines class,threshold (as --write-thresholds "
    "writes them); other classes use --score-threshold, or count every prediction.",
)
@click.option(
    "--beta",
    type=FiniteFloatRange(min=0.0, min_open=True),
    default=1.0,
    show_default=True,
    help="Each class's operating point maximises F-beta on its precision/recall curve: 1 is "
    "F1, 2 weighs recall twice as much as precision, 0.5 precision twice.",
)
@click.option(
    "--write-thresholds",
    "write_thresholds_file",
    type=OutputPath(),
    default=None,
    metavar="FILE",
    help="Write each class's operating-point threshold to FILE as class,threshold CSV, for "
    "--score-thresholds in a later run.",
)
@click.option(
    "--errors/--no-errors",
    default=False,
    show_default=True,
    help="Add the error breakdown (TIDE types and their mAP cost) and the confusion matrix "
    "to the table report. JSON always has them.",
)
@click.option(
    "--background-iou",
    type=FiniteFloatRange(0.0, 1.0),
    default=DEFAULT_BACKGROUND_IOU,
    show_default=True,
    help="A false positive overlapping no object by more than this is a background error; "
    "one at least this close to an object of its class, a localisation error.",
)
@click.option(
    "--tightness",
    is_flag=True,
    help="Add IoU and edge-offset histograms of the matched boxes to the table report.",
)
@click.option(
    "--fold-case",
    is_flag=True,
    help="Lower-case class names before matching, so Car and car are one class (without it, "
    "names differing only in case are counted apart and noted).",
)
@click.option(
    "--max-file-size",
    callback=byte_size,
    default=f"{DEFAULT_MAX_BYTES // 1024**2}M",
    show_default=True,
    metavar="SIZE",
    help="Skip larger annotation files unread (5000, 64K, 32M, 1G; powers of 1024).",
)
@click.option(
    "--jobs",
    "-j",
    type=WholeNumberRange(min=0),
    default=0,
    help="Processes that read files in parallel; 0 (the default) uses every core.",
)
@evidence_options
@slice_options
@click.option("--quiet", "-q", is_flag=True, help="No progress bar on long runs.")
def eval_command(
    gt_dir: Path,
    pred_dir: Path,
    mode: str,
    pred_format: str,
    coco_gt: Path | None,
    names_file: Path | None,
    split: str | None,
    geometry: str,
    class_choice: ClassChoice,
    protocol_name: str,
    iou: float | None,
    strict_threshold: bool | None,
    pixel_inclusive: bool | None,
    match_rule: str | None,
    difficult: str | None,
    interpolation: str | None,
    output_format: str,
    output: Path | None,
    max_rows: int,
    only_failing: bool,
    classes_csv: Path | None,
    html_file: Path | None,
    images_dir: Path | None,
    fail_under: tuple[Gate, ...],
    max_fp: int | None,
    max_fn: int | None,
    score_threshold: float | None,
    score_thresholds_file: Path | None,
    beta: float,
    write_thresholds_file: Path | None,
    errors: bool,
    background_iou: float,
    tightness: bool,
    fold_case: bool,
    max_file_size: int,
    jobs: int,
    bootstrap_resamples: int | None,
    seed: int,
    slice_specs: tuple[SliceSpec, ...],
    calibration_bins: int | None,
    quiet: bool,
) -> None:
    """Evaluate the predictions in PRED_DIR against the ground truth in GT_DIR.

    XML files are paired by their path relative to each directory, without the extension.
    With --mode labels, only the class names in each file count.
    """

    # The report's modules (rich, vocmatch.render.terminal) are imported below only for the outputs
    # that need them: JSON on stdout starts a tenth of a second sooner without them.
    from vocmatch.evaluation.engine import evaluate_matched
    from vocmatch.evaluation.evaluate import fold_names
    from vocmatch.evaluation.thresholds import ScoreThresholds, read_score_thresholds
    from vocmatch.evidence.gates import check_gates

    if mode == "labels":
        labels_eval(
            gt_dir, pred_dir, difficult, output_format, output, max_rows, only_failing,
            max_file_size, jobs, pred_format, coco_gt, names_file, split,
        )  # fmt: skip
        return
    if images_dir is not None and html_file is None:
        raise click.UsageError("--images draws the HTML report's overlays: give --html FILE too")
    check_outputs(
        [output, classes_csv, html_file, write_thresholds_file],
        files=[pred_dir if pred_format == "coco" else None, coco_gt, names_file,
               score_thresholds_file],
        folders=xml_folders(gt_dir)
        + prediction_inputs(pred_dir, pred_format)
        + ([InputFolder(os.fspath(images_dir), PICTURE_SUFFIXES)] if images_dir else []),
    )  # fmt: skip
    conventions = conventions_from(
        protocol_name, iou, strict_threshold, pixel_inclusive, match_rule, difficult,
        interpolation,
    )  # fmt: skip
    # Per-box records are built only for the outputs that show boxes: they cost more than
    # the evaluation itself on large sets.
    needs_boxes = html_file is not None or errors or tightness or output_format == "junit"
    with library_errors():
        per_class = read_score_thresholds(score_thresholds_file) if score_thresholds_file else {}
    thresholds = ScoreThresholds.of(score_threshold, per_class)
    with library_errors(), progress_display(quiet) as progress:
        gt_columns, pred_columns = read_inputs(
            gt_dir, pred_dir, pred_format, coco_gt, names_file, jobs or os.cpu_count() or 1,
            max_file_size, progress.files, split, geometry,
        )  # fmt: skip
        gt_columns, pred_columns = choose_inputs_classes(
            gt_columns, pred_columns, class_choice, fold_case, named=pred_format != "voc"
        )
        evaluation, matched = evaluate_matched(
            gt_columns,
            pred_columns,
            conventions,
            keep_matches=needs_boxes,
            fold_case=fold_case,
            progress=progress.stages,
            score_thresholds=thresholds or None,
        )
        if thresholds:
            refuse_unknown_classes(per_class, evaluation, score_thresholds_file)
            evaluation = replace(evaluation, notes=(*evaluation.notes, thresholds.note()))
    gt = pred = None
    if needs_boxes:
        gt, pred = gt_columns.to_annotations(), pred_columns.to_annotations()
        if fold_case:
            # The error analysis and the HTML report see the names that were matched.
            gt, pred = fold_names(gt), fold_names(pred)
    evidence = evidence_for(
        evaluation, matched, bootstrap_resamples, seed, slice_specs, calibration_bins,
        html=html_file is not None,
    )  # fmt: skip
    # The columns are the largest thing held; the outputs below need only the evaluation.
    del gt_columns, pred_columns, matched
    report_warnings(evaluation)
    with library_errors():
        gates = check_gates(evaluation, fail_under, max_fp, max_fn, evidence.slices)
    analysis = None
    if (errors or tightness) and gt is not None and pred is not None:
        from vocmatch.evidence.analysis import error_analysis

        with library_errors():
            analysis = error_analysis(evaluation, gt, pred, background_iou)
    if output_format != "table":
        text = machine_text(
            output_format, evaluation, gates, analysis, evidence, thresholds or None, beta
        )
        if output is None:
            with reader_may_leave():
                click.echo(text, nl=False)
        else:
            from vocmatch.render.terminal import summary_table

            write_text(output, text)
            with reader_may_leave():
                print_report(stdout_console(), summary_table(evaluation))
    else:
        from rich.console import Group
        from rich.text import Text

        from vocmatch.render.terminal import ReportOptions, render, render_analysis, summary_table

        options = ReportOptions(
            max_rows=max_rows,
            only_failing=only_failing,
            score_thresholds=thresholds or None,
            beta=beta,
        )
        console = stdout_console()
        report = render(evaluation, options)
        if analysis is not None:
            threshold = evaluation.conventions.iou_threshold
            extra = render_analysis(analysis, threshold, errors, tightness, max_rows)
            report = Group(report, Text(), extra)
        report = Group(report, *evidence_report(evidence, evaluation.conventions.iou_threshold))
        if output is None:
            with reader_may_leave():
                print_report(console, report)
        else:
            write_text(output, report_text(report))
            with reader_may_leave():
                print_report(console, summary_table(evaluation))
    if classes_csv is not None:
        from vocmatch.render.machine import to_csv_classes

        write_text(classes_csv, to_csv_classes(evaluation))
    if write_thresholds_file is not None:
        write_text(write_thresholds_file, operating_thresholds(evaluation, beta))
    if html_file is not None and gt is not None and pred is not None:
        # The slider is one for every class: it starts at the lowest threshold in force.
        values = [thresholds.default, *dict(thresholds.per_class).values()]
        start = min((v for v in values if v is not None), default=0.0)
        write_text(html_file, html_text(evaluation, gt, pred, images_dir, evidence, start))
    report_gates(gates)
    if not gates.passed:
        raise click.exceptions.Exit(EXIT_GATE)
    if evaluation.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


#: The eval options that apply with --mode labels; any other given there is a usage error,
#: so that a box option (--iou, --fail-under, ...) never seems to take effect when it does not.
LABEL_MODE_OPTIONS = frozenset(
    (
        "gt_dir",
        "pred_dir",
        "mode",
        "difficult",
        "output_format",
        "output",
        "max_rows",
        "only_failing",
        "fold_case",
        "max_file_size",
        "jobs",
        "pred_format",
        "coco_gt",
        "names_file",
        "split",
    )
)


def reject_box_options(ctx: click.Context) -> None:
    """A usage error (exit 2) for an eval option given with --mode labels that does not
    apply there."""
    for param in ctx.command.params:
        if param.name is None or param.name in LABEL_MODE_OPTIONS:
            continue
        if ctx.get_parameter_source(param.name) in (ParameterSource.DEFAULT, None):
            continue
        names = "/".join([*param.opts, *getattr(param, "secondary_opts", [])])
        raise click.UsageError(f"{names} applies to boxes, not to --mode labels", ctx=ctx)


def report_label_warnings(evaluation: LabelEvaluation) -> None:
    """As :func:`report_warnings`: an image without a prediction file has nothing predicted."""
    report_warnings(evaluation, "nothing predicted")


def write_report(path: Path, report: RenderableType) -> None:
    """Write a terminal report to a file at the content's width, without colour."""
    write_text(path, report_text(report))


def show_report(
    output_format: str,
    output: Path | None,
    text: Callable[[], str],
    report: Callable[[], RenderableType],
    summary: Callable[[], RenderableType],
) -> None:
    """The JSON text or the table report, on stdout or in ``output`` with the summary on
    the terminal."""
    console = stdout_console()
    if output is not None:
        if output_format == "json":
            write_text(output, text())
        else:
            write_report(output, report())
        with reader_may_leave():
            print_report(console, summary())
        return
    with reader_may_leave():
        if output_format == "json":
            click.echo(text(), nl=False)
        else:
            print_report(console, report())


def labels_eval(
    gt_dir: Path,
    pred_dir: Path,
    difficult: str | None,
    output_format: str,
    output: Path | None,
    max_rows: int,
    only_failing: bool,
    max_file_size: int,
    jobs: int,
    pred_format: str = "voc",
    coco_gt: Path | None = None,
    names_file: Path | None = None,
    split: str | None = None,
) -> None:
    """``eval --mode labels``: compare the class-name set of each image (exit 0 or 3)."""
    from vocmatch.evaluation.labels import LabelDifficult, evaluate_labels
    from vocmatch.render.machine import labels_to_json
    from vocmatch.render.terminal import ReportOptions, label_summary, render_labels

    reject_box_options(click.get_current_context())
    if output_format not in ("table", "json"):
        raise click.UsageError(
            f"--format {output_format} is not available in labels mode (use table or json)"
        )
    if difficult == "crowd":
        raise click.UsageError("--difficult crowd applies to boxes, not to --mode labels")
    label_difficult: LabelDifficult = "count" if difficult == "count" else "ignore"
    check_outputs(
        [output],
        files=[pred_dir if pred_format == "coco" else None, coco_gt, names_file],
        folders=xml_folders(gt_dir) + prediction_inputs(pred_dir, pred_format),
    )
    with library_errors():
        # The parallel reader: the same objects and skipped files as read_pair.
        gt_columns, pred_columns = read_inputs(
            gt_dir, pred_dir, pred_format, coco_gt, names_file, jobs or os.cpu_count() or 1,
            max_file_size, None, split,
        )  # fmt: skip
        gt, pred = gt_columns.to_annotations(), pred_columns.to_annotations()
        del gt_columns, pred_columns
        evaluation = evaluate_labels(gt, pred, label_difficult)
    report_label_warnings(evaluation)
    options = ReportOptions(max_rows=max_rows, only_failing=only_failing)
    show_report(
        output_format,
        output,
        lambda: labels_to_json(evaluation),
        lambda: render_labels(evaluation, options),
        lambda: label_summary(evaluation),
    )
    if evaluation.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


def html_text(
    evaluation: Evaluation,
    gt: AnnotationSet,
    pred: AnnotationSet,
    images_dir: Path | None,
    evidence: Evidence | None = None,
    score_start: float = 0.0,
) -> str:
    """The HTML report, on the pictures in ``images_dir`` if given; a picture that cannot be
    read is named on stderr and its overlay drawn blank."""
    # Imported here: the HTML report needs Jinja2 and Pillow, which other runs never load.
    from vocmatch.render.html import html_report, read_pictures

    pictures = None
    if images_dir is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", VocmatchWarning)
            with library_errors():
                keys = [image.key for image in evaluation.images]
                pictures = read_pictures(images_dir, gt, keys)
        for warning in caught:
            echo_err(f"vocmatch: warning: {warning.message}")
    found = evidence or Evidence()
    with library_errors():
        return html_report(
            evaluation,
            gt,
            pred,
            pictures,
            bootstrap=found.bootstrap,
            score_start=score_start,
            slices=found.slices,
            calibration=found.reliability,
        )


def refuse_unknown_classes(
    per_class: dict[str, float], evaluation: Evaluation, path: Path | None
) -> None:
    """A usage error for a threshold of a class in neither the ground truth nor the
    predictions: nearly always a typo, or the file of another data set."""
    import difflib

    known = sorted(c.name for c in evaluation.classes)
    for name in per_class:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise fail(
                f"{path}: a threshold for class {name!r}, which is in neither the ground "
                f"truth nor the predictions{hint}"
            )

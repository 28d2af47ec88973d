"""``vocmatch eval``: score predictions against ground truth."""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click
from click.core import ParameterSource

from vocmatch.cli.app import main
from vocmatch.cli.cache_option import cache_options
from vocmatch.cli.cluster import (
    InputLocation,
    dask_option,
    remote_run,
)
from vocmatch.cli.console import (
    PICTURE_SUFFIXES,
    check_outputs,
    class_map_file,
    evaluation_in_cli_words,
    library_errors,
    library_warnings,
    option_words,
    print_report,
    progress_display,
    reader_may_leave,
    report_text,
    report_warnings,
    save_text,
    stdout_console,
    xml_folders,
)
from vocmatch.cli.eval_report import ReportFiles, finish_report
from vocmatch.cli.exits import EXIT_SKIPPED
from vocmatch.cli.options import (
    EVAL_JOBS_HELP,
    FOLD_CASE_HELP,
    analysis_options,
    class_options,
    convention_extras,
    convention_options,
    count_option,
    evidence_options,
    fold_case_option,
    gate_options,
    images_option,
    jobs_option,
    max_file_size_option,
    max_rows_option,
    output_option,
    pred_format_options,
    quiet_option,
    report_file_options,
    report_format_option,
    score_threshold_option,
    slice_options,
    target_options,
)
from vocmatch.cli.params import (
    InputPath,
)
from vocmatch.cli.prepare_options import preparation_extras, preparation_options
from vocmatch.cli.shard_options import (
    check_keep_boxes,
    check_shard_options,
    shard_options,
)
from vocmatch.errors import MissingPredictionWarning
from vocmatch.files import InputFolder
from vocmatch.readers.formats import BoxFormat, prediction_format
from vocmatch.render.outputs import RENDERERS, TableOptions

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:
    from rich.console import RenderableType

    from vocmatch.core.ap import Interpolation
    from vocmatch.core.match import MatchRule
    from vocmatch.core.protocol import DifficultRule
    from vocmatch.evaluation.class_map import ClassChoice
    from vocmatch.evaluation.labels_and_masks.labels import LabelEvaluation
    from vocmatch.evaluation.scoring import Evaluation
    from vocmatch.evidence.gate_records import Gate
    from vocmatch.evidence.run_report import EvalReport
    from vocmatch.evidence.slices import SliceSpec
    from vocmatch.run.evaluate import EvalRequest, Geometry, PredFormat


def _reads_early(command: F) -> F:
    """``eval`` with the reading of its two folders started before the options are taken
    in (:func:`_read_early`): ahead of the imports they need (a class map's, numpy's) and
    of the run's."""

    @functools.wraps(command)
    def wrapper(*args: Any, **params: Any) -> Any:
        _read_early(params)
        return command(*args, **params)

    return cast("F", wrapper)


def _read_early(params: dict[str, Any]) -> None:
    """For the rest of the command, the reading of a run of two local folders of XML files
    started on threads, before the evaluation's modules are imported and the request is
    checked (:func:`vocmatch.readers.read_ahead.early_read`): the run takes that read where
    it reads those folders with those limits; a read it does not take is stopped when the
    command ends, however it ends. Nothing is started for a run that reads its inputs
    another way: labels, another prediction format, a split, a shard, a cluster, a cache,
    or a URL."""
    from vocmatch.readers.remote import is_url

    other = ("split", "shard", "save_state", "dask_scheduler", "cache_dir")
    if (
        params["mode"] != "boxes"
        or params["pred_format"] != "voc"
        or any(params[name] is not None for name in other)
        or params["cache_verify"]
        or is_url(params["gt_dir"])
        or is_url(params["pred_dir"])
    ):
        return
    from vocmatch.readers.read_ahead import early_read
    from vocmatch.readers.voc_layout import annotation_folder
    from vocmatch.run.in_parts import THREADED_FILES

    # The folder and the workers as the run names them (ReadOptions.workers: 0 is every core).
    roots = (annotation_folder(params["gt_dir"])[0], params["pred_dir"])
    workers = params["jobs"] or os.cpu_count() or 1
    # A report that keeps boxes is never read in parts; another may be, from THREADED_FILES.
    boxes = params["html_file"] is not None or params["keep_boxes"]
    most = sys.maxsize if boxes or RENDERERS[params["output_format"]].boxes else THREADED_FILES
    context = click.get_current_context()
    context.with_resource(early_read(roots, workers, params["max_file_size"], most))


@main.command("eval")
@_reads_early
@click.argument("gt_dir", type=InputLocation(file_okay=False, path_type=Path))
@click.argument("pred_dir", type=InputLocation(path_type=Path))
@click.option(
    "--mode",
    type=click.Choice(["boxes", "labels"]),
    default="boxes",
    show_default=True,
    help="boxes: match boxes per class, AP; labels: compare the set of class names of each "
    "image (per-image Jaccard, per-class IoU over images; --difficult, --class-map, "
    "--classes, --format table or json, --output, --max-rows, --only-failing and --jobs "
    "apply, box options do not).",
)
@pred_format_options
@class_options
@convention_options
@preparation_options
@report_format_option
@output_option("Write the report to FILE; the terminal still shows the summary.")
@max_rows_option(20, "Rows of the per-image table (worst first); 0 shows every image.")
@report_file_options
@images_option
@gate_options
@score_threshold_option(
    "Count only predictions with score >= T: TP, FP, FN, precision, recall, the tables, "
    "gates, confusion, errors and HTML overlays. AP uses every prediction. A prediction "
    "without a score passes no threshold."
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
@analysis_options
@fold_case_option(FOLD_CASE_HELP)
@max_file_size_option
@jobs_option(help_text=EVAL_JOBS_HELP)
@evidence_options
@slice_options
@count_option
@target_options
@shard_options
@dask_option
@cache_options
@quiet_option
def eval_command(
    gt_dir: Path,
    pred_dir: Path,
    mode: str,
    pred_format: PredFormat,
    box_format: BoxFormat,
    coco_gt: Path | None,
    names_file: Path | None,
    split: str | None,
    geometry: Geometry,
    class_choice: ClassChoice,
    protocol_name: str,
    iou: float | None,
    strict_threshold: bool | None,
    pixel_inclusive: bool | None,
    match_rule: MatchRule | None,
    difficult: DifficultRule | None,
    interpolation: Interpolation | None,
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
    count: bool,
    target_precision: float | None,
    target_recall: float | None,
    confidence_level: float,
    shard: tuple[int, int] | None,
    save_state: Path | None,
    run_id: str | None,
    keep_boxes: bool,
    dask_scheduler: str | None,
    cache_dir: Path | None,
    cache_verify: bool,
    quiet: bool,
) -> None:
    """Evaluate the predictions in PRED_DIR against the ground truth in GT_DIR.

    XML files are paired by their path relative to each directory, without the extension.
    With --mode labels, only the class names in each file count.
    """

    if mode == "labels":
        labels_eval(
            gt_dir, pred_dir, difficult, output_format, output, max_rows, only_failing,
            max_file_size, jobs, pred_format, coco_gt, names_file, split, class_choice,
            box_format=box_format,
        )  # fmt: skip
        return
    if images_dir is not None and html_file is None:
        raise click.UsageError("--images draws the HTML report's overlays: give --html FILE too")
    check_keep_boxes(click.get_current_context())
    if save_state is not None:
        check_shard_options(click.get_current_context())
    elif shard is not None or run_id is not None:
        flag = "--shard evaluates part of the images" if shard else "--run-id names a saved run"
        raise click.UsageError(f"{flag}: give --save-state FILE too")
    # The run's modules, imported while the threads read (_reads_early).
    from vocmatch.cli.inputs import prediction_inputs
    from vocmatch.run.evaluate import EvalRequest

    check_outputs(
        [output, classes_csv, html_file, write_thresholds_file, save_state],
        files=[pred_dir if prediction_format(pred_format).one_file else None, coco_gt, names_file,
               score_thresholds_file, class_map_file(class_choice)],
        folders=xml_folders(gt_dir)
        + prediction_inputs(pred_dir, pred_format)
        + ([InputFolder(os.fspath(images_dir), PICTURE_SUFFIXES)] if images_dir else []),
    )  # fmt: skip
    with library_errors():  # the library's one check of the request
        request = EvalRequest(
            gt=gt_dir, pred=pred_dir, pred_format=pred_format, box_format=box_format,
            coco_gt=coco_gt, names=names_file,
            split=split, geometry=geometry, max_file_size=max_file_size, jobs=jobs,
            protocol=protocol_name, iou=iou, strict_threshold=strict_threshold,
            pixel_inclusive=pixel_inclusive, match_rule=match_rule, difficult=difficult,
            interpolation=interpolation, fold_case=fold_case, score_threshold=score_threshold,
            score_thresholds=score_thresholds_file, gates=fail_under, max_fp=max_fp,
            max_fn=max_fn, analysis=errors or tightness, background_iou=background_iou,
            boxes=html_file is not None or RENDERERS[output_format].boxes or keep_boxes,
            reliability=html_file is not None, bootstrap=bootstrap_resamples, seed=seed,
            slices=slice_specs, calibration_bins=calibration_bins, count=count, beta=beta,
            target_precision=target_precision, target_recall=target_recall,
            confidence_level=confidence_level,
            class_choice=class_choice or None, dask=dask_scheduler, cache=cache_dir,
            cache_verify=cache_verify, **convention_extras(), **preparation_extras(),
        )  # fmt: skip
    if save_state is not None:
        from vocmatch.cli.shard_saving import SavedShard, save_shard

        save_shard(request, SavedShard(save_state, shard, run_id), quiet)
        return
    report = _evaluated(request, quiet, json_rows=output_format == "json")
    table = TableOptions(max_rows, only_failing, errors, tightness, option_words)
    files = ReportFiles(output, classes_csv, html_file, images_dir, write_thresholds_file)
    finish_report(report, output_format, table, files)


def _evaluated(request: EvalRequest, quiet: bool, *, json_rows: bool = False) -> EvalReport:
    """The report of ``vocmatch.evaluate``, its warnings and errors worded for the command
    line, under a progress display (none with ``quiet``); with ``json_rows``, the JSON
    report's image rows made as the run makes its images' results, where it makes them
    ahead of its evaluation (not for the error analysis, which adds to each image's
    record)."""
    from contextlib import nullcontext

    from vocmatch.render.rows_ahead import rows_ahead
    from vocmatch.run.evaluate import evaluate

    with (
        rows_ahead() if json_rows and not request.analysis else nullcontext(),
        library_errors(),
        library_warnings(),
        remote_run(request),
        progress_display(quiet) as progress,
    ):

        def evaluated(evaluation: Evaluation) -> None:
            progress.close()  # the warnings go below the finished bar, not through it
            report_warnings(evaluation)

        with warnings.catch_warnings():
            # The library's warning of missing prediction files: report_warnings words it.
            warnings.simplefilter("ignore", MissingPredictionWarning)
            report = evaluate(request, progress=progress, on_evaluated=evaluated)
    return replace(report, evaluation=evaluation_in_cli_words(report.evaluation))


#: The eval options that apply with --mode labels; any other given there is a usage error,
#: so that a box option (--iou, --fail-under, ...) never seems to take effect when it does not.
#: --class-map and --classes rename and select classes before either mode compares them;
#: --agnostic stays refused (every image's set would be 'object' or nothing).
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
        "box_format",
        "coco_gt",
        "names_file",
        "split",
        "class_map",
        "classes",
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
    save_text(path, report_text(report))


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
            save_text(output, text())
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
    pred_format: PredFormat = "voc",
    coco_gt: Path | None = None,
    names_file: Path | None = None,
    split: str | None = None,
    class_choice: ClassChoice | None = None,
    box_format: BoxFormat = "xyxy",
) -> None:
    """``eval --mode labels``: compare the class-name set of each image (exit 0 or 3)."""
    from vocmatch.cli.inputs import prediction_inputs
    from vocmatch.evaluation.labels_and_masks.labels import LabelDifficult
    from vocmatch.render.label_tables import label_summary, render_labels
    from vocmatch.render.outputs import render_labels_text
    from vocmatch.render.terminal import ReportOptions
    from vocmatch.run.evaluate_labels import LabelsRequest, evaluate_labels

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
        files=[
            pred_dir if prediction_format(pred_format).one_file else None,
            coco_gt,
            names_file,
            class_map_file(class_choice),
        ],
        folders=xml_folders(gt_dir) + prediction_inputs(pred_dir, pred_format),
    )
    with library_errors():  # the library's one check of the request
        request = LabelsRequest(
            gt=gt_dir, pred=pred_dir, difficult=label_difficult, pred_format=pred_format,
            box_format=box_format,
            coco_gt=coco_gt, names=names_file, split=split, max_file_size=max_file_size, jobs=jobs,
            class_choice=class_choice or None,
        )  # fmt: skip
    with library_errors():
        evaluation = evaluation_in_cli_words(evaluate_labels(request))
    report_label_warnings(evaluation)
    shown = ReportOptions(max_rows=max_rows, only_failing=only_failing, words=option_words)
    show_report(
        output_format,
        output,
        lambda: render_labels_text(evaluation, "json"),
        lambda: render_labels(evaluation, shown),
        lambda: label_summary(evaluation),
    )
    if evaluation.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)

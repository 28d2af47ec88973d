"""``vocmatch diff``: compare two prediction sets on the same ground truth."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vocmatch.cli.app import main
from vocmatch.cli.console import (
    check_outputs,
    echo_err,
    in_cli_words,
    library_errors,
    option_words,
    print_report,
    progress_display,
    reader_may_leave,
    report_text,
    save_text,
    stdout_console,
    xml_folders,
)
from vocmatch.cli.exits import EXIT_GATE, EXIT_SKIPPED
from vocmatch.cli.inputs import prediction_inputs
from vocmatch.cli.options import (
    DIFF_MAX_ROWS,
    PAIRED_BOOTSTRAP_HELP,
    convention_extras,
    convention_options,
    evidence_options,
    fold_case_option,
    format_option,
    jobs_option,
    max_file_size_option,
    max_rows_option,
    output_option,
    pred_format_options,
    quiet_option,
    regression_gate_option,
    score_threshold_option,
)
from vocmatch.cli.params import FiniteFloatRange, InputPath
from vocmatch.cli.prepare_options import preparation_extras, preparation_options
from vocmatch.evidence.multiple_testing import CORRECTIONS
from vocmatch.readers.formats import prediction_format
from vocmatch.run.compare import DiffRequest, compare

if TYPE_CHECKING:
    from vocmatch.core.ap import Interpolation
    from vocmatch.core.match import MatchRule
    from vocmatch.core.protocol import DifficultRule
    from vocmatch.evidence.multiple_testing import Correction
    from vocmatch.evidence.regression_gates import RegressionGate
    from vocmatch.readers.formats import BoxFormat
    from vocmatch.run.compare import DiffReport
    from vocmatch.run.evaluate import Geometry, PredFormat


@main.command("diff")
@click.argument("gt_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_a_dir", type=InputPath(path_type=Path))
@click.argument("pred_b_dir", type=InputPath(path_type=Path))
@pred_format_options
@convention_options
@preparation_options
@format_option(
    ["table", "json", "markdown"],
    "table: the rich report; json: every change, for scripts; markdown: summary, classes, "
    "changed images and gates, for a pull request or a CI job summary.",
)
@output_option("Write the report to FILE instead of stdout.")
@max_rows_option(
    DIFF_MAX_ROWS, "Rows of the changed-images table (worst first); 0 shows every changed image."
)
@fold_case_option(
    "Lower-case class names before matching, so Car and car are one class (as eval's --fold-case)."
)
@score_threshold_option(
    "Count only predictions with score >= T in both runs: TP, FP, FN, precision, recall "
    "and the changed images. AP uses every prediction."
)
@click.option(
    "--fail-on-regression",
    multiple=True,
    callback=regression_gate_option,
    metavar="[CLASS:]METRIC=DELTA",
    help="Exit 1 if METRIC (map, precision, recall or f1) changes from A to B by less than "
    "DELTA: map=-0.01 fails when mAP falls by more than 0.01; CLASS:METRIC for one class "
    "(ap = map). Repeatable.",
)
@functools.partial(evidence_options, bootstrap_help=PAIRED_BOOTSTRAP_HELP)
@click.option(
    "--significant",
    "alpha",
    type=FiniteFloatRange.of_field("alpha"),
    default=None,
    metavar="ALPHA",
    help="With --bootstrap: a regression gate fails only when the change is below its "
    "DELTA and significantly so, its one-sided p-value (the share of resamples whose change "
    "is not below DELTA) at most ALPHA, such as 0.05.",
)
@click.option(
    "--correction",
    type=click.Choice(CORRECTIONS),
    default=None,
    help="With --significant: adjust the gates' p-values for their number, holm (the chance "
    "of any false failure at ALPHA) or bh (Benjamini-Hochberg: the share of false failures "
    "at ALPHA). A gate on every class, '*:ap=-0.01', is one test per class.",
)
@max_file_size_option
@jobs_option()
@quiet_option
def diff_command(
    gt_dir: Path,
    pred_a_dir: Path,
    pred_b_dir: Path,
    pred_format: PredFormat,
    box_format: BoxFormat,
    coco_gt: Path | None,
    names_file: Path | None,
    split: str | None,
    geometry: Geometry,
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
    fold_case: bool,
    score_threshold: float | None,
    fail_on_regression: tuple[RegressionGate, ...],
    bootstrap_resamples: int | None,
    seed: int,
    alpha: float | None,
    correction: Correction | None,
    max_file_size: int,
    jobs: int,
    quiet: bool,
) -> None:
    """Compare two runs, PRED_A_DIR (the reference) and PRED_B_DIR, on the ground truth in
    GT_DIR: two models, or two labelling passes.

    Shows the change in mAP, precision and recall overall and per class, and per image the
    objects newly missed or newly found and the false positives added or removed, worst
    regression first. Both runs are read with the same --pred-format.
    """
    if alpha is not None and bootstrap_resamples is None:
        raise click.UsageError("--significant tests the paired bootstrap: give --bootstrap N too")
    check_outputs(
        [output],
        files=[
            *([pred_a_dir, pred_b_dir] if prediction_format(pred_format).one_file else []),
            coco_gt,
            names_file,
        ],
        folders=xml_folders(gt_dir)
        + prediction_inputs(pred_a_dir, pred_format)
        + prediction_inputs(pred_b_dir, pred_format),
    )
    with library_errors():  # the library's one check of the request
        request = DiffRequest(
            gt=gt_dir, pred_a=pred_a_dir, pred_b=pred_b_dir, pred_format=pred_format,
            box_format=box_format,
            coco_gt=coco_gt, names=names_file, split=split, geometry=geometry,
            max_file_size=max_file_size, jobs=jobs, protocol=protocol_name, iou=iou,
            strict_threshold=strict_threshold, pixel_inclusive=pixel_inclusive,
            match_rule=match_rule, difficult=difficult, interpolation=interpolation,
            fold_case=fold_case, score_threshold=score_threshold, gates=fail_on_regression,
            bootstrap=bootstrap_resamples, seed=seed, alpha=alpha, correction=correction,
            **convention_extras(),
            **preparation_extras(),
        )  # fmt: skip
    with library_errors(), progress_display(quiet) as progress:
        found = compare(request, progress=progress)
    for line in found.skipped:
        echo_err(f"vocmatch: skipped {in_cli_words(line)}")
    show_diff_report(found, output_format, output, max_rows)
    for note in found.notes:
        echo_err(f"vocmatch: warning: {note}")
    for result in found.results:
        if not result.passed:
            echo_err(f"vocmatch: regression: {result}")
    if not found.passed:
        raise click.exceptions.Exit(EXIT_GATE)
    if found.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


def show_diff_report(
    found: DiffReport, output_format: str, output: Path | None, max_rows: int
) -> None:
    """The diff on stdout or in ``output``, as a table, JSON or Markdown."""
    from vocmatch.render.diff_formats import diff_to_json, diff_to_markdown
    from vocmatch.render.diff_tables import diff_report

    diff, results, evidence = found.diff, found.results, found.evidence
    if output_format in ("json", "markdown"):
        text = (
            diff_to_json(diff, results, evidence)
            if output_format == "json"
            else diff_to_markdown(diff, results, max_rows, evidence)
        )
        if output is None:
            click.echo(text, nl=False)
        else:
            save_text(output, text)
    elif output is None:
        with reader_may_leave():
            print_report(
                stdout_console(), diff_report(diff, results, max_rows, evidence, option_words)
            )
    else:
        shown = diff_report(diff, results, max_rows, evidence, option_words)
        save_text(output, report_text(shown))

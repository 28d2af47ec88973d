"""``vocmatch diff``: compare two prediction sets on the same ground truth."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vocmatch.cli.app import main
from vocmatch.cli.console import (
    check_outputs,
    echo_err,
    library_errors,
    print_report,
    reader_may_leave,
    report_text,
    stdout_console,
    write_text,
    xml_folders,
)
from vocmatch.cli.exits import EXIT_GATE, EXIT_SKIPPED
from vocmatch.cli.inputs import refuse_unpaired
from vocmatch.cli.options import (
    DIFF_MAX_ROWS,
    PAIRED_BOOTSTRAP_HELP,
    convention_options,
    conventions_from,
    evidence_options,
    format_option,
    max_rows_option,
    output_option,
    regression_gate_option,
)
from vocmatch.cli.params import FiniteFloatRange, InputPath

if TYPE_CHECKING:
    from vocmatch.evidence.diff import RegressionGate


@main.command("diff")
@click.argument("gt_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_a_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_b_dir", type=InputPath(file_okay=False, path_type=Path))
@convention_options
@format_option(
    ["table", "json", "markdown"],
    "table: the rich report; json: every change, for scripts; markdown: summary, classes, "
    "changed images and gates, for a pull request or a CI job summary.",
)
@output_option("Write the report to FILE instead of stdout.")
@max_rows_option(
    DIFF_MAX_ROWS, "Rows of the changed-images table (worst first); 0 shows every changed image."
)
@click.option(
    "--fold-case",
    is_flag=True,
    help="Lower-case class names before matching, so Car and car are one class (as eval's "
    "--fold-case).",
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
    type=FiniteFloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=None,
    metavar="ALPHA",
    help="With --bootstrap: a regression gate fails only when the change is below its "
    "DELTA and significantly so, its one-sided p-value (the share of resamples whose change "
    "is not below DELTA) at most ALPHA, such as 0.05.",
)
def diff_command(
    gt_dir: Path,
    pred_a_dir: Path,
    pred_b_dir: Path,
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
    fold_case: bool,
    fail_on_regression: tuple[RegressionGate, ...],
    bootstrap_resamples: int | None,
    seed: int,
    alpha: float | None,
) -> None:
    """Compare two runs, PRED_A_DIR (the reference) and PRED_B_DIR, on the ground truth in
    GT_DIR: two models, or two labelling passes.

    Shows the change in mAP, precision and recall overall and per class, and per image the
    objects newly missed or newly found and the false positives added or removed, worst
    regression first.
    """

    from vocmatch.evaluation.engine import evaluate_matched
    from vocmatch.evaluation.evaluate import fold_names
    from vocmatch.evidence.diff import check_regressions, evaluation_diff
    from vocmatch.readers.scan import read_column_pair, read_columns
    from vocmatch.render.machine import diff_to_json, diff_to_markdown
    from vocmatch.render.terminal import diff_report

    if alpha is not None and bootstrap_resamples is None:
        raise click.UsageError("--significant tests the paired bootstrap: give --bootstrap N too")
    conventions = conventions_from(
        protocol_name, iou, strict_threshold, pixel_inclusive, match_rule, difficult,
        interpolation,
    )  # fmt: skip
    check_outputs([output], folders=xml_folders(gt_dir, pred_a_dir, pred_b_dir))
    with library_errors():
        # The vectorised path, as for eval: the same evaluations, with every per-box match.
        jobs = os.cpu_count() or 1
        gt_columns, pred_a_columns = read_column_pair(gt_dir, pred_a_dir, jobs)
        pred_b_columns = read_columns(pred_b_dir, jobs)
        refuse_unpaired(gt_columns, pred_a_columns, pred_a_dir)
        refuse_unpaired(gt_columns, pred_b_columns, pred_b_dir)
        evaluation_a, matched_a = evaluate_matched(
            gt_columns, pred_a_columns, conventions, fold_case=fold_case
        )
        evaluation_b, matched_b = evaluate_matched(
            gt_columns, pred_b_columns, conventions, fold_case=fold_case
        )
        evidence = None
        if bootstrap_resamples is not None:
            from vocmatch.evidence.bootstrap import paired_bootstrap, resampler

            evidence = paired_bootstrap(
                evaluation_a, resampler(evaluation_a, matched_a),
                evaluation_b, resampler(evaluation_b, matched_b),
                bootstrap_resamples, seed, jobs=jobs,
            )  # fmt: skip
        del matched_a, matched_b
        pred_a, pred_b = pred_a_columns.to_annotations(), pred_b_columns.to_annotations()
        if fold_case:
            # The image-by-image comparison sees the names that were matched.
            pred_a, pred_b = fold_names(pred_a), fold_names(pred_b)
        del gt_columns, pred_a_columns, pred_b_columns
        diff = evaluation_diff(
            evaluation_a, evaluation_b, pred_a, pred_b, str(pred_a_dir), str(pred_b_dir)
        )
        results = check_regressions(diff, fail_on_regression, evidence, alpha)
    skipped = {str(s): None for s in (*evaluation_a.skipped, *evaluation_b.skipped)}
    for line in skipped:
        echo_err(f"vocmatch: skipped {line}")
    if output_format in ("json", "markdown"):
        text = (
            diff_to_json(diff, results, evidence)
            if output_format == "json"
            else diff_to_markdown(diff, results, max_rows, evidence)
        )
        if output is None:
            click.echo(text, nl=False)
        else:
            write_text(output, text)
    elif output is None:
        with reader_may_leave():
            print_report(stdout_console(), diff_report(diff, results, max_rows, evidence))
    else:
        write_text(output, report_text(diff_report(diff, results, max_rows, evidence)))
    for result in results:
        if not result.passed:
            echo_err(f"vocmatch: regression: {result}")
    if not all(r.passed for r in results):
        raise click.exceptions.Exit(EXIT_GATE)
    if skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)

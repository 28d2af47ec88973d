"""``vocmatch merge``: the report of evaluator states saved by shards
(``vocmatch eval GT PRED --shard K/N --save-state FILE``), merged exactly. The shard options
``eval`` takes are :mod:`vocmatch.cli.shard_options`."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vocmatch.cli.app import main
from vocmatch.cli.console import (
    PICTURE_SUFFIXES,
    check_outputs,
    echo_err,
    evaluation_in_cli_words,
    library_errors,
    option_words,
    report_warnings,
)
from vocmatch.cli.eval_report import ReportFiles, finish_report
from vocmatch.cli.options import (
    analysis_options,
    calibration_option,
    count_option,
    evidence_options,
    gate_options,
    images_option,
    max_rows_option,
    output_option,
    report_file_options,
    report_format_option,
    target_options,
)
from vocmatch.cli.params import (
    InputPath,
    byte_size,
)
from vocmatch.files import InputFolder
from vocmatch.limits import MAX_STATE_BYTES
from vocmatch.render.outputs import TableOptions

if TYPE_CHECKING:
    from vocmatch.evidence.gate_records import Gate


@main.command("merge")
@click.argument(
    "states", nargs=-1, required=True, type=InputPath(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--partial",
    is_flag=True,
    help="Merge states that are not every shard of one run (a shard missing or given twice, "
    "shards of other runs); the report says so (a note, and `merge` in JSON).",
)
@report_format_option
@output_option("Write the report to FILE; the terminal still shows the summary.")
@max_rows_option(20, "Rows of the per-image table (worst first); 0 shows every image.")
@report_file_options
@images_option
@analysis_options
@gate_options
@evidence_options
@calibration_option
@count_option
@target_options
@click.option(
    "--max-file-size",
    callback=byte_size,
    default=f"{MAX_STATE_BYTES // 1024**3}G",
    show_default=True,
    metavar="SIZE",
    help="Refuse larger state files unread (5000, 64K, 32M, 1G; powers of 1024).",
)
def merge_command(
    states: tuple[Path, ...],
    partial: bool,
    output_format: str,
    output: Path | None,
    max_rows: int,
    only_failing: bool,
    classes_csv: Path | None,
    html_file: Path | None,
    images_dir: Path | None,
    errors: bool,
    background_iou: float,
    tightness: bool,
    beta: float,
    write_thresholds_file: Path | None,
    fail_under: tuple[Gate, ...],
    max_fp: int | None,
    max_fn: int | None,
    bootstrap_resamples: int | None,
    seed: int,
    calibration_bins: int | None,
    count: bool,
    target_precision: float | None,
    target_recall: float | None,
    confidence_level: float,
    max_file_size: int,
) -> None:
    """Report the evaluator states in STATES (saved by `vocmatch eval --save-state`) merged.

    The states must be every shard of one run, each once: a shard missing or given twice,
    or shards of another run (other files, options or --run-id), are refused (exit 2)
    unless --partial. Any split of the images into shards, merged in any order, gives the
    report of one run on all of them, in every format, with the same gates and exit codes.
    States made under other options (other --slice among them), or sharing an image, are
    refused. The files the shards could not read (exit 3) and the prediction files without
    a ground-truth file are reported as one run reports them. The slices are those the
    shards were saved with (eval --slice ... --save-state), matched in each shard; gates on
    their values apply. States saved with --keep-boxes (by every shard) also give each
    image's false positives and missed objects in --format junit, and take --html,
    --images, --errors, --tightness and --background-iou, byte for byte as `vocmatch eval`
    on the whole set.
    """
    from vocmatch.run.shard_states import read_states

    if images_dir is not None and html_file is None:
        raise click.UsageError("--images draws the HTML report's overlays: give --html FILE too")
    check_outputs(
        [output, classes_csv, html_file, write_thresholds_file],
        files=list(states),
        folders=[InputFolder(os.fspath(images_dir), PICTURE_SUFFIXES)] if images_dir else [],
    )
    analysis = errors or tightness
    with library_errors():
        merged = read_states(states, partial=partial, max_bytes=max_file_size)
        report = merged.report(
            fail_under, max_fp, max_fn, beta, calibration_bins, bootstrap_resamples, seed,
            count=count, target_precision=target_precision, target_recall=target_recall,
            confidence_level=confidence_level, boxes=html_file is not None, analysis=analysis,
            background_iou=background_iou, reliability=html_file is not None,
        )  # fmt: skip
    report = replace(report, evaluation=evaluation_in_cli_words(report.evaluation))
    report_warnings(report.evaluation)
    for note in merged.check.notes():
        echo_err(f"vocmatch: warning: {note}")
    table = TableOptions(max_rows, only_failing, errors, tightness, option_words)
    files = ReportFiles(output, classes_csv, html_file, images_dir, write_thresholds_file)
    finish_report(report, output_format, table, files)

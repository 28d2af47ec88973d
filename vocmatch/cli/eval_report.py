"""The end of ``vocmatch eval`` and ``vocmatch merge``: one report, whichever made it,
rendered in the format asked for by the same renderer, the files asked for written, the
gates reported, and the exit code."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vocmatch.cli.console import (
    echo_chunks,
    echo_err,
    library_errors,
    print_report,
    reader_may_leave,
    report_gates,
    report_text,
    save_chunks,
    save_text,
    stdout_console,
)
from vocmatch.cli.exits import EXIT_GATE, EXIT_SKIPPED
from vocmatch.errors import VocmatchWarning

if TYPE_CHECKING:
    from vocmatch.evidence.run_report import EvalReport
    from vocmatch.render.outputs import TableOptions


@dataclass(frozen=True, slots=True)
class ReportFiles:
    """The files a report is written to besides the terminal.

    Attributes:
        output: The report itself (the terminal then shows the summary).
        classes_csv: One CSV row per class.
        html: The HTML report (it needs the report's boxes).
        images_dir: The pictures the HTML report draws the boxes on.
        thresholds: Each class's operating-point threshold, as CSV.
    """

    output: Path | None = None
    classes_csv: Path | None = None
    html: Path | None = None
    images_dir: Path | None = None
    thresholds: Path | None = None


def finish_report(
    report: EvalReport, output_format: str, table: TableOptions, files: ReportFiles
) -> None:
    """Show and write the report, report its gates, and exit 1 when a gate failed, 3 when
    a file was skipped (0 otherwise)."""
    show_eval_report(report, output_format, files.output, table)
    if files.classes_csv is not None:
        from vocmatch.render.csv_report import to_csv_classes

        save_text(files.classes_csv, to_csv_classes(report.evaluation))
    if files.thresholds is not None:
        from vocmatch.run.extras import operating_thresholds

        save_text(files.thresholds, operating_thresholds(report))
    if files.html is not None:
        save_text(files.html, html_text(report, files.images_dir))
    report_gates(report.gates)
    if not report.passed:
        raise click.exceptions.Exit(EXIT_GATE)
    if report.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


def show_eval_report(
    report: EvalReport, output_format: str, output: Path | None, table: TableOptions
) -> None:
    """The report on stdout, or in ``output`` with the summary on the terminal."""
    # The table's modules (rich, vocmatch.render.terminal) are imported only for the outputs
    # that need them: JSON on stdout starts a tenth of a second sooner without them.
    from vocmatch.render.outputs import render_chunks, render_table, render_text

    if output_format == "json":
        # Written as the bytes the renderer gives: the whole text is never copied to be
        # joined or encoded.
        chunks = render_chunks(report, "json")
        if output is None:
            with reader_may_leave():
                echo_chunks(chunks)
            return
        save_chunks(output, chunks)
    elif output_format != "table":
        text = render_text(report, output_format)  # type: ignore[arg-type]  # click's choices
        if output is None:
            with reader_may_leave():
                click.echo(text, nl=False)
            return
        save_text(output, text)
    elif output is None:
        with reader_may_leave():
            print_report(stdout_console(), render_table(report, table))
        return
    else:
        save_text(output, report_text(render_table(report, table)))
    from vocmatch.render.terminal import summary_table

    with reader_may_leave():
        print_report(stdout_console(), summary_table(report.evaluation))


def html_text(report: EvalReport, images_dir: Path | None) -> str:
    """The HTML report, on the pictures in ``images_dir`` if given; a picture that cannot be
    read is named on stderr and its overlay drawn blank."""
    # Imported here: the HTML report needs Jinja2 and Pillow, which other runs never load.
    from vocmatch.render.html import read_pictures
    from vocmatch.render.outputs import render_html

    pictures = None
    if images_dir is not None and report.gt is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", VocmatchWarning)
            with library_errors():
                keys = [image.key for image in report.evaluation.images]
                pictures = read_pictures(images_dir, report.gt, keys)
        for warning in caught:
            echo_err(f"vocmatch: warning: {warning.message}")
    with library_errors():
        return render_html(report, pictures)

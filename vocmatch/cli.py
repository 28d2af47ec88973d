"""The ``vocmatch`` command line: the only module that knows click, argv, exit codes and the
Console.

Exit codes:
    0: evaluated, every file read.
    1: a quality gate or a lint check failed.
    2: bad usage, or input that could not be evaluated at all.
    3: evaluated, but some files were skipped (each named on stderr).
    130: interrupted (Ctrl-C).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from vocmatch import __version__
from vocmatch.errors import VocmatchError
from vocmatch.evaluate import Evaluation, evaluate_directories
from vocmatch.formats import to_json
from vocmatch.protocol import PROTOCOLS, Conventions, protocol
from vocmatch.report import ReportOptions, render, summary_table

__all__ = ["EXIT_GATE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_SKIPPED", "EXIT_USAGE", "main"]

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_SKIPPED = 3
EXIT_INTERRUPTED = 130

F = TypeVar("F", bound=Callable[..., Any])


class DefaultGroup(click.Group):
    """A group whose first argument, when it names no subcommand, belongs to ``eval``.

    So ``vocmatch GT_DIR PRED_DIR`` works as written beside ``vocmatch iou ...``.
    """

    default_command = "eval"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


def stdout_console() -> Console:
    """The console for the report (stdout); colour only on a terminal, NO_COLOR honoured."""
    return Console(highlight=False)


def fail(message: str, code: int = EXIT_USAGE) -> click.exceptions.Exit:
    """Print ``vocmatch: error: message`` on stderr and return the exit to raise."""
    click.echo(f"vocmatch: error: {message}", err=True)
    return click.exceptions.Exit(code)


@contextmanager
def library_errors() -> Iterator[None]:
    """Turn the library's typed errors into one line on stderr and exit code 2."""
    try:
        yield
    except VocmatchError as error:
        raise fail(str(error)) from None


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vocmatch")
def main() -> None:
    """Score object-detection annotations in PASCAL VOC / LabelImg XML.

    vocmatch GT_DIR PRED_DIR evaluates predictions against ground truth (the `eval`
    command); the other commands are listed below.
    """


def conventions_from(
    protocol_name: str,
    iou: float | None,
    strict_threshold: bool | None,
    pixel_inclusive: bool | None,
    match_rule: str | None,
    difficult: str | None,
    interpolation: str | None,
) -> Conventions:
    """The preset of ``protocol_name`` with every option the user gave laid over it."""
    from dataclasses import replace

    conv = protocol(protocol_name)
    if iou is not None:
        conv = conv.with_threshold(iou)
    changes: dict[str, Any] = {}
    if strict_threshold is not None:
        changes["strict_threshold"] = strict_threshold
    if pixel_inclusive is not None:
        changes["pixel_inclusive"] = pixel_inclusive
    if match_rule is not None:
        changes["match_rule"] = match_rule
    if difficult is not None:
        changes["difficult"] = difficult
    if interpolation is not None:
        changes["interpolation"] = interpolation
    return replace(conv, **changes) if changes else conv


def convention_options(function: F) -> F:
    """The options that choose a protocol and override its conventions one by one."""
    options = [
        click.option(
            "--protocol",
            "protocol_name",
            type=click.Choice(sorted(PROTOCOLS)),
            default="default",
            show_default=True,
            help="Preset conventions: default, voc07, voc12 (PASCAL VOC devkit) or coco "
            "(pycocotools COCOeval).",
        ),
        click.option(
            "--iou",
            type=click.FloatRange(0.0, 1.0),
            default=None,
            help="IoU threshold for a match (inclusive, IoU >= t). [default: 0.5]",
        ),
        click.option(
            "--strict-threshold/--inclusive-threshold",
            default=None,
            help="Match at IoU > t, as the Python voc_eval.py does, instead of IoU >= t.",
        ),
        click.option(
            "--pixel-inclusive/--continuous",
            "pixel_inclusive",
            default=None,
            help="Box areas with the VOC devkit's +1 pixel, or continuous (x2 - x1).",
        ),
        click.option(
            "--match-rule",
            type=click.Choice(["unmatched", "devkit"]),
            default=None,
            help="unmatched: best still-unmatched GT (COCO); devkit: best GT even if taken, "
            "then FP.",
        ),
        click.option(
            "--difficult",
            type=click.Choice(["ignore", "count", "crowd"]),
            default=None,
            help="difficult objects: ignored, counted as ordinary objects, or COCO crowd regions.",
        ),
        click.option(
            "--interpolation",
            type=click.Choice(["all-point", "11-point", "101-point"]),
            default=None,
            help="AP interpolation: VOC2010+ all-point, VOC2007 11-point, COCO 101-point.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def report_warnings(evaluation: Evaluation) -> None:
    """One line on stderr per skipped file, missing prediction file and orphan file."""
    for skipped in evaluation.skipped:
        click.echo(f"vocmatch: skipped {skipped}", err=True)
    for key in evaluation.missing_pred:
        click.echo(
            f"vocmatch: warning: no prediction file for {key!r}: its objects count as missed",
            err=True,
        )
    for path in evaluation.orphan_pred:
        click.echo(f"vocmatch: warning: {path} has no ground-truth file: not evaluated", err=True)


@main.command("eval")
@click.argument("gt_dir", type=click.Path(file_okay=False, path_type=Path))
@click.argument("pred_dir", type=click.Path(file_okay=False, path_type=Path))
@convention_options
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: the rich report; json: every number, for scripts.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the report to FILE; the terminal still shows the summary.",
)
@click.option(
    "--max-rows",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Rows of the per-image table (worst first); 0 shows every image.",
)
@click.option("--only-failing", is_flag=True, help="List only images with an FP or an FN.")
def eval_command(
    gt_dir: Path,
    pred_dir: Path,
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
) -> None:
    """Evaluate the predictions in PRED_DIR against the ground truth in GT_DIR.

    XML files are paired by their path relative to each directory, without the extension.
    """
    conventions = conventions_from(
        protocol_name, iou, strict_threshold, pixel_inclusive, match_rule, difficult,
        interpolation,
    )  # fmt: skip
    with library_errors():
        evaluation = evaluate_directories(gt_dir, pred_dir, conventions)
    report_warnings(evaluation)
    options = ReportOptions(max_rows=max_rows, only_failing=only_failing)
    console = stdout_console()
    if output_format == "json":
        text = to_json(evaluation)
        if output is None:
            click.echo(text, nl=False)
        else:
            write_text(output, text)
            console.print(summary_table(evaluation))
    elif output is None:
        console.print(render(evaluation, options))
    else:
        with output.open("w", encoding="utf-8") as handle:
            Console(file=handle, width=120, color_system=None).print(render(evaluation, options))
        console.print(summary_table(evaluation))
    if evaluation.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


def write_text(path: Path, text: str) -> None:
    """Write a report file, turning an OS error into a one-line message."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise fail(f"cannot write {path}: {error.strerror or error}") from None


def run() -> None:
    """Entry point that also turns Ctrl-C and a closed pipe into quiet exits."""
    try:
        main.main(standalone_mode=False)
    except click.exceptions.Exit as exit_:
        sys.exit(exit_.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Abort:
        click.echo("vocmatch: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        click.echo("vocmatch: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader went away (vocmatch ... | head): exit quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(EXIT_OK)

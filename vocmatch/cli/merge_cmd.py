"""``vocmatch merge``: the report of evaluator states saved by shards
(``vocmatch eval GT PRED --shard K/N --save-state FILE``), merged exactly; and the shard
options ``eval`` takes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from vocmatch.cli.app import main
from vocmatch.cli.console import (
    check_outputs,
    echo_err,
    evaluation_in_cli_words,
    in_cli_words,
    library_errors,
    option_words,
    print_report,
    progress_display,
    reader_may_leave,
    report_text,
    report_warnings,
    stdout_console,
    write_text,
)
from vocmatch.cli.exits import EXIT_SKIPPED
from vocmatch.cli.options import format_option, max_rows_option, output_option
from vocmatch.cli.params import CountError, InputPath, OutputPath, read_count, shown_value

if TYPE_CHECKING:
    from vocmatch.evaluation.result import Evaluation
    from vocmatch.evaluation.thresholds import ScoreThresholds
    from vocmatch.pipeline import EvalRequest
    from vocmatch.readers.scan import ColumnSet

F = TypeVar("F", bound=Callable[..., Any])


class ShardParam(click.ParamType):  # type: ignore[type-arg]
    """``K/N``: the K-th of N shards, 1 <= K <= N, each a count in ASCII digits
    (:func:`~vocmatch.cli.params.read_count`)."""

    name = "K/N"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, int]:
        if isinstance(value, tuple):
            return value
        text = str(value)
        k, slash, n = text.partition("/")
        try:
            shard, shards = read_count(k), read_count(n)
        except CountError as error:
            reason = f": {error}" if slash and k and n else ""
        else:
            if slash and 1 <= shard <= shards:
                return shard, shards
            reason = ""
        self.fail(
            f"{shown_value(text)} is not K/N with 1 <= K <= N (for example 2/8){reason}",
            param,
            ctx,
        )


def shard_options(function: F) -> F:
    """``--shard K/N`` and ``--save-state FILE`` of ``eval``."""
    function = click.option(
        "--save-state",
        type=OutputPath(),
        default=None,
        help="Save the evaluator state of the images evaluated (with --shard, of that shard) "
        "to FILE instead of reporting; `vocmatch merge` reports the states of every shard.",
    )(function)
    return click.option(
        "--shard",
        type=ShardParam(),
        default=None,
        help="Evaluate only the K-th of N shards of the images (by place in the sorted "
        "ground-truth file names), reading only their files; needs --save-state.",
    )(function)


def save_shard(
    request: EvalRequest,
    shard: tuple[int, int] | None,
    path: Path,
    quiet: bool,
    columns: tuple[ColumnSet, ColumnSet] | None = None,
) -> None:
    """Save the evaluator state of a shard's images (``eval --save-state``); the files of
    those images that could not be read are reported, one line each, and exit 3 as a run
    reports them (the state holds the images that were read)."""
    from vocmatch.pipeline_shards import shard_state

    with library_errors(), progress_display(quiet) as progress:
        state = shard_state(request, shard=shard, progress=progress, columns=columns)
        progress.close()  # the warnings go below the finished bar, not through it
        for skipped in state.skipped:
            echo_err(f"vocmatch: skipped {in_cli_words(str(skipped))}")
        state.evaluator.save(path)
    echo_err(f"saved {len(state.evaluator)} images to {path}")
    if state.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


@main.command("merge")
@click.argument(
    "states", nargs=-1, required=True, type=InputPath(exists=True, dir_okay=False, path_type=Path)
)
@format_option(["table", "json", "csv", "markdown"], "Report format.")
@output_option("Write the report to FILE (the summary still goes to the terminal).")
@max_rows_option(20, "Rows of the per-image table; 0 shows every image.")
def merge_command(
    states: tuple[Path, ...], output_format: str, output: Path | None, max_rows: int
) -> None:
    """Report the evaluator states in STATES (saved by `vocmatch eval --save-state`) merged.

    Any split of the images into shards, merged in any order, gives the numbers of one run
    on all of them. States made under other options, or sharing an image, are refused. The
    files the shards could not read (exit 3) and the prediction files without a ground-truth
    file are reported as one run reports them.
    """
    from vocmatch.pipeline_shards import read_states

    check_outputs([output], files=list(states))
    with library_errors():
        merged = read_states(states)
    evaluation = evaluation_in_cli_words(merged.evaluation)
    report_warnings(evaluation)
    show_merged_report(
        evaluation, merged.evaluator.score_thresholds, output_format, output, max_rows
    )
    if evaluation.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


def show_merged_report(
    evaluation: Evaluation,
    thresholds: ScoreThresholds | None,
    output_format: str,
    output: Path | None,
    max_rows: int,
) -> None:
    """The merged report on stdout, or in ``output`` with the summary on the terminal."""
    if output_format == "table":
        from vocmatch.render.terminal import ReportOptions, render, summary_table

        shown = ReportOptions(max_rows=max_rows, score_thresholds=thresholds, words=option_words)
        report = render(evaluation, shown)
        if output is None:
            with reader_may_leave():
                print_report(stdout_console(), report)
            return
        text = report_text(report)
    else:
        from vocmatch.render.csv_report import to_csv_images
        from vocmatch.render.json_report import to_json
        from vocmatch.render.markdown import to_markdown
        from vocmatch.render.terminal import summary_table

        if output_format == "json":
            text = to_json(evaluation, thresholds=thresholds)
        elif output_format == "csv":
            text = to_csv_images(evaluation)
        else:
            text = to_markdown(evaluation)
        if output is None:
            with reader_may_leave():
                click.echo(text, nl=False)
            return
    write_text(output, text)
    with reader_may_leave():
        print_report(stdout_console(), summary_table(evaluation))

"""The shard options of ``eval`` (``--shard K/N``, ``--save-state FILE``, ``--run-id``,
``--keep-boxes``), their checks, and the saving of a shard's state that ``vocmatch merge``
reports; apart from ``merge``'s own module, so that ``eval`` does not build that command."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from vocmatch.cli.cluster import remote_run
from vocmatch.cli.console import (
    echo_err,
    in_cli_words,
    library_errors,
    progress_display,
    report_gates,
)
from vocmatch.cli.exits import EXIT_GATE, EXIT_SKIPPED
from vocmatch.cli.params import (
    CountError,
    OutputPath,
    read_count,
    shown_value,
)

if TYPE_CHECKING:
    from vocmatch.run.evaluate import EvalRequest

__all__ = [
    "AT_MERGE",
    "BOXES_AT_MERGE",
    "SavedShard",
    "ShardParam",
    "check_keep_boxes",
    "check_shard_options",
    "save_shard",
    "shard_options",
]

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
    """``--shard K/N``, ``--save-state FILE``, ``--run-id TEXT`` and ``--keep-boxes`` of
    ``eval``."""
    function = click.option(
        "--keep-boxes",
        is_flag=True,
        help="With --save-state: keep every box and its match in the state, so that "
        "`vocmatch merge` can list each image's false positives and missed objects (--format "
        "junit) and take --html, --images, --errors, --tightness and --background-iou. Implied "
        "by those options given with --save-state. The state grows by about 50 bytes a box.",
    )(function)
    function = click.option(
        "--run-id",
        default=None,
        metavar="TEXT",
        help="With --save-state: a name of the run (a model's name) recorded in the state; "
        "`vocmatch merge` refuses states of runs named otherwise, which tells two models' "
        "shards apart when their files are named alike.",
    )(function)
    function = click.option(
        "--save-state",
        type=OutputPath(),
        default=None,
        help="Save the evaluator state of the images evaluated (with --shard, of that shard, "
        "and which shard of which run it is) to FILE instead of reporting; `vocmatch merge` "
        "reports the states of every shard. --max-fp and --max-fn apply to the shard; "
        "--fail-under and the report's options apply at `vocmatch merge`.",
    )(function)
    return click.option(
        "--shard",
        type=ShardParam(),
        default=None,
        help="Evaluate only the K-th of N shards of the images (by place in the sorted "
        "ground-truth file names), reading only their files; needs --save-state.",
    )(function)


#: The eval options a shard does not apply and ``vocmatch merge`` does: given with
#: --save-state, a warning says where to give them (they are not dropped unsaid).
AT_MERGE = (
    "output_format", "output", "max_rows", "only_failing", "classes_csv",
    "write_thresholds_file", "beta", "bootstrap_resamples", "seed", "count",
    "target_precision", "target_recall", "confidence_level", "background_iou",
)  # fmt: skip
#: The eval options ``vocmatch merge`` applies that read every box: given with
#: --save-state, the state keeps the boxes (as with --keep-boxes) and a warning says where
#: to give them. (The slices are matched in the shard: its state keeps them.)
BOXES_AT_MERGE = ("html_file", "images_dir", "errors", "tightness")


def check_shard_options(ctx: click.Context) -> None:
    """With ``eval --save-state``: a warning on stderr for each option ``vocmatch merge``
    applies instead of the shard."""
    given = {
        param.name: "/".join(param.opts)
        for param in ctx.command.params
        if param.name is not None
        and ctx.get_parameter_source(param.name) not in (ParameterSource.DEFAULT, None)
    }
    if "fail_under" in given:
        echo_err(
            "vocmatch: warning: --fail-under is a gate on the whole set: a shard does not "
            "apply it; give it to `vocmatch merge`"
        )
    boxes = [name for name in BOXES_AT_MERGE if name in given]
    if ctx.params.get("output_format") == "junit":
        boxes.append("output_format")
    for name in (*AT_MERGE, *BOXES_AT_MERGE):
        if name in given:
            kept = " (the state keeps the boxes it reads)" if name in boxes else ""
            echo_err(
                f"vocmatch: warning: {given[name]} applies to the report, which a shard does "
                f"not write: give it to `vocmatch merge`{kept}"
            )
    if "calibration_bins" in given:
        # The bins are the report's, but OCE and D-ECE read what only matching sees.
        echo_err(
            f"vocmatch: warning: {given['calibration_bins']}: the state keeps what OCE and "
            "D-ECE read; the calibration is reported by `vocmatch merge "
            f"{given['calibration_bins']} N`"
        )


def check_keep_boxes(ctx: click.Context) -> None:
    """``--keep-boxes`` is for a saved state: without ``--save-state``, a usage error."""
    if ctx.params.get("keep_boxes") and ctx.params.get("save_state") is None:
        raise click.UsageError(
            "--keep-boxes keeps a saved state's boxes: give --save-state FILE too"
        )


@dataclass(frozen=True, slots=True)
class SavedShard:
    """Where ``eval --save-state`` saves, and what.

    Attributes:
        path: The state file.
        shard: ``(k, n)``, or None for every image (shard 1 of 1).
        run_id: The run's name, recorded in the state.
    """

    path: Path
    shard: tuple[int, int] | None = None
    run_id: str | None = None


def save_shard(request: EvalRequest, saved: SavedShard, quiet: bool) -> None:
    """Save the evaluator state of a shard's images (``eval --save-state``); the files of
    those images that could not be read are reported, one line each, and exit 3 as a run
    reports them (the state holds the images that were read). The per-image limits
    (``--max-fp``, ``--max-fn``) are checked on the shard's images: exit 1 when one is
    over, once the state is saved."""
    from vocmatch.run.shard_states import shard_state

    with library_errors(), remote_run(request), progress_display(quiet) as progress:
        state = shard_state(request, shard=saved.shard, progress=progress, run_id=saved.run_id)
        progress.close()  # the warnings go below the finished bar, not through it
        for skipped in state.skipped:
            echo_err(f"vocmatch: skipped {in_cli_words(str(skipped))}")
        limits = state.image_gates(request.max_fp, request.max_fn)
        state.evaluator.save(saved.path)
    echo_err(f"saved {len(state.evaluator)} images to {saved.path}")
    if limits is not None:
        report_gates(limits)
        if not limits.passed:
            raise click.exceptions.Exit(EXIT_GATE)
    if state.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)

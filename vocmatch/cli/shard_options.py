"""The shard options of ``eval`` (``--shard K/N``, ``--save-state FILE``, ``--run-id``,
``--keep-boxes``) and their checks; apart from ``merge``'s own module, so that ``eval`` does
not build that command. The saving of a shard's state is :mod:`vocmatch.cli.shard_saving`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from vocmatch.cli.console import (
    echo_err,
)
from vocmatch.cli.params import (
    CountError,
    OutputPath,
    read_count,
    shown_value,
)

if TYPE_CHECKING:
    pass

__all__ = [
    "AT_MERGE",
    "BOXES_AT_MERGE",
    "ShardParam",
    "check_keep_boxes",
    "check_shard_options",
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

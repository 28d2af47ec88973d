"""The options that prepare predictions before they are matched (``--min-score``, ``--nms``,
``--nms-agnostic``, ``--max-per-image``), for every command that scores predictions.

They are not passed to the commands: their values wait in the context for
:func:`preparation_extras`, which hands them to the request as its fields (``min_score``,
``nms``, ``nms_agnostic``, ``max_per_image``), where the library checks them together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from vocmatch.cli.params import FiniteFloatRange, GrammarFloat, WholeNumberRange, finite_option

__all__ = ["PREPARATION_FLAGS", "preparation_extras", "preparation_options"]

F = TypeVar("F", bound=Callable[..., Any])

_PREPARATION = "vocmatch.preparation"

#: The options, as the help panels list them.
PREPARATION_FLAGS = ["--min-score", "--nms", "--nms-agnostic", "--max-per-image"]


def _keep(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """Leave a given value for :func:`preparation_extras` under its field's name."""
    if param.name is not None and value is not None and value is not False:
        ctx.meta.setdefault(_PREPARATION, {})[param.name] = value


def _keep_finite(ctx: click.Context, param: click.Parameter, value: float | None) -> None:
    """:func:`_keep` a number that must be finite (``nan`` is a usage error)."""
    _keep(ctx, param, finite_option(ctx, param, value))


def preparation_extras() -> dict[str, Any]:
    """The preparation options given, as request fields."""
    context = click.get_current_context(silent=True)
    return dict(context.meta.get(_PREPARATION, {})) if context is not None else {}


def preparation_options(function: F) -> F:
    """``--min-score``, ``--nms``, ``--nms-agnostic`` and ``--max-per-image``."""
    options = [
        click.option(
            "--min-score",
            "min_score",
            type=GrammarFloat(),  # any finite number (FIELD_BOUNDS["min_score"])
            default=None,
            expose_value=False,
            callback=_keep_finite,
            metavar="S",
            help="Remove every prediction scored S or less before anything else (Ultralytics' "
            "val keeps conf > 0.001): unlike --score-threshold, removed predictions are not "
            "in AP either.",
        ),
        click.option(
            "--nms",
            "nms",
            type=FiniteFloatRange.of_field("nms"),
            default=None,
            expose_value=False,
            callback=_keep,
            metavar="IOU",
            help="Non-maximum suppression of each image's predictions, class by class, before "
            "matching: a box whose IoU with a higher-scored kept box is above IOU is removed "
            "(what torchvision.ops.nms keeps).",
        ),
        click.option(
            "--nms-agnostic",
            "nms_agnostic",
            is_flag=True,
            default=False,
            expose_value=False,
            callback=_keep,
            help="Suppress across classes (with --nms).",
        ),
        click.option(
            "--max-per-image",
            "max_per_image",
            type=WholeNumberRange.of_field("max_per_image"),
            default=None,
            expose_value=False,
            callback=_keep,
            metavar="K",
            help="Keep the K highest-scored predictions of each image across classes, after "
            "--nms (equal scores in file order); --max-dets caps each image and class.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function

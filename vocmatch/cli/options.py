"""Options shared by several commands, as decorators."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from vocmatch.checks import FIELD_BOUNDS
from vocmatch.cli.console import in_cli_words
from vocmatch.cli.params import (
    CountError,
    FiniteFloatRange,
    GrammarFloat,
    InputPath,
    OutputPath,
    WholeNumberRange,
    byte_size,
    finite_option,
    read_count,
    shown_value,
)
from vocmatch.core.protocol import (
    DIFFICULT_RULES,
    INTERPOLATIONS,
    IOU_ARITHMETICS,
    MATCH_RULES,
    OPERATING_POINTS,
    PRESETS,
    PROTOCOL_NAMES,
)
from vocmatch.limits import DEFAULT_MAX_BYTES
from vocmatch.readers.formats import BOX_FORMATS, PRED_FORMATS, PREDICTION_FORMATS
from vocmatch.render.outputs import FORMATS, RENDERERS
from vocmatch.run.request_checks import GEOMETRIES

if TYPE_CHECKING:
    from vocmatch.evidence.gate_records import Gate
    from vocmatch.evidence.regression_gates import RegressionGate
    from vocmatch.evidence.slices import SliceSpec


#: The HTML report's pictures are scaled to this side (vocmatch.render.html.PICTURE_MAX_SIDE; a test
#: keeps the two equal, so the option's help is right without importing the HTML module).
HTML_PICTURE_MAX_SIDE = 640


#: Defaults shown in the options' help, kept equal to the library's by a test (so the help
#: needs none of the library's modules): vocmatch.evidence.error_types.DEFAULT_BACKGROUND_IOU,
#: vocmatch.render.diff_tables.DIFF_MAX_ROWS and vocmatch.readers.lint.DEFAULT_DUPLICATE_IOU.
#: The size limits are vocmatch.limits's; the protocols are vocmatch.core.protocol's.
DEFAULT_BACKGROUND_IOU = 0.1
DIFF_MAX_ROWS = 20
DEFAULT_DUPLICATE_IOU = 0.9
F = TypeVar("F", bound=Callable[..., Any])
G = TypeVar("G")


def report_format_option(function: F) -> F:
    """``--format`` of a command that writes an evaluation's report: every text format
    (:data:`vocmatch.render.outputs.RENDERERS`)."""
    return format_option(list(FORMATS), REPORT_FORMAT_HELP)(function)


def format_option(choices: list[str], help_text: str) -> Callable[[F], F]:
    """``--format`` with the given choices, ``table`` first and the default."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(choices),
        default="table",
        show_default=True,
        help=help_text,
    )


def _dash_is_stdout(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    # ``-o -`` is standard output, as for most command-line tools, not a file named '-'.
    return None if value is not None and str(value) == "-" else value


def output_option(help_text: str) -> Callable[[F], F]:
    """``--output FILE`` / ``-o FILE``; ``-o -`` is standard output."""
    return click.option(
        "--output",
        "-o",
        type=OutputPath(dash_is_stdout=True),
        default=None,
        callback=_dash_is_stdout,
        help=help_text,
    )


def max_rows_option(default: int, help_text: str) -> Callable[[F], F]:
    """``--max-rows N`` for a report's longest table; 0 shows every row."""
    return click.option(
        "--max-rows",
        type=WholeNumberRange(min=0),
        default=default,
        show_default=True,
        help=help_text,
    )


class IouThreshold(FiniteFloatRange):
    """``--iou``: one threshold in [0, 1]; a range or a list says what to write instead."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and (":" in value or "," in value):
            kind = "a range" if ":" in value else "a list"
            example = value if value.count(":") == 2 or ":" not in value else f"{value}:0.05"
            self.fail(
                f"{value!r} is {kind}: --iou takes one threshold (TP/FP/FN and, outside coco, "
                f"AP); for per-image counts at several give --sweep {example}, for AP averaged "
                "over IoU 0.50:0.95 give --protocol coco",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


#: Where --sweep, --max-dets, --iou-arithmetic and --operating-point leave their values for
#: :func:`convention_extras` (they are not passed to the commands: every command with the
#: convention options applies them there).
_CONVENTION_EXTRAS = "vocmatch.convention_extras"


def _extra_option(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Keep a convention option's value, under its parameter's name, for the request."""
    if value is not None and param.name is not None:
        ctx.meta.setdefault(_CONVENTION_EXTRAS, {})[param.name] = value


def _sweep_option(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    from vocmatch.core.protocol import iou_thresholds

    try:
        thresholds = iou_thresholds(value)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None
    ctx.meta.setdefault(_CONVENTION_EXTRAS, {})["sweep_thresholds"] = thresholds


def _max_dets_option(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    try:
        numbers = [read_count(part) for part in value.split(",")]
    except CountError:
        numbers = [0]
    least = FIELD_BOUNDS["max_dets"].low or 0  # the library's rule: at least 1
    if not all(number >= least for number in numbers):
        raise click.BadParameter(
            f"{shown_value(value)}: give a whole number above 0 (100), or COCO's triple 1,10,N",
            ctx=ctx,
            param=param,
        )
    if len(numbers) > 1 and numbers[:-1] != [1, 10]:
        # pycocotools' maxDets=[1, 10, 100]: AR1 and AR10 are fixed; the last is the AP's.
        raise click.BadParameter(
            f"{shown_value(value)}: the COCO summary's AR1 and AR10 keep 1 and 10: "
            "give N or 1,10,N",
            ctx=ctx,
            param=param,
        )
    ctx.meta.setdefault(_CONVENTION_EXTRAS, {})["max_dets"] = numbers[-1]


def convention_extras() -> dict[str, Any]:
    """What --sweep, --max-dets, --iou-arithmetic and --operating-point set
    (``sweep_thresholds``, ``max_dets``, ``iou_arithmetic``, ``operating_point``), as
    request fields: they are not passed to the commands, every command with the convention
    options reads them here."""
    context = click.get_current_context(silent=True)
    return dict(context.meta.get(_CONVENTION_EXTRAS, {})) if context is not None else {}


def protocol_help() -> str:
    """``--protocol``'s help: the presets, those reproducing one evaluator together.

    >>> import textwrap
    >>> print(textwrap.fill(protocol_help(), 80))
    Preset conventions: default, voc07, voc12 (PASCAL VOC devkit), coco (pycocotools
    COCOeval) or ultralytics, ultralytics-8.4.175, ultralytics-8.4.36 (ultralytics
    detection val).
    """
    groups: list[tuple[str, list[str]]] = []
    for preset in PRESETS:
        if groups and groups[-1][0] == preset.source:
            groups[-1][1].append(preset.name)
        else:
            groups.append((preset.source, [preset.name]))
    named = [", ".join(names) + (f" ({source})" if source else "") for source, names in groups]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]
    return f"Preset conventions: {listed}."


def convention_options(function: F) -> F:
    """The options that choose a protocol and override its conventions one by one."""
    options = [
        click.option(
            "--protocol",
            "protocol_name",
            type=click.Choice(PROTOCOL_NAMES),
            default="default",
            show_default=True,
            help=protocol_help(),
        ),
        click.option(
            "--iou",
            type=IouThreshold.of_field("iou"),
            default=None,
            help="IoU threshold for a match (inclusive, IoU >= t). [default: 0.5]",
        ),
        click.option(
            "--sweep",
            default=None,
            expose_value=False,
            callback=_sweep_option,
            metavar="LIST|RANGE",
            help="IoU thresholds of the per-image TP/FP/FN sweep, a list (0.5,0.75) or a "
            "range start:stop:step (0.5:0.95:0.05). [default: 0.5,0.75,0.95]",
        ),
        click.option(
            "--max-dets",
            default=None,
            expose_value=False,
            callback=_max_dets_option,
            metavar="N",
            help="Keep the N highest-scored predictions of each image and class, as "
            "pycocotools' maxDets (COCO's triple 1,10,100 is accepted: AR1 and AR10 stay). "
            "[default: 100 under coco, else all]",
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
            type=click.Choice(MATCH_RULES),
            default=None,
            help="unmatched: best still-unmatched GT (COCO); devkit: best GT even if taken, "
            "then FP; unmatched-first: best still-unmatched GT, the first on IoU ties "
            "(ultralytics).",
        ),
        click.option(
            "--difficult",
            type=click.Choice(DIFFICULT_RULES),
            default=None,
            help="difficult objects: ignored, counted as ordinary objects, COCO crowd regions, "
            "or dropped (never annotated: a prediction on one is an FP, as ultralytics' VOC "
            "converter leaves them out).",
        ),
        click.option(
            "--interpolation",
            type=click.Choice(INTERPOLATIONS),
            default=None,
            help="AP interpolation: VOC2010+ all-point, VOC2007 11-point, COCO 101-point, "
            "ultralytics' 101-point-trapezoid (np.interp and the trapezoid rule).",
        ),
        click.option(
            "--iou-arithmetic",
            type=click.Choice(IOU_ARITHMETICS),
            default=None,
            expose_value=False,
            callback=_extra_option,
            help="IoU in float64, or in float32 as ultralytics' box_iou (1e-7 in the union). "
            "[default: float32 under ultralytics, else float64]",
        ),
        click.option(
            "--operating-point",
            type=click.Choice(OPERATING_POINTS),
            default=None,
            expose_value=False,
            callback=_extra_option,
            help="Where the ultralytics summary reads P and R: max-f1 (the confidence of the "
            "highest smoothed mean F1) or all predictions. [default: max-f1 under ultralytics, "
            "else all]",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def pred_format_help() -> str:
    """``--pred-format``'s help: each format's description, in the command line's words
    (a format read from one file is given as PRED_DIR).

    >>> pred_format_help().split("; ")[0]
    'voc: a folder of XML files'
    """
    described = (
        f"{record.name}: {in_cli_words(record.description)}"
        + (" given as PRED_DIR" if record.one_file else "")
        for record in PREDICTION_FORMATS.values()
    )
    return "; ".join(described) + "."


def pred_format_options(function: F) -> F:
    """``--pred-format``, ``--box-format``, ``--coco-gt`` and ``--names``: predictions from
    any detector."""
    options = [
        click.option(
            "--pred-format",
            type=click.Choice(PRED_FORMATS),
            default="voc",
            show_default=True,
            help=pred_format_help(),
        ),
        click.option(
            "--box-format",
            type=click.Choice(BOX_FORMATS),
            default="xyxy",
            show_default=True,
            help="With --pred-format txt: how a line gives its box, after the class and "
            "score: xyxy is x1 y1 x2 y2 (corners), xywh is x y w h (top-left corner, width, "
            "height), in pixels.",
        ),
        click.option(
            "--coco-gt",
            type=InputPath(exists=True, dir_okay=False, path_type=Path),
            default=None,
            metavar="FILE",
            help="With --pred-format coco: a COCO ground-truth JSON file whose "
            "images[].file_name and categories[].name name the results' numeric ids.",
        ),
        click.option(
            "--geometry",
            type=click.Choice(GEOMETRIES),
            default="shape",
            show_default=True,
            help="An object with both a <bndbox> and a <polygon> or <robndbox>: shape scores it "
            "by the shape (a note counts them); box scores every object as a box, its "
            "<bndbox> or a lone shape's bounding box.",
        ),
        click.option(
            "--split",
            default=None,
            metavar="NAME|FILE",
            help="Evaluate only the images of a list: ImageSets/Main/NAME.txt of a VOC folder "
            "given as GT_DIR (test, val, ...), or any file of image ids, one per line. A "
            "listed image without an annotation file is an error.",
        ),
        click.option(
            "--names",
            "names_file",
            type=InputPath(exists=True, dir_okay=False, path_type=Path),
            default=None,
            metavar="FILE",
            help="With --pred-format yolo: the class names in class-index order: "
            "Ultralytics' data.yaml (names: as a list or a mapping {0: person, ...}), or one "
            "per line (classes.txt, obj.names).",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def jobs_option(help_text: str | None = None) -> Callable[[F], F]:
    """``--jobs N`` / ``-j N``: workers that read files in parallel (threads with the
    compiled reader, else processes: :func:`vocmatch.readers.scan.read_listings`); 0 uses
    every core (``help_text``, when given, is the whole help)."""
    return click.option(
        "--jobs",
        "-j",
        type=WholeNumberRange.of_field("jobs"),
        default=0,
        help=help_text
        or (
            "Workers that read files in parallel (threads with the compiled reader, else "
            "processes); 0 (the default) uses every core."
        ),
    )


#: What ``eval --jobs N`` does (:mod:`vocmatch.run.in_parts`).
EVAL_JOBS_HELP = (
    "Worker processes; 0 (the default) uses every core. Above 1, each reads and matches a "
    "part of the images and the main process joins their match records (the report is "
    "that of one process); a report that lists or draws boxes (--errors, --html, --format "
    "junit), --split and non-XML predictions read the files in parallel (threads with the "
    "compiled reader) and match them in the main process."
)


def fold_case_option(help_text: str) -> Callable[[F], F]:
    """``--fold-case``: class names lower-cased before matching."""
    return click.option("--fold-case", is_flag=True, help=help_text)


FOLD_CASE_HELP = (
    "Lower-case class names before matching, so Car and car are one class (without it, "
    "names differing only in case are counted apart and noted)."
)

#: ``--quiet`` / ``-q``: no progress bar.
quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress bar on long runs.")


def max_file_size_option(function: F) -> F:
    """``--max-file-size SIZE``: larger annotation files are skipped unread."""
    return click.option(
        "--max-file-size",
        callback=byte_size,
        default=f"{DEFAULT_MAX_BYTES // 1024**2}M",
        show_default=True,
        metavar="SIZE",
        help="Skip larger annotation files unread (5000, 64K, 32M, 1G; powers of 1024).",
    )(function)


def score_threshold_option(help_text: str) -> Callable[[F], F]:
    """``--score-threshold T``: count only predictions scored at least T."""
    return click.option(
        "--score-threshold",
        type=GrammarFloat(),
        callback=finite_option,
        default=None,
        metavar="T",
        help=help_text,
    )


def _gates(
    parse: Callable[[str], G],
) -> Callable[[click.Context, click.Parameter, tuple[str, ...]], tuple[G, ...]]:
    """An option callback reading each value with ``parse``, the one gate grammar
    (:func:`vocmatch.evidence.gate_records.read_gate_text`); a bad value is a usage error
    (exit 2)."""

    def callback(
        ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
    ) -> tuple[G, ...]:
        try:
            return tuple(parse(value) for value in values)
        except ValueError as error:
            raise click.BadParameter(str(error), ctx=ctx, param=param) from None

    return callback


def gate_option(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[Gate, ...]:
    """Parse each ``--fail-under`` value; a bad one is a usage error (exit 2)."""
    if not values:
        return ()  # no gate: the gates module (and the slices it reads) stays unimported
    from vocmatch.evidence.gate_records import parse_gate

    return _gates(parse_gate)(ctx, param, values)


#: The help of ``--format`` for a report of boxes (``eval``, ``merge``).
#: The help of ``--format`` where it writes an evaluation's report (``eval``, ``merge``).
REPORT_FORMAT_HELP = "; ".join(f"{r.name}: {r.description}" for r in RENDERERS.values()) + "."


def gate_options(function: F) -> F:
    """``--fail-under`` (dataset, class and slice gates), ``--max-fp`` and ``--max-fn``
    (per-image limits): the gates of ``eval`` and ``merge``, exit 1 when one fails."""
    function = click.option(
        "--max-fn",
        type=WholeNumberRange.of_field("max_fn"),
        default=None,
        metavar="N",
        help="Exit 1 if any image has more than N missed objects.",
    )(function)
    function = click.option(
        "--max-fp",
        type=WholeNumberRange.of_field("max_fp"),
        default=None,
        metavar="N",
        help="Exit 1 if any image has more than N false positives.",
    )(function)
    return click.option(
        "--fail-under",
        multiple=True,
        callback=gate_option,
        metavar="[CLASS:]METRIC=VALUE",
        help="Exit 1 unless METRIC (map, precision, recall or f1; ap50 or ap75 under "
        "--protocol coco) is at least VALUE, a fraction in [0, 1]; CLASS:METRIC for one class "
        "(ap = map). Repeatable.",
    )(function)


def report_file_options(function: F) -> F:
    """``--only-failing``, ``--classes-csv``, ``--html``, ``--beta`` and
    ``--write-thresholds``: what ``eval`` and ``merge`` add to a report of boxes."""
    function = click.option(
        "--write-thresholds",
        "write_thresholds_file",
        type=OutputPath(),
        default=None,
        metavar="FILE",
        help="Write each class's operating-point threshold to FILE as class,threshold CSV, "
        "for --score-thresholds in a later run.",
    )(function)
    function = click.option(
        "--beta",
        type=FiniteFloatRange.of_field("beta"),
        default=1.0,
        show_default=True,
        help="Each class's operating point maximises F-beta on its precision/recall curve: 1 "
        "is F1, 2 weighs recall twice as much as precision, 0.5 precision twice.",
    )(function)
    function = click.option(
        "--html",
        "html_file",
        type=OutputPath(),
        default=None,
        metavar="FILE",
        help="Also write a self-contained HTML report to FILE: summary, curves, confusion "
        "matrix and every image's boxes drawn (with any --format; from saved states, those "
        "saved with --keep-boxes).",
    )(function)
    function = click.option(
        "--classes-csv",
        type=OutputPath(),
        default=None,
        metavar="FILE",
        help="Also write one CSV row per class to FILE (with any --format).",
    )(function)
    return click.option(
        "--only-failing", is_flag=True, help="List only images with an FP or an FN."
    )(function)


def images_option(function: F) -> F:
    """``--images DIR``: the pictures the HTML report draws the boxes on."""
    return click.option(
        "--images",
        "images_dir",
        type=InputPath(exists=True, file_okay=False, path_type=Path),
        default=None,
        metavar="DIR",
        help="With --html: draw the boxes on the pictures in DIR (found by <filename> or by "
        f"name; JPEG or PNG, embedded scaled to {HTML_PICTURE_MAX_SIDE} px).",
    )(function)


def analysis_options(function: F) -> F:
    """``--errors``, ``--background-iou`` and ``--tightness``: the error analysis of the
    boxes, for ``eval`` and ``merge``."""
    function = click.option(
        "--tightness",
        is_flag=True,
        help="Add IoU and edge-offset histograms of the matched boxes to the table report.",
    )(function)
    function = click.option(
        "--background-iou",
        type=FiniteFloatRange.of_field("background_iou"),
        default=DEFAULT_BACKGROUND_IOU,
        show_default=True,
        help="A false positive overlapping no object by more than this is a background error; "
        "one at least this close to an object of its class, a localisation error.",
    )(function)
    return click.option(
        "--errors/--no-errors",
        default=False,
        show_default=True,
        help="Add the error breakdown (TIDE types and their mAP cost) and the confusion matrix "
        "to the table report. JSON always has them.",
    )(function)


def slice_option(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[SliceSpec, ...]:
    """Parse the ``--slice`` values; a bad one is a usage error (exit 2)."""
    if not values:
        return ()
    from vocmatch.evidence.slices import parse_slices

    try:
        return parse_slices(values)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None


#: --bootstrap's help for eval and for diff.
BOOTSTRAP_HELP = (
    "Add 95 % intervals for mAP, per-class AP, precision, recall and F1 from N resamples of "
    "the images, drawn with replacement (1000 is usual)."
)


PAIRED_BOOTSTRAP_HELP = (
    "Evaluate both runs on the same N resamples of the images, drawn with replacement (1000 "
    "is usual): a 95 % interval and a two-sided p-value for every change, and each "
    "regression gate's one-sided p-value."
)


def evidence_options(function: F, bootstrap_help: str = BOOTSTRAP_HELP) -> F:
    """--bootstrap and --seed."""
    options = [
        click.option(
            "--bootstrap",
            "bootstrap_resamples",
            type=WholeNumberRange.of_field("bootstrap"),
            default=None,
            metavar="N",
            help=bootstrap_help,
        ),
        click.option(
            "--seed",
            type=WholeNumberRange.of_field("seed"),
            default=0,
            show_default=True,
            help="Seed of the bootstrap's resamples: the same seed gives the same intervals.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def calibration_option(function: F) -> F:
    """--calibration-bins."""
    return click.option(
        "--calibration-bins",
        type=WholeNumberRange.of_field("calibration_bins"),
        default=None,
        metavar="N",
        help="Add each class's expected calibration error (ECE, and MCE) over N equal score "
        "bins, a prediction right when it is a TP at the IoU threshold; its object-level "
        "calibration error (OCE: each object's Brier score of the predictions of any class "
        "over it, a miss scoring 1) and its D-ECE (ECE over N bins each of score and box "
        "position and size); OCE and D-ECE of merged states need states saved with it. The "
        "HTML report always draws the reliability plot (10 bins unless N is given).",
    )(function)


def target_options(function: F) -> F:
    """--target-precision, --target-recall and --confidence-level."""
    function = click.option(
        "--confidence-level",
        type=FiniteFloatRange.of_field("confidence_level"),
        default=0.95,
        show_default=True,
        metavar="C",
        help="The confidence of the lower bound a target is held at (0.95: the 5th "
        "percentile over the resamples).",
    )(function)
    function = click.option(
        "--target-recall",
        type=FiniteFloatRange.of_field("target_recall"),
        default=None,
        metavar="R",
        help="Give each class the highest score threshold whose recall holds R at the "
        "bootstrap's lower bound (--bootstrap resamples, 1000 if not given); --write-thresholds "
        "writes them.",
    )(function)
    return click.option(
        "--target-precision",
        type=FiniteFloatRange.of_field("target_precision"),
        default=None,
        metavar="P",
        help="Give each class a score threshold whose precision holds P at the bootstrap's "
        "lower bound, tried from the highest score down until one fails (--bootstrap "
        "resamples, 1000 if not given); classes that cannot reach it are listed with why. "
        "--write-thresholds writes them; --fail-under reached=1 fails when a class has none.",
    )(function)


def count_option(function: F) -> F:
    """--count."""
    return click.option(
        "--count",
        is_flag=True,
        default=False,
        help="Add each class's per-image count error at the score thresholds applied (MAE, "
        "RMSE, bias: predicted minus true), over classes and over all objects, and whether "
        "each class is found in the images that hold it (presence recall, false alarms); "
        "intervals with --bootstrap.",
    )(function)


def slice_options(function: F) -> F:
    """--slice, repeatable, and --calibration-bins."""
    function = calibration_option(function)
    return click.option(
        "--slice",
        "slice_specs",
        multiple=True,
        callback=slice_option,
        metavar="SLICE",
        help="Also report AP and counts per value of SLICE: difficult, truncated, occluded, "
        "pose, size (COCO's small/medium/large), size edges as box sides (16,32,96), or a "
        "file-name pattern (night_*; every pattern is a value). Repeatable; a gate can "
        "target a value: --fail-under size=small:recall=0.6.",
    )(function)


def regression_gate_option(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[RegressionGate, ...]:
    """Parse each ``--fail-on-regression`` value; a bad one is a usage error (exit 2)."""
    if not values:
        return ()
    from vocmatch.evidence.regression_gates import parse_regression_gate

    return _gates(parse_regression_gate)(ctx, param, values)


#: vocmatch.evaluation.class_map.BUILTIN_MAPS (a test keeps the two equal: --help imports
#: neither) and AGNOSTIC_CLASS.
BUILTIN_CLASS_MAPS = ("coco-to-voc",)
AGNOSTIC_CLASS = "object"


def _class_list(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    names = tuple(name.strip() for name in value.split(","))
    if not all(names):
        raise click.BadParameter(
            f"{value!r} has an empty class name: give names separated by commas, as A,B",
            ctx=ctx,
            param=param,
        )
    return names


def class_options(function: F) -> F:
    """``--class-map``, ``--classes`` and ``--agnostic``, handed to the command as one
    ``class_choice`` (a :class:`vocmatch.evaluation.class_map.ClassChoice`)."""
    import functools

    @functools.wraps(function)
    def wrapper(
        *args: Any, class_map: str | None, classes: tuple[str, ...], agnostic: bool, **kwargs: Any
    ) -> Any:
        from vocmatch.cli.console import library_errors
        from vocmatch.evaluation.class_map import ClassChoice
        from vocmatch.evaluation.class_map import class_map as read_map

        with library_errors():
            chosen = read_map(class_map) if class_map is not None else None
        choice = ClassChoice(chosen, classes, agnostic)
        return function(*args, class_choice=choice, **kwargs)

    options = [
        click.option(
            "--class-map",
            default=None,
            metavar="FILE|NAME",
            help="Evaluate prediction classes under ground-truth names: a CSV file of pred,gt "
            "lines (pred, with nothing after the comma drops the class; other classes are "
            f"kept), or {', '.join(BUILTIN_CLASS_MAPS)} (a COCO model on VOC: tv is "
            "tvmonitor, couch sofa, ...; the 60 COCO classes VOC lacks dropped). The notes "
            "count what was renamed and dropped.",
        ),
        click.option(
            "--classes",
            default=None,
            callback=_class_list,
            metavar="A,B",
            help="Evaluate only these classes (named after --class-map): ground truth and "
            "predictions of the others are left out.",
        ),
        click.option(
            "--agnostic",
            is_flag=True,
            help="Class-agnostic matching: every class is one class, "
            f"{AGNOSTIC_CLASS!r} (does the detector find the objects, whatever it calls them).",
        ),
    ]
    decorated: Any = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]

"""``vocmatch iou``: compare two boxes, polygons or label sets."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from vocmatch.cli.app import main
from vocmatch.cli.console import echo_err, fail, stdout_console
from vocmatch.cli.options import format_option
from vocmatch.cli.params import FiniteFloatRange

if TYPE_CHECKING:
    from vocmatch.core.calculator import BoxComparison, LabelComparison


@main.command("iou", context_settings={"ignore_unknown_options": True})
@click.argument("values", nargs=-1, metavar="A B")
@click.option(
    "--labels",
    is_flag=True,
    help="Compare two comma-separated label sets (Jaccard) instead of two boxes.",
)
@click.option("--xywh", is_flag=True, help="Read each box as x,y,w,h instead of x1,y1,x2,y2.")
@click.option(
    "--polygon",
    is_flag=True,
    help="Either argument may be a polygon, written as its points 'x,y x,y x,y ...'; an "
    "argument of four numbers stays a box. Areas and overlap are exact.",
)
@click.option(
    "--pixel-inclusive/--continuous",
    "pixel_inclusive",
    default=False,
    help="Box areas with the VOC devkit's +1 pixel, (x2 - x1 + 1) * (y2 - y1 + 1), as eval's "
    "--protocol voc07 and voc12 match boxes, or continuous (x2 - x1). [default: continuous]",
)
@click.option(
    "--threshold",
    type=FiniteFloatRange(0.0, 1.0),
    default=0.5,
    show_default=True,
    help="IoU (or Jaccard) threshold for the verdict; inclusive, IoU >= t matches.",
)
@format_option(
    ["table", "json"],
    "table: the terminal report and overlap diagram; json: every number, for scripts.",
)
def iou_command(
    values: tuple[str, ...],
    labels: bool,
    xywh: bool,
    polygon: bool,
    pixel_inclusive: bool,
    threshold: float,
    output_format: str,
) -> None:
    """Compare two boxes A and B, two regions with --polygon, or two label sets with --labels.

    Prints IoU, the verdict at --threshold and at 0.5/0.75/0.95, GIoU, Dice and the areas,
    and draws the two boxes. Separate a box's numbers with commas or spaces; a box that
    starts with a minus sign works as typed.

    \b
    vocmatch iou 50,50,150,150 80,80,180,180
    vocmatch iou --xywh "-5 3 10 20" 0,0,8,8
    vocmatch iou --pixel-inclusive 0,0,9,9 5,5,14,14
    vocmatch iou --polygon "200,100 300,100 200,200" 200,100,300,200
    vocmatch iou --labels "cat, dog, bird" "dog,bird,fish"
    """
    from vocmatch.core import calculator
    from vocmatch.render.diagram import box_report, label_report

    for value in values:
        # Unknown options reach us as values (negative coordinates need that): a dash
        # followed by anything but a digit or a point was meant as an option.
        if value.startswith("-") and len(value) > 1 and value[1] not in "0123456789.":
            raise fail(f"no such option: {value} (see vocmatch iou --help)")
    if pixel_inclusive and (labels or polygon):
        raise fail(
            f"--pixel-inclusive applies to boxes, not to {'--labels' if labels else '--polygon'}"
        )
    comparison: BoxComparison | LabelComparison
    try:
        if labels:
            if xywh or polygon:
                raise fail(f"{'--xywh' if xywh else '--polygon'} applies to boxes, not to --labels")
            if len(values) != 2:
                raise ValueError(f"expected two label sets A B, got {len(values)} argument(s)")
            sets = []
            for name, text in zip("AB", values, strict=True):
                try:
                    sets.append(calculator.parse_labels(text))
                except ValueError as error:
                    raise ValueError(f"label set {name}: {error}") from None
            comparison = calculator.compare_labels(sets[0], sets[1], threshold)
        elif polygon:
            region_a, region_b = calculator.parse_region_pair(values, xywh)
            comparison = calculator.compare_regions(region_a, region_b, threshold)
        else:
            box_a, box_b = calculator.parse_box_pair(values, xywh)
            comparison = calculator.compare_boxes(box_a, box_b, threshold, pixel_inclusive)
    except ValueError as error:
        raise fail(str(error)) from None
    if isinstance(comparison, calculator.BoxComparison) and not comparison.dice_agree:
        echo_err(
            f"vocmatch: warning: Dice 2*I/(A+B) = {comparison.dice!r} disagrees with "
            f"2*IoU/(1+IoU) = {comparison.dice_from_iou!r}"
        )
    if output_format == "json":
        click.echo(calculator.to_json(comparison), nl=False)
        return
    console = stdout_console()
    if isinstance(comparison, calculator.BoxComparison):
        console.print(box_report(comparison, console.width))
    else:
        console.print(label_report(comparison))

"""Label-set and segmentation-mask evaluations as rich renderables. Nothing here prints.

Names are data, never markup: each enters a cell through
:func:`vocmatch.render.terminal._name` (escaped, never read as markup).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from vocmatch.errors import Option
from vocmatch.escapes import printable
from vocmatch.render.measured import MeasuredTable
from vocmatch.render.terminal import (
    ReportOptions,
    images_left_out,
    more_rows,
    name_cell,
    note_text,
    number_text,
)
from vocmatch.words import plural

if TYPE_CHECKING:
    # Only for the annotations: each report imports the modules of its own parts, so the
    # evaluation report loads no analysis, bootstrap, diff or suspects module it does not show.
    from vocmatch.evaluation.labels_and_masks.labels import LabelEvaluation, LabelImageResult
    from vocmatch.evaluation.labels_and_masks.seg import SegEvaluation, SegImageResult

__all__ = [
    "label_class_table",
    "label_image_table",
    "label_summary",
    "render_labels",
    "render_seg",
    "seg_class_table",
    "seg_image_table",
    "seg_summary",
]


def _names(names: tuple[str, ...], style: str = "") -> Text:
    return name_cell(", ".join(names), style=style) if names else Text("—", style="dim")


def _label_header(evaluation: LabelEvaluation) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("mode", "labels: the set of classes in each image")
    table.add_row("names", "stripped and lower-cased")
    difficult = {
        "ignore": "ignore: a class present only as difficult objects is left out of that image",
        "count": "count: difficult objects are ordinary objects",
    }
    table.add_row("difficult", difficult[evaluation.difficult])
    return table


def _difference(image: LabelImageResult) -> Text:
    """``-airplane -car +boat``: missed classes, then extra ones."""
    words = [f"-{name}" for name in image.missed] + [f"+{name}" for name in image.extra]
    return name_cell(" ".join(words), style="red") if words else Text("—", style="dim")


def label_image_table(
    evaluation: LabelEvaluation, options: ReportOptions | None = None
) -> RenderableType:
    """Per-image label sets, what was missed and what was extra, lowest Jaccard first."""
    opts = options or ReportOptions()
    table = MeasuredTable("Images (lowest Jaccard first)")
    table.add_column("image", overflow="fold")
    for name in ("GT", "predicted", "difference"):
        table.add_column(name, overflow="ellipsis")
    table.add_column("Jaccard", justify="right", no_wrap=True)
    table.add_column("Dice", justify="right", no_wrap=True)
    rows = sorted(evaluation.images, key=lambda i: (i.jaccard, -i.errors, i.key))
    if opts.only_failing:
        rows = [r for r in rows if r.errors > 0]
    shown = rows if opts.max_rows == 0 else rows[: opts.max_rows]
    for image in shown:
        label = name_cell(image.key)
        if image.pred_path is None:
            label.append(" †", style="yellow")
        gt = _names(image.gt)
        if image.ignored:
            gt = name_cell(", ".join(image.gt) + ", " if image.gt else "")
            gt.append(printable(f"({', '.join(image.ignored)})"), style="dim")
        table.add_row(
            label,
            gt,
            _names(image.pred),
            _difference(image),
            number_text(image.jaccard, 3),
            number_text(image.dice, 3),
        )
    parts: list[RenderableType] = [table]
    if shown:
        parts.append(
            Text("difference: -missed (in GT, not predicted), +extra (predicted only)", style="dim")
        )
    if any(i.pred_path is None for i in shown):
        parts.append(Text("† no prediction file: nothing predicted", style="dim"))
    if any(i.ignored for i in shown):
        parts.append(
            Text("(class): all its objects are difficult: ignored in this image", style="dim")
        )
    hidden = len(rows) - len(shown)
    parts += images_left_out(hidden, bool(rows), opts.words)
    return Group(*parts)


def label_class_table(evaluation: LabelEvaluation) -> Table:
    """Per-class image counts and IoU ``TP / (TP + FP + FN)``."""
    table = Table(title="Classes (counted in images)", title_justify="left")
    table.add_column("class", no_wrap=True)
    for column in ("GT", "pred", "TP", "FP", "FN", "IoU"):
        table.add_column(column, justify="right", no_wrap=True)
    for cls in evaluation.classes:
        name = name_cell(cls.name)
        if cls.gt == 0:
            name.append(" *", style="yellow")
        gt = str(cls.gt) if not cls.ignored else f"{cls.gt} (+{cls.ignored})"
        table.add_row(
            name,
            gt,
            str(cls.pred),
            str(cls.tp),
            Text(str(cls.fp), style="red" if cls.fp else ""),
            Text(str(cls.fn), style="red" if cls.fn else ""),
            number_text(cls.iou),
        )
    return table


def label_summary(evaluation: LabelEvaluation) -> RenderableType:
    """Macro and micro IoU, the per-image means, and what was left out."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("images", f"{len(evaluation.images):,}")
    table.add_row("TP / FP / FN", f"{evaluation.tp:,} / {evaluation.fp:,} / {evaluation.fn:,}")
    table.add_row("macro IoU", number_text(evaluation.macro_iou))
    table.add_row("micro IoU", number_text(evaluation.micro_iou))
    table.add_row("mean Jaccard", number_text(evaluation.mean_jaccard))
    table.add_row("mean Dice", number_text(evaluation.mean_dice))
    table.add_row("exact match", number_text(evaluation.exact_match))
    parts: list[RenderableType] = [Text("Summary", style="bold italic"), table]
    problems = Table.grid(padding=(0, 2))
    problems.add_column(style="bold")
    problems.add_column()
    if evaluation.skipped:
        problems.add_row(
            "skipped files", Text(f"{len(evaluation.skipped):,} (named on stderr)", style="red")
        )
    if evaluation.missing_pred:
        problems.add_row(
            "no prediction file",
            f"{plural(len(evaluation.missing_pred), 'image')}, nothing predicted",
        )
    if evaluation.orphan_pred:
        problems.add_row(
            "no GT file",
            f"{plural(len(evaluation.orphan_pred), 'prediction file')}, not evaluated",
        )
    if problems.row_count:
        parts.append(problems)
    for note in evaluation.notes:
        parts.append(note_text(note))
    parts.append(
        Text(
            "TP/FP/FN count images per class; macro IoU: mean over classes; "
            "micro IoU: ΣTP / (ΣTP + ΣFP + ΣFN)",
            style="dim",
        )
    )
    if any(c.gt == 0 for c in evaluation.classes):
        parts.append(Text("* class only in predictions: IoU 0, averaged", style="dim"))
    return Group(*parts)


def render_labels(
    evaluation: LabelEvaluation, options: ReportOptions | None = None
) -> RenderableType:
    """The whole label-set report: conventions, images, classes and the summary."""
    return Group(
        _label_header(evaluation),
        Text(),
        label_image_table(evaluation, options),
        Text(),
        label_class_table(evaluation),
        Text(),
        label_summary(evaluation),
    )


def _seg_header(evaluation: SegEvaluation) -> Table:
    from vocmatch.evaluation.labels_and_masks.seg import VOC_CLASSES, VOID

    names = tuple(c.name for c in evaluation.classes)
    source = ", PASCAL VOC" if names == VOC_CLASSES else ""
    last = len(names) - 1
    listed = printable(f"0 {names[0]}" + (f" … {last} {names[last]}" if last else ""))
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("mode", "segmentation masks: pixel value = class index")
    table.add_row("classes", Text(f"{len(names)}{source} ({listed})"))
    table.add_row("void", f"{VOID} in the ground truth: ignored")
    pred_void = {
        "error": f"{VOID} in a prediction: the image is skipped (VOC devkit)",
        "miss": f"{VOID} in a prediction: a missed pixel (FN)",
    }
    table.add_row("", pred_void[evaluation.pred_void])
    table.add_row("IoU", "TP / (TP + FP + FN) over all pixels of the dataset")
    return table


def _seg_order(image: SegImageResult) -> tuple[bool, float, float, str]:
    # Lowest mIoU first; images without a score (every pixel void) last.
    return (
        image.miou is None,
        image.miou if image.miou is not None else 0.0,
        image.pixel_accuracy if image.pixel_accuracy is not None else 0.0,
        image.key,
    )


def seg_image_table(
    evaluation: SegEvaluation, max_rows: int = 20, words: Callable[[Option], str] = str
) -> RenderableType:
    """Per-image pixel accuracy, mean IoU and classes present, lowest mean IoU first;
    ``max_rows`` 0 shows every image (``words``: :attr:`ReportOptions.words`)."""
    table = MeasuredTable("Images (lowest mIoU first)")
    table.add_column("image", overflow="fold")
    table.add_column("pixel acc", justify="right", no_wrap=True)
    table.add_column("mIoU", justify="right", no_wrap=True)
    table.add_column("GT classes", overflow="ellipsis")
    table.add_column("predicted classes", overflow="ellipsis")
    rows = sorted(evaluation.images, key=_seg_order)
    shown = rows if max_rows == 0 else rows[:max_rows]
    for image in shown:
        table.add_row(
            name_cell(image.key),
            number_text(image.pixel_accuracy, 3),
            number_text(image.miou, 3),
            _names(image.gt_classes),
            _names(image.pred_classes),
        )
    parts: list[RenderableType] = [table]
    hidden = len(rows) - len(shown)
    if hidden:
        parts.append(Text(more_rows(f"{hidden:,} more images not shown", words), style="dim"))
    elif not rows:
        parts.append(Text("no images to show", style="dim"))
    return Group(*parts)


def seg_class_table(evaluation: SegEvaluation) -> RenderableType:
    """Per-class pixel counts, IoU and accuracy of the classes that occur."""
    table = Table(title="Classes (pixels over the dataset)", title_justify="left")
    table.add_column("class", no_wrap=True)
    for name in ("IoU", "accuracy", "TP", "FP", "FN"):
        table.add_column(name, justify="right", no_wrap=True)
    absent = 0
    for cls in evaluation.classes:
        if cls.iou is None:
            absent += 1
            continue
        table.add_row(
            name_cell(cls.name),
            number_text(cls.iou),
            number_text(cls.accuracy),
            f"{cls.tp:,}",
            f"{cls.fp:,}",
            f"{cls.fn:,}",
        )
    parts: list[RenderableType] = [table]
    if absent:
        parts.append(
            Text(
                f"{absent} classes in neither the ground truth nor the predictions: "
                "not shown, not averaged",
                style="dim",
            )
        )
    return Group(*parts)


def seg_summary(evaluation: SegEvaluation) -> RenderableType:
    """Mean IoU, pixel and mean class accuracy, and the masks left out."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("images", f"{len(evaluation.images):,}")
    table.add_row("mIoU", number_text(evaluation.miou))
    table.add_row("pixel accuracy", number_text(evaluation.pixel_accuracy))
    table.add_row("mean accuracy", number_text(evaluation.mean_accuracy))
    void_pixels = int(evaluation.pred_void_pixels.sum())
    if void_pixels:
        table.add_row("predicted void", f"{void_pixels:,} px")
    parts: list[RenderableType] = [Text("Summary", style="bold italic"), table]
    if evaluation.skipped:
        problems = Table.grid(padding=(0, 2))
        problems.add_column(style="bold")
        problems.add_column()
        problems.add_row(
            "skipped masks",
            Text(f"{len(evaluation.skipped):,} (named on stderr)", style="red"),
        )
        parts.append(problems)
    return Group(*parts)


def render_seg(
    evaluation: SegEvaluation, max_rows: int = 20, words: Callable[[Option], str] = str
) -> RenderableType:
    """The whole segmentation report: conventions, images, classes and the summary."""
    return Group(
        _seg_header(evaluation),
        Text(),
        seg_image_table(evaluation, max_rows, words),
        Text(),
        seg_class_table(evaluation),
        Text(),
        seg_summary(evaluation),
    )

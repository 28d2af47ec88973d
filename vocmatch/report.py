"""Turn an :class:`~vocmatch.evaluate.Evaluation` into rich renderables.

Nothing here prints: the caller owns the Console. The per-image table lists the worst images
first (most FP + FN, then by name) and stops after ``max_rows`` rows, so that it reads the
same for 5 images and for 5,000; a footer says how many rows were left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from vocmatch.evaluate import ClassResult, Evaluation, ImageResult, SweepResult

__all__ = ["ReportOptions", "class_table", "header", "image_table", "render", "summary_table"]


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """What the terminal report shows.

    Attributes:
        max_rows: Rows of the per-image table; 0 shows every image.
        only_failing: Show only images with at least one FP or FN.
    """

    max_rows: int = 20
    only_failing: bool = False


def _number(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _sweep(result: SweepResult) -> Text:
    text = f"{result.tp}/{result.fp}/{result.fn}"
    style = "green" if result.fp == 0 and result.fn == 0 else "red"
    return Text(text, style=style)


def header(evaluation: Evaluation) -> Table:
    """The conventions in force, one per row."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for name, value in evaluation.conventions.describe():
        table.add_row(name, value)
    return table


def worst_first(images: tuple[ImageResult, ...]) -> list[ImageResult]:
    """Images ordered by FP + FN (most first), then FN, then key."""
    return sorted(images, key=lambda i: (-i.errors, -i.fn, i.key))


def image_table(evaluation: Evaluation, options: ReportOptions | None = None) -> RenderableType:
    """Per-image counts at the threshold, mean IoU of the matches and the sweep."""
    opts = options or ReportOptions()
    threshold = evaluation.conventions.iou_threshold
    table = Table(
        title=f"Images (worst first, TP/FP/FN at IoU {threshold:g} and the sweep)",
        title_justify="left",
    )
    table.add_column("image", overflow="fold")
    for name in ("GT", "pred", "TP", "FP", "FN"):
        table.add_column(name, justify="right")
    table.add_column("mIoU", justify="right")
    for sweep_threshold in (0.5, 0.75, 0.95):
        table.add_column(f"@{sweep_threshold:.2f}", justify="right")
    rows = worst_first(evaluation.images)
    if opts.only_failing:
        rows = [r for r in rows if r.errors > 0]
    shown = rows if opts.max_rows == 0 else rows[: opts.max_rows]
    for image in shown:
        label = Text(image.key)
        if image.pred_path is None:
            label.append(" †", style="yellow")
        table.add_row(
            label,
            str(image.gt),
            str(image.pred),
            str(image.tp),
            Text(str(image.fp), style="red" if image.fp else ""),
            Text(str(image.fn), style="red" if image.fn else ""),
            _number(image.mean_iou, 3),
            *(_sweep(s) for s in image.sweep),
        )
    hidden = len(rows) - len(shown)
    parts: list[RenderableType] = [table]
    if any(i.pred_path is None for i in shown):
        parts.append(Text("† no prediction file: every object counts as missed", style="dim"))
    if hidden:
        parts.append(
            Text(
                f"{hidden:,} more images not shown (--max-rows 0 shows all, "
                "--only-failing hides perfect ones)",
                style="dim",
            )
        )
    elif not rows:
        parts.append(Text("no images to show", style="dim"))
    return Group(*parts)


def class_table(evaluation: Evaluation) -> Table:
    """Per-class counts, precision, recall, F1 and AP."""
    threshold = evaluation.conventions.iou_threshold
    table = Table(title=f"Classes (at IoU {threshold:g})", title_justify="left")
    table.add_column("class", overflow="fold")
    for name in ("GT", "pred", "TP", "FP", "FN", "precision", "recall", "F1", "AP"):
        table.add_column(name, justify="right", no_wrap=True)
    for cls in evaluation.classes:
        table.add_row(*_class_cells(cls))
    return table


def _class_cells(cls: ClassResult) -> list[RenderableType]:
    name = Text(cls.name)
    if not cls.in_map:
        name.append(" *", style="yellow")
    gt = str(cls.gt) if not cls.gt_ignored else f"{cls.gt} (+{cls.gt_ignored})"
    return [
        name,
        gt,
        str(cls.pred),
        str(cls.tp),
        str(cls.fp),
        str(cls.fn),
        _number(cls.precision),
        _number(cls.recall),
        _number(cls.f1),
        _number(cls.ap),
    ]


def summary_table(evaluation: Evaluation) -> RenderableType:
    """Dataset totals, the COCO numbers when computed, and what was left out."""
    s = evaluation.summary
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("images", f"{s.images:,}")
    table.add_row("GT objects", f"{s.gt:,}")
    table.add_row("predictions", f"{s.pred:,}")
    table.add_row("TP / FP / FN", f"{s.tp:,} / {s.fp:,} / {s.fn:,}")
    table.add_row("precision", _number(s.precision))
    table.add_row("recall", _number(s.recall))
    table.add_row("F1", _number(s.f1))
    map_name = "mAP@[.50:.95]" if evaluation.coco is not None else "mAP"
    table.add_row(map_name, _number(s.map))
    parts: list[RenderableType] = [Text("Summary", style="bold italic"), table]
    if evaluation.coco is not None:
        coco = Table(title="COCO (pycocotools COCOeval.stats)", title_justify="left")
        names = ("AP", "AP50", "AP75", "APs", "APm", "APl")
        recall_names = ("AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
        for name in names:
            coco.add_column(name, justify="right")
        values = evaluation.coco.as_list()
        coco.add_row(*(f"{v:.4f}" for v in values[:6]))
        coco.add_row(*(Text(n, style="bold") for n in recall_names))
        coco.add_row(*(f"{v:.4f}" for v in values[6:]))
        parts.append(coco)
    problems = Table.grid(padding=(0, 2))
    problems.add_column(style="bold")
    problems.add_column()
    if s.skipped:
        problems.add_row("skipped files", Text(f"{s.skipped:,} (named on stderr)", style="red"))
    if s.missing_pred:
        problems.add_row(
            "no prediction file",
            Text(f"{s.missing_pred:,} image(s), their objects count as FN"),
        )
    if s.orphan_pred:
        problems.add_row("no GT file", Text(f"{s.orphan_pred:,} prediction file(s), not evaluated"))
    if problems.row_count:
        parts.append(problems)
    for note in evaluation.notes:
        parts.append(Text(f"note: {note}", style="yellow"))
    if any(not c.in_map for c in evaluation.classes):
        parts.append(Text("* class has no ground truth: reported, not averaged", style="dim"))
    return Group(*parts)


def render(evaluation: Evaluation, options: ReportOptions | None = None) -> RenderableType:
    """The whole terminal report: conventions, images, classes and the summary."""
    return Group(
        header(evaluation),
        Text(),
        image_table(evaluation, options),
        Text(),
        class_table(evaluation),
        Text(),
        summary_table(evaluation),
    )

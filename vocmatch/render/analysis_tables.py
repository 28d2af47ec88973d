"""The error analysis as rich renderables: error types per class and per image, the
confusion matrix and the tightness of matched boxes. Nothing here prints.

Names are data, never markup: each enters a cell through
:func:`vocmatch.render.terminal._name` (escaped, never read as markup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from vocmatch.render.measured import MeasuredTable
from vocmatch.render.terminal import name_cell

if TYPE_CHECKING:
    # Only for the annotations: each report imports the modules of its own parts, so the
    # evaluation report loads no analysis, bootstrap, diff or suspects module it does not show.
    from vocmatch.evidence.analysis import ErrorAnalysis
    from vocmatch.evidence.confusion import ConfusionMatrix
    from vocmatch.evidence.error_types import ErrorCounts
    from vocmatch.evidence.tightness import Distribution, Tightness

__all__ = [
    "CONFUSION_MAX_CELLS",
    "CONFUSION_MAX_CLASSES",
    "confusion_table",
    "error_image_table",
    "error_table",
    "render_analysis",
    "sparkline",
    "tightness_table",
]

#: The confusion matrix is drawn in full up to this many classes; beyond, its largest
#: off-diagonal cells are listed instead.
CONFUSION_MAX_CLASSES = 12

#: Off-diagonal cells listed when the matrix is too wide to draw.
CONFUSION_MAX_CELLS = 15

_BLOCKS = " ▁▂▃▄▅▆▇█"


def sparkline(counts: tuple[int, ...]) -> str:
    """One unicode block per bin, its height proportional to the count (any non-zero count
    shows at least the lowest block).

    >>> sparkline((0, 1, 2, 8))
    ' ▁▂█'
    """
    top = max(counts, default=0)
    if top == 0:
        return " " * len(counts)
    levels = [0 if c == 0 else max(1, -(-c * 8 // top)) for c in counts]
    return "".join(_BLOCKS[level] for level in levels)


def _error_cells(counts: ErrorCounts) -> list[RenderableType]:
    from vocmatch.evidence.error_types import ERROR_TYPES

    cells: list[RenderableType] = []
    for kind in ERROR_TYPES:
        value = counts.of(kind)
        cells.append(Text(str(value), style="red" if value else "dim"))
    cells.append(str(counts.total))
    return cells


def error_table(analysis: ErrorAnalysis, threshold: float) -> RenderableType:
    """Errors of each type per class and in total, and the mAP each type costs."""
    from vocmatch.evidence.error_types import ERROR_TYPES

    table = Table(
        title=f"Errors (TIDE types at IoU {threshold:g}, background IoU "
        f"{analysis.background_iou:g})",
        title_justify="left",
    )
    table.add_column("class", no_wrap=True)
    for kind in ERROR_TYPES:
        table.add_column(kind, justify="right", no_wrap=True)
    table.add_column("total", justify="right", no_wrap=True)
    for cls in analysis.classes:
        table.add_row(name_cell(cls.name), *_error_cells(cls.counts))
    table.add_section()
    table.add_row(Text("all", style="bold"), *_error_cells(analysis.summary))
    cost = analysis.cost
    if cost is not None:
        table.add_row(
            Text("mAP cost", style="bold"),
            *(f"{cost.of(kind):.4f}" for kind in ERROR_TYPES),
            "",
        )
    parts: list[RenderableType] = [table]
    if cost is not None:
        parts.append(
            Text(
                f"mAP cost: mAP with that type fixed minus the mAP measured ({cost.map:.4f})",
                style="dim",
            )
        )
    parts.append(
        Text(
            "cls wrong class · loc right class, IoU below the threshold · both wrong class and "
            "place · dupe second box on a found object · bkg overlaps nothing · miss no "
            "prediction near",
            style="dim",
        )
    )
    return Group(*parts)


def error_image_table(analysis: ErrorAnalysis, max_rows: int = 20) -> RenderableType:
    """Images with the most errors, each type counted; ``max_rows`` 0 shows every image."""
    from vocmatch.evidence.error_types import ERROR_TYPES

    rows = sorted(
        (i for i in analysis.images if i.counts.total), key=lambda i: (-i.counts.total, i.key)
    )
    shown = rows if max_rows == 0 else rows[:max_rows]
    table = MeasuredTable("Errors by image (most first)")
    table.add_column("image", overflow="fold")
    for kind in ERROR_TYPES:
        table.add_column(kind, justify="right", no_wrap=True)
    table.add_column("total", justify="right", no_wrap=True)
    for image in shown:
        table.add_row(name_cell(image.key), *_error_cells(image.counts))
    parts: list[RenderableType] = [table]
    if len(rows) > len(shown):
        parts.append(Text(f"{len(rows) - len(shown):,} more images with errors", style="dim"))
    elif not rows:
        parts.append(Text("no errors", style="dim"))
    return Group(*parts)


def confusion_table(matrix: ConfusionMatrix, threshold: float) -> RenderableType:
    """The confusion matrix (rows ground truth, columns predictions), or, when there are
    more than :data:`CONFUSION_MAX_CLASSES` classes, its largest off-diagonal cells."""
    from vocmatch.evidence.confusion import BACKGROUND

    k = len(matrix.names) - 1
    title = f"Confusion at IoU {threshold:g} (rows: ground truth, columns: predicted)"
    if k <= CONFUSION_MAX_CLASSES:
        table = Table(title=title, title_justify="left")
        table.add_column("GT \\ pred", no_wrap=True)
        for name in matrix.names:
            table.add_column(name_cell(name), justify="right", no_wrap=True)
        counts = matrix.counts  # a few classes: the full matrix is small
        for r, name in enumerate(matrix.names):
            cells: list[RenderableType] = []
            for c in range(k + 1):
                value = int(counts[r, c])
                style = "dim" if value == 0 else ("green" if r == c else "red")
                cells.append(Text(str(value), style=style))
            table.add_row(name_cell(name), *cells)
        return table
    # Class-to-class cells: the confusions proper; background is summed in a footnote. Only
    # the cells that are not zero are read: there are (K + 1)^2 cells in all.
    cells_list = [
        (value, matrix.names[r], matrix.names[c])
        for r, c, value in zip(
            matrix.rows.tolist(), matrix.columns.tolist(), matrix.values.tolist(), strict=True
        )
        if r != c and r < k and c < k
    ]
    cells_list.sort(key=lambda cell: (-cell[0], cell[1], cell[2]))
    table = Table(title=f"Largest confusions at IoU {threshold:g}", title_justify="left")
    table.add_column("ground truth", no_wrap=True)
    table.add_column("predicted", no_wrap=True)
    table.add_column("count", justify="right")
    for count, gt_name, pred_name in cells_list[:CONFUSION_MAX_CELLS]:
        table.add_row(name_cell(gt_name), name_cell(pred_name), str(count))
    parts: list[RenderableType] = [table]
    more = len(cells_list) - CONFUSION_MAX_CELLS
    if more > 0:
        parts.append(Text(f"{more:,} more confused pairs (the JSON has the matrix)", style="dim"))
    elif not cells_list:
        parts.append(Text("no class confused with another", style="dim"))
    nothing = int(matrix.row_totals()[k])
    missed = int(matrix.column_totals()[k])
    parts.append(
        Text(
            f"{k} classes, too many to draw the matrix; against {BACKGROUND}: {nothing:,} "
            f"predictions of nothing, {missed:,} objects missed",
            style="dim",
        )
    )
    return Group(*parts)


def _bins(d: Distribution) -> str:
    width = d.edges[1] - d.edges[0]
    return f"{d.edges[0]:g} to {d.edges[-1]:g} by {width:g}"


def tightness_table(result: Tightness) -> RenderableType:
    """IoU and signed edge offsets of the true positives, with a histogram each."""
    title = "Tightness of matched boxes"
    if result.pairs == 0 or result.iou is None or result.left is None:
        return Group(Text(title, style="italic"), Text("no true positives", style="dim"))
    pairs = f"{result.pairs:,} pair" + ("" if result.pairs == 1 else "s")
    table = Table(title=f"{title} ({pairs})", title_justify="left")
    table.add_column("", no_wrap=True)
    for name in ("mean", "median", "p5", "p95"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("histogram", no_wrap=True)
    rows: list[tuple[str, Distribution | None, int]] = [
        ("IoU", result.iou, 3),
        ("left", result.left, 1),
        ("top", result.top, 1),
        ("right", result.right, 1),
        ("bottom", result.bottom, 1),
    ]
    for name, d, digits in rows:
        if d is None:
            continue
        table.add_row(
            name,
            f"{d.mean:.{digits}f}",
            f"{d.median:.{digits}f}",
            f"{d.p05:.{digits}f}",
            f"{d.p95:.{digits}f}",
            Text(f"▕{sparkline(d.counts)}▏", style="cyan"),
        )
    note = (
        f"histogram bins: IoU {_bins(result.iou)}, offsets {_bins(result.left)} px, the end "
        "bins holding anything beyond; an offset is + where the prediction's edge lies "
        "outside the ground truth's"
    )
    return Group(table, Text(note, style="dim"))


def render_analysis(
    analysis: ErrorAnalysis,
    threshold: float,
    errors: bool = True,
    tightness: bool = False,
    max_rows: int = 20,
) -> RenderableType:
    """The error breakdown and confusion matrix, and the tightness when asked for."""
    parts: list[RenderableType] = []
    if errors:
        parts += [
            error_table(analysis, threshold),
            Text(),
            error_image_table(analysis, max_rows),
            Text(),
            confusion_table(analysis.confusion, threshold),
        ]
    if tightness:
        if parts:
            parts.append(Text())
        parts.append(tightness_table(analysis.tightness))
    return Group(*parts)

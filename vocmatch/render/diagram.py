"""Rich renderables for ``vocmatch iou``: the result tables, the sweep and the overlap diagram.

Nothing here prints: the caller owns the Console and says how wide the output may be.

The overlap diagram draws the smallest box enclosing A and B (``C`` in GIoU) as a frame, with
the y-axis pointing down as in image pixels. Every cell is A only, B only, both, or neither.
Each axis is cut at the boxes' edges and every piece gets at least one character, so the
picture keeps the order of the edges: touching boxes meet with no gap, disjoint boxes keep
a gap, and a box thinner than a character still shows. Pieces are otherwise sized in
proportion, with a row counted as two columns (terminal cells are about twice as tall as
they are wide); when a piece had to be widened, or a side stretched, a line says so.

A polygon is drawn by sampling: inside its bounding box, a character belongs to it when the
character's centre lies in the polygon (its edge included). That is an approximation, and a
line under the drawing says so; the numbers above it are exact.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from vocmatch.core.calculator import BoxComparison, LabelComparison
from vocmatch.core.geometry import points_inside
from vocmatch.core.model import Polygon
from vocmatch.escapes import printable

__all__ = [
    "box_metrics",
    "box_report",
    "boxes_table",
    "format_number",
    "label_report",
    "overlap_diagram",
    "sweep_table",
]

#: Most rows the diagram's grid may use.
MAX_ROWS = 16
#: Fewest columns and rows of the grid, so that a very tall or very flat pair stays readable.
MIN_COLS = 8
MIN_ROWS = 3

_A_ONLY = ("░", "blue")
_B_ONLY = ("▒", "red")
_BOTH = ("█", "magenta")
_NEITHER = (" ", "")
_FRAME = "dim"


def format_number(value: float) -> str:
    """A coordinate or an area for people: thousands separators, no trailing zeros.

    >>> format_number(15100.0), format_number(-2.5), format_number(1 / 3)
    ('15,100', '-2.5', '0.333333')
    """
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    text = f"{value:,.6f}".rstrip("0").rstrip(".")
    if text in ("0", "-0") or abs(value) >= 1e15:
        return f"{value:.6g}"
    return text


def _score(value: float, threshold: float) -> str:
    """A score to 4 decimals, with the exact value when rounding hides which side of the
    threshold it is on (0.49999999999999994 shows as 0.5000 but does not match 0.5)."""
    text = f"{value:.4f}"
    if (round(value, 4) >= threshold) != (value >= threshold):
        text += f" (exactly {value!r})"
    return text


def _verdict(matched: bool, name: str, threshold: float) -> Text:
    if matched:
        return Text(f"Match ({name} ≥ {threshold})", style="bold green")
    return Text(f"No match ({name} < {threshold})", style="bold red")


def _grid() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column()
    return table


def _points(polygon: Polygon) -> str:
    return " ".join(f"({format_number(x)}, {format_number(y)})" for x, y in polygon.points)


def boxes_table(comparison: BoxComparison) -> Table:
    """Corners, size and area of A, B and their intersection.

    A polygon's row holds its bounding box and its own area; its points follow the table.
    """
    sides = comparison.polygons
    # With the VOC devkit's +1 pixel, a box's width and height count both edge pixels.
    extra = 1.0 if comparison.pixel_inclusive else 0.0
    if sides is None:
        table = Table(title="Boxes (x1, y1, x2, y2; y grows downward)", title_justify="left")
    else:
        captions = [
            f"{name}: polygon {_points(polygon)}"
            for name, polygon in (("A", sides.a), ("B", sides.b))
            if polygon is not None
        ]
        table = Table(
            title="Regions (bounding boxes; y grows downward)",
            title_justify="left",
            caption="\n".join(captions),
            caption_justify="left",
        )
    table.add_column("")
    for name in ("x1", "y1", "x2", "y2", "width", "height", "area"):
        table.add_column(name, justify="right")
    rows: list[tuple[str, tuple[float, float, float, float] | None, float]] = [
        ("A", comparison.box_a, comparison.area_a),
        ("B", comparison.box_b, comparison.area_b),
        ("A ∩ B", comparison.intersection_box, comparison.intersection),
    ]
    for name, box, area in rows:
        if box is None:
            table.add_row(name, *(["—"] * 6), format_number(area))
            continue
        x1, y1, x2, y2 = box
        table.add_row(
            name,
            *(format_number(v) for v in (x1, y1, x2, y2, x2 - x1 + extra, y2 - y1 + extra, area)),
        )
    return table


def box_metrics(comparison: BoxComparison) -> RenderableType:
    """IoU, the verdict, GIoU, both Dice formulas and the areas, one per row."""
    c = comparison
    grid = _grid()
    grid.add_row(
        "IoU",
        f"{_score(c.iou, c.threshold)} ({c.iou * 100:.2f}%)",
        Text(
            f"I / U = {format_number(c.intersection)} / {format_number(c.union)}"
            + ("; +1 pixel areas (VOC devkit)" if c.pixel_inclusive else ""),
            "dim",
        ),
    )
    grid.add_row(
        "Verdict",
        _verdict(c.matched, "IoU", c.threshold),
        Text(f"inclusive: IoU ≥ {c.threshold} matches", "dim"),
    )
    grid.add_row(
        "GIoU",
        f"{c.giou:.4f}",
        Text(
            f"IoU - (C - U) / C, C = {format_number(c.enclosing)} encloses both",
            "dim",
        ),
    )
    grid.add_row(
        "Dice / F1",
        f"{c.dice:.4f}",
        Text(
            f"2·I / (A + B) = {format_number(2 * c.intersection)} / "
            f"{format_number(c.area_a + c.area_b)}",
            "dim",
        ),
    )
    if c.dice_agree:
        grid.add_row(
            "", f"{c.dice_from_iou:.4f}", Text("2·IoU / (1 + IoU); the two formulas agree", "dim")
        )
    else:
        grid.add_row("", f"{c.dice_from_iou:.4f}", Text("2·IoU / (1 + IoU)", "dim"))
        grid.add_row(
            "",
            Text(
                f"WARNING: the two Dice values disagree ({c.dice!r} vs {c.dice_from_iou!r}); "
                "they are the same number for any two boxes, so this is a bug in vocmatch",
                "bold red reverse",
            ),
            "",
        )
    grid.add_row("Intersection", format_number(c.intersection), "")
    grid.add_row(
        "Union",
        format_number(c.union),
        Text(
            f"A + B - I = {format_number(c.area_a)} + {format_number(c.area_b)} - "
            f"{format_number(c.intersection)}",
            "dim",
        ),
    )
    grid.add_row("Area A", format_number(c.area_a), "")
    grid.add_row("Area B", format_number(c.area_b), "")
    grid.add_row("Relation", c.relation, "")
    return grid


def sweep_table(comparison: BoxComparison) -> Table:
    """The verdict at each threshold of the sweep (inclusive)."""
    table = Table(title="IoU sweep (IoU ≥ threshold is a match)", title_justify="left")
    table.add_column("threshold", justify="right")
    table.add_column("convention")
    table.add_column("verdict")
    for verdict in comparison.sweep:
        table.add_row(
            f"{verdict.sweep.threshold:.2f}",
            verdict.sweep.convention,
            Text("✓ match", "green") if verdict.matched else Text("✗ no match", "red"),
        )
    return table


@dataclass(frozen=True, slots=True)
class _Axis:
    """One axis of the diagram: where each box starts and ends, in cells.

    Attributes:
        cells: Number of cells along the axis.
        a: Cells ``[start, stop)`` of box A.
        b: Cells ``[start, stop)`` of box B.
        widened: A piece thinner than half a cell was widened to one cell.
        centres: The coordinate at the middle of each cell.
    """

    cells: int
    a: tuple[int, int]
    b: tuple[int, int]
    widened: bool
    centres: tuple[float, ...]


def _allocate(lengths: list[float], cells: int) -> tuple[list[int], bool]:
    """Share ``cells`` among pieces in proportion to their lengths, at least one each."""
    total = sum(lengths)
    ideal = [(length / total * cells) if total > 0 else cells / len(lengths) for length in lengths]
    counts = [max(1, math.floor(x)) for x in ideal]
    while sum(counts) > cells:
        # Take from the piece that has the most cells beyond its share.
        index = max(
            (i for i in range(len(counts)) if counts[i] > 1), key=lambda i: counts[i] - ideal[i]
        )
        counts[index] -= 1
    while sum(counts) < cells:
        index = max(range(len(counts)), key=lambda i: ideal[i] - counts[i])
        counts[index] += 1
    widened = any(x < 0.5 for x in ideal)
    return counts, widened


def _axis(a: tuple[float, float], b: tuple[float, float], cells: int) -> _Axis:
    """Cut the axis at the edges of A and B and give every piece at least one cell.

    A box of zero extent gets a zero-length piece of its own, so it still shows as a line
    one cell thick; the other box's edges at the same value fall on the outside of it.
    """
    points = {a[0], a[1], b[0], b[1]}
    degenerate = {lo for lo, hi in (a, b) if lo == hi}
    # Each cut is (value, side): a zero-extent box at v spans from (v, 0) to (v, 1).
    cuts = sorted({(v, 0) for v in points} | {(v, 1) for v in degenerate})
    lengths = [right[0] - left[0] for left, right in itertools.pairwise(cuts)]
    if not lengths:
        return _Axis(1, (0, 1), (0, 1), False, (a[0],))
    cells = max(cells, len(lengths))
    counts, widened = _allocate(lengths, cells)
    centres = [
        left[0] + (k + 0.5) * (right[0] - left[0]) / count
        for (left, right), count in zip(itertools.pairwise(cuts), counts, strict=True)
        for k in range(count)
    ]
    index: dict[tuple[float, int], int] = {}
    position = 0
    for cut, count in zip(cuts, [*counts, 0], strict=True):
        index[cut] = position
        position += count

    def span(lo: float, hi: float) -> tuple[int, int]:
        if lo == hi:
            return index[(lo, 0)], index[(lo, 1)]
        start = index[(lo, 1)] if (lo, 1) in index else index[(lo, 0)]
        return start, index[(hi, 0)]

    return _Axis(cells, span(*a), span(*b), widened, tuple(centres))


def _coverage(polygon: Polygon | None, x: _Axis, y: _Axis) -> npt.NDArray[np.bool_] | None:
    """``(rows, cols)``: the cells whose centre lies in the polygon; None for a box."""
    if polygon is None:
        return None
    xs, ys = np.meshgrid(np.array(x.centres), np.array(y.centres))
    return points_inside(polygon, xs.ravel(), ys.ravel()).reshape(len(y.centres), len(x.centres))


def _cell(in_a: bool, in_b: bool, comparison: BoxComparison) -> tuple[str, str]:
    if in_a and in_b:
        if comparison.intersection > 0 or comparison.relation == "identical":
            return _BOTH
        # A zero-area box on top of the other: show the thin one, which is what is there.
        return _A_ONLY if comparison.area_a < comparison.area_b else _B_ONLY
    if in_a:
        return _A_ONLY
    if in_b:
        return _B_ONLY
    return _NEITHER


def _cells(ideal: float, span: float, least: int, most: int) -> tuple[int, bool]:
    """Cells for one side of the drawing, and whether the side had to be stretched."""
    if span == 0:
        return 1, True
    cells = min(max(round(ideal), least), most)
    return cells, cells > round(ideal)


def _per_cell(name: str, span: float, cells: int) -> str:
    """What one cell stands for; the whole side when that is below the smallest float."""
    share = span / cells
    if share == 0:
        return f"{cells} {name}s ≈ {span:.3g}"
    return f"1 {name} ≈ {share:.3g}"


def overlap_diagram(comparison: BoxComparison, width: int = 80) -> RenderableType:
    """A scaled drawing of A, B and their overlap inside the box enclosing both.

    Args:
        comparison: The two boxes.
        width: Columns available; the drawing fits in them (down to about 30 columns).

    Returns:
        The title, the drawing with its corner coordinates, the legend and the scale.
    """
    c = comparison
    ex1, ey1, ex2, ey2 = c.enclosing_box
    left_labels = (format_number(ey1), format_number(ey2))
    gutter = max(3, *(len(label) for label in left_labels)) + 1
    max_cols = max(MIN_COLS, width - gutter - 2 - len(" x →"))
    span_x, span_y = ex2 - ex1, ey2 - ey1
    # A row is about as tall as two columns are wide. The sides are taken over the longer one
    # first: cells per unit overflow for tiny extents (80 / 1e-320 is inf).
    if span_x > 0 and span_y > 0:
        longest = max(span_x, span_y)
        side_x, side_y = span_x / longest, span_y / longest
        scale = min(
            max_cols / side_x if side_x > 0 else math.inf,
            2 * MAX_ROWS / side_y if side_y > 0 else math.inf,
        )
        ideal_cols, ideal_rows = side_x * scale, side_y * scale / 2
    else:
        ideal_cols, ideal_rows = float(max_cols), float(MAX_ROWS)
    cols, stretched_x = _cells(ideal_cols, span_x, MIN_COLS, max_cols)
    rows, stretched_y = _cells(ideal_rows, span_y, MIN_ROWS, MAX_ROWS)
    axis_x = _axis((c.box_a[0], c.box_a[2]), (c.box_b[0], c.box_b[2]), cols)
    axis_y = _axis((c.box_a[1], c.box_a[3]), (c.box_b[1], c.box_b[3]), rows)
    sides = c.polygons
    cover_a = _coverage(sides.a if sides else None, axis_x, axis_y)
    cover_b = _coverage(sides.b if sides else None, axis_x, axis_y)

    lines: list[Text] = [Text("Overlap diagram", style="bold italic")]
    top_left, top_right = format_number(ex1), format_number(ex2)
    gap = max(1, axis_x.cells + 2 - len(top_left) - len(top_right))
    lines.append(Text(" " * gutter + top_left + " " * gap + top_right + " x →"))
    rule = "─" * axis_x.cells
    lines.append(Text(f"{left_labels[0]:>{gutter - 1}} ") + Text(f"┌{rule}┐", _FRAME))
    for row in range(axis_y.cells):
        line = Text(" " * gutter) + Text("│", _FRAME)
        in_a_row = axis_y.a[0] <= row < axis_y.a[1]
        in_b_row = axis_y.b[0] <= row < axis_y.b[1]
        for col in range(axis_x.cells):
            in_a = in_a_row and axis_x.a[0] <= col < axis_x.a[1]
            in_b = in_b_row and axis_x.b[0] <= col < axis_x.b[1]
            if cover_a is not None:
                in_a = in_a and bool(cover_a[row, col])
            if cover_b is not None:
                in_b = in_b and bool(cover_b[row, col])
            char, style = _cell(in_a, in_b, c)
            line.append(char, style)
        line.append("│", _FRAME)
        lines.append(line)
    lines.append(Text(f"{left_labels[1]:>{gutter - 1}} ") + Text(f"└{rule}┘", _FRAME))
    lines.append(Text(f"{'y ↓':>{gutter - 1}}"))
    legend = Text()
    for (char, style), name in ((_A_ONLY, "A only"), (_B_ONLY, "B only"), (_BOTH, "A ∩ B")):
        legend.append(char * 2, style)
        legend.append(f" {name}   ")
    legend.append("frame: the smallest box enclosing both (C)")
    lines.append(legend)
    scale_parts = []
    if span_x > 0:
        scale_parts.append(_per_cell("column", span_x, axis_x.cells))
    if span_y > 0:
        scale_parts.append(_per_cell("row", span_y, axis_y.cells))
    if scale_parts:
        lines.append(Text("scale: " + ", ".join(scale_parts), "dim"))
    distortions = []
    if axis_x.widened or axis_y.widened:
        distortions.append("parts thinner than a character are drawn one character wide")
    if span_x == 0 or span_y == 0:
        distortions.append("a side of length 0 is drawn one character thick")
    elif stretched_x or stretched_y:
        distortions.append("the short side is stretched to stay readable")
    if distortions:
        lines.append(Text("not to scale: " + "; ".join(distortions), "yellow"))
    if sides is not None:
        lines.append(
            Text(
                "polygons drawn approximately (by character centres); the numbers are exact",
                "yellow",
            )
        )
    for line in lines[1 : 4 + axis_y.cells]:
        # The drawing is cropped, never wrapped, on a terminal too narrow for it.
        line.no_wrap = True
        line.overflow = "crop"
    return Group(*lines)


def box_report(comparison: BoxComparison, width: int = 80) -> RenderableType:
    """Everything ``vocmatch iou`` shows for two boxes.

    Args:
        comparison: The two boxes and their numbers.
        width: Columns available to the diagram.

    Returns:
        The boxes, the numbers, the sweep and the overlap diagram.
    """
    return Group(
        boxes_table(comparison),
        Text(),
        box_metrics(comparison),
        Text(),
        sweep_table(comparison),
        Text(),
        overlap_diagram(comparison, width),
    )


def _label_set(labels: tuple[str, ...]) -> Text:
    # Labels come from the command line, perhaps from data: escaped, never markup.
    return Text(printable("{" + ", ".join(labels) + "}") if labels else "∅ (none)")


def label_report(comparison: LabelComparison) -> RenderableType:
    """Everything ``vocmatch iou --labels`` shows for two label sets."""
    c = comparison
    grid = _grid()
    grid.add_row("Set A", _label_set(c.a), Text(f"|A| = {len(c.a)}", "dim"))
    grid.add_row("Set B", _label_set(c.b), Text(f"|B| = {len(c.b)}", "dim"))
    grid.add_row("A ∩ B", _label_set(c.intersection), f"|A ∩ B| = {len(c.intersection)}")
    grid.add_row("A ∪ B", _label_set(c.union), f"|A ∪ B| = {len(c.union)}")
    grid.add_row(
        "Jaccard",
        f"{_score(c.jaccard, c.threshold)} ({c.jaccard * 100:.2f}%)",
        Text(f"|A ∩ B| / |A ∪ B| = {len(c.intersection)} / {len(c.union)}", "dim"),
    )
    grid.add_row(
        "Dice / F1",
        f"{c.dice:.4f}",
        Text(
            f"2·|A ∩ B| / (|A| + |B|) = {2 * len(c.intersection)} / {len(c.a) + len(c.b)}",
            "dim",
        ),
    )
    grid.add_row(
        "Verdict",
        _verdict(c.matched, "Jaccard", c.threshold),
        Text(f"inclusive: Jaccard ≥ {c.threshold} matches", "dim"),
    )
    return Group(Text("Label sets (lower-cased, de-duplicated)", style="italic"), grid)

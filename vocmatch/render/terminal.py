"""Turn an :class:`~vocmatch.evaluation.evaluate.Evaluation` into rich renderables.

Nothing here prints: the caller owns the Console. The per-image table lists the worst images
first (most FP + FN, then by name) and stops after ``max_rows`` rows, so that it reads the
same for 5 images and for 5,000; a footer says how many rows were left out.

Names are data, never markup: every file, class or folder name enters a renderable as
``Text(printable(name))`` (:func:`_name`), never as a plain string, which rich would read
as markup (``[link=...]``, ``[/]``) and emoji codes; :func:`vocmatch.escapes.printable`
writes control characters and bidi overrides as escapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from vocmatch.core.protocol import sweep_label
from vocmatch.errors import Message, Option
from vocmatch.escapes import printable
from vocmatch.evaluation.thresholds import ScoreThresholds, operating_point, point_threshold
from vocmatch.words import plural

if TYPE_CHECKING:
    # Only for the annotations: each report imports the modules of its own parts, so the
    # evaluation report loads no analysis, bootstrap, diff or suspects module it does not show.
    from vocmatch.evaluation.evaluate import ClassResult, Evaluation, ImageResult, SweepResult
    from vocmatch.evaluation.labels import LabelEvaluation, LabelImageResult
    from vocmatch.evaluation.seg import SegEvaluation, SegImageResult
    from vocmatch.evidence.analysis import (
        ConfusionMatrix,
        Distribution,
        ErrorAnalysis,
        ErrorCounts,
        Tightness,
    )
    from vocmatch.evidence.bootstrap import Bootstrap, DeltaInterval, Interval, PairedBootstrap
    from vocmatch.evidence.calibration import Calibration
    from vocmatch.evidence.diff import (
        Change,
        CountChange,
        EvaluationDiff,
        ImageDiff,
        ObjectRef,
        RegressionResult,
    )
    from vocmatch.evidence.slices import Slice
    from vocmatch.evidence.suspects import SuspectReport

__all__ = [
    "ReportOptions",
    "class_table",
    "header",
    "image_table",
    "printable",
    "render",
    "summary_table",
]


def _name(name: str, style: str = "") -> Text:
    """A name from the data as a cell: escaped, and never read as markup."""
    return Text(printable(name), style=style)


def _note(note: str) -> Text:
    return Text(f"note: {printable(note)}", style="yellow")


def _more_rows(what: str, words: Callable[[Option], str], failing: bool = False) -> str:
    """The hint under a cut table: how to show every row (and only the failing ones)."""
    hint: list[str | Option] = [Option("max_rows", 0), " shows all"]
    if failing:
        hint += [", ", Option("only_failing", True), " hides perfect ones"]
    return Message(f"{what} (", *hint, ")").worded(words)


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """What the terminal report shows.

    Attributes:
        max_rows: Rows of the per-image table; 0 shows every image.
        only_failing: Show only images with at least one FP or FN.
        score_thresholds: The confidence thresholds the counts use, if any (a header row).
        beta: The operating point of each class maximises F-beta (1: F1).
        words: How the hints under a table name an option: the library's keywords
            (``max_rows=0``) unless a caller names its own (the command line, its flags).
    """

    max_rows: int = 20
    only_failing: bool = False
    score_thresholds: ScoreThresholds | None = None
    beta: float = 1.0
    words: Callable[[Option], str] = str


#: Wider than any report line: the width a form is measured at.
_UNBOUNDED = 1_000_000


class Fitting:
    """The first of several forms of a table that fits the width it is printed at, or the
    last (the narrowest). Measured from the narrowest form's width to the first form's, so a
    report printed at its content's width (a file, a pipe) shows the first, full form, and
    an 80-column terminal the form that fits.

    Args:
        forms: The full form first, then narrower ones.
    """

    def __init__(self, *forms: RenderableType) -> None:
        self.forms = forms
        self._widths: dict[tuple[object, ...], int] = {}

    def _width(self, console: Console, options: ConsoleOptions, index: int) -> int:
        """The width of form ``index``, measured once: a report is measured for its width
        and then printed, and measuring a table walks every cell."""
        unbounded = options.update_width(_UNBOUNDED)
        # At an unbounded width a form's width depends on the console and the options'
        # flags, not on the width or the terminal size the report is printed at, nor on
        # no_wrap, which printing sets and no measure reads (text is measured by its lines
        # and words, a table by its cells).
        key = (
            console, index, unbounded.legacy_windows, unbounded.is_terminal,
            unbounded.encoding, unbounded.max_height, unbounded.justify, unbounded.overflow,
            unbounded.highlight, unbounded.markup, unbounded.height,
        )  # fmt: skip
        width = self._widths.get(key)
        if width is None:
            width = Measurement.get(console, unbounded, self.forms[index]).maximum
            self._widths[key] = width
        return width

    def full_width(self, console: Console, options: ConsoleOptions) -> int:
        """The first (full) form's width: the widest this prints."""
        return self._width(console, options, 0)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for index, form in enumerate(self.forms[:-1]):
            if self._width(console, options, index) <= options.max_width:
                yield form
                return
        yield self.forms[-1]

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widths = [self._width(console, options, index) for index in range(len(self.forms))]
        return Measurement(min(widths), widths[0])


def _number(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _sweep(result: SweepResult) -> Text:
    text = f"{result.tp}/{result.fp}/{result.fn}"
    style = "green" if result.fp == 0 and result.fn == 0 else "red"
    return Text(text, style=style)


def header(evaluation: Evaluation, thresholds: ScoreThresholds | None = None) -> Table:
    """The conventions in force, one per row (and the score thresholds, when given)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for name, value in evaluation.conventions.describe():
        table.add_row(name, value)
    if thresholds:
        table.add_row("counts", printable(f"{thresholds.describe()}; AP: every prediction"))
    return table


def f_name(beta: float) -> str:
    """``F1``, ``F2``, ``F0.5``: the name of F-beta."""
    return f"F{beta:g}"


def operating_table(
    evaluation: Evaluation, beta: float = 1.0, words: Callable[[Option], str] = str
) -> RenderableType | None:
    """Each class's operating point: the score threshold of its best F-beta on its
    precision/recall curve at the IoU threshold (every prediction), or None without scores.
    ``words`` names the options in the hint under it (:attr:`ReportOptions.words`)."""
    if not any(c.curve is not None for c in evaluation.classes):
        return None
    threshold = evaluation.conventions.iou_threshold
    name = f_name(beta)
    table = Table(
        title=f"Operating points (best {name}, IoU {threshold:g})",
        title_justify="left",
    )
    table.add_column("class", no_wrap=True)
    for column in ("score >=", "pred", "precision", "recall", name):
        table.add_column(column, justify="right", no_wrap=True)
    for cls in evaluation.classes:
        point = operating_point(cls.curve, cls.gt, beta)
        if point is None:
            table.add_row(Text(printable(cls.name)), "—", "", "", "", "")
            continue
        table.add_row(
            Text(printable(cls.name)),
            # Rounded down: the printed value typed back keeps exactly this row's predictions.
            point_threshold(cls.curve, point),
            str(point.predictions),
            _number(point.precision),
            _number(point.recall),
            _number(point.f),
        )
    note = Text(
        Message(
            "pin them: ",
            Option("operating_thresholds", placeholder="FILE"),
            ", then ",
            Option("score_thresholds", placeholder="FILE"),
            "; —: no true positive at any threshold, or no ground truth",
        ).worded(words),
        style="dim",
    )
    return Group(table, note)


def worst_first(images: tuple[ImageResult, ...]) -> list[ImageResult]:
    """Images ordered by FP + FN (most first), then FN, then key."""
    return sorted(images, key=lambda i: (-i.errors, -i.fn, i.key))


def _image_rows(evaluation: Evaluation, shown: list[ImageResult], left_out: Sequence[int]) -> Table:
    """The per-image table of ``shown``, without the sweep columns numbered ``left_out``."""
    threshold = evaluation.conventions.iou_threshold
    table = Table(
        title=f"Images (worst first, TP/FP/FN at IoU {threshold:g} and the sweep)",
        title_justify="left",
    )
    table.add_column("image", overflow="fold")
    for name in ("GT", "pred", "TP", "FP", "FN"):
        table.add_column(name, justify="right")
    table.add_column("mIoU", justify="right")
    for n, sweep_threshold in enumerate(evaluation.conventions.sweep_thresholds):
        if n not in left_out:
            table.add_column(f"@{sweep_label(sweep_threshold)}", justify="right")
    for image in shown:
        label = _name(image.key)
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
            *(_sweep(s) for n, s in enumerate(image.sweep) if n not in left_out),
        )
    return table


def image_table(evaluation: Evaluation, options: ReportOptions | None = None) -> RenderableType:
    """Per-image counts at the threshold, mean IoU of the matches and the sweep."""
    opts = options or ReportOptions()
    conv = evaluation.conventions
    rows = worst_first(evaluation.images)
    if opts.only_failing:
        rows = [r for r in rows if r.errors > 0]
    shown = rows if opts.max_rows == 0 else rows[: opts.max_rows]
    sweep = list(conv.sweep_thresholds)
    # The sweep's column at the match threshold repeats TP/FP/FN: the narrow form leaves it out.
    same = (
        [] if conv.strict_threshold else [n for n, t in enumerate(sweep) if t == conv.iou_threshold]
    )
    table: RenderableType = _image_rows(evaluation, shown, ())
    if same:
        table = Fitting(table, _image_rows(evaluation, shown, same))
    hidden = len(rows) - len(shown)
    parts = [table]
    if any(i.pred_path is None for i in shown):
        parts.append(Text("† no prediction file: every object counts as missed", style="dim"))
    if hidden:
        parts.append(
            Text(
                _more_rows(f"{hidden:,} more images not shown", opts.words, failing=True),
                style="dim",
            )
        )
    elif not rows:
        parts.append(Text("no images to show", style="dim"))
    return Group(*parts)


def class_table(evaluation: Evaluation) -> RenderableType:
    """Per-class counts, precision, recall, F1 and AP (under coco AP50 and AP75 too).

    In its full form when that fits the width; else with P and R for precision and recall
    and three places; under coco, else with AP50 and AP75 in a table of their own.
    """
    coco = evaluation.conventions.coco_stats
    forms: list[RenderableType] = [
        _class_form(evaluation, coco, compact=False),
        _class_form(evaluation, coco, compact=True),
    ]
    if coco:
        forms.append(
            Group(
                _class_form(evaluation, False, compact=True),
                _coco_class_aps(evaluation),
            )
        )
    return Fitting(*forms)


def _class_form(evaluation: Evaluation, coco: bool, compact: bool) -> Table:
    threshold = evaluation.conventions.iou_threshold
    table = Table(title=f"Classes (at IoU {threshold:g})", title_justify="left")
    table.add_column("class", no_wrap=True)
    rates = ("P", "R") if compact else ("precision", "recall")
    aps = ("AP", "AP50", "AP75") if coco else ("AP",)
    for name in ("GT", "pred", "TP", "FP", "FN", *rates, "F1", *aps):
        table.add_column(name, justify="right", no_wrap=True)
    for cls in evaluation.classes:
        table.add_row(*_class_cells(cls, coco, 3 if compact else 4))
    return table


def _coco_class_aps(evaluation: Evaluation) -> Table:
    """Each class's COCO AP at IoU 0.50 and 0.75, beside the class table when it is narrow."""
    table = Table(title="COCO AP50, AP75", title_justify="left")
    table.add_column("class", no_wrap=True)
    for name in ("AP50", "AP75"):
        table.add_column(name, justify="right", no_wrap=True)
    for cls in evaluation.classes:
        table.add_row(_name(cls.name), _number(cls.ap50, 3), _number(cls.ap75, 3))
    return table


def _class_cells(cls: ClassResult, coco: bool = False, digits: int = 4) -> list[RenderableType]:
    name = _name(cls.name)
    if not cls.in_map:
        name.append(" *", style="yellow")
    gt = str(cls.gt) if not cls.gt_ignored else f"{cls.gt} (+{cls.gt_ignored})"
    # As for GT: the predictions that count (TP + FP), then those ignored on difficult objects.
    counted = cls.pred - cls.pred_ignored
    pred = str(cls.pred) if not cls.pred_ignored else f"{counted} (+{cls.pred_ignored})"
    cells: list[RenderableType] = [
        name,
        gt,
        pred,
        str(cls.tp),
        str(cls.fp),
        str(cls.fn),
        _number(cls.precision, digits),
        _number(cls.recall, digits),
        _number(cls.f1, digits),
        _number(cls.ap, digits),
    ]
    if coco:
        cells += [_number(cls.ap50, digits), _number(cls.ap75, digits)]
    return cells


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
    if s.pred_ignored:
        table.add_row("on difficult", f"{s.pred_ignored:,} ignored")
    table.add_row("precision", _number(s.precision))
    table.add_row("recall", _number(s.recall))
    table.add_row("F1", _number(s.f1))
    map_name = "mAP@[.50:.95]" if evaluation.coco is not None else "mAP"
    table.add_row(map_name, _number(s.map))
    if evaluation.coco is not None:
        # pycocotools' AP50 beside the mean over IoU 0.50:0.95, as Ultralytics prints both.
        ap50 = evaluation.coco.AP50
        table.add_row("mAP@.50", _number(ap50 if ap50 >= 0 else None))
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
            Text(f"{plural(s.missing_pred, 'image')}, their objects count as FN"),
        )
    if s.orphan_pred:
        problems.add_row(
            "no GT file", Text(f"{plural(s.orphan_pred, 'prediction file')}, not evaluated")
        )
    if problems.row_count:
        parts.append(problems)
    for note in evaluation.notes:
        parts.append(_note(note))
    if any(c.gt_ignored or c.pred_ignored for c in evaluation.classes):
        parts.append(
            Text(
                "(+n): difficult objects, and predictions matched to them: ignored, neither TP, "
                "FP nor FN",
                style="dim",
            )
        )
    if any(not c.in_map for c in evaluation.classes):
        parts.append(Text("* class has no ground truth: reported, not averaged", style="dim"))
    return Group(*parts)


def render(evaluation: Evaluation, options: ReportOptions | None = None) -> RenderableType:
    """The whole terminal report: conventions, images, classes, operating points and the
    summary."""
    opts = options or ReportOptions()
    parts: list[RenderableType] = [
        header(evaluation, opts.score_thresholds),
        Text(),
        image_table(evaluation, opts),
        Text(),
        class_table(evaluation),
        Text(),
    ]
    points = operating_table(evaluation, opts.beta, opts.words)
    if points is not None:
        parts += [points, Text()]
    parts.append(summary_table(evaluation))
    return Group(*parts)


# Error analysis and regression diff ----------------------------------------------------

__all__ += [
    "DIFF_MAX_ROWS",
    "confusion_table",
    "diff_report",
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

#: Rows of the per-image tables of the diff report by default.
DIFF_MAX_ROWS = 20

#: Characters of the objects column of the diff report (the JSON lists every object).
DIFF_OBJECTS_WIDTH = 72

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
    from vocmatch.evidence.analysis import ERROR_TYPES

    cells: list[RenderableType] = []
    for kind in ERROR_TYPES:
        value = counts.of(kind)
        cells.append(Text(str(value), style="red" if value else "dim"))
    cells.append(str(counts.total))
    return cells


def error_table(analysis: ErrorAnalysis, threshold: float) -> RenderableType:
    """Errors of each type per class and in total, and the mAP each type costs."""
    from vocmatch.evidence.analysis import ERROR_TYPES

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
        table.add_row(_name(cls.name), *_error_cells(cls.counts))
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
    from vocmatch.evidence.analysis import ERROR_TYPES

    rows = sorted(
        (i for i in analysis.images if i.counts.total), key=lambda i: (-i.counts.total, i.key)
    )
    shown = rows if max_rows == 0 else rows[:max_rows]
    table = Table(title="Errors by image (most first)", title_justify="left")
    table.add_column("image", overflow="fold")
    for kind in ERROR_TYPES:
        table.add_column(kind, justify="right", no_wrap=True)
    table.add_column("total", justify="right", no_wrap=True)
    for image in shown:
        table.add_row(_name(image.key), *_error_cells(image.counts))
    parts: list[RenderableType] = [table]
    if len(rows) > len(shown):
        parts.append(Text(f"{len(rows) - len(shown):,} more images with errors", style="dim"))
    elif not rows:
        parts.append(Text("no errors", style="dim"))
    return Group(*parts)


def confusion_table(matrix: ConfusionMatrix, threshold: float) -> RenderableType:
    """The confusion matrix (rows ground truth, columns predictions), or, when there are
    more than :data:`CONFUSION_MAX_CLASSES` classes, its largest off-diagonal cells."""
    from vocmatch.evidence.analysis import BACKGROUND

    k = len(matrix.names) - 1
    title = f"Confusion at IoU {threshold:g} (rows: ground truth, columns: predicted)"
    if k <= CONFUSION_MAX_CLASSES:
        table = Table(title=title, title_justify="left")
        table.add_column("GT \\ pred", no_wrap=True)
        for name in matrix.names:
            table.add_column(_name(name), justify="right", no_wrap=True)
        counts = matrix.counts  # a few classes: the full matrix is small
        for r, name in enumerate(matrix.names):
            cells: list[RenderableType] = []
            for c in range(k + 1):
                value = int(counts[r, c])
                style = "dim" if value == 0 else ("green" if r == c else "red")
                cells.append(Text(str(value), style=style))
            table.add_row(_name(name), *cells)
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
        table.add_row(_name(gt_name), _name(pred_name), str(count))
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


def _signed(value: float | None, better_up: bool = True, digits: int = 4) -> Text:
    if value is None:
        return Text("—", style="dim")
    if value == 0:
        return Text(f"{0:.{digits}f}", style="dim")
    if round(value, digits) == 0:
        # A change below the last digit shown: signed, so it is not read as none, but dim.
        return Text(f"{value:+.{digits}f}", style="dim")
    good = value > 0 if better_up else value < 0
    return Text(f"{value:+.{digits}f}", style="green" if good else "red")


def _count_delta(value: int, better_up: bool, signed: bool = True) -> Text:
    if value == 0:
        return Text("0", style="dim")
    good = value > 0 if better_up else value < 0
    return Text(f"{value:+d}" if signed else str(value), style="green" if good else "red")


def _change_row(name: str, change: Change) -> list[RenderableType]:
    return [name, _number(change.a), _number(change.b), _signed(change.delta)]


def _count_row(name: str, change: CountChange, better_up: bool) -> list[RenderableType]:
    return [name, str(change.a), str(change.b), _count_delta(change.delta, better_up)]


def _image_objects(image: ImageDiff) -> Text:
    """``missed bowl#1 · new FP cup#1 · found mug#1 · FP gone person#1``."""
    text = Text()
    groups: list[tuple[str, tuple[ObjectRef, ...], str]] = [
        ("missed", image.new_fn, "red"),
        ("new FP", image.new_fp, "red"),
        ("found", image.fixed_fn, "green"),
        ("FP gone", image.removed_fp, "green"),
    ]
    for label, refs, style in groups:
        if not refs:
            continue
        if text:
            text.append(" · ", style="dim")
        text.append(f"{label} ", style=style)
        text.append(printable(", ".join(str(r) for r in refs)))
    text.truncate(DIFF_OBJECTS_WIDTH, overflow="ellipsis")
    return text


def _delta_cells(change: DeltaInterval | None) -> list[RenderableType]:
    """The interval of a change and its two-sided p-value, or dashes."""
    if change is None or change.low is None or change.high is None:
        return [Text("—", style="dim"), Text("—", style="dim")]
    p = "—" if change.p_value is None else f"{change.p_value:.4f}"
    return [Text(f"[{change.low:+.4f}, {change.high:+.4f}]", style="cyan"), Text(p)]


def diff_report(
    diff: EvaluationDiff,
    results: tuple[RegressionResult, ...] = (),
    max_rows: int = DIFF_MAX_ROWS,
    evidence: PairedBootstrap | None = None,
    words: Callable[[Option], str] = str,
) -> RenderableType:
    """Run B against run A: the summary, each class, the images that changed (worst
    regression first) and the regression gates; with ``evidence``, the interval and p-value
    of every change. ``words`` names the options in the hints (:attr:`ReportOptions.words`)."""
    conventions = Table.grid(padding=(0, 2))
    conventions.add_column(style="bold")
    conventions.add_column()
    conventions.add_row("A", _name(diff.a_name))
    conventions.add_row("B", _name(diff.b_name))
    for name, value in diff.conventions.describe():
        conventions.add_row(name, value)

    s = diff.summary
    summary = Table(title="Summary (B - A)", title_justify="left")
    summary.add_column("")
    for name in ("A", "B", "change"):
        summary.add_column(name, justify="right", no_wrap=True)
    extra: list[RenderableType] = []
    if evidence is not None:
        coverage = f"{evidence.confidence * 100:g} %"
        summary.add_column(f"{coverage} interval", justify="right", no_wrap=True)
        summary.add_column("p", justify="right", no_wrap=True)
        extra = ["", ""]
    map_name = "mAP@[.50:.95]" if diff.conventions.coco_stats else "mAP"
    for name, change, field in (
        (map_name, s.map, "map"),
        ("precision", s.precision, "precision"),
        ("recall", s.recall, "recall"),
        ("F1", s.f1, "f1"),
    ):
        cells = _delta_cells(getattr(evidence, field)) if evidence is not None else []
        summary.add_row(*_change_row(name, change), *cells)
    summary.add_row(*_count_row("TP", s.tp, True), *extra)
    summary.add_row(*_count_row("FP", s.fp, False), *extra)
    summary.add_row(*_count_row("FN", s.fn, False), *extra)

    classes = Table(title="Classes (B - A)", title_justify="left")
    classes.add_column("class", no_wrap=True)
    classes.add_column("GT", justify="right")
    for name in ("AP A", "AP B", "ΔAP", "Δprecision", "Δrecall", "ΔTP", "ΔFP", "ΔFN"):
        classes.add_column(name, justify="right", no_wrap=True)
    class_evidence = {}
    if evidence is not None:
        classes.add_column("ΔAP interval", justify="right", no_wrap=True)
        classes.add_column("p", justify="right", no_wrap=True)
        class_evidence = {c.name: c.ap for c in evidence.classes}
    for cls in diff.classes:
        cells = _delta_cells(class_evidence.get(cls.name)) if evidence is not None else []
        classes.add_row(
            _name(cls.name),
            str(cls.gt),
            _number(cls.ap.a),
            _number(cls.ap.b),
            _signed(cls.ap.delta),
            _signed(cls.precision.delta),
            _signed(cls.recall.delta),
            _count_delta(cls.tp.delta, True),
            _count_delta(cls.fp.delta, False),
            _count_delta(cls.fn.delta, False),
            *cells,
        )

    changed = [i for i in diff.images if i.changed]
    shown = changed if max_rows == 0 else changed[:max_rows]
    images = _changed_images_table(shown)
    parts: list[RenderableType] = [conventions, Text(), summary]
    if evidence is not None:
        parts.append(
            Text(
                f"paired bootstrap: {evidence.resamples:,} resamples of the {evidence.images:,} "
                f"images (seed {evidence.seed}), both runs on each; interval: percentiles of "
                "B - A; p: two-sided, of no change",
                style="dim",
            )
        )
    parts += [Text(), classes, Text(), images]
    if len(changed) > len(shown):
        parts.append(
            Text(
                _more_rows(f"{len(changed) - len(shown):,} more changed images", words),
                style="dim",
            )
        )
    unchanged = len(diff.images) - len(changed)
    parts.append(
        Text(
            f"{len(changed):,} images changed ({diff.worse:,} new errors, {diff.better:,} fixed), "
            f"{unchanged:,} unchanged; class#n is object n (from 0) of the ground-truth file "
            "for FN, of that run's file for FP",
            style="dim",
        )
    )
    for key in diff.only_a:
        parts.append(_note(f"{key} evaluated in A only"))
    for key in diff.only_b:
        parts.append(_note(f"{key} evaluated in B only"))
    if results:
        parts += [Text(), _regression_gates_table(results)]
    return Group(*parts)


def _changed_images_table(shown: list[ImageDiff]) -> Table:
    """The images that changed between two runs, one row each (worst first)."""
    images = Table(title="Images that changed (worst first)", title_justify="left")
    images.add_column("image", overflow="fold")
    for name in ("new FN", "fixed FN", "new FP", "removed FP", "net"):
        images.add_column(name, justify="right", no_wrap=True)
    images.add_column("objects")
    for image in shown:
        images.add_row(
            _name(image.key),
            _count_delta(len(image.new_fn), False, signed=False),
            _count_delta(len(image.fixed_fn), True, signed=False),
            _count_delta(len(image.new_fp), False, signed=False),
            _count_delta(len(image.removed_fp), True, signed=False),
            _count_delta(image.net, True),
            _image_objects(image),
        )
    return images


def _regression_gates_table(results: tuple[RegressionResult, ...]) -> Table:
    """Each regression gate with its result and verdict."""
    gates = Table(title="Regression gates", title_justify="left")
    gates.add_column("gate")
    gates.add_column("result")
    gates.add_column("", no_wrap=True)
    for result in results:
        verdict = Text("pass", style="green") if result.passed else Text("FAIL", style="red")
        gates.add_row(_name(str(result.gate)), _name(str(result)), verdict)
    return gates


# Label sets and segmentation masks ------------------------------------------------------

__all__ += [
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
    return _name(", ".join(names), style=style) if names else Text("—", style="dim")


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
    return _name(" ".join(words), style="red") if words else Text("—", style="dim")


def label_image_table(
    evaluation: LabelEvaluation, options: ReportOptions | None = None
) -> RenderableType:
    """Per-image label sets, what was missed and what was extra, lowest Jaccard first."""
    opts = options or ReportOptions()
    table = Table(title="Images (lowest Jaccard first)", title_justify="left")
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
        label = _name(image.key)
        if image.pred_path is None:
            label.append(" †", style="yellow")
        gt = _names(image.gt)
        if image.ignored:
            gt = _name(", ".join(image.gt) + ", " if image.gt else "")
            gt.append(printable(f"({', '.join(image.ignored)})"), style="dim")
        table.add_row(
            label,
            gt,
            _names(image.pred),
            _difference(image),
            _number(image.jaccard, 3),
            _number(image.dice, 3),
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
    if hidden:
        parts.append(
            Text(
                _more_rows(f"{hidden:,} more images not shown", opts.words, failing=True),
                style="dim",
            )
        )
    elif not rows:
        parts.append(Text("no images to show", style="dim"))
    return Group(*parts)


def label_class_table(evaluation: LabelEvaluation) -> Table:
    """Per-class image counts and IoU ``TP / (TP + FP + FN)``."""
    table = Table(title="Classes (counted in images)", title_justify="left")
    table.add_column("class", no_wrap=True)
    for column in ("GT", "pred", "TP", "FP", "FN", "IoU"):
        table.add_column(column, justify="right", no_wrap=True)
    for cls in evaluation.classes:
        name = _name(cls.name)
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
            _number(cls.iou),
        )
    return table


def label_summary(evaluation: LabelEvaluation) -> RenderableType:
    """Macro and micro IoU, the per-image means, and what was left out."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("images", f"{len(evaluation.images):,}")
    table.add_row("TP / FP / FN", f"{evaluation.tp:,} / {evaluation.fp:,} / {evaluation.fn:,}")
    table.add_row("macro IoU", _number(evaluation.macro_iou))
    table.add_row("micro IoU", _number(evaluation.micro_iou))
    table.add_row("mean Jaccard", _number(evaluation.mean_jaccard))
    table.add_row("mean Dice", _number(evaluation.mean_dice))
    table.add_row("exact match", _number(evaluation.exact_match))
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
        parts.append(_note(note))
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
    from vocmatch.evaluation.seg import VOC_CLASSES, VOID

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
    table = Table(title="Images (lowest mIoU first)", title_justify="left")
    table.add_column("image", overflow="fold")
    table.add_column("pixel acc", justify="right", no_wrap=True)
    table.add_column("mIoU", justify="right", no_wrap=True)
    table.add_column("GT classes", overflow="ellipsis")
    table.add_column("predicted classes", overflow="ellipsis")
    rows = sorted(evaluation.images, key=_seg_order)
    shown = rows if max_rows == 0 else rows[:max_rows]
    for image in shown:
        table.add_row(
            _name(image.key),
            _number(image.pixel_accuracy, 3),
            _number(image.miou, 3),
            _names(image.gt_classes),
            _names(image.pred_classes),
        )
    parts: list[RenderableType] = [table]
    hidden = len(rows) - len(shown)
    if hidden:
        parts.append(Text(_more_rows(f"{hidden:,} more images not shown", words), style="dim"))
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
            _name(cls.name),
            _number(cls.iou),
            _number(cls.accuracy),
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
    table.add_row("mIoU", _number(evaluation.miou))
    table.add_row("pixel accuracy", _number(evaluation.pixel_accuracy))
    table.add_row("mean accuracy", _number(evaluation.mean_accuracy))
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


# Bootstrap intervals, slices and calibration ---------------------------------------------

__all__ += ["bootstrap_table", "calibration_table", "slice_table", "suspects_report"]


def _interval(interval: Interval) -> Text:
    """``0.6250 [0.4167, 0.9334]``; a dash where the metric is undefined."""
    if interval.value is None and interval.low is None:
        return Text("—", style="dim")
    text = Text(_number(interval.value))
    if interval.low is not None and interval.high is not None:
        text.append(f" [{interval.low:.4f}, {interval.high:.4f}]", style="cyan")
    return text


def bootstrap_table(result: Bootstrap) -> RenderableType:
    """Each metric with its bootstrap interval: the dataset (``all``), then every class."""
    coverage = f"{result.confidence * 100:g} %"
    table = Table(
        title=f"Bootstrap: {coverage} intervals over {result.resamples:,} resamples of the "
        f"{result.images:,} images (seed {result.seed})",
        title_justify="left",
    )
    table.add_column("class", overflow="fold")
    for name in ("AP", "precision", "recall", "F1"):
        table.add_column(Text(f"{name} [interval]"), justify="right", no_wrap=True)
    table.add_row(
        Text("all (mAP, micro)", style="bold"),
        *(_interval(i) for i in (result.map, result.precision, result.recall, result.f1)),
    )
    table.add_section()
    for cls in result.classes:
        table.add_row(
            Text(printable(cls.name)),
            *(_interval(i) for i in (cls.ap, cls.precision, cls.recall, cls.f1)),
        )
    parts: list[RenderableType] = [table]
    partial = [
        f"{printable(c.name)} {c.ap.defined:,}"
        for c in result.classes
        if c.ap.value is not None and 0 < c.ap.defined < result.resamples
    ]
    if partial:
        parts.append(
            Text(
                "AP defined in fewer resamples (the others drew no object of the class): "
                + ", ".join(partial),
                style="dim",
            )
        )
    parts.append(
        Text(
            "interval: the 2.5th and 97.5th percentiles of the metric over resamples that "
            "draw the images with replacement",
            style="dim",
        )
    )
    return Group(*parts)


def slice_table(found: Slice, threshold: float) -> RenderableType:
    """One slice: each value's counts at the threshold, precision, recall, F1 and mAP."""
    table = Table(title=f"Slice: {found.name} (at IoU {threshold:g})", title_justify="left")
    table.add_column(found.name, no_wrap=True)
    for name in ("GT", "pred", "TP", "FP", "FN", "precision", "recall", "F1", "mAP"):
        table.add_column(name, justify="right", no_wrap=True)
    for value in found.values:
        gt = str(value.gt) if not value.gt_ignored else f"{value.gt} (+{value.gt_ignored})"
        table.add_row(
            _name(value.value),
            gt,
            str(value.pred),
            str(value.tp),
            Text(str(value.fp), style="red" if value.fp else ""),
            Text(str(value.fn), style="red" if value.fn else ""),
            _number(value.precision),
            _number(value.recall),
            _number(value.f1),
            _number(value.map),
        )
    return Group(table, Text(found.rule, style="dim"))


def _box_text(box: tuple[float, float, float, float]) -> str:
    return ", ".join(f"{v:g}" for v in box)


def suspects_report(
    report: SuspectReport, max_rows: int = 20, words: Callable[[Option], str] = str
) -> RenderableType:
    """The suspects, most confident first (``max_rows`` 0 shows all), and the counts
    (``words``: :attr:`ReportOptions.words`)."""
    from vocmatch.evidence.suspects import KINDS

    o = report.options
    header = Table.grid(padding=(0, 2))
    header.add_column(style="bold")
    header.add_column()
    header.add_row("confident", f"score >= {o.confidence:g} (or no score)")
    header.add_row("missing", f"overlaps no object: IoU <= {o.background_iou:g} with every one")
    header.add_row(
        "wrong class", f"on an object of another class at IoU >= {o.match_iou:g}, none of its own"
    )
    header.add_row(
        "loose", f"best IoU with its class above {o.background_iou:g} and below {o.match_iou:g}"
    )
    header.add_row("duplicate", f"two objects of one class at IoU >= {o.duplicate_iou:g}")
    table = Table(title="Label-error suspects (most confident first)", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("kind", no_wrap=True)
    table.add_column("image", no_wrap=True)
    table.add_column("class", no_wrap=True)
    table.add_column("confidence", justify="right", no_wrap=True)
    table.add_column("IoU", justify="right", no_wrap=True)
    table.add_column("object", no_wrap=True)
    table.add_column("suggested box", no_wrap=True)
    suspects = report.suspects
    shown = suspects if max_rows == 0 else suspects[:max_rows]
    for rank, s in enumerate(shown, 1):
        if s.kind == "wrong-class":
            where = _name(f"gt#{s.gt_index} {s.gt_name} by pred#{s.pred_index}")
        elif s.kind == "loose":
            where = _name(f"gt#{s.gt_index} by pred#{s.pred_index}")
        elif s.kind == "duplicate":
            where = _name(f"gt#{s.gt_index} on gt#{s.other_index}")
        else:
            where = _name(f"pred#{s.pred_index}")
        table.add_row(
            str(rank),
            s.kind,
            _name(s.image),
            _name(s.name),
            _number(s.confidence, 3),
            f"{s.iou:.3f}",
            where,
            _box_text(s.box),
        )
    counts = ", ".join(f"{report.count(kind):,} {kind}" for kind in KINDS)
    foreign = ""
    if report.foreign:
        foreign = (
            f" ({plural(report.foreign, 'other')} would rename an object to a class the "
            "ground truth never uses: not suggested)"
        )
    parts: list[RenderableType] = [header, Text(), table]
    if len(suspects) > len(shown):
        parts.append(
            Text(
                _more_rows(f"{len(suspects) - len(shown):,} more", words),
                style="dim",
            )
        )
    parts.append(
        Text(
            f"{plural(len(suspects), 'suspect')} ({counts}) in {plural(report.images, 'image')}, "
            f"from {plural(report.confident, 'confident prediction')}{foreign}; gt#n and "
            "pred#n: object n (from 0) of the file",
            style="dim",
        )
    )
    return Group(*parts)


def calibration_table(result: Calibration) -> RenderableType:
    """Each class's expected and maximum calibration error, and the pooled reliability bins."""
    table = Table(
        title=f"Calibration (TP at IoU {result.threshold:g}, {result.bins} score bins)",
        title_justify="left",
    )
    table.add_column("class", no_wrap=True)
    for name in ("predictions", "ECE", "MCE"):
        table.add_column(name, justify="right", no_wrap=True)
    for entry in (result.overall, *result.classes):
        label = Text("all", style="bold") if entry is result.overall else _name(entry.name)
        table.add_row(label, f"{entry.predictions:,}", _number(entry.ece), _number(entry.mce))
        if entry is result.overall:
            table.add_section()
    bins = Table(title="Reliability (all classes)", title_justify="left")
    bins.add_column("score", no_wrap=True)
    for name in ("predictions", "mean score", "TP share", "gap"):
        bins.add_column(name, justify="right", no_wrap=True)
    for b in result.overall.bins:
        gap = None
        if b.accuracy is not None and b.confidence is not None:
            gap = b.accuracy - b.confidence
        bins.add_row(
            f"{b.low:.2f}-{b.high:.2f}",
            f"{b.count:,}",
            _number(b.confidence, 3),
            _number(b.accuracy, 3),
            _signed(gap, digits=3) if gap is not None else Text("—", style="dim"),
        )
    parts: list[RenderableType] = [table, Text(), bins]
    remarks = [
        "ECE: the mean gap between a bin's TP share and its mean score, weighted by its "
        "predictions; MCE: the largest gap"
    ]
    if result.clipped:
        remarks.append(f"{result.clipped:,} scores outside [0, 1] put in the end bins")
    if result.unscored:
        remarks.append(f"{result.unscored:,} predictions without a score left out")
    parts.append(Text("; ".join(remarks), style="dim"))
    return Group(*parts)

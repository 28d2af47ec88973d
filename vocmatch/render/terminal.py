"""Turn an :class:`~vocmatch.evaluation.scoring.Evaluation` into rich renderables.

Nothing here prints: the caller owns the Console. The per-image table lists the worst images
first (most FP + FN, then by name) and stops after ``max_rows`` rows, so that it reads the
same for 5 images and for 5,000; a footer says how many rows were left out.

Names are data, never markup: every file, class or folder name enters a renderable as
``Text(printable(name))`` (:func:`name_cell`), never as a plain string, which rich would read
as markup (``[link=...]``, ``[/]``) and emoji codes; :func:`vocmatch.escapes.printable`
writes control characters and bidi overrides as escapes.
"""

from __future__ import annotations

import heapq
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
from vocmatch.render.measured import MeasuredTable
from vocmatch.words import plural

if TYPE_CHECKING:
    # Only for the annotations: each report imports the modules of its own parts, so the
    # evaluation report loads no analysis, bootstrap, diff or suspects module it does not show.
    from vocmatch.evaluation.preparation import Removed
    from vocmatch.evaluation.scoring import ClassResult, Evaluation, ImageResult, SweepResult

__all__ = [
    "ReportOptions",
    "class_table",
    "header",
    "image_table",
    "images_left_out",
    "more_rows",
    "name_cell",
    "note_text",
    "number_text",
    "printable",
    "render",
    "signed_cell",
    "summary_table",
]


def name_cell(name: str, style: str = "") -> Text:
    """A name from the data as a cell: escaped, and never read as markup."""
    return Text(printable(name), style=style)


def note_text(note: str) -> Text:
    """A note of the run as a line of the report: yellow, folded at the terminal's width."""
    # A note may name a long path: folded at the terminal's width rather than widen the report.
    return Text(f"note: {printable(note)}", style="yellow", overflow="fold")


def more_rows(what: str, words: Callable[[Option], str], failing: bool = False) -> str:
    """The hint under a cut table: how to show every row (and only the failing ones)."""
    hint: list[str | Option] = [Option("max_rows", 0), " shows all"]
    if failing:
        hint += [", ", Option("only_failing", True), " hides perfect ones"]
    return Message(f"{what} (", *hint, ")").worded(words)


def images_left_out(hidden: int, any_rows: bool, words: Callable[[Option], str]) -> list[Text]:
    """The line under a per-image table: how many images it leaves out and how to show them,
    or that there is no image to show."""
    if hidden:
        line = more_rows(f"{hidden:,} more images not shown", words, failing=True)
        return [Text(line, style="dim")]
    return [] if any_rows else [Text("no images to show", style="dim")]


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


def number_text(value: float | None, digits: int = 4) -> str:
    """A number as a table cell: ``digits`` decimals, an em dash for none."""
    return "—" if value is None else f"{value:.{digits}f}"


def signed_cell(value: float | None, better_up: bool = True, digits: int = 4) -> Text:
    """A change as a cell: signed, green when better (up when ``better_up``), red when
    worse, dim when none or below the last digit shown."""
    if value is None:
        return Text("—", style="dim")
    if value == 0:
        return Text(f"{0:.{digits}f}", style="dim")
    if round(value, digits) == 0:
        # A change below the last digit shown: signed, so it is not read as none, but dim.
        return Text(f"{value:+.{digits}f}", style="dim")
    good = value > 0 if better_up else value < 0
    return Text(f"{value:+.{digits}f}", style="green" if good else "red")


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
    forms = (_operating_form(evaluation, beta, compact) for compact in (False, True))
    return Group(Fitting(*forms), note)


def _operating_form(evaluation: Evaluation, beta: float, compact: bool) -> Table:
    """The operating points, with P and R and three places when ``compact``."""
    threshold = evaluation.conventions.iou_threshold
    name = f_name(beta)
    digits = 3 if compact else 4
    table = MeasuredTable(f"Operating points (best {name}, IoU {threshold:g})")
    table.add_column("class", no_wrap=True)
    rates = ("P", "R") if compact else ("precision", "recall")
    for column in ("score >=", "pred", *rates, name):
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
            number_text(point.precision, digits),
            number_text(point.recall, digits),
            number_text(point.f, digits),
        )
    return table


def _worst_key(image: ImageResult) -> tuple[int, int, str]:
    return (-image.errors, -image.fn, image.key)


def worst_first(images: Sequence[ImageResult]) -> list[ImageResult]:
    """Images ordered by FP + FN (most first), then FN, then key."""
    return sorted(images, key=_worst_key)


def worst_images(images: Sequence[ImageResult], count: int) -> list[ImageResult]:
    """The first ``count`` images of :func:`worst_first` (every image for 0), found without
    ordering the others: a table of 20 rows over 80,000 images sorts none of them."""
    if 0 < count < len(images):
        return heapq.nsmallest(count, images, key=_worst_key)
    ordered = worst_first(images)
    return ordered if count == 0 else ordered[:count]


def _image_cells(image: ImageResult) -> list[RenderableType]:
    """One image's row: its name, counts and mean IoU, then a cell for each sweep threshold."""
    label = name_cell(image.key)
    if image.pred_path is None:
        label.append(" †", style="yellow")
    return [
        label,
        str(image.gt),
        str(image.pred),
        str(image.tp),
        Text(str(image.fp), style="red" if image.fp else ""),
        Text(str(image.fn), style="red" if image.fn else ""),
        number_text(image.mean_iou, 3),
        *(_sweep(s) for s in image.sweep),
    ]


#: The cells of an image's row before its sweep (:func:`_image_cells`).
_BEFORE_SWEEP = 7


def _image_rows(
    evaluation: Evaluation, rows: list[list[RenderableType]], left_out: Sequence[int]
) -> Table:
    """The per-image table of ``rows`` (:func:`_image_cells`), without the sweep columns
    numbered ``left_out``."""
    threshold = evaluation.conventions.iou_threshold
    thresholds = evaluation.conventions.sweep_thresholds
    shown = "" if all(n in left_out for n in range(len(thresholds))) else " and the sweep"
    table = MeasuredTable(f"Images (worst first, TP/FP/FN at IoU {threshold:g}{shown})")
    table.add_column("image", overflow="fold")
    for name in ("GT", "pred", "TP", "FP", "FN"):
        table.add_column(name, justify="right")
    table.add_column("mIoU", justify="right")
    for n, sweep_threshold in enumerate(thresholds):
        if n not in left_out:
            table.add_column(f"@{sweep_label(sweep_threshold)}", justify="right")
    for row in rows:
        sweep = (cell for n, cell in enumerate(row[_BEFORE_SWEEP:]) if n not in left_out)
        table.add_row(*row[:_BEFORE_SWEEP], *sweep)
    return table


def image_table(evaluation: Evaluation, options: ReportOptions | None = None) -> RenderableType:
    """Per-image counts at the threshold, mean IoU of the matches and the sweep."""
    opts = options or ReportOptions()
    conv = evaluation.conventions
    rows: Sequence[ImageResult] = evaluation.images
    if opts.only_failing:
        rows = [r for r in rows if r.errors > 0]
    shown = worst_images(rows, opts.max_rows)
    sweep = list(conv.sweep_thresholds)
    # The sweep's column at the match threshold repeats TP/FP/FN: the narrow form leaves it out.
    same = (
        [] if conv.strict_threshold else [n for n, t in enumerate(sweep) if t == conv.iou_threshold]
    )
    # The forms share each row's cells: they are made once. The narrowest leaves out every
    # sweep column (TP/FP/FN at the match threshold stay).
    cells = [_image_cells(image) for image in shown]
    forms = [_image_rows(evaluation, cells, ())]
    if same:
        forms.append(_image_rows(evaluation, cells, same))
    if sweep:
        forms.append(_image_rows(evaluation, cells, range(len(sweep))))
    table: RenderableType = Fitting(*forms) if len(forms) > 1 else forms[0]
    hidden = len(rows) - len(shown)
    parts = [table]
    if any(i.pred_path is None for i in shown):
        parts.append(Text("† no prediction file: every object counts as missed", style="dim"))
    parts += images_left_out(hidden, bool(rows), opts.words)
    return Group(*parts)


def class_table(evaluation: Evaluation) -> RenderableType:
    """Per-class counts, precision, recall, F1 and AP (under coco AP50 and AP75 too).

    In its full form when that fits the width; else with P and R for precision and recall
    and three places; under coco, else with AP50 and AP75 in a table of their own; else
    (an 80-column terminal and long class names or large counts) the counts in one table
    and the rates in another.
    """
    coco = evaluation.conventions.summary == "coco"
    forms: list[RenderableType] = [
        _class_form(evaluation, coco, compact=False),
        _class_form(evaluation, coco, compact=True),
    ]
    split: list[RenderableType] = [_class_counts(evaluation), _class_rates(evaluation)]
    if coco:
        forms.append(
            Group(
                _class_form(evaluation, False, compact=True),
                _coco_class_aps(evaluation),
            )
        )
        split.append(_coco_class_aps(evaluation))
    forms.append(Group(*split))
    return Fitting(*forms)


def _class_counts(evaluation: Evaluation) -> Table:
    """The class table's counts alone, for the narrowest form."""
    threshold = evaluation.conventions.iou_threshold
    table = MeasuredTable(f"Classes (at IoU {threshold:g})")
    table.add_column("class", no_wrap=True)
    for name in ("GT", "pred", "TP", "FP", "FN"):
        table.add_column(name, justify="right", no_wrap=True)
    for cls in evaluation.classes:
        table.add_row(*_class_cells(cls, digits=3)[:6])
    return table


def _class_rates(evaluation: Evaluation) -> Table:
    """The class table's precision, recall, F1 and AP alone, for the narrowest form."""
    table = MeasuredTable("Classes: precision, recall, F1, AP")
    table.add_column("class", no_wrap=True)
    for name in ("P", "R", "F1", "AP"):
        table.add_column(name, justify="right", no_wrap=True)
    for cls in evaluation.classes:
        cells = _class_cells(cls, digits=3)
        table.add_row(cells[0], *cells[6:10])
    return table


def _class_form(evaluation: Evaluation, coco: bool, compact: bool) -> Table:
    threshold = evaluation.conventions.iou_threshold
    table = MeasuredTable(f"Classes (at IoU {threshold:g})")
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
    table = MeasuredTable("COCO AP50, AP75")
    table.add_column("class", no_wrap=True)
    for name in ("AP50", "AP75"):
        table.add_column(name, justify="right", no_wrap=True)
    for cls in evaluation.classes:
        table.add_row(name_cell(cls.name), number_text(cls.ap50, 3), number_text(cls.ap75, 3))
    return table


def _class_cells(cls: ClassResult, coco: bool = False, digits: int = 4) -> list[RenderableType]:
    name = name_cell(cls.name)
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
        number_text(cls.precision, digits),
        number_text(cls.recall, digits),
        number_text(cls.f1, digits),
        number_text(cls.ap, digits),
    ]
    if coco:
        cells += [number_text(cls.ap50, digits), number_text(cls.ap75, digits)]
    return cells


def summary_table(evaluation: Evaluation) -> RenderableType:
    """Dataset totals, the COCO numbers when computed, and what was left out."""
    s = evaluation.summary
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("images", f"{s.images:,}")
    # As in the class table: the objects that count, then the difficult ones ignored.
    ignored = sum(c.gt_ignored for c in evaluation.classes)
    table.add_row("GT objects", f"{s.gt:,}" + (f" (+{ignored:,})" if ignored else ""))
    table.add_row("predictions", f"{s.pred:,}")
    table.add_row("TP / FP / FN", f"{s.tp:,} / {s.fp:,} / {s.fn:,}")
    if s.pred_ignored:
        table.add_row("on difficult", f"{s.pred_ignored:,} ignored")
    table.add_row("precision", number_text(s.precision))
    table.add_row("recall", number_text(s.recall))
    table.add_row("F1", number_text(s.f1))
    averaged = evaluation.coco is not None or evaluation.ultralytics is not None
    map_name = "mAP@[.50:.95]" if averaged else "mAP"
    table.add_row(map_name, number_text(s.map))
    if evaluation.coco is not None:
        # pycocotools' AP50 beside the mean over IoU 0.50:0.95, as Ultralytics prints both.
        ap50 = evaluation.coco.AP50
        table.add_row("mAP@.50", number_text(ap50 if ap50 >= 0 else None))
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
    if evaluation.ultralytics is not None:
        found = Table(title="ultralytics (detection val metrics)", title_justify="left")
        numbers = evaluation.ultralytics.as_dict()
        for name in numbers:
            found.add_column(name, justify="right")
        found.add_row(*(f"{v:.4f}" for v in numbers.values()))
        parts.append(found)
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
        parts.append(note_text(note))
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
    if evaluation.removed is not None:
        parts += [preparation_table(evaluation.removed), Text()]
    parts.append(summary_table(evaluation))
    return Group(*parts)


def preparation_table(removed: Removed) -> RenderableType:
    """What the preparation removed before matching, per class and in all."""
    from vocmatch.render.preparation_report import (
        STEP_TITLES,
        preparation_rows,
        preparation_title,
    )

    table = Table()
    table.add_column("class")
    for title in (*STEP_TITLES, "removed"):
        table.add_column(title, justify="right")
    for row in preparation_rows(removed):
        table.add_row(*row)
    return Group(Text(preparation_title(removed), style="bold italic"), table)

"""Bootstrap intervals, slices, suspects and calibration as rich renderables. Nothing
here prints.

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
from vocmatch.render.terminal import more_rows, name_cell, number_text, signed_cell
from vocmatch.words import plural

if TYPE_CHECKING:
    # Only for the annotations: each report imports the modules of its own parts, so the
    # evaluation report loads no analysis, bootstrap, diff or suspects module it does not show.
    from vocmatch.evidence.bootstrap import Bootstrap, Interval
    from vocmatch.evidence.calibration import Calibration
    from vocmatch.evidence.counting import CountErrors, Counting
    from vocmatch.evidence.slices import Slice
    from vocmatch.evidence.suspects import SuspectReport
    from vocmatch.evidence.target_thresholds import TargetThresholds

__all__ = [
    "bootstrap_table",
    "calibration_table",
    "counting_table",
    "slice_table",
    "suspects_report",
    "targets_table",
]


def _interval(interval: Interval) -> Text:
    """``0.6250 [0.4167, 0.9334]``; a dash where the metric is undefined."""
    if interval.value is None and interval.low is None:
        return Text("—", style="dim")
    text = Text(number_text(interval.value))
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
            name_cell(value.value),
            gt,
            str(value.pred),
            str(value.tp),
            Text(str(value.fp), style="red" if value.fp else ""),
            Text(str(value.fn), style="red" if value.fn else ""),
            number_text(value.precision),
            number_text(value.recall),
            number_text(value.f1),
            number_text(value.map),
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
            where = name_cell(f"gt#{s.gt_index} {s.gt_name} by pred#{s.pred_index}")
        elif s.kind == "loose":
            where = name_cell(f"gt#{s.gt_index} by pred#{s.pred_index}")
        elif s.kind == "duplicate":
            where = name_cell(f"gt#{s.gt_index} on gt#{s.other_index}")
        else:
            where = name_cell(f"pred#{s.pred_index}")
        table.add_row(
            str(rank),
            s.kind,
            name_cell(s.image),
            name_cell(s.name),
            number_text(s.confidence, 3),
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
                more_rows(f"{len(suspects) - len(shown):,} more", words),
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
    """Each class's expected and maximum calibration error, its OCE and D-ECE when they were
    computed, and the pooled reliability bins."""
    table = Table(
        title=f"Calibration (TP at IoU {result.threshold:g}, {result.bins} score bins)",
        title_justify="left",
    )
    table.add_column("class", no_wrap=True)
    names = ["predictions", "ECE", "MCE"]
    if result.detection:
        names += ["objects", "OCE", "D-ECE"]
    for name in names:
        table.add_column(name, justify="right", no_wrap=True)
    for entry in (result.overall, *result.classes):
        label = Text("all", style="bold") if entry is result.overall else name_cell(entry.name)
        cells: list[str | Text] = [
            label,
            f"{entry.predictions:,}",
            number_text(entry.ece),
            number_text(entry.mce),
        ]
        if result.detection:
            cells += [f"{entry.objects:,}", number_text(entry.oce), number_text(entry.d_ece)]
        table.add_row(*cells)
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
            number_text(b.confidence, 3),
            number_text(b.accuracy, 3),
            signed_cell(gap, digits=3) if gap is not None else Text("—", style="dim"),
        )
    parts: list[RenderableType] = [table, Text(), bins]
    remarks = [
        "ECE: the mean gap between a bin's TP share and its mean score, weighted by its "
        "predictions; MCE: the largest gap"
    ]
    if result.detection:
        thresholds = " and ".join(f"{t:g}" for t in result.oce_thresholds)
        remarks.append(
            "OCE: each object's Brier score of the predictions of any class over it at IoU "
            f"{thresholds} (a miss scores 1), averaged; D-ECE: ECE over bins of score and box "
            "position and size"
        )
    else:
        remarks.append("OCE and D-ECE left out: the match records hold no calibration inputs")
    if result.clipped:
        remarks.append(f"{result.clipped:,} scores outside [0, 1] put in the end bins")
    if result.unscored:
        remarks.append(f"{result.unscored:,} predictions without a score left out")
    if result.unsized:
        remarks.append(
            f"{result.unsized:,} predictions of images without a <size> left out of D-ECE"
        )
    parts.append(Text("; ".join(remarks), style="dim"))
    return Group(*parts)


def _errors_row(errors: CountErrors) -> list[Text]:
    return [_interval(errors.mae), _interval(errors.rmse), _interval(errors.bias)]


def counting_table(result: Counting) -> RenderableType:
    """Each class's per-image count errors and presence, then the mean over classes and the
    errors of all objects' counts."""
    at = (
        f"at score thresholds {printable(result.thresholds)}"
        if result.thresholds is not None
        else "every prediction counts (no score threshold)"
    )
    table = Table(
        title=f"Counts per image over {result.images:,} images: predicted minus true, {at}",
        title_justify="left",
    )
    table.add_column("class", overflow="fold")
    for name in ("GT", "pred", "MAE", "RMSE", "bias", "found in", "false alarms"):
        table.add_column(name, justify="right")
    for cls in result.classes:
        found = cls.presence
        table.add_row(
            name_cell(cls.name), f"{cls.gt:,}", f"{cls.pred:,}", *_errors_row(cls.errors),
            _interval(found.recall), _interval(found.false_alarm),
        )  # fmt: skip
    table.add_section()
    dash = Text("—", style="dim")
    table.add_row(Text("mean over classes", style="bold"), dash, dash,
                  *_errors_row(result.class_mean), dash, dash)  # fmt: skip
    table.add_row(
        Text("all objects", style="bold"),
        f"{sum(c.gt for c in result.classes):,}", f"{sum(c.pred for c in result.classes):,}",
        *_errors_row(result.objects), dash, dash,
    )  # fmt: skip
    parts: list[RenderableType] = [table]
    line = (
        "found in: share of the images holding the class where it is predicted; false "
        "alarms: share of the others where it is"
    )
    if result.resamples is not None:
        coverage = f"{result.confidence * 100:g} %"
        line += (
            f"; [{coverage} intervals over {result.resamples:,} resamples of the images, "
            f"seed {result.seed}]"
        )
    parts.append(Text(line, style="dim"))
    return Group(*parts)


def targets_table(result: TargetThresholds) -> RenderableType:
    """Each class's threshold holding the target, its precision, recall and lower bound;
    or why it has none."""
    target = result.target
    table = Table(
        title=f"Score thresholds holding {target.describe()} ({target.resamples:,} resamples "
        f"of the {result.images:,} images, seed {target.seed})",
        title_justify="left",
    )
    table.add_column("class", overflow="fold")
    table.add_column("threshold", justify="right", no_wrap=True)
    for name in ("precision", "recall", f"{target.metric} bound"):
        table.add_column(name, justify="right", no_wrap=True)
    missed = []
    for cls in result.classes:
        if cls.threshold is None:
            missed.append(cls)
            continue
        table.add_row(
            name_cell(cls.name), f"{cls.threshold:.6g}", number_text(cls.precision),
            number_text(cls.recall), number_text(cls.bound),
        )  # fmt: skip
    parts: list[RenderableType] = [table]
    for cls in missed:
        parts.append(
            Text(
                f"{printable(cls.name)}: no threshold: {cls.reason}",
                style="yellow",
                overflow="fold",
            )
        )
    parts.append(
        Text(
            "bound: the lower bound over resamples of the images drawn with replacement; "
            "precision is tried from the highest score down and the first failure stops",
            style="dim",
        )
    )
    return Group(*parts)

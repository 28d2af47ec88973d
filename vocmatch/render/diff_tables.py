"""Run B against run A (``vocmatch diff``) as rich renderables: the summary, each class,
the images that changed and the regression gates. Nothing here prints.

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
from vocmatch.render.terminal import more_rows, name_cell, note_text, number_text, signed_cell

if TYPE_CHECKING:
    # Only for the annotations: each report imports the modules of its own parts, so the
    # evaluation report loads no analysis, bootstrap, diff or suspects module it does not show.
    from vocmatch.evidence.diff import (
        Change,
        CountChange,
        EvaluationDiff,
        ImageDiff,
        ObjectRef,
    )
    from vocmatch.evidence.paired import DeltaInterval, PairedBootstrap
    from vocmatch.evidence.regression_gates import RegressionResult

__all__ = ["DIFF_MAX_ROWS", "diff_report"]

#: Rows of the per-image tables of the diff report by default.
DIFF_MAX_ROWS = 20

#: Characters of the objects column of the diff report (the JSON lists every object).
DIFF_OBJECTS_WIDTH = 72


def _count_delta(value: int, better_up: bool, signed: bool = True) -> Text:
    if value == 0:
        return Text("0", style="dim")
    good = value > 0 if better_up else value < 0
    return Text(f"{value:+d}" if signed else str(value), style="green" if good else "red")


def _change_row(name: str, change: Change) -> list[RenderableType]:
    return [name, number_text(change.a), number_text(change.b), signed_cell(change.delta)]


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
    conventions.add_row("A", name_cell(diff.a_name))
    conventions.add_row("B", name_cell(diff.b_name))
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
    map_name = "mAP@[.50:.95]" if diff.conventions.summary == "coco" else "mAP"
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
            name_cell(cls.name),
            str(cls.gt),
            number_text(cls.ap.a),
            number_text(cls.ap.b),
            signed_cell(cls.ap.delta),
            signed_cell(cls.precision.delta),
            signed_cell(cls.recall.delta),
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
                more_rows(f"{len(changed) - len(shown):,} more changed images", words),
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
        parts.append(note_text(f"{key} evaluated in A only"))
    for key in diff.only_b:
        parts.append(note_text(f"{key} evaluated in B only"))
    if results:
        parts += [Text(), _regression_gates_table(results)]
        from vocmatch.evidence.regression_gates import correction_lines

        said = correction_lines(results, evidence.resamples if evidence is not None else None)
        parts += [note_text(line) for line in said[:1]]
    return Group(*parts)


def _changed_images_table(shown: list[ImageDiff]) -> Table:
    """The images that changed between two runs, one row each (worst first)."""
    images = MeasuredTable("Images that changed (worst first)")
    images.add_column("image", overflow="fold")
    for name in ("new FN", "fixed FN", "new FP", "removed FP", "net"):
        images.add_column(name, justify="right", no_wrap=True)
    images.add_column("objects")
    for image in shown:
        images.add_row(
            name_cell(image.key),
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
        gates.add_row(name_cell(str(result.gate)), name_cell(str(result)), verdict)
    return gates

"""An :class:`~vocmatch.evaluation.scoring.Evaluation` as Markdown, for a pull-request
comment or a CI job summary.

Names are data, never markup: every file and class name goes through
:func:`~vocmatch.escapes.markdown_text`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from vocmatch.escapes import markdown_text
from vocmatch.render.json_report import COCO_NAMES
from vocmatch.render.preparation_report import STEP_TITLES, preparation_rows, preparation_title
from vocmatch.words import plural

if TYPE_CHECKING:
    # Only for the annotations: a report imports the modules of the parts it writes.
    from vocmatch.evaluation.scoring import Evaluation
    from vocmatch.evidence.bootstrap import Bootstrap, Interval
    from vocmatch.evidence.counting import Counting
    from vocmatch.evidence.gates import GateReport
    from vocmatch.evidence.target_thresholds import TargetThresholds

__all__ = ["MARKDOWN_MAX_IMAGES", "md_number", "md_table", "md_text", "to_markdown"]

#: Images named after the gate table of the Markdown report before it says "and N more".
MARKDOWN_MAX_IMAGES = 20


def md_text(text: str) -> str:
    """Text from the data, escaped for Markdown (:func:`~vocmatch.escapes.markdown_text`)."""
    return markdown_text(text)


def md_number(value: float | None) -> str:
    """A number as a Markdown cell: four decimals, an em dash for none."""
    return "—" if value is None else f"{value:.4f}"


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str) -> list[str]:
    """A pipe table; ``align`` has an ``l`` or ``r`` per column."""
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _md_gates(report: GateReport, images: int) -> list[str]:
    verdict = "passed" if report.passed else "failed"
    rows = [
        [md_text(str(g.gate)), md_number(g.measured), "pass" if g.passed else "**fail**"]
        for g in report.gates
    ]
    for flag, limit, over in (
        ("max-fp", report.max_fp, [i for i in report.images if i.fp_failed]),
        ("max-fn", report.max_fn, [i for i in report.images if i.fn_failed]),
    ):
        if limit is not None:
            result = "**fail**" if over else "pass"
            rows.append(
                [f"{flag} {limit} per image", f"{len(over)} of {images} images over", result]
            )
    lines = ["", f"### Quality gates: {verdict}", ""]
    lines += md_table(("gate", "measured", "result"), rows, "lrl")
    failed = report.failed_images
    if failed:
        named = [
            f"{md_text(i.key)} ({', '.join(i.failures())})" for i in failed[:MARKDOWN_MAX_IMAGES]
        ]
        more = len(failed) - len(named)
        tail = f", and {more} more" if more else ""
        lines += ["", f"Images over a limit: {'; '.join(named)}{tail}."]
    return lines


def to_markdown(
    evaluation: Evaluation,
    gates: GateReport | None = None,
    bootstrap: Bootstrap | None = None,
    counting: Counting | None = None,
    targets: TargetThresholds | None = None,
) -> str:
    """A Markdown report for a pull-request comment or a CI job summary.

    The conventions, a summary table, the COCO numbers when computed, a table per class,
    with ``bootstrap`` the intervals, with ``targets`` the thresholds holding a target, with
    ``counting`` the count errors, and, when ``gates``
    holds any gate or limit, a table of the gates and the images over a limit (the first
    :data:`MARKDOWN_MAX_IMAGES` of them by key).

    Args:
        evaluation: The evaluation.
        gates: The checked gates, if any.

    Returns:
        GitHub-flavoured Markdown, ending in a newline.
    """
    s = evaluation.summary
    conventions = " · ".join(f"{name} {value}" for name, value in evaluation.conventions.describe())
    map_name = "mAP@[.50:.95]" if evaluation.coco is not None else "mAP"
    names = ["images", "GT", "pred", "TP", "FP", "FN", "precision", "recall", "F1", map_name]
    ignored = sum(c.gt_ignored for c in evaluation.classes)
    gt = str(s.gt) if not ignored else f"{s.gt} (+{ignored})"  # as in the class table
    values = [
        str(s.images), gt, str(s.pred), str(s.tp), str(s.fp), str(s.fn),
        md_number(s.precision), md_number(s.recall), md_number(s.f1), md_number(s.map),
    ]  # fmt: skip
    if evaluation.coco is not None:
        # AP50 beside the mean over IoU 0.50:0.95, as Ultralytics reports both.
        names.append("mAP@.50")
        values.append(md_number(evaluation.coco.AP50 if evaluation.coco.AP50 >= 0 else None))
    lines = ["## vocmatch evaluation", "", md_text(conventions), "", "### Summary", ""]
    lines += md_table(names, [values], "r" * len(names))
    remarks = []
    if s.skipped:
        remarks.append(f"skipped files: {s.skipped} (not evaluated)")
    if s.missing_pred:
        remarks.append(
            f"no prediction file: {plural(s.missing_pred, 'image')}, their objects count as FN"
        )
    if s.orphan_pred:
        remarks.append(f"no GT file: {plural(s.orphan_pred, 'prediction file')}, not evaluated")
    remarks += [f"note: {note}" for note in evaluation.notes]
    if remarks:
        lines.append("")
        lines += [f"- {md_text(r)}" for r in remarks]
    if evaluation.removed is not None:
        lines += ["", f"### {md_text(preparation_title(evaluation.removed))}", ""]
        rows = [[md_text(r[0]), *r[1:]] for r in preparation_rows(evaluation.removed)]
        lines += md_table(["class", *STEP_TITLES, "removed"], rows, "lrrrr")
    if evaluation.coco is not None:
        lines += ["", "### COCO (pycocotools COCOeval.stats)", ""]
        values = [f"{v:.4f}" for v in evaluation.coco.as_list()]
        lines += md_table(COCO_NAMES[:6], [values[:6]], "r" * 6)
        lines.append("")
        lines += md_table(COCO_NAMES[6:], [values[6:]], "r" * 6)
    threshold = evaluation.conventions.iou_threshold
    lines += ["", f"### Classes (at IoU {threshold:g})", ""]
    coco = evaluation.conventions.summary == "coco"
    rows = []
    for c in evaluation.classes:
        name = md_text(c.name) + ("" if c.in_map else " \\*")
        gt = str(c.gt) if not c.gt_ignored else f"{c.gt} (+{c.gt_ignored})"
        pred = (
            str(c.pred) if not c.pred_ignored else f"{c.pred - c.pred_ignored} (+{c.pred_ignored})"
        )
        row = [
            name, gt, pred, str(c.tp), str(c.fp), str(c.fn), md_number(c.precision),
            md_number(c.recall), md_number(c.f1), md_number(c.ap),
        ]  # fmt: skip
        if coco:
            row += [md_number(c.ap50), md_number(c.ap75)]
        rows.append(row)
    aps = ("AP", "AP50", "AP75") if coco else ("AP",)
    lines += md_table(
        ("class", "GT", "pred", "TP", "FP", "FN", "precision", "recall", "F1", *aps),
        rows,
        "l" + "r" * (8 + len(aps)),
    )
    notes = []
    if any(c.gt_ignored or c.pred_ignored for c in evaluation.classes):
        notes.append(
            "(+n): ignored: difficult ground truth, and predictions matched to it "
            "(neither TP nor FP)"
        )
    if any(not c.in_map for c in evaluation.classes):
        notes.append("\\*: no ground truth, reported but not averaged into mAP")
    if notes:
        lines += ["", "; ".join(notes) + "."]
    if bootstrap is not None:
        lines += _md_bootstrap(bootstrap)
    if targets is not None:
        lines += _md_targets(targets)
    if counting is not None:
        lines += _md_counting(counting)
    if gates is not None and gates.has_checks:
        lines += _md_gates(gates, len(evaluation.images))
    return "\n".join(lines) + "\n"


def _md_value(interval: Interval) -> str:
    if interval.value is None and interval.low is None:
        return "—"
    text = md_number(interval.value)
    if interval.low is not None and interval.high is not None:
        text += f" [{interval.low:.4f}, {interval.high:.4f}]"
    return text


def _md_bootstrap(result: Bootstrap) -> list[str]:
    coverage = f"{result.confidence * 100:g} %"
    lines = [
        "",
        f"### Bootstrap: {coverage} intervals over {result.resamples:,} resamples of the "
        f"{result.images:,} images (seed {result.seed})",
        "",
    ]
    rows = [["all (mAP, micro)", *(_md_value(i) for i in (result.map, result.precision,
             result.recall, result.f1))]]  # fmt: skip
    rows += [
        [md_text(c.name), *(_md_value(i) for i in (c.ap, c.precision, c.recall, c.f1))]
        for c in result.classes
    ]
    lines += md_table(("class", "AP", "precision", "recall", "F1"), rows, "lrrrr")
    return lines


def _md_counting(result: Counting) -> list[str]:
    at = (
        f"at score thresholds {md_text(result.thresholds)}"
        if result.thresholds is not None
        else "every prediction counts"
    )
    lines = ["", f"### Counts per image ({result.images:,} images, {at})", ""]
    rows = [
        [
            md_text(c.name),
            str(c.gt),
            str(c.pred),
            *(
                _md_value(i)
                for i in (
                    c.errors.mae,
                    c.errors.rmse,
                    c.errors.bias,
                    c.presence.recall,
                    c.presence.false_alarm,
                )
            ),
        ]
        for c in result.classes
    ]
    for name, errors in (("mean over classes", result.class_mean), ("all objects", result.objects)):
        rows.append([f"**{name}**", "", "", *(_md_value(i) for i in (errors.mae, errors.rmse,
                     errors.bias)), "", ""])  # fmt: skip
    lines += md_table(
        ("class", "GT", "pred", "MAE", "RMSE", "bias", "found in", "false alarms"),
        rows,
        "lrrrrrrr",
    )
    lines += [
        "",
        "Count error: predicted minus true, per image. Found in: share of the images holding "
        "the class where it is predicted; false alarms: share of the others where it is.",
    ]
    return lines


def _md_targets(result: TargetThresholds) -> list[str]:
    target = result.target
    lines = [
        "",
        f"### Score thresholds holding {md_text(target.describe())} "
        f"({target.resamples:,} resamples, seed {target.seed})",
        "",
    ]
    rows = [
        [
            md_text(c.name),
            "—" if c.threshold is None else f"{c.threshold:.6g}",
            md_number(c.precision),
            md_number(c.recall),
            md_number(c.bound),
            md_text(c.reason or ""),
        ]
        for c in result.classes
    ]
    lines += md_table(
        ("class", "threshold", "precision", "recall", f"{target.metric} bound", "why none"),
        rows,
        "lrrrrl",
    )
    return lines

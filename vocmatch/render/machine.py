"""Machine-readable forms of an :class:`~vocmatch.evaluation.evaluate.Evaluation`.

Every form is deterministic: images sorted by key, classes by name, keys in a fixed order.

Names are data, never markup: every file and class name goes through the function of
:mod:`vocmatch.escapes` for its form -- CSV cells through :func:`~vocmatch.escapes.csv_text`
(formula prefixes neutralised), Markdown through :func:`~vocmatch.escapes.markdown_text`,
JUnit XML through :func:`~vocmatch.escapes.xml_text` -- and JSON is written with
``ensure_ascii`` (control, bidi and non-UTF-8 characters as ``\\uXXXX`` escapes, which a
JSON reader turns back into the exact name).
"""

from __future__ import annotations

import csv
import io
import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from vocmatch import __version__
from vocmatch.core.ap import Curve
from vocmatch.core.protocol import Conventions, sweep_label
from vocmatch.escapes import csv_text, markdown_text, xml_text
from vocmatch.evaluation.thresholds import OperatingPoint, ScoreThresholds, operating_point
from vocmatch.words import plural

if TYPE_CHECKING:
    # Only for the annotations: a report imports the modules of the parts it writes, so the
    # JSON of a plain evaluation loads no analysis, bootstrap, diff or suspects module.
    from vocmatch.evaluation.evaluate import ClassResult, Evaluation, ImageResult
    from vocmatch.evaluation.labels import LabelClassResult, LabelEvaluation, LabelImageResult
    from vocmatch.evaluation.seg import SegEvaluation
    from vocmatch.evidence.analysis import Distribution, ErrorAnalysis, ErrorCounts, Tightness
    from vocmatch.evidence.bootstrap import Bootstrap, DeltaInterval, Interval, PairedBootstrap
    from vocmatch.evidence.calibration import Calibration, ClassCalibration
    from vocmatch.evidence.diff import (
        Change,
        CountChange,
        EvaluationDiff,
        ImageDiff,
        RegressionResult,
    )
    from vocmatch.evidence.gates import GateReport
    from vocmatch.evidence.slices import Slice

__all__ = [
    "COCO_NAMES",
    "CONFUSION_ROWS_MAX",
    "MARKDOWN_MAX_IMAGES",
    "to_csv_classes",
    "to_csv_images",
    "to_json",
    "to_json_dict",
    "to_junit",
    "to_markdown",
]

#: pycocotools' ``COCOeval.stats``, by position.
COCO_NAMES: tuple[str, ...] = (
    "AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl",
)  # fmt: skip


def _curve_corners(curve: Curve) -> dict[str, NumberList]:
    """The precision/recall curve at its corners: each true positive and the last point.

    Between two true positives precision only falls, one false positive at a time, so these
    points hold the whole curve; AP under every interpolation depends on them alone. Writing
    every ranked prediction would make a large set's JSON mostly curve.
    """
    rises = np.flatnonzero(np.diff(curve.recall, prepend=0.0) > 0)
    points = np.union1d(rises, [curve.recall.size - 1]) if curve.recall.size else rises
    scores = curve.scores[points]
    recall = curve.recall[points].tolist()
    return {
        # A class without ground truth has no recall (NaN inside): null, as in its summary.
        "recall": NumberList([v if math.isfinite(v) else None for v in recall]),
        "precision": NumberList(curve.precision[points].tolist()),
        # An unscored prediction in a scored set ranks last (-inf inside): null here.
        "scores": NumberList(
            scores.tolist()
            if np.isfinite(scores).all()
            else [v if math.isfinite(v) else None for v in scores.tolist()]
        ),
    }


def _conventions(conv: Conventions) -> dict[str, Any]:
    """The conventions in force, as every JSON output states them."""
    return {
        "protocol": conv.protocol,
        "iou_threshold": conv.iou_threshold,
        "strict_threshold": conv.strict_threshold,
        "pixel_inclusive": conv.pixel_inclusive,
        "match_rule": conv.match_rule,
        "difficult": conv.difficult,
        "interpolation": conv.interpolation,
        "ap_thresholds": list(conv.ap_thresholds),
        "max_dets": conv.max_dets,
    }


def _class(cls: ClassResult) -> dict[str, Any]:
    curve = None
    if cls.curve is not None:
        curve = _curve_corners(cls.curve)
    return {
        "name": cls.name,
        "gt": cls.gt,
        "gt_ignored": cls.gt_ignored,
        "pred": cls.pred,
        "tp": cls.tp,
        "fp": cls.fp,
        "fn": cls.fn,
        "precision": cls.precision,
        "recall": cls.recall,
        "f1": cls.f1,
        "ap": cls.ap,
        "ap50": cls.ap50,
        "ap75": cls.ap75,
        "pred_ignored": cls.pred_ignored,
        "in_map": cls.in_map,
        "curve": curve,
    }


def _image(image: ImageResult) -> dict[str, Any]:
    return Record(
        {
            "image": image.key,
            "gt_path": image.gt_path,
            "pred_path": image.pred_path,
            "gt": image.gt,
            "gt_ignored": image.gt_ignored,
            "pred": image.pred,
            "pred_ignored": image.pred_ignored,
            "tp": image.tp,
            "fp": image.fp,
            "fn": image.fn,
            "mean_iou": image.mean_iou,
            "sweep": {
                sweep_label(s.threshold): {"tp": s.tp, "fp": s.fp, "fn": s.fn} for s in image.sweep
            },
        }
    )


class Encoded(str):
    """Text already encoded as JSON: written as it is by :func:`dumps_indented`."""


class _ImageLines:
    """Each image's record as one line of JSON, written directly: the same text as
    ``json.dumps`` gives :func:`_image`'s record (``", "`` and ``": "`` between items,
    ``ensure_ascii`` strings, ``float.__repr__`` numbers, no NaN), without building the
    record and its sweep mapping first. A large set's JSON is mostly these lines."""

    def __init__(self) -> None:
        self._labels: dict[float, str] = {}

    def __call__(self, image: ImageResult) -> Encoded | dict[str, Any]:
        labels = [self._label(s.threshold) for s in image.sweep]
        if len(set(labels)) != len(labels):
            return _image(image)  # two thresholds of one name: the mapping keeps the last
        text = _STRING
        sweep = ", ".join(
            f'{text(label)}: {{"tp": {s.tp}, "fp": {s.fp}, "fn": {s.fn}}}'
            for label, s in zip(labels, image.sweep, strict=True)
        )
        pred_path = "null" if image.pred_path is None else text(image.pred_path)
        return Encoded(
            f'{{"image": {text(image.key)}, "gt_path": {text(image.gt_path)}, '
            f'"pred_path": {pred_path}, "gt": {_int(image.gt)}, '
            f'"gt_ignored": {_int(image.gt_ignored)}, "pred": {_int(image.pred)}, '
            f'"pred_ignored": {_int(image.pred_ignored)}, "tp": {_int(image.tp)}, '
            f'"fp": {_int(image.fp)}, "fn": {_int(image.fn)}, '
            f'"mean_iou": {_float(image.mean_iou)}, "sweep": {{{sweep}}}}}'
        )

    def _label(self, threshold: float) -> str:
        label = self._labels.get(threshold)
        if label is None:
            label = self._labels[threshold] = sweep_label(threshold)
        return label


#: json's own string encoder (``ensure_ascii``), as the C encoder calls it.
_STRING = json.encoder.encode_basestring_ascii


def _int(value: int) -> str:
    # The encoder writes any int, and only ints, with int.__repr__ (never a bool here).
    if type(value) is not int:
        return _ONE_LINE.encode(value)
    return int.__repr__(value)


def _float(value: float | None) -> str:
    if value is None or type(value) is not float or not math.isfinite(value):
        return _ONE_LINE.encode(value)  # null, another type, or NaN refused as json does
    return float.__repr__(value)


def _operating(point: OperatingPoint | None) -> dict[str, Any] | None:
    if point is None:
        return None
    return {
        "threshold": point.threshold,
        "predictions": point.predictions,
        "precision": point.precision,
        "recall": point.recall,
        "f": point.f,
    }


def to_json_dict(
    evaluation: Evaluation,
    analysis: ErrorAnalysis | None = None,
    *,
    bootstrap: Bootstrap | None = None,
    thresholds: ScoreThresholds | None = None,
    beta: float = 1.0,
    slices: Sequence[Slice] = (),
    calibration: Calibration | None = None,
) -> dict[str, Any]:
    """The evaluation as plain JSON-ready data (documented in docs/outputs.md); with
    ``analysis``, also the error types, confusion matrix and tightness; with ``bootstrap``,
    the intervals; with ``slices``, each slice's values. ``thresholds`` are the score
    thresholds the counts use; each class's ``operating_point`` maximises F-beta."""
    return _json_data(
        evaluation,
        analysis,
        _image,
        bootstrap=bootstrap,
        thresholds=thresholds,
        beta=beta,
        slices=slices,
        calibration=calibration,
    )


def _json_data(
    evaluation: Evaluation,
    analysis: ErrorAnalysis | None,
    image_record: Callable[[ImageResult], Any],
    *,
    bootstrap: Bootstrap | None,
    thresholds: ScoreThresholds | None,
    beta: float,
    slices: Sequence[Slice],
    calibration: Calibration | None,
) -> dict[str, Any]:
    """:func:`to_json_dict`, each image's record made by ``image_record``."""
    conv = evaluation.conventions
    s = evaluation.summary
    conventions = _conventions(conv)
    conventions["score_thresholds"] = {
        "default": thresholds.default if thresholds else None,
        "classes": dict(thresholds.per_class) if thresholds else {},
    }
    conventions["beta"] = beta
    data: dict[str, Any] = {
        "vocmatch": __version__,
        "conventions": conventions,
        "summary": {
            "images": s.images,
            "gt": s.gt,
            "pred": s.pred,
            "pred_ignored": s.pred_ignored,
            "tp": s.tp,
            "fp": s.fp,
            "fn": s.fn,
            "precision": s.precision,
            "recall": s.recall,
            "f1": s.f1,
            "map": s.map,
            "skipped": s.skipped,
            "missing_pred": s.missing_pred,
            "orphan_pred": s.orphan_pred,
        },
        "classes": [
            {**_class(c), "operating_point": _operating(operating_point(c.curve, c.gt, beta))}
            for c in evaluation.classes
        ],
        "images": [image_record(i) for i in evaluation.images],
    }
    if evaluation.coco is not None:
        data["coco"] = dict(zip(COCO_NAMES, evaluation.coco.as_list(), strict=True))
    data["skipped"] = [
        {"path": f.path, "line": f.line, "error": f.message} for f in evaluation.skipped
    ]
    data["missing_pred"] = list(evaluation.missing_pred)
    data["orphan_pred"] = list(evaluation.orphan_pred)
    data["notes"] = list(evaluation.notes)
    if analysis is not None:
        _add_analysis(data, analysis)
    if bootstrap is not None:
        data["bootstrap"] = bootstrap_json(bootstrap)
    if slices:
        data["slices"] = slices_json(slices)
    if calibration is not None:
        data["calibration"] = calibration_json(calibration)
    return data


def to_json(
    evaluation: Evaluation,
    analysis: ErrorAnalysis | None = None,
    *,
    bootstrap: Bootstrap | None = None,
    thresholds: ScoreThresholds | None = None,
    beta: float = 1.0,
    slices: Sequence[Slice] = (),
    calibration: Calibration | None = None,
) -> str:
    """The evaluation (and its error analysis, if given) as indented JSON, ending in a newline.

    Lists of plain numbers (the precision/recall curves, histograms) and each image's record
    are written on one line each: a large result reads as a table, one image per line (for
    ``grep``), and the C encoder writes the bulk of it.
    """
    return dumps_indented(
        _json_data(
            evaluation,
            analysis,
            # The error analysis adds to each image's record: records, then.
            _ImageLines() if analysis is None else _image,
            bootstrap=bootstrap,
            thresholds=thresholds,
            beta=beta,
            slices=slices,
            calibration=calibration,
        )
    )


class NumberList(list[float | None]):
    """A list known to hold only numbers (or None): written on one line without a check."""


class Record(dict[str, Any]):
    """A mapping written on one line by :func:`dumps_indented` (one of many alike)."""


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


_ONE_LINE = json.JSONEncoder(allow_nan=False)
_BATCH = 50_000  # fragments joined at once by dumps_indented


def dumps_indented(data: Any) -> str:
    """``json.dumps(data, indent=2)``, with every list of numbers and every
    :class:`Record` kept on one line (written by the C encoder).

    Raises:
        TypeError: A mapping key is not a string.
    """
    parts: list[str] = []
    # Fragments are joined a batch at a time: millions of small strings (a result with tens
    # of thousands of classes) would hold several times the text's own size at once.
    chunks: list[str] = []
    encode = _ONE_LINE.encode

    def write(value: Any, pad: str) -> None:
        if len(parts) >= _BATCH:
            chunks.append("".join(parts))
            parts.clear()
        if isinstance(value, Encoded):
            parts.append(value)
        elif isinstance(value, (Record, NumberList)):
            parts.append(encode(value))
        elif isinstance(value, dict):
            if not value:
                parts.append("{}")
                return
            inner = pad + "  "
            separator = "{\n"
            for key, item in value.items():
                if not isinstance(key, str):
                    raise TypeError(f"JSON keys must be strings, got {key!r}")
                parts.append(f"{separator}{inner}{encode(key)}: ")
                write(item, inner)
                separator = ",\n"
            parts.append(f"\n{pad}}}")
        elif isinstance(value, (list, tuple)):
            if not value:
                parts.append("[]")
            elif all(_is_number(v) for v in value):
                parts.append(encode(value))
            else:
                inner = pad + "  "
                separator = "[\n"
                for item in value:
                    parts.append(separator + inner)
                    write(item, inner)
                    separator = ",\n"
                parts.append(f"\n{pad}]")
        else:
            parts.append(encode(value))

    write(data, "")
    chunks.append("".join(parts))
    parts.clear()
    chunks.append("\n")
    return "".join(chunks)


# CSV ------------------------------------------------------------------------------------

_IMAGE_COLUMNS: tuple[str, ...] = (
    "image", "gt_path", "pred_path", "gt", "gt_ignored", "pred", "tp", "fp", "fn", "mean_iou",
)  # fmt: skip
_CLASS_COLUMNS: tuple[str, ...] = (
    "name", "gt", "gt_ignored", "pred", "tp", "fp", "fn", "precision", "recall", "f1", "ap",
    "in_map",
)  # fmt: skip


def _csv_cell(value: str | int | float | bool | None) -> str:
    # Empty for undefined; floats in full (repr round-trips); booleans as in JSON; text
    # (names, paths) escaped, never a formula.
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return csv_text(value)
    return str(value)


def _csv(header: Sequence[str], rows: Iterable[Sequence[str | int | float | bool | None]]) -> str:
    buffer = io.StringIO()
    # "\n" line ends, not the csv module's "\r\n": the files diff and commit cleanly.
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([_csv_cell(v) for v in row] for row in rows)
    return buffer.getvalue()


def to_csv_images(evaluation: Evaluation) -> str:
    """One CSV row per image, sorted by key.

    Columns: ``image`` (the key), ``gt_path``, ``pred_path`` (empty without a prediction
    file), ``gt``, ``gt_ignored``, ``pred``, ``tp``, ``fp``, ``fn``, ``mean_iou`` (empty
    without a TP), then ``tp@0.50``, ``fp@0.50``, ``fn@0.50`` and so on for each sweep
    threshold. Floats are written in full; lines end in ``\\n``.
    """
    sweep = [
        f"{n}@{sweep_label(t)}"
        for t in evaluation.conventions.sweep_thresholds
        for n in ("tp", "fp", "fn")
    ]
    rows = []
    for i in evaluation.images:
        row: list[str | int | float | None] = [
            i.key, i.gt_path, i.pred_path, i.gt, i.gt_ignored, i.pred, i.tp, i.fp, i.fn,
            i.mean_iou,
        ]  # fmt: skip
        for s in i.sweep:
            row.extend((s.tp, s.fp, s.fn))
        rows.append(row)
    return _csv((*_IMAGE_COLUMNS, *sweep), rows)


def to_csv_classes(evaluation: Evaluation) -> str:
    """One CSV row per class, sorted by name.

    Columns as the JSON ``classes`` entries without the curve: ``name``, ``gt``,
    ``gt_ignored``, ``pred``, ``tp``, ``fp``, ``fn``, ``precision``, ``recall``, ``f1``,
    ``ap`` (empty when undefined) and ``in_map`` (``true`` or ``false``).
    """
    rows = [
        [c.name, c.gt, c.gt_ignored, c.pred, c.tp, c.fp, c.fn, c.precision, c.recall, c.f1,
         c.ap, c.in_map]
        for c in evaluation.classes
    ]  # fmt: skip
    return _csv(_CLASS_COLUMNS, rows)


# Markdown -------------------------------------------------------------------------------


#: Images named after the gate table of the Markdown report before it says "and N more".
MARKDOWN_MAX_IMAGES = 20


def _md(text: str) -> str:
    return markdown_text(text)


def _md_number(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str) -> list[str]:
    """A pipe table; ``align`` has an ``l`` or ``r`` per column."""
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _md_gates(report: GateReport, images: int) -> list[str]:
    verdict = "passed" if report.passed else "failed"
    rows = [
        [_md(str(g.gate)), _md_number(g.measured), "pass" if g.passed else "**fail**"]
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
    lines += _md_table(("gate", "measured", "result"), rows, "lrl")
    failed = report.failed_images
    if failed:
        named = [f"{_md(i.key)} ({', '.join(i.failures())})" for i in failed[:MARKDOWN_MAX_IMAGES]]
        more = len(failed) - len(named)
        tail = f", and {more} more" if more else ""
        lines += ["", f"Images over a limit: {'; '.join(named)}{tail}."]
    return lines


def to_markdown(
    evaluation: Evaluation,
    gates: GateReport | None = None,
    bootstrap: Bootstrap | None = None,
) -> str:
    """A Markdown report for a pull-request comment or a CI job summary.

    The conventions, a summary table, the COCO numbers when computed, a table per class,
    with ``bootstrap`` the intervals, and, when ``gates`` holds any gate or limit, a table
    of the gates and the images over a limit (the first :data:`MARKDOWN_MAX_IMAGES` of them
    by key).

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
    values = [
        str(s.images), str(s.gt), str(s.pred), str(s.tp), str(s.fp), str(s.fn),
        _md_number(s.precision), _md_number(s.recall), _md_number(s.f1), _md_number(s.map),
    ]  # fmt: skip
    if evaluation.coco is not None:
        # AP50 beside the mean over IoU 0.50:0.95, as Ultralytics reports both.
        names.append("mAP@.50")
        values.append(_md_number(evaluation.coco.AP50 if evaluation.coco.AP50 >= 0 else None))
    lines = ["## vocmatch evaluation", "", _md(conventions), "", "### Summary", ""]
    lines += _md_table(names, [values], "r" * len(names))
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
        lines += [f"- {_md(r)}" for r in remarks]
    if evaluation.coco is not None:
        lines += ["", "### COCO (pycocotools COCOeval.stats)", ""]
        values = [f"{v:.4f}" for v in evaluation.coco.as_list()]
        lines += _md_table(COCO_NAMES[:6], [values[:6]], "r" * 6)
        lines.append("")
        lines += _md_table(COCO_NAMES[6:], [values[6:]], "r" * 6)
    threshold = evaluation.conventions.iou_threshold
    lines += ["", f"### Classes (at IoU {threshold:g})", ""]
    coco = evaluation.conventions.coco_stats
    rows = []
    for c in evaluation.classes:
        name = _md(c.name) + ("" if c.in_map else " \\*")
        gt = str(c.gt) if not c.gt_ignored else f"{c.gt} (+{c.gt_ignored})"
        pred = (
            str(c.pred) if not c.pred_ignored else f"{c.pred - c.pred_ignored} (+{c.pred_ignored})"
        )
        row = [
            name, gt, pred, str(c.tp), str(c.fp), str(c.fn), _md_number(c.precision),
            _md_number(c.recall), _md_number(c.f1), _md_number(c.ap),
        ]  # fmt: skip
        if coco:
            row += [_md_number(c.ap50), _md_number(c.ap75)]
        rows.append(row)
    aps = ("AP", "AP50", "AP75") if coco else ("AP",)
    lines += _md_table(
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
    if gates is not None and gates.has_checks:
        lines += _md_gates(gates, len(evaluation.images))
    return "\n".join(lines) + "\n"


def _md_value(interval: Interval) -> str:
    if interval.value is None and interval.low is None:
        return "—"
    text = _md_number(interval.value)
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
        [_md(c.name), *(_md_value(i) for i in (c.ap, c.precision, c.recall, c.f1))]
        for c in result.classes
    ]
    lines += _md_table(("class", "AP", "precision", "recall", "F1"), rows, "lrrrr")
    return lines


# JUnit XML ------------------------------------------------------------------------------


def _xml(text: str) -> str:
    # What XML 1.0 cannot hold even escaped, shown as escapes, so the file always parses.
    return xml_text(text)


def _junit_image_detail(image: ImageResult) -> str:
    """One line per item, each name escaped on its own (the lines' breaks are ours)."""
    lines = [
        f"gt {image.gt}, pred {image.pred}, tp {image.tp}, fp {image.fp}, fn {image.fn}",
        f"gt file: {_xml(image.gt_path)}",
        f"pred file: {_xml(image.pred_path) if image.pred_path is not None else '(none)'}",
    ]
    # False positives first, then missed objects, each in file order.
    for m in sorted(image.matches, key=lambda m: (m.pred_index or 0, m.gt_index or 0)):
        if m.outcome == "fp" and m.pred_index is not None:
            score = "" if m.score is None else f", score {m.score:g}"
            lines.append(f"fp: {_xml(m.name)}#{m.pred_index}, best IoU {m.iou:.3f}{score}")
    for m in sorted(image.matches, key=lambda m: m.gt_index or 0):
        if m.outcome == "fn" and m.gt_index is not None:
            lines.append(f"fn: {_xml(m.name)}#{m.gt_index}, best IoU {m.iou:.3f}")
    return "\n".join(lines)


def to_junit(evaluation: Evaluation, gates: GateReport | None = None) -> str:
    """JUnit XML, so that CI systems list the evaluation as tests.

    One ``<testsuite name="vocmatch">`` holds a test case per dataset or class gate
    (``classname="vocmatch.gates"``, named as the condition, ``person:recall >= 0.9``) and
    a test case per image (``classname="vocmatch.images"``, named by key), which fails when
    the image is over ``max_fp`` or ``max_fn``; without limits every image passes. A
    failure's ``message`` is the failed condition, its text the counts, the files and each
    FP and FN (``class#n``: objects numbered from 0 in file order, as in every output). The
    conventions are ``<properties>``.

    Args:
        evaluation: The evaluation.
        gates: The checked gates; None checks none.

    Returns:
        The XML document, UTF-8 declared, ending in a newline.
    """
    from vocmatch.evidence.gates import GateReport

    report = gates if gates is not None else GateReport((), ())
    checks = {c.key: c for c in report.images}
    root = ET.Element("testsuites", name="vocmatch")
    suite = ET.SubElement(root, "testsuite", name="vocmatch")
    properties = ET.SubElement(suite, "properties")
    for name, value in evaluation.conventions.describe():
        ET.SubElement(properties, "property", name=name, value=value)
    tests = failures = 0
    for result in report.gates:
        case = ET.SubElement(
            suite, "testcase", classname="vocmatch.gates", name=_xml(str(result.gate))
        )
        tests += 1
        if not result.passed:
            failures += 1
            failure = ET.SubElement(case, "failure", type="fail-under", message=_xml(str(result)))
            failure.text = _xml(str(result))
    for image in evaluation.images:
        case = ET.SubElement(suite, "testcase", classname="vocmatch.images", name=_xml(image.key))
        tests += 1
        check = checks.get(image.key)
        if check is not None and not check.passed:
            failures += 1
            kinds = [
                k for k, bad in (("max-fp", check.fp_failed), ("max-fn", check.fn_failed)) if bad
            ]
            failure = ET.SubElement(
                case, "failure", type=",".join(kinds), message=_xml("; ".join(check.failures()))
            )
            failure.text = _junit_image_detail(image)
    for element in (root, suite):
        element.set("tests", str(tests))
        element.set("failures", str(failures))
        element.set("errors", "0")
    suite.set("skipped", "0")
    ET.indent(root, space="  ")
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


# Error analysis and regression diff (JSON) ---------------------------------------------

__all__ += ["diff_to_json", "diff_to_json_dict"]


def _error_counts(counts: ErrorCounts) -> dict[str, int]:
    from vocmatch.evidence.analysis import ERROR_TYPES

    return {kind: counts.of(kind) for kind in ERROR_TYPES}


def _distribution(d: Distribution | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {
        "count": d.count,
        "mean": d.mean,
        "std": d.std,
        "median": d.median,
        "p05": d.p05,
        "p95": d.p95,
        "min": d.minimum,
        "max": d.maximum,
        "edges": list(d.edges),
        "counts": list(d.counts),
    }


def _tightness(t: Tightness) -> dict[str, Any]:
    data: dict[str, Any] = {
        "pairs": t.pairs,
        "iou": _distribution(t.iou),
        "left": _distribution(t.left),
        "top": _distribution(t.top),
        "right": _distribution(t.right),
        "bottom": _distribution(t.bottom),
    }
    if t.name is None:
        data["classes"] = [{"name": c.name, **_tightness(c)} for c in t.classes]
    return data


#: The JSON's confusion matrix is given as rows up to this many names (classes and
#: background); beyond, only as its cells that are not zero (``cells``).
CONFUSION_ROWS_MAX = 1001


def _add_analysis(data: dict[str, Any], analysis: ErrorAnalysis) -> None:
    """Lay the error analysis into the evaluation's JSON (keys documented in docs/outputs.md)."""
    from vocmatch.evidence.analysis import ERROR_TYPES, ErrorCounts

    data["background_iou"] = analysis.background_iou
    data["summary"]["errors"] = _error_counts(analysis.summary)
    cost = analysis.cost
    data["summary"]["map_cost"] = (
        None if cost is None else {kind: cost.of(kind) for kind in ERROR_TYPES}
    )
    by_class = {c.name: c.counts for c in analysis.classes}
    for entry in data["classes"]:
        entry["errors"] = _error_counts(by_class.get(entry["name"], ErrorCounts()))
    by_image = {i.key: i for i in analysis.images}
    for entry in data["images"]:
        image = by_image.get(entry["image"])
        entry["errors"] = _error_counts(image.counts if image is not None else ErrorCounts())
        entry["error_boxes"] = (
            []
            if image is None
            else [
                {
                    "type": b.kind,
                    "name": b.name,
                    "pred_index": b.pred_index,
                    "gt_index": b.gt_index,
                    "iou": b.iou,
                    "score": b.score,
                }
                for b in image.boxes
            ]
        )
    confusion = analysis.confusion
    data["confusion"] = {
        "names": list(confusion.names),
        # The full matrix as rows while it is small; every cell that is not zero always.
        "counts": (
            confusion.counts.tolist() if len(confusion.names) <= CONFUSION_ROWS_MAX else None
        ),
        "cells": [
            [r, c, v]
            for r, c, v in zip(
                confusion.rows.tolist(),
                confusion.columns.tolist(),
                confusion.values.tolist(),
                strict=True,
            )
        ],
    }
    data["tightness"] = _tightness(analysis.tightness)


def _change(change: Change) -> dict[str, float | None]:
    return {"a": change.a, "b": change.b, "delta": change.delta}


def _count_change(change: CountChange) -> dict[str, int]:
    return {"a": change.a, "b": change.b, "delta": change.delta}


def _image_diff(image: ImageDiff) -> dict[str, Any]:
    def objects(refs: Iterable[Any]) -> list[dict[str, Any]]:
        return [{"index": r.index, "name": r.name} for r in refs]

    return {
        "image": image.key,
        "net": image.net,
        "new_fn": objects(image.new_fn),
        "fixed_fn": objects(image.fixed_fn),
        "new_fp": objects(image.new_fp),
        "removed_fp": objects(image.removed_fp),
        "tp": _count_change(image.tp),
        "fp": _count_change(image.fp),
        "fn": _count_change(image.fn),
    }


def diff_to_json_dict(
    diff: EvaluationDiff,
    results: Sequence[RegressionResult] = (),
    evidence: PairedBootstrap | None = None,
) -> dict[str, Any]:
    """The diff as plain JSON-ready data (documented in docs/outputs.md).

    Every metric is ``{"a", "b", "delta"}``; images come worst regression first, each with
    its new and fixed FN and new and removed FP as ``{"index", "name"}`` objects (index from
    0 in file order: the ground-truth file for FN, run B's or run A's file for FP).
    """
    conv = diff.conventions
    s = diff.summary
    return {
        "vocmatch": __version__,
        "a": diff.a_name,
        "b": diff.b_name,
        "conventions": _conventions(conv),
        "summary": {
            "map": _change(s.map),
            "precision": _change(s.precision),
            "recall": _change(s.recall),
            "f1": _change(s.f1),
            "tp": _count_change(s.tp),
            "fp": _count_change(s.fp),
            "fn": _count_change(s.fn),
            "images_changed": sum(1 for i in diff.images if i.changed),
            "worse": diff.worse,
            "better": diff.better,
        },
        "classes": [
            {
                "name": c.name,
                "gt": c.gt,
                "ap": _change(c.ap),
                "precision": _change(c.precision),
                "recall": _change(c.recall),
                "f1": _change(c.f1),
                "tp": _count_change(c.tp),
                "fp": _count_change(c.fp),
                "fn": _count_change(c.fn),
            }
            for c in diff.classes
        ],
        "images": [_image_diff(i) for i in diff.images],
        "only_a": list(diff.only_a),
        "only_b": list(diff.only_b),
        "gates": [
            {
                "gate": r.gate.label,
                "min_delta": r.gate.delta,
                "a": r.change.a,
                "b": r.change.b,
                "delta": r.change.delta,
                "passed": r.passed,
                "reason": r.reason,
                **(
                    {"p_value": r.p_value, "alpha": r.alpha, "below": r.below}
                    if evidence is not None
                    else {}
                ),
            }
            for r in results
        ],
        "passed": all(r.passed for r in results),
        **({"bootstrap": paired_json(evidence)} if evidence is not None else {}),
    }


def diff_to_json(
    diff: EvaluationDiff,
    results: Sequence[RegressionResult] = (),
    evidence: PairedBootstrap | None = None,
) -> str:
    """The diff as indented JSON text, ending in a newline."""
    return json.dumps(diff_to_json_dict(diff, results, evidence), indent=2, allow_nan=False) + "\n"


# Label sets and segmentation masks (JSON) -----------------------------------------------

__all__ += ["labels_to_json", "labels_to_json_dict", "seg_to_json", "seg_to_json_dict"]


def _label_class(cls: LabelClassResult) -> dict[str, Any]:
    return {
        "name": cls.name,
        "gt": cls.gt,
        "pred": cls.pred,
        "tp": cls.tp,
        "fp": cls.fp,
        "fn": cls.fn,
        "ignored": cls.ignored,
        "iou": cls.iou,
    }


def _label_image(image: LabelImageResult) -> dict[str, Any]:
    return {
        "image": image.key,
        "gt_path": image.gt_path,
        "pred_path": image.pred_path,
        "gt": list(image.gt),
        "pred": list(image.pred),
        "ignored": list(image.ignored),
        "missed": list(image.missed),
        "extra": list(image.extra),
        "jaccard": image.jaccard,
        "dice": image.dice,
    }


def labels_to_json_dict(evaluation: LabelEvaluation) -> dict[str, Any]:
    """A label-set evaluation as plain JSON-ready data (documented in docs/outputs.md).

    Class names are lower-case; sets are sorted lists; missing values are None.
    """
    return {
        "vocmatch": __version__,
        "mode": "labels",
        "conventions": {"difficult": evaluation.difficult, "lower_case": True},
        "summary": {
            "images": len(evaluation.images),
            "tp": evaluation.tp,
            "fp": evaluation.fp,
            "fn": evaluation.fn,
            "macro_iou": evaluation.macro_iou,
            "micro_iou": evaluation.micro_iou,
            "mean_jaccard": evaluation.mean_jaccard,
            "mean_dice": evaluation.mean_dice,
            "exact_match": evaluation.exact_match,
            "skipped": len(evaluation.skipped),
            "missing_pred": len(evaluation.missing_pred),
            "orphan_pred": len(evaluation.orphan_pred),
        },
        "classes": [_label_class(c) for c in evaluation.classes],
        "images": [_label_image(i) for i in evaluation.images],
        "skipped": [
            {"path": f.path, "line": f.line, "error": f.message} for f in evaluation.skipped
        ],
        "missing_pred": list(evaluation.missing_pred),
        "orphan_pred": list(evaluation.orphan_pred),
        "notes": list(evaluation.notes),
    }


def labels_to_json(evaluation: LabelEvaluation) -> str:
    """The label-set evaluation as indented JSON text, ending in a newline."""
    return json.dumps(labels_to_json_dict(evaluation), indent=2, allow_nan=False) + "\n"


def seg_to_json_dict(evaluation: SegEvaluation) -> dict[str, Any]:
    """A segmentation evaluation as plain JSON-ready data: the version, the ``pred_void``
    convention, then :meth:`~vocmatch.evaluation.seg.SegEvaluation.to_json_dict` (``summary.miou``,
    ``classes[].iou``, ``images``, ``skipped``)."""
    return {
        "vocmatch": __version__,
        "mode": "seg",
        "pred_void": evaluation.pred_void,
        **evaluation.to_json_dict(),
    }


def seg_to_json(evaluation: SegEvaluation) -> str:
    """The segmentation evaluation as indented JSON text, ending in a newline."""
    return json.dumps(seg_to_json_dict(evaluation), indent=2, allow_nan=False) + "\n"


# Bootstrap intervals, slices and calibration (JSON) --------------------------------------

__all__ += ["bootstrap_json"]


def _interval(interval: Interval) -> dict[str, Any]:
    return Record(
        {
            "value": interval.value,
            "low": interval.low,
            "high": interval.high,
            "defined": interval.defined,
        }
    )


def bootstrap_json(result: Bootstrap) -> dict[str, Any]:
    """The bootstrap intervals as JSON-ready data: each metric as ``{"value", "low",
    "high", "defined"}`` (``defined``: resamples in which it is defined)."""
    return {
        "resamples": result.resamples,
        "seed": result.seed,
        "confidence": result.confidence,
        "images": result.images,
        "summary": {
            "map": _interval(result.map),
            "precision": _interval(result.precision),
            "recall": _interval(result.recall),
            "f1": _interval(result.f1),
        },
        "classes": [
            {
                "name": c.name,
                "ap": _interval(c.ap),
                "precision": _interval(c.precision),
                "recall": _interval(c.recall),
                "f1": _interval(c.f1),
            }
            for c in result.classes
        ],
    }


__all__ += ["paired_json"]


def _delta_interval(change: DeltaInterval) -> dict[str, Any]:
    return {
        "a": change.a,
        "b": change.b,
        "delta": change.delta,
        "low": change.low,
        "high": change.high,
        "p_value": change.p_value,
        "defined": change.defined,
    }


def paired_json(result: PairedBootstrap) -> dict[str, Any]:
    """The paired bootstrap of a diff as JSON-ready data: each change as ``{"a", "b",
    "delta", "low", "high", "p_value", "defined"}``."""
    return {
        "resamples": result.resamples,
        "seed": result.seed,
        "confidence": result.confidence,
        "images": result.images,
        "summary": {
            "map": _delta_interval(result.map),
            "precision": _delta_interval(result.precision),
            "recall": _delta_interval(result.recall),
            "f1": _delta_interval(result.f1),
        },
        "classes": [
            {
                "name": c.name,
                "ap": _delta_interval(c.ap),
                "precision": _delta_interval(c.precision),
                "recall": _delta_interval(c.recall),
                "f1": _delta_interval(c.f1),
            }
            for c in result.classes
        ],
    }


__all__ += ["slices_json"]


def slices_json(slices: Sequence[Slice]) -> list[dict[str, Any]]:
    """Each slice as ``{"name", "rule", "values"}``, each value with its counts, precision,
    recall, F1, mAP and per-class numbers (as the ``classes`` entries, without curves)."""
    return [
        {
            "name": found.name,
            "rule": found.rule,
            "values": [
                {
                    "value": v.value,
                    "gt": v.gt,
                    "gt_ignored": v.gt_ignored,
                    "pred": v.pred,
                    "tp": v.tp,
                    "fp": v.fp,
                    "fn": v.fn,
                    "precision": v.precision,
                    "recall": v.recall,
                    "f1": v.f1,
                    "map": v.map,
                    "classes": [
                        {
                            "name": c.name,
                            "gt": c.gt,
                            "gt_ignored": c.gt_ignored,
                            "pred": c.pred,
                            "tp": c.tp,
                            "fp": c.fp,
                            "fn": c.fn,
                            "precision": c.precision,
                            "recall": c.recall,
                            "f1": c.f1,
                            "ap": c.ap,
                            "in_map": c.in_map,
                        }
                        for c in v.classes
                    ],
                }
                for v in found.values
            ],
        }
        for found in slices
    ]


__all__ += ["diff_to_markdown"]


def _md_interval(change: DeltaInterval) -> list[str]:
    if change.low is None or change.high is None:
        return ["—", "—"]
    p = "—" if change.p_value is None else f"{change.p_value:.4f}"
    return [f"[{change.low:+.4f}, {change.high:+.4f}]", p]


def _md_paired(evidence: PairedBootstrap, map_name: str) -> list[str]:
    """The paired bootstrap's interval and p-value of each change, dataset and classes."""
    coverage = f"{evidence.confidence * 100:g} %"
    lines = [
        "",
        f"### Paired bootstrap: {evidence.resamples:,} resamples of the {evidence.images:,} "
        f"images (seed {evidence.seed})",
        "",
    ]
    rows = [
        [name, _md_signed(change.delta), *_md_interval(change)]
        for name, change in (
            (map_name, evidence.map),
            ("precision", evidence.precision),
            ("recall", evidence.recall),
            ("F1", evidence.f1),
        )
    ]
    rows += [
        [f"{_md(c.name)} AP", _md_signed(c.ap.delta), *_md_interval(c.ap)] for c in evidence.classes
    ]
    lines += _md_table(("", "change", f"{coverage} interval", "p"), rows, "lrrr")
    lines += ["", "p: two-sided, of no change (the share of resamples on either side of 0)."]
    return lines


def _md_signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


def diff_to_markdown(
    diff: EvaluationDiff,
    results: Sequence[RegressionResult] = (),
    max_rows: int = MARKDOWN_MAX_IMAGES,
    evidence: PairedBootstrap | None = None,
) -> str:
    """Run B against run A as Markdown, for a pull-request comment or a CI job summary: the
    conventions, the summary (A, B, change), the classes, the images that changed (worst
    first, at most ``max_rows``; 0 lists all) and the regression gates; with ``evidence``,
    each change's paired-bootstrap interval and p-value.

    Objects are named ``class#n``, n counted from 0 in file order, as in every output.
    """
    s = diff.summary
    conventions = " · ".join(f"{name} {value}" for name, value in diff.conventions.describe())
    map_name = "mAP@[.50:.95]" if diff.conventions.coco_stats else "mAP"
    lines = [
        "## vocmatch diff",
        "",
        # Not in a code span, where backslash escapes do not work and a backtick ends it.
        f"A {_md(diff.a_name)} · B {_md(diff.b_name)}",
        "",
        _md(conventions),
        "",
        "### Summary (B - A)",
        "",
    ]
    rows = [
        [name, _md_number(c.a), _md_number(c.b), _md_signed(c.delta)]
        for name, c in (
            (map_name, s.map), ("precision", s.precision), ("recall", s.recall), ("F1", s.f1),
        )
    ]  # fmt: skip
    rows += [
        [name, str(c.a), str(c.b), f"{c.delta:+d}"]
        for name, c in (("TP", s.tp), ("FP", s.fp), ("FN", s.fn))
    ]
    lines += _md_table(("", "A", "B", "change"), rows, "lrrr")
    if evidence is not None:
        lines += _md_paired(evidence, map_name)
    lines += ["", "### Classes (B - A)", ""]
    class_rows = [
        [
            _md(c.name), str(c.gt), _md_number(c.ap.a), _md_number(c.ap.b), _md_signed(c.ap.delta),
            _md_signed(c.precision.delta), _md_signed(c.recall.delta), f"{c.tp.delta:+d}",
            f"{c.fp.delta:+d}", f"{c.fn.delta:+d}",
        ]
        for c in diff.classes
    ]  # fmt: skip
    lines += _md_table(
        ("class", "GT", "AP A", "AP B", "ΔAP", "Δprecision", "Δrecall", "ΔTP", "ΔFP", "ΔFN"),
        class_rows,
        "l" + "r" * 9,
    )
    changed = [i for i in diff.images if i.changed]
    shown = changed if max_rows == 0 else changed[:max_rows]
    lines += ["", "### Images that changed (worst first)", ""]
    if shown:
        image_rows = [
            [
                _md(i.key), str(len(i.new_fn)), str(len(i.fixed_fn)), str(len(i.new_fp)),
                str(len(i.removed_fp)), f"{i.net:+d}",
                _md(", ".join(
                    f"{label} {' '.join(str(r) for r in refs)}"
                    for label, refs in (
                        ("missed", i.new_fn), ("new FP", i.new_fp), ("found", i.fixed_fn),
                        ("FP gone", i.removed_fp),
                    )
                    if refs
                )),
            ]
            for i in shown
        ]  # fmt: skip
        lines += _md_table(
            ("image", "new FN", "fixed FN", "new FP", "removed FP", "net", "objects"),
            image_rows,
            "lrrrrrl",
        )
    more = len(changed) - len(shown)
    unchanged = len(diff.images) - len(changed)
    tail = f"; {more:,} more changed images in the JSON" if more else ""
    lines += [
        "",
        f"{len(changed):,} images changed ({diff.worse:,} new errors, {diff.better:,} fixed), "
        f"{unchanged:,} unchanged{tail}. class#n is object n (from 0) of the ground-truth file "
        "for FN, of that run's file for FP.",
    ]
    if results:
        verdict = "passed" if all(r.passed for r in results) else "failed"
        lines += ["", f"### Regression gates: {verdict}", ""]
        lines += _md_table(
            ("gate", "result", ""),
            [[_md(str(r.gate)), _md(str(r)), "pass" if r.passed else "**fail**"] for r in results],
            "lll",
        )
    return "\n".join(lines) + "\n"


__all__ += ["calibration_json"]


def _calibration_entry(entry: ClassCalibration) -> dict[str, Any]:
    return {
        "name": entry.name,
        "predictions": entry.predictions,
        "ece": entry.ece,
        "mce": entry.mce,
        "bins": [
            Record(
                {
                    "low": b.low,
                    "high": b.high,
                    "count": b.count,
                    "confidence": b.confidence,
                    "accuracy": b.accuracy,
                }
            )
            for b in entry.bins
        ],
    }


def calibration_json(result: Calibration) -> dict[str, Any]:
    """The calibration as JSON-ready data: ``iou_threshold``, ``bins``, ``clipped``,
    ``unscored``, ``all`` and ``classes``, each with ``predictions``, ``ece``, ``mce`` and
    its ``bins`` (``low``, ``high``, ``count``, ``confidence``, ``accuracy``)."""
    return {
        "iou_threshold": result.threshold,
        "bins": result.bins,
        "clipped": result.clipped,
        "unscored": result.unscored,
        "all": _calibration_entry(result.overall),
        "classes": [_calibration_entry(c) for c in result.classes],
    }

"""One self-contained HTML file: summary, per-class table and curves, confusion heat map, and a
paginated per-image table whose overlays are drawn in the browser.

The page makes no network request of any kind: styles and script are inline, pictures are
``data:`` URIs, and a Content-Security-Policy (``default-src 'none'``, the script allowed by
its SHA-256 hash) makes the browser refuse anything else. Everything the page needs about the
images goes into one embedded JSON blob, so the file opens quickly for thousands of images:
the table renders one page at a time and an overlay is drawn only when it is opened.

The blob (``<script type="application/json" id="report-data">``) holds::

    {"classes": [name, ...],                 # sorted; boxes refer to a class by index
     "outcomes": ["tp", "fp", "fn", "ignored"],
     "images": [                             # worst first: FP + FN, then FN, then key
       {"key", "file", "w", "h", "sized", "gt", "gt_ignored", "pred", "tp", "fp", "fn",
        "miou", "missing", "pic",
        "g": [[class, x1, y1, x2, y2, outcome, iou], ...],              # ground truth
        "p": [[class, x1, y1, x2, y2, outcome, iou, score(, gt)], ...]}]} # predictions

Ground truth and predictions are in file order; ``outcome`` indexes ``outcomes``. A
ground-truth outcome is ``tp`` (matched), ``fn`` or ``ignored``; a prediction's is ``tp``,
``fp`` or ``ignored``. ``iou`` is the match's IoU, or for an FP or FN the best IoU with the
same class (None for an unmatched ignored box). ``gt``, present only for a matched
prediction, is the index of its ground truth. ``sized`` says whether ``w`` and ``h`` come
from ``<size>`` (or the picture) rather than from the boxes' extent. ``pic`` says whether a
picture was embedded, as ``<script type="text/plain" id="pic-N">`` with N the image's
position in ``images``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

import jinja2
import numpy as np
import numpy.typing as npt
from markupsafe import Markup
from PIL import Image, UnidentifiedImageError

from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.errors import AnnotationError, InputError, VocmatchWarning
from vocmatch.escapes import printable
from vocmatch.evaluation.scoring import ClassResult, Evaluation, ImageResult, Match
from vocmatch.evidence.bootstrap import Bootstrap
from vocmatch.evidence.calibration import Calibration, ClassCalibration
from vocmatch.evidence.confusion import ConfusionMatrix, confusion_matrix
from vocmatch.evidence.counting import Counting
from vocmatch.evidence.slices import Slice
from vocmatch.evidence.target_thresholds import TargetThresholds
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.regular_files import open_regular
from vocmatch.render.preparation_report import STEP_TITLES, preparation_rows, preparation_title
from vocmatch.version import __version__

__all__ = [
    "CURVE_MAX_POINTS",
    "PICTURE_MAX_PIXELS",
    "PICTURE_MAX_SIDE",
    "PICTURE_SUFFIXES",
    "Pictures",
    "html_report",
    "read_pictures",
    "report_data",
]

#: Longest side, in pixels, of a picture embedded with ``--images``.
PICTURE_MAX_SIDE = 640

#: The most pixels a picture may decode to (a JPEG's after it is scaled down while decoding);
#: a larger one is refused from its header. Pillow's own decompression-bomb threshold (its
#: ``MAX_IMAGE_PIXELS`` default, where it starts to warn).
PICTURE_MAX_PIXELS = 89_478_485

#: Picture files looked for, in this order, beside ``<filename>`` and the key.
PICTURE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".JPG", ".JPEG", ".PNG")

#: Points a precision/recall curve keeps when drawn; longer curves are thinned per recall bin.
CURVE_MAX_POINTS = 600

_OUTCOMES: tuple[str, ...] = ("tp", "fp", "fn", "ignored")
_OUTCOME_CODE = {name: code for code, name in enumerate(_OUTCOMES)}

# The curve plots: a square of recall (x) by precision (y), in SVG user units.
_PLOT = 200.0
_PLOT_MARGIN = (34.0, 10.0, 30.0, 12.0)  # left, top, bottom, right
_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True, slots=True)
class Pictures:
    """Scaled-down pictures to draw the overlays on.

    Attributes:
        uris: ``data:`` URI of each image's picture, by key.
        sizes: The picture's size before scaling, by key, for images without ``<size>``.
        missing: Keys of images for which no picture was found.
    """

    uris: Mapping[str, str]
    sizes: Mapping[str, tuple[int, int]]
    missing: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Axis:
    """One tick of a curve plot's axes (internal)."""

    label: str
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class _CurvePlot:
    """One class's precision/recall curve in plot coordinates (internal)."""

    name: str
    colour: str
    points: str
    envelope: str
    operating: tuple[float, float] | None
    operating_label: str
    best: tuple[float, float] | None
    best_label: str
    ap: str
    empty: str = "no predictions"


@dataclass(frozen=True, slots=True)
class _HeatCell:
    """One cell of the confusion heat map (internal)."""

    count: int
    text: str
    background: str
    foreground: str
    title: str


def _number(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _coordinate(value: float) -> float | int:
    # Integral coordinates (the usual case) are written without ".0" to keep the blob small.
    return int(value) if value.is_integer() else round(value, 3)


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _box_row(box: Box, class_index: Mapping[str, int]) -> list[Any]:
    return [
        class_index[box.name],
        _coordinate(box.x1),
        _coordinate(box.y1),
        _coordinate(box.x2),
        _coordinate(box.y2),
    ]


def _image_entry(
    result: ImageResult,
    gt: ImageAnnotation,
    pred: ImageAnnotation | None,
    class_index: Mapping[str, int],
    pictures: Pictures | None,
) -> dict[str, Any]:
    gt_outcome: dict[int, Match] = {}
    pred_outcome: dict[int, Match] = {}
    for match in result.matches:
        if match.pred_index is not None:
            pred_outcome[match.pred_index] = match
        if match.gt_index is not None and (
            match.outcome in ("tp", "fn") or match.gt_index not in gt_outcome
        ):
            gt_outcome[match.gt_index] = match
    gt_rows = []
    for index, box in enumerate(gt.boxes):
        found = gt_outcome.get(index)
        if found is None:
            # Neither matched nor missed: a difficult object left unmatched.
            gt_rows.append([*_box_row(box, class_index), _OUTCOME_CODE["ignored"], None])
        else:
            outcome = "ignored" if found.outcome == "ignored" else found.outcome
            gt_rows.append(
                [*_box_row(box, class_index), _OUTCOME_CODE[outcome], round(found.iou, 4)]
            )
    pred_rows = []
    boxes = pred.boxes if pred is not None else ()
    for index, box in enumerate(boxes):
        found = pred_outcome.get(index)
        outcome = found.outcome if found is not None else "ignored"
        iou = round(found.iou, 4) if found is not None else None
        row = [*_box_row(box, class_index), _OUTCOME_CODE[outcome], iou, _rounded(box.score, 6)]
        if found is not None and found.gt_index is not None:
            row.append(found.gt_index)
        pred_rows.append(row)
    width, height, sized = _canvas(gt, pred, pictures)
    filename = gt.filename or (pred.filename if pred is not None else None)
    return {
        # Names as shown: the page's script sets them as text, which would turn an escape
        # written in JSON back into the character.
        "key": printable(result.key),
        "file": printable(filename) if filename is not None else None,
        "w": width,
        "h": height,
        "sized": sized,
        "gt": result.gt,
        "gt_ignored": result.gt_ignored,
        "pred": result.pred,
        "tp": result.tp,
        "fp": result.fp,
        "fn": result.fn,
        "miou": _rounded(result.mean_iou, 4),
        "missing": result.pred_path is None,
        "pic": pictures is not None and result.key in pictures.uris,
        "g": gt_rows,
        "p": pred_rows,
    }


def _canvas(
    gt: ImageAnnotation, pred: ImageAnnotation | None, pictures: Pictures | None
) -> tuple[float | int, float | int, bool]:
    """Width, height, and whether they are the image's own (not the boxes' extent)."""
    size = gt.size or (pred.size if pred is not None else None)
    if size is not None and size.width > 0 and size.height > 0:
        return _coordinate(size.width), _coordinate(size.height), True
    if pictures is not None and gt.key in pictures.sizes:
        width, height = pictures.sizes[gt.key]
        return width, height, True
    boxes = [*gt.boxes, *(pred.boxes if pred is not None else ())]
    # Without a size, the canvas is the boxes' extent and a tenth more.
    right = max((b.x2 for b in boxes), default=100.0)
    bottom = max((b.y2 for b in boxes), default=100.0)
    return math.ceil(right + right / 10) or 100, math.ceil(bottom + bottom / 10) or 100, False


def _worst_first(images: Sequence[ImageResult]) -> list[ImageResult]:
    # The terminal report's order: FP + FN (most first), then FN, then key.
    return sorted(images, key=lambda i: (-i.errors, -i.fn, i.key))


def report_data(
    evaluation: Evaluation,
    gt: AnnotationSet,
    pred: AnnotationSet,
    pictures: Pictures | None = None,
) -> dict[str, Any]:
    """The data the page's script draws the image table and overlays from.

    Args:
        evaluation: The evaluation of ``pred`` against ``gt``.
        gt: The ground-truth annotations it was computed from.
        pred: The predictions.
        pictures: Pictures to draw the overlays on, if any.

    Returns:
        JSON-ready data laid out as in the module docstring.
    """
    gt_by_key = {a.key: a for a in gt.annotations}
    pred_by_key = {a.key: a for a in pred.annotations}
    names = {c.name for c in evaluation.classes}
    for result in evaluation.images:
        names.update(b.name for b in gt_by_key[result.key].boxes)
        found = pred_by_key.get(result.key)
        if found is not None:
            names.update(b.name for b in found.boxes)
    classes = sorted(names)
    class_index = {name: i for i, name in enumerate(classes)}
    images = [
        _image_entry(
            result,
            gt_by_key[result.key],
            pred_by_key.get(result.key),
            class_index,
            pictures,
        )
        for result in _worst_first(evaluation.images)
    ]
    return {
        "classes": [printable(name) for name in classes],
        "outcomes": list(_OUTCOMES),
        "images": images,
    }


def _script_json(data: object) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``</``, ``<!--`` or ``]]>``."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _colour(index: int) -> str:
    # Hues a golden angle apart stay distinct for neighbouring classes however many there are.
    hue = (index * 137.508) % 360.0
    return f"hsl({hue:.0f} 70% 40%)"


def _x(recall: float) -> float:
    return _PLOT_MARGIN[0] + recall * _PLOT


def _y(precision: float) -> float:
    return _PLOT_MARGIN[1] + (1.0 - precision) * _PLOT


def _thinned(recall: npt.NDArray[np.float64], max_points: int) -> npt.NDArray[np.intp]:
    """Indices of the points kept when a curve is drawn.

    Recall is split into ``max_points // 4`` bins; each bin keeps its first and last point
    and its lowest and highest precision, so the drawn outline matches the full curve at any
    size the plot is shown.
    """
    size = recall.size
    if size <= max_points:
        return np.arange(size)
    bins = max(max_points // 4, 1)
    edges = np.searchsorted(recall, np.linspace(0.0, recall[-1], bins + 1)[1:-1], side="left")
    bounds = np.concatenate(([0], edges, [size]))
    return np.unique(np.concatenate((bounds[:-1], bounds[1:] - 1)))


def _points(recall: npt.NDArray[np.float64], precision: npt.NDArray[np.float64]) -> str:
    return " ".join(f"{_x(r):.1f},{_y(p):.1f}" for r, p in zip(recall, precision, strict=True))


def _curve_plot(index: int, cls: ClassResult, threshold: str) -> _CurvePlot:
    colour = _colour(index)
    operating = None
    label = "no operating point"
    if cls.recall is not None and cls.precision is not None:
        operating = (round(_x(cls.recall), 1), round(_y(cls.precision), 1))
        label = (
            f"operating point at IoU {threshold}: precision {cls.precision:.4f}, "
            f"recall {cls.recall:.4f}"
        )
    if cls.curve is None or cls.curve.recall.size == 0:
        return _CurvePlot(cls.name, colour, "", "", operating, label, None, "", _number(cls.ap))
    if cls.gt == 0:
        # Without ground truth recall is undefined (null in the JSON): no curve to draw.
        return _CurvePlot(
            cls.name, colour, "", "", operating, label, None, "", _number(cls.ap),
            empty="no ground truth: recall undefined",
        )  # fmt: skip
    recall = cls.curve.recall
    precision = cls.curve.precision
    best, best_label = _best_f1(recall, precision, cls.curve.scores)
    # The upper envelope: the highest precision at this recall or beyond.
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    keep = _thinned(recall, CURVE_MAX_POINTS)
    r, p, e = recall[keep], precision[keep], envelope[keep]
    outline = f"{_x(0.0):.1f},{_y(float(e[0])):.1f} {_points(r, e)}"
    area = f"{outline} {_x(float(r[-1])):.1f},{_y(0.0):.1f} {_x(0.0):.1f},{_y(0.0):.1f}"
    return _CurvePlot(
        cls.name, colour, _points(r, p), area, operating, label, best, best_label, _number(cls.ap)
    )


def _best_f1(
    recall: npt.NDArray[np.float64],
    precision: npt.NDArray[np.float64],
    scores: npt.NDArray[np.float64],
) -> tuple[tuple[float, float] | None, str]:
    """Where on the curve F1 is highest (the first such point), and its label."""
    total = precision + recall
    f1 = np.divide(2 * precision * recall, total, out=np.zeros_like(total), where=total > 0)
    k = int(np.argmax(f1))
    if f1[k] <= 0:
        return None, ""
    score = float(scores[k])
    cut = f"score >= {score:.4g}" if math.isfinite(score) else "every prediction"
    label = (
        f"highest F1 {f1[k]:.4f} keeping {cut}: precision {precision[k]:.4f}, "
        f"recall {recall[k]:.4f}"
    )
    return (round(_x(float(recall[k])), 1), round(_y(float(precision[k])), 1)), label


@dataclass(frozen=True, slots=True)
class _ReliabilityBar:
    """One score bin of a reliability plot, in plot coordinates (internal)."""

    x: float
    y: float
    width: float
    height: float
    dot: tuple[float, float]
    title: str


@dataclass(frozen=True, slots=True)
class _ReliabilityPlot:
    """One class's reliability plot (internal)."""

    name: str
    colour: str
    bars: tuple[_ReliabilityBar, ...]
    label: str


def _reliability_plot(entry: ClassCalibration, colour: str) -> _ReliabilityPlot:
    """A bar per bin up to its TP share, a dot at (mean score, TP share): on the diagonal
    when the scores are calibrated."""
    bars = []
    for b in entry.bins:
        if b.accuracy is None or b.confidence is None:
            continue
        top = _y(b.accuracy)
        bars.append(
            _ReliabilityBar(
                x=round(_x(b.low), 1),
                y=round(top, 1),
                width=round(_x(b.high) - _x(b.low), 1),
                height=round(_y(0.0) - top, 1),
                dot=(round(_x(min(max(b.confidence, 0.0), 1.0)), 1), round(top, 1)),
                title=f"score {b.low:.2f}-{b.high:.2f}: {b.count:,} predictions, mean score "
                f"{b.confidence:.3f}, {b.accuracy:.1%} true positives",
            )
        )
    label = (
        f"ECE {_number(entry.ece)} · MCE {_number(entry.mce)} · {entry.predictions:,} predictions"
    )
    if entry.oce is not None or entry.d_ece is not None:
        # Computed only when the run kept their inputs (calibration bins were asked for).
        label += f" · OCE {_number(entry.oce)} · D-ECE {_number(entry.d_ece)}"
    return _ReliabilityPlot(entry.name, colour, tuple(bars), label)


def _axes() -> tuple[list[_Axis], list[_Axis]]:
    x_ticks = [_Axis(f"{t:g}", _x(t), _y(0.0)) for t in _TICKS]
    y_ticks = [_Axis(f"{t:g}", _x(0.0), _y(t)) for t in _TICKS]
    return x_ticks, y_ticks


#: The heat map draws every class up to this many; beyond, the classes most confused with
#: others (the JSON of ``--errors`` has every cell).
HEAT_MAP_MAX_CLASSES = 60


def _heat_classes(matrix: ConfusionMatrix) -> list[int]:
    """The rows (and columns) the heat map draws: every class while they are few, else the
    classes most confused with others, then most confused with background; background
    last. A large matrix is read by its cells that are not zero only."""
    k = len(matrix.names) - 1
    if k <= HEAT_MAP_MAX_CLASSES:
        return list(range(k + 1))
    rows, columns, values = matrix.rows, matrix.columns, matrix.values
    between = (rows != columns) & (rows < k) & (columns < k)
    confused = np.bincount(rows[between], weights=values[between], minlength=k + 1)
    confused += np.bincount(columns[between], weights=values[between], minlength=k + 1)
    with_background = np.bincount(columns[rows == k], weights=values[rows == k], minlength=k + 1)
    with_background += np.bincount(
        rows[columns == k], weights=values[columns == k], minlength=k + 1
    )
    order = np.lexsort((np.arange(k), -with_background[:k], -confused[:k]))
    return [*sorted(order[:HEAT_MAP_MAX_CLASSES].tolist()), k]


def _heat_map(matrix: ConfusionMatrix, shown: Sequence[int]) -> list[list[_HeatCell]]:
    size = len(matrix.names)
    background = size - 1
    # The drawn part of the matrix, from the cells that are not zero.
    place = np.full(size, -1, dtype=np.int64)
    place[list(shown)] = np.arange(len(shown))
    inside = (place[matrix.rows] >= 0) & (place[matrix.columns] >= 0)
    counts = np.zeros((len(shown), len(shown)), dtype=np.int64)
    counts[place[matrix.rows[inside]], place[matrix.columns[inside]]] = matrix.values[inside]
    totals = matrix.row_totals()  # the whole row, drawn or not
    rows = []
    for a, i in enumerate(shown):
        gt_name = matrix.names[i]
        total = int(totals[i])
        row = []
        for b, j in enumerate(shown):
            pred_name = matrix.names[j]
            count = int(counts[a, b])
            if i == background and j == background:
                row.append(_HeatCell(0, "—", "", "", ""))
                continue
            share = count / total if total else 0.0
            if count == 0:
                # Most cells are empty: a class, not a style, keeps a large matrix small.
                row.append(_HeatCell(0, "·", "", "", ""))
                continue
            # One blue ramp from white; the text turns white where the cell gets dark.
            lightness = 100.0 - 62.0 * share
            row.append(
                _HeatCell(
                    count=count,
                    text=f"{count:,}" if count else "·",
                    background=f"hsl(212 80% {lightness:.0f}%)",
                    foreground="#ffffff" if share > 0.45 else "#1a1a1a",
                    title=f"GT {gt_name} → predicted {pred_name}: {count:,} "
                    f"({share:.1%} of the row)",
                )
            )
        rows.append(row)
    return rows


def _shown(value: Any) -> Any:
    """Every value the template prints: as text (a file, folder or class name, a skipped
    file's line) with its control characters and bidi overrides as escapes, before
    autoescaping; numbers, and markup of our own (the data and script blocks), as they
    are."""
    if isinstance(value, (Markup, int, float)) or value is None:
        return value
    return printable(str(value))


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("vocmatch", "templates"),
        autoescape=True,
        finalize=_shown,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _resource(name: str) -> str:
    return resources.files("vocmatch").joinpath("templates", name).read_text(encoding="utf-8")


def html_report(
    evaluation: Evaluation,
    gt: AnnotationSet,
    pred: AnnotationSet,
    pictures: Pictures | None = None,
    *,
    bootstrap: Bootstrap | None = None,
    slices: Sequence[Slice] = (),
    calibration: Calibration | None = None,
    score_start: float = 0.0,
    targets: TargetThresholds | None = None,
    counting: Counting | None = None,
) -> str:
    """The evaluation as one self-contained HTML page.

    Args:
        evaluation: The evaluation of ``pred`` against ``gt``.
        gt: The ground-truth annotations it was computed from.
        pred: The predictions.
        pictures: Pictures to draw the overlays on (see :func:`read_pictures`); without
            them each overlay is drawn on a blank canvas of the image's ``<size>``.
        bootstrap: Bootstrap intervals to show beside the numbers.
        slices: Slices to show, each value's counts and mAP.
        calibration: The scores' calibration, drawn as reliability plots.
        targets: Each class's threshold holding a target, shown as a table.
        counting: The per-image count errors, shown as a table.
        score_start: Where the overlays' score slider starts: the score threshold the
            counts use (clamped to [0, 1]), so predictions below it start hidden.

    Returns:
        The page. The same inputs always give the same text.
    """
    data = report_data(evaluation, gt, pred, pictures)
    script = _resource("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    matrix = confusion_matrix(evaluation, gt, pred)
    shown = _heat_classes(matrix)
    heat_note = ""
    if len(shown) < len(matrix.names):
        heat_note = (
            f"{len(shown) - 1:,} of the {len(matrix.names) - 1:,} classes are drawn: those most"
            " confused with other classes, then with background (the JSON of the error analysis"
            " has every cell)."
        )
    threshold = f"{evaluation.conventions.iou_threshold:g}"
    plots = [_curve_plot(i, cls, threshold) for i, cls in enumerate(evaluation.classes)]
    x_ticks, y_ticks = _axes()
    picture_blocks = []
    if pictures is not None:
        # data["images"] is in this order, its keys as shown (escaped).
        for position, result in enumerate(_worst_first(evaluation.images)):
            uri = pictures.uris.get(result.key)
            if uri is not None:
                picture_blocks.append((f"pic-{position}", uri))
    template = _environment().get_template("report.html.j2")
    return template.render(
        version=__version__,
        evaluation=evaluation,
        summary=evaluation.summary,
        gt_ignored=sum(c.gt_ignored for c in evaluation.classes),
        conventions=evaluation.conventions.describe(),
        gt_root=gt.root,
        pred_root=pred.root,
        threshold=threshold,
        number=_number,
        plots=plots,
        scored=any(p.points for p in plots),
        plot_size=_PLOT,
        plot_margin=_PLOT_MARGIN,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        matrix_names=[matrix.names[i] for i in shown],
        heat_map=_heat_map(matrix, shown),
        heat_note=heat_note,
        class_names=data["classes"],
        missing_pictures=pictures.missing if pictures is not None else (),
        with_pictures=pictures is not None,
        data=Markup(_script_json(data)),  # escaped for a script element by _script_json
        script=Markup(script),  # vocmatch's own file, allowed by its hash
        script_hash=digest,
        picture_blocks=picture_blocks,
        bootstrap=bootstrap,
        slices=slices,
        calibration=calibration,
        reliability=(
            []
            if calibration is None
            else [
                _reliability_plot(entry, "#444" if entry is calibration.overall else _colour(i - 1))
                for i, entry in enumerate((calibration.overall, *calibration.classes))
            ]
        ),
        score_start=f"{min(max(score_start, 0.0), 1.0):.2f}",
        targets=targets,
        counting=counting,
        preparation=(
            None
            if evaluation.removed is None
            else (
                preparation_title(evaluation.removed),
                ["class", *STEP_TITLES, "removed"],
                preparation_rows(evaluation.removed),
            )
        ),
    )


def _picture_path(directory: Path, annotation: ImageAnnotation) -> Path | None:
    """The picture of an annotation: ``<filename>``, else the key with a picture suffix.

    Only files inside ``directory`` are considered, whatever ``<filename>`` says.
    """
    root = directory.resolve()
    candidates: list[Path] = []
    if annotation.filename:
        name = annotation.filename.replace("\\", "/")
        candidates.append(directory / name)
        candidates.append(directory / os.path.basename(name))
    candidates.extend(directory / f"{annotation.key}{suffix}" for suffix in PICTURE_SUFFIXES)
    for candidate in candidates:
        if candidate.suffix.lower() not in (".jpg", ".jpeg", ".png"):
            continue
        try:
            resolved = candidate.resolve()
        except OSError:
            continue
        if resolved.is_relative_to(root) and resolved.is_file():
            return resolved
    return None


def _open_picture(path: Path, handle: BinaryIO) -> Image.Image:
    """The picture, its header read; Pillow's decompression-bomb warning kept from the user
    (what would be decoded is checked against vocmatch's own limit, in its words)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            return Image.open(handle)
    except Image.DecompressionBombError:
        # Pillow refuses beyond twice its own threshold, before the size can be asked.
        raise AnnotationError(
            str(path),
            f"more than {2 * (Image.MAX_IMAGE_PIXELS or 0):,} pixels, over the "
            f"{PICTURE_MAX_PIXELS:,}-pixel limit",
        ) from None


def _data_uri(path: Path, max_side: int) -> tuple[str, tuple[int, int]]:
    # Opened as a regular file first: a named pipe or a device is refused, not waited on.
    with open_regular(path, "picture") as handle, _open_picture(path, handle) as image:
        size = image.size
        # draft() lets the JPEG decoder scale down while decoding, far faster on big photos.
        image.draft("RGB", (max_side, max_side))
        # Still the header's size (a JPEG's as drafted): nothing is decoded before convert().
        width, height = image.size
        if width * height > PICTURE_MAX_PIXELS:
            raise AnnotationError(
                str(path),
                f"{width:,}x{height:,} pixels, over the {PICTURE_MAX_PIXELS:,}-pixel limit",
            )
        picture = image.convert("RGBA") if image.mode in ("P", "LA", "PA") else image
        if picture.mode == "RGBA":
            flat = Image.new("RGB", picture.size, (255, 255, 255))
            flat.paste(picture, mask=picture.getchannel("A"))
            picture = flat
        else:
            picture = picture.convert("RGB")
        picture.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        picture.save(buffer, format="JPEG", quality=80, optimize=True)
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"data:image/jpeg;base64,{encoded}", size


def read_pictures(
    directory: str | os.PathLike[str],
    gt: AnnotationSet,
    keys: Sequence[str] | None = None,
    max_side: int = PICTURE_MAX_SIDE,
) -> Pictures:
    """Find, scale down and encode the picture of each ground-truth image.

    A picture is ``DIR/<filename>``, ``DIR/`` plus the base name of ``<filename>``, or the
    key with ``.jpg``, ``.jpeg`` or ``.png``; only JPEG and PNG files inside ``DIR`` are read.
    Each is scaled to at most ``max_side`` pixels on its longer side and re-encoded as JPEG.
    Pixels are taken as stored (EXIF orientation is not applied), as annotation tools that
    write VOC XML number them.

    Args:
        directory: The directory holding the pictures.
        gt: The ground-truth annotations (for ``<filename>`` and keys).
        keys: Only these images (for example the evaluated ones); default all.
        max_side: Longest side of an embedded picture, in pixels.

    Returns:
        The pictures, and the keys of images without one.

    Raises:
        InputError: ``directory`` is not a directory.

    Warns:
        VocmatchWarning: A picture exists but cannot be decoded; its overlay is drawn blank.
    """
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"{os.fspath(directory)}: not a directory")
    wanted = set(keys) if keys is not None else None
    uris: dict[str, str] = {}
    sizes: dict[str, tuple[int, int]] = {}
    missing: list[str] = []
    for annotation in gt.annotations:
        if wanted is not None and annotation.key not in wanted:
            continue
        path = _picture_path(root, annotation)
        if path is None:
            missing.append(annotation.key)
            continue
        try:
            uris[annotation.key], sizes[annotation.key] = _data_uri(path, max_side)
        except (
            AnnotationError,
            OSError,
            UnidentifiedImageError,
            Image.DecompressionBombError,
        ) as error:
            # An AnnotationError names the path already.
            reason = error.message if isinstance(error, AnnotationError) else error
            warnings.warn(
                f"{path}: cannot read the picture ({reason}); its overlay is drawn blank",
                VocmatchWarning,
                stacklevel=2,
            )
            missing.append(annotation.key)
    return Pictures(uris=uris, sizes=sizes, missing=tuple(missing))

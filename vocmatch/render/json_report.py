"""An :class:`~vocmatch.evaluation.scoring.Evaluation` as JSON, with its error analysis,
bootstrap intervals, slices and calibration when given.

Deterministic: images sorted by key, classes by name, keys in a fixed order. Written with
``ensure_ascii`` (control, bidi and non-UTF-8 characters in names as ``\\uXXXX`` escapes,
which a JSON reader turns back into the exact name).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core.ap import Curve
from vocmatch.core.protocol import Conventions, sweep_label
from vocmatch.evaluation.thresholds import OperatingPoint, ScoreThresholds, operating_point
from vocmatch.version import __version__

if TYPE_CHECKING:
    # Only for the annotations: a report imports the modules of the parts it writes, so the
    # JSON of a plain evaluation loads no analysis, bootstrap, diff or suspects module.
    from vocmatch.evaluation.scoring import ClassResult, Evaluation, ImageResult
    from vocmatch.evaluation.shards.shard_origin import ShardCheck
    from vocmatch.evidence.analysis import ErrorAnalysis
    from vocmatch.evidence.bootstrap import Bootstrap, Interval
    from vocmatch.evidence.calibration import Calibration, ClassCalibration
    from vocmatch.evidence.counting import CountErrors, Counting
    from vocmatch.evidence.error_types import ErrorCounts
    from vocmatch.evidence.slices import Slice
    from vocmatch.evidence.target_thresholds import TargetThresholds
    from vocmatch.evidence.tightness import Distribution, Tightness

__all__ = [
    "COCO_NAMES",
    "CONFUSION_ROWS_MAX",
    "FASTJSON",
    "FloatArray",
    "FloatList",
    "ImageRows",
    "bootstrap_json",
    "calibration_json",
    "conventions_json",
    "counting_json",
    "dumps_chunks",
    "merge_json",
    "slices_json",
    "targets_json",
    "to_json",
    "to_json_chunks",
    "to_json_dict",
]

#: pycocotools' ``COCOeval.stats``, by position.
COCO_NAMES: tuple[str, ...] = (
    "AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl",
)  # fmt: skip


def _curve_corners(curve: Curve, *, arrays: bool = False) -> dict[str, NumberList | FloatArray]:
    """The precision/recall curve at its corners: each true positive and the last point.

    Between two true positives precision only falls, one false positive at a time, so these
    points hold the whole curve; AP under every interpolation depends on them alone. Writing
    every ranked prediction would make a large set's JSON mostly curve. With ``arrays``,
    lists of finite floats are :class:`FloatArray` objects (written alike, no list made).
    """
    recall = curve.recall
    last = recall.size - 1
    # Where recall rises above the point before it (above 0 at the first): np.diff's
    # ``prepend=0.0`` would copy the whole curve first.
    rises = np.flatnonzero(recall[1:] > recall[:-1]) + 1
    if last >= 0 and recall[0] > 0:
        rises = np.concatenate((np.zeros(1, dtype=rises.dtype), rises))
    # The rises are in order: the last point joins them unless it is one (np.union1d would
    # import numpy.ma on a small run).
    points = rises if last < 0 or (rises.size and rises[-1] == last) else np.append(rises, last)
    return {
        # A class without ground truth has no recall (NaN inside): null, as in its summary.
        "recall": _number_list(recall[points], nulls=True, arrays=arrays),
        "precision": _number_list(curve.precision[points], nulls=False, arrays=arrays),
        # An unscored prediction in a scored set ranks last (-inf inside): null here.
        "scores": _number_list(curve.scores[points], nulls=True, arrays=arrays),
    }


def _number_list(
    values: npt.NDArray[Any], *, nulls: bool, arrays: bool = False
) -> NumberList | FloatArray:
    """``values`` as a :class:`NumberList`: a :class:`FloatList` (a :class:`FloatArray`
    with ``arrays``) where they are all finite float64, else their list, with None for each
    value that is not finite if ``nulls``."""
    if values.dtype == np.float64 and bool(np.isfinite(values).all()):
        return FloatArray(values) if arrays else FloatList(values)
    items = values.tolist()
    return NumberList([v if math.isfinite(v) else None for v in items] if nulls else items)


def conventions_json(conv: Conventions) -> dict[str, Any]:
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
        # Stated where they differ from vocmatch's own (the outputs before them unchanged).
        **({"iou_arithmetic": conv.iou_arithmetic} if conv.iou_arithmetic != "float64" else {}),
        **({"operating_point": conv.operating_point} if conv.operating_point != "all" else {}),
    }


def _class(cls: ClassResult, *, arrays: bool = False) -> dict[str, Any]:
    curve = None
    if cls.curve is not None:
        curve = _curve_corners(cls.curve, arrays=arrays)
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


def _image_records(images: Sequence[ImageResult]) -> list[dict[str, Any]]:
    return [_image(i) for i in images]


class Encoded(str):
    """Text already encoded as JSON: written as it is by :func:`dumps_indented`."""


class _ImageLines:
    """Each image's record as one line of JSON, written directly: the same text as
    ``json.dumps`` gives :func:`_image`'s record (``", "`` and ``": "`` between items,
    ``ensure_ascii`` strings, ``int.__repr__`` and ``float.__repr__`` numbers, no NaN),
    without building the record and its sweep mapping first. A large set's JSON is mostly
    these lines: each is one ``%`` formatting of a template made once per sweep.

    A record whose values are not strs, plain ints and finite floats (or None), whose
    sweep names two thresholds alike, or whose attributes cannot be read, is left to the
    encoder as :func:`_image`'s mapping (which raises the encoder's error where it has one).
    """

    def __init__(self) -> None:
        self._templates: dict[tuple[float, ...], str | None] = {}

    def __call__(self, image: ImageResult) -> Encoded | dict[str, Any]:
        try:
            line = self._line(image)
        except (AttributeError, TypeError, ValueError):
            line = None
        # Left to the encoder, which raises its own error where it cannot write the record.
        return _image(image) if line is None else line

    def _line(self, image: ImageResult) -> Encoded | None:
        sweep = image.sweep
        thresholds = tuple(s.threshold for s in sweep)
        template = self._templates.get(thresholds, "")
        if template == "":
            template = self._templates[thresholds] = _image_template(thresholds)
        values = (
            image.gt, image.gt_ignored, image.pred, image.pred_ignored, image.tp, image.fp,
            image.fn, *[n for s in sweep for n in (s.tp, s.fp, s.fn)],
        )  # fmt: skip
        mean = image.mean_iou
        names = (image.key, image.gt_path, image.pred_path)
        if (
            template is None
            or not all(type(v) is int for v in values)
            or not (mean is None or (type(mean) is float and math.isfinite(mean)))
            or not (type(names[0]) is str and type(names[1]) is str)
            or not (names[2] is None or type(names[2]) is str)
        ):
            return None
        text = _STRING
        pred_path = "null" if names[2] is None else text(names[2])
        mean_text = "null" if mean is None else float.__repr__(mean)
        return Encoded(
            template
            % (text(names[0]), text(names[1]), pred_path, *values[:7], mean_text, *values[7:])
        )


def _image_template(thresholds: tuple[float, ...]) -> str | None:
    """The ``%`` template of :class:`_ImageLines` for a sweep at ``thresholds``, or None
    where two of them have one name (the mapping keeps the last)."""
    labels = [sweep_label(t) for t in thresholds]
    if len(set(labels)) != len(labels):
        return None
    sweep = ", ".join(
        _STRING(label).replace("%", "%%") + ': {"tp": %d, "fp": %d, "fn": %d}' for label in labels
    )
    return (
        '{"image": %s, "gt_path": %s, "pred_path": %s, "gt": %d, "gt_ignored": %d, '
        '"pred": %d, "pred_ignored": %d, "tp": %d, "fp": %d, "fn": %d, "mean_iou": %s, '
        '"sweep": {' + sweep + "}}"
    )


#: json's own string encoder (``ensure_ascii``), as the C encoder calls it.
_STRING = json.encoder.encode_basestring_ascii


class ImageRows:
    """The report's ``images`` list: :func:`dumps_indented` writes it one image a line,
    each line the text the encoder gives :func:`_image`'s record.

    The compiled writer (``vocmatch.render.fastjson``, where it is loaded) writes the lines
    from the :class:`~vocmatch.evaluation.result.ImageResult` objects in one pass, each
    name escaped as ``json.dumps`` escapes it (``ensure_ascii``); without it
    :class:`_ImageLines` writes them. An image whose values are not plain ints, strs,
    finite floats or None, or whose sweep is not the first image's, is written from its
    record by the encoder either way.

    Attributes:
        images: The images, in the report's order.
    """

    __slots__ = ("images",)

    def __init__(self, images: Sequence[ImageResult]) -> None:
        self.images = images

    def joined(self, separator: str) -> bytes:
        """Each image's line, joined by ``separator`` (ASCII), as bytes (ASCII: names are
        escaped)."""
        fast = kernels(FASTJSON)
        sweep = _sweep_keys(self.images[0]) if self.images and fast is not None else None
        if fast is not None and sweep is not None:
            rows: bytes = fast.image_rows(self.images, separator, sweep, _image_text)
            return rows
        lines = _ImageLines()
        text = separator.join([_image_text(i, lines(i)) for i in self.images])
        return text.encode("utf-8", "backslashreplace")  # ASCII: as dumps_chunks encodes

    def pieces(self, separator: str) -> list[bytes]:
        """:meth:`joined`'s bytes in consecutive pieces: where the images carry their rows
        made ahead for ``separator`` (:class:`~vocmatch.render.rows_ahead.ImagesWithRows`),
        those, with the separator between them; else :meth:`joined`'s."""
        from vocmatch.render.rows_ahead import ROW_SEPARATOR, ImagesWithRows

        images = self.images
        if not (isinstance(images, ImagesWithRows) and separator == ROW_SEPARATOR):
            return [self.joined(separator)]
        between = separator.encode("ascii")
        pieces: list[bytes] = []
        for rows in images.rows:
            if pieces:
                pieces.append(between)
            pieces.append(rows)
        return pieces


def _sweep_keys(image: ImageResult) -> tuple[tuple[float, str], ...] | None:
    """Each threshold of ``image``'s sweep with its key as the row writes it
    (``'"0.50"'``), or None where a threshold is not a float, two have one name (the
    mapping keeps the last) or the sweep cannot be read (the encoder says why)."""
    try:
        thresholds = [s.threshold for s in image.sweep]
    except (AttributeError, TypeError):
        return None
    if not all(type(t) is float for t in thresholds):
        return None
    labels = [sweep_label(t) for t in thresholds]
    if len(set(labels)) != len(labels):
        return None
    return tuple((t, _STRING(label)) for t, label in zip(thresholds, labels, strict=True))


def _image_text(image: ImageResult, line: Encoded | dict[str, Any] | None = None) -> str:
    """``image``'s line: ``line`` where it is already text, else the encoder's text of its
    record (``line``, or :func:`_image`'s)."""
    if isinstance(line, Encoded):
        return line
    return _ONE_LINE.encode(_image(image) if line is None else line)


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
    counting: Counting | None = None,
    targets: TargetThresholds | None = None,
) -> dict[str, Any]:
    """The evaluation as plain JSON-ready data (documented in docs/outputs.md); with
    ``analysis``, also the error types, confusion matrix and tightness; with ``bootstrap``,
    the intervals; with ``slices``, each slice's values. ``thresholds`` are the score
    thresholds the counts use; each class's ``operating_point`` maximises F-beta."""
    return _json_data(
        evaluation,
        analysis,
        _image_records,
        bootstrap=bootstrap,
        thresholds=thresholds,
        beta=beta,
        slices=slices,
        calibration=calibration,
        counting=counting,
        targets=targets,
    )


def _json_data(
    evaluation: Evaluation,
    analysis: ErrorAnalysis | None,
    images_json: Callable[[Sequence[ImageResult]], Any],
    *,
    bootstrap: Bootstrap | None,
    thresholds: ScoreThresholds | None,
    beta: float,
    slices: Sequence[Slice],
    calibration: Calibration | None,
    counting: Counting | None = None,
    targets: TargetThresholds | None = None,
    arrays: bool = False,
) -> dict[str, Any]:
    """:func:`to_json_dict`, the ``images`` list made by ``images_json``; with ``arrays``,
    the curves' lists of finite floats as :class:`FloatArray` objects."""
    conv = evaluation.conventions
    s = evaluation.summary
    conventions = conventions_json(conv)
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
            {
                **_class(c, arrays=arrays),
                "operating_point": _operating(operating_point(c.curve, c.gt, beta)),
            }
            for c in evaluation.classes
        ],
        "images": images_json(evaluation.images),
    }
    if evaluation.coco is not None:
        data["coco"] = dict(zip(COCO_NAMES, evaluation.coco.as_list(), strict=True))
    if evaluation.ultralytics is not None:
        data["ultralytics"] = evaluation.ultralytics.as_dict()
    data["skipped"] = [
        {"path": f.path, "line": f.line, "error": f.message} for f in evaluation.skipped
    ]
    data["missing_pred"] = list(evaluation.missing_pred)
    data["orphan_pred"] = list(evaluation.orphan_pred)
    data["notes"] = list(evaluation.notes)
    if evaluation.removed is not None:
        # Imported here: a run without preparation loads no part of its report.
        from vocmatch.render.preparation_report import preparation_json

        data["preparation"] = preparation_json(evaluation.removed)
    if analysis is not None:
        _add_analysis(data, analysis)
    if bootstrap is not None:
        data["bootstrap"] = bootstrap_json(bootstrap)
    if slices:
        data["slices"] = slices_json(slices)
    if calibration is not None:
        data["calibration"] = calibration_json(calibration)
    if counting is not None:
        data["counts"] = counting_json(counting)
    if targets is not None:
        data["target_thresholds"] = targets_json(targets)
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
    counting: Counting | None = None,
    targets: TargetThresholds | None = None,
    merge: ShardCheck | None = None,
) -> str:
    """The evaluation (and its error analysis, if given) as indented JSON, ending in a newline;
    with ``merge``, the ``merge`` object of states merged that are not known to be one whole
    run.

    Lists of plain numbers (the precision/recall curves, histograms) and each image's record
    are written on one line each: a large result reads as a table, one image per line (for
    ``grep``), and the C encoder writes the bulk of it. :func:`to_json_chunks` gives the
    same text as the UTF-8 bytes a file holds (ASCII: names are escaped).
    """
    chunks = to_json_chunks(
        evaluation,
        analysis,
        bootstrap=bootstrap,
        thresholds=thresholds,
        beta=beta,
        slices=slices,
        calibration=calibration,
        counting=counting,
        targets=targets,
        merge=merge,
    )
    return b"".join(chunks).decode("utf-8")


def to_json_chunks(
    evaluation: Evaluation,
    analysis: ErrorAnalysis | None = None,
    *,
    bootstrap: Bootstrap | None = None,
    thresholds: ScoreThresholds | None = None,
    beta: float = 1.0,
    slices: Sequence[Slice] = (),
    calibration: Calibration | None = None,
    counting: Counting | None = None,
    targets: TargetThresholds | None = None,
    merge: ShardCheck | None = None,
) -> list[bytes]:
    """:func:`to_json`'s text encoded as UTF-8, in consecutive pieces to be written one after
    the other (:func:`vocmatch.files.save_chunks`): a large report is never copied whole to
    be joined or encoded."""
    data = _json_data(
        evaluation,
        analysis,
        # The error analysis adds to each image's record: records, then.
        ImageRows if analysis is None else _image_records,
        bootstrap=bootstrap,
        thresholds=thresholds,
        beta=beta,
        slices=slices,
        calibration=calibration,
        counting=counting,
        targets=targets,
        arrays=True,
    )
    if merge is not None:
        data["merge"] = merge_json(merge)
    return dumps_chunks(data)


def merge_json(check: ShardCheck) -> dict[str, Any]:
    """The ``merge`` object: whether the states merged are known to be every shard of one
    run, each once, and what was found instead."""
    return {
        "complete": check.complete,
        "partial": check.partial,
        "shards": check.shards,
        "present": list(check.present),
        "missing": list(check.missing),
        "repeated": list(check.repeated),
        "runs": check.runs,
        "unchecked": list(check.unchecked),
    }


class NumberList(list[float | None]):
    """A list known to hold only numbers (or None): written on one line without a check."""


class FloatList(NumberList):
    """A :class:`NumberList` of finite floats that keeps their float64 array, which
    :func:`dumps_indented` formats in C where the compiled writer
    (``vocmatch.render.fastjson``) is loaded: the same text as ``json.dumps`` gives the list.

    Attributes:
        array: ``(K,)`` the values, finite float64, C-contiguous.
    """

    __slots__ = ("array",)

    def __init__(self, array: npt.NDArray[np.float64]) -> None:
        super().__init__(array.tolist())
        self.array = np.ascontiguousarray(array)


class FloatArray:
    """Finite float64 values that :func:`dumps_indented` writes as the text of their list
    (in C where the compiled writer is loaded) without making the list: the curves of
    :func:`to_json`, which gives only text.

    Attributes:
        array: ``(K,)`` the values, finite float64.
        text: Their list's text as the compiled writer gives it, once formatted ahead
            (:mod:`~vocmatch.render.float_texts`); None until then.
    """

    __slots__ = ("array", "text")

    def __init__(self, array: npt.NDArray[np.float64]) -> None:
        self.array = np.ascontiguousarray(array)
        self.text: bytes | None = None


#: The compiled writer of float lists (vocmatch/render/fastjson.c).
FASTJSON = "vocmatch.render.fastjson"


class Record(dict[str, Any]):
    """A mapping written on one line by :func:`dumps_indented` (one of many alike)."""


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


_ONE_LINE = json.JSONEncoder(allow_nan=False)


def _finite_float(value: float) -> str | None:
    return float.__repr__(value) if math.isfinite(value) else None


#: The text of a value of each plain type, as the encoder writes it (None: the encoder's
#: own call, for its error on a float that is not finite).
_SCALARS: dict[type, Callable[[Any], str | None]] = {
    str: _STRING,
    int: int.__repr__,
    float: _finite_float,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "null",
}
_BATCH = 50_000  # fragments joined at once by dumps_indented


def dumps_indented(data: Any) -> str:
    """``json.dumps(data, indent=2)``, with every list of numbers and every
    :class:`Record` kept on one line (written by the C encoder), each :class:`FloatArray`
    as its list and each :class:`ImageRows` as a list of one image a line.

    Raises:
        TypeError: A mapping key is not a string.
    """
    return b"".join(dumps_chunks(data)).decode("utf-8")


def dumps_chunks(data: Any) -> list[bytes]:
    """:func:`dumps_indented`'s text as UTF-8 bytes, in consecutive pieces: the compiled
    writer's lists and rows as it gives them, the text between them joined a batch at a time.

    Raises:
        TypeError: A mapping key is not a string.
    """
    parts: list[str] = []
    # The text is joined and encoded a batch of fragments at a time: millions of small
    # strings (a result with tens of thousands of classes) would hold several times the
    # text's own size at once. Every fragment is ASCII (``ensure_ascii``), so the encoding
    # is a copy; "backslashreplace" as :func:`vocmatch.files.save_text` writes text.
    chunks: list[bytes] = []
    encode = _ONE_LINE.encode
    fast = kernels(FASTJSON)

    def flush() -> None:
        if parts:
            chunks.append("".join(parts).encode("utf-8", "backslashreplace"))
            parts.clear()

    def add(piece: bytes | str) -> None:
        flush()
        # An extension built from a source older than its bytes gives the same text as str.
        chunks.append(piece.encode("ascii") if isinstance(piece, str) else piece)

    def write(value: Any, pad: str) -> None:
        if len(parts) >= _BATCH:
            flush()
        scalar = _SCALARS.get(type(value))
        if scalar is not None and (text := scalar(value)) is not None:
            parts.append(text)
        elif isinstance(value, Encoded):
            parts.append(value)
        elif isinstance(value, ImageRows):
            if not value.images:
                parts.append("[]")
                return
            inner = pad + "  "
            parts.append("[\n" + inner)
            for piece in value.pieces(",\n" + inner):
                add(piece)
            parts.append(f"\n{pad}]")
        elif isinstance(value, FloatArray):
            if value.text is not None:
                add(value.text)
            elif fast is not None:
                add(fast.float_list(value.array))
            else:
                parts.append(encode(value.array.tolist()))
        elif fast is not None and isinstance(value, FloatList):
            add(fast.float_list(value.array))
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
                parts.append(f"{separator}{inner}{_STRING(key)}: ")
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

    if fast is not None:
        from vocmatch.render.float_texts import format_ahead

        format_ahead(data, fast)
    write(data, "")
    parts.append("\n")
    flush()
    return chunks


def _error_counts(counts: ErrorCounts) -> dict[str, int]:
    from vocmatch.evidence.error_types import ERROR_TYPES

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
    from vocmatch.evidence.error_types import ERROR_TYPES, ErrorCounts

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


def _calibration_entry(entry: ClassCalibration) -> dict[str, Any]:
    return {
        "name": entry.name,
        "predictions": entry.predictions,
        "ece": entry.ece,
        "mce": entry.mce,
        "objects": entry.objects,
        "oce": entry.oce,
        "d_ece_predictions": entry.d_ece_predictions,
        "d_ece": entry.d_ece,
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
    ``unscored``, ``detection`` (OCE and D-ECE were computed), ``oce_iou_thresholds``,
    ``unsized`` (predictions D-ECE leaves out), ``all`` and ``classes``, each with
    ``predictions``, ``ece``, ``mce``, ``objects``, ``oce``, ``d_ece_predictions``,
    ``d_ece`` and its ``bins`` (``low``, ``high``, ``count``, ``confidence``,
    ``accuracy``)."""
    return {
        "iou_threshold": result.threshold,
        "bins": result.bins,
        "clipped": result.clipped,
        "unscored": result.unscored,
        "detection": result.detection,
        "oce_iou_thresholds": list(result.oce_thresholds),
        "unsized": result.unsized,
        "all": _calibration_entry(result.overall),
        "classes": [_calibration_entry(c) for c in result.classes],
    }


def _count_errors(errors: CountErrors) -> dict[str, Any]:
    return {
        "mae": _interval(errors.mae),
        "rmse": _interval(errors.rmse),
        "bias": _interval(errors.bias),
    }


def counting_json(result: Counting) -> dict[str, Any]:
    """The counts as JSON-ready data: each number as ``{"value", "low", "high",
    "defined"}`` (``low`` and ``high`` null without resamples)."""
    return {
        "images": result.images,
        "score_thresholds": result.thresholds,
        "resamples": result.resamples,
        "seed": result.seed,
        "confidence": result.confidence,
        "classes": [
            {
                "name": c.name,
                "gt": c.gt,
                "pred": c.pred,
                **_count_errors(c.errors),
                "presence_recall": _interval(c.presence.recall),
                "false_alarm_rate": _interval(c.presence.false_alarm),
                "images_with": c.presence.images_with,
                "images_without": c.presence.images_without,
            }
            for c in result.classes
        ],
        "class_mean": _count_errors(result.class_mean),
        "objects": _count_errors(result.objects),
    }


def targets_json(result: TargetThresholds) -> dict[str, Any]:
    """The thresholds holding a target as JSON-ready data: per class ``threshold`` (null
    without one, then ``reason`` says why), ``precision``, ``recall``, ``bound`` and
    ``tried``."""
    target = result.target
    return {
        "metric": target.metric,
        "target": target.value,
        "confidence": target.confidence,
        "resamples": target.resamples,
        "seed": target.seed,
        "images": result.images,
        "classes": [
            Record(
                {
                    "name": c.name,
                    "threshold": c.threshold,
                    "precision": c.precision,
                    "recall": c.recall,
                    "bound": c.bound,
                    "tried": c.tried,
                    "reason": c.reason,
                }
            )
            for c in result.classes
        ],
    }

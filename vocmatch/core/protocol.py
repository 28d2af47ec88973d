"""Named evaluation protocols: the conventions that make one evaluator's numbers differ from
another's, gathered in one record so that each can be chosen and stated in the report.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from vocmatch.checks import (
    FIELD_BOUNDS,
    checked_bounded,
    checked_flag,
    checked_name,
    checked_number,
    known_list,
)
from vocmatch.errors import RequestError

if TYPE_CHECKING:
    # Types only: this module is imported to draw the command line's help, without numpy.
    from vocmatch.core.ap import Interpolation
    from vocmatch.core.match import MatchRule

__all__ = [
    "COCO_IOU_THRESHOLDS",
    "DIFFICULT_RULES",
    "INTERPOLATIONS",
    "IOU_ARITHMETICS",
    "MATCH_RULES",
    "OPERATING_POINTS",
    "PRESETS",
    "PROTOCOLS",
    "PROTOCOL_NAMES",
    "SUMMARY_KINDS",
    "SWEEP_THRESHOLDS",
    "ULTRALYTICS_IOU_THRESHOLDS",
    "Conventions",
    "DifficultRule",
    "IouArithmetic",
    "OperatingPoint",
    "Preset",
    "SummaryKind",
    "conventions_of",
    "iou_thresholds",
    "protocol",
    "sweep_label",
    "threshold_list",
]

#: What a ``difficult`` object is: ``"ignore"`` (neither TP, FP nor FN), ``"count"`` (an
#: ordinary object), ``"crowd"`` (pycocotools' ``iscrowd``) or ``"drop"`` (removed before
#: matching, as if never annotated: a prediction on it is a false positive).
DifficultRule = Literal["ignore", "count", "crowd", "drop"]

#: Which summary a protocol reports: ``"voc"``, AP and mAP at the match threshold (the
#: PASCAL VOC devkit's); ``"coco"``, AP averaged over ``ap_thresholds`` with pycocotools'
#: 12 summary numbers (AP50, AP75, by area, recall at 1, 10 and 100 detections);
#: ``"ultralytics"``, the ``ultralytics`` package's P, R, mAP50 and mAP50-95.
SummaryKind = Literal["voc", "coco", "ultralytics"]

#: The arithmetic of an IoU: ``"float64"`` (vocmatch's), or ``"float32"`` (the
#: ``ultralytics`` package's ``box_iou``: float32 throughout, ``1e-7`` added to the union).
IouArithmetic = Literal["float64", "float32"]

#: Where the summary's precision and recall are read: ``"all"`` (every prediction kept
#: counts) or ``"max-f1"`` (the ``ultralytics`` package's: each class's precision and recall
#: at the one confidence that maximises the smoothed mean F1 on a 1,000-point grid).
OperatingPoint = Literal["all", "max-f1"]

#: The names each convention takes (the Literal types' values, for the checks of a request).
MATCH_RULES: tuple[MatchRule, ...] = ("unmatched", "devkit", "unmatched-first", "iou-order")
DIFFICULT_RULES: tuple[DifficultRule, ...] = ("ignore", "count", "crowd", "drop")
INTERPOLATIONS: tuple[Interpolation, ...] = (
    "all-point",
    "11-point",
    "101-point",
    "101-point-trapezoid",
    "101-point-trapezoid-to-1",
)
SUMMARY_KINDS: tuple[SummaryKind, ...] = ("voc", "coco", "ultralytics")
IOU_ARITHMETICS: tuple[IouArithmetic, ...] = ("float64", "float32")
OPERATING_POINTS: tuple[OperatingPoint, ...] = ("all", "max-f1")


def _evenly_spaced(start: float, stop: float, count: int) -> tuple[float, ...]:
    """``count`` numbers from ``start`` to ``stop`` included, each ``start + i * step`` and
    the last ``stop``: ``numpy.linspace``'s values, bit for bit, without numpy.

    >>> _evenly_spaced(0.5, 0.95, 10)[8]
    0.8999999999999999
    """
    if count == 1:
        return (float(start),)
    step = (stop - start) / (count - 1)
    return (*(i * step + start for i in range(count - 1)), float(stop))


#: pycocotools' ``iouThrs`` (0.50:0.05:0.95), built the same way (``np.linspace``) so
#: values are identical.
COCO_IOU_THRESHOLDS: tuple[float, ...] = _evenly_spaced(0.5, 0.95, round((0.95 - 0.5) / 0.05) + 1)


def _float32(value: float) -> float:
    """``value`` rounded to the nearest float32, as a Python float (exactly that float32)."""
    rounded: float = struct.unpack("f", struct.pack("f", value))[0]
    return rounded


#: The ``ultralytics`` package's ``iouv``: the COCO ten as float32 (``torch.linspace``'s
#: float32 values, which are numpy's rounded to float32), held here as the float64 numbers
#: equal to them, so that a float32 IoU compares with them as the package's does.
ULTRALYTICS_IOU_THRESHOLDS: tuple[float, ...] = tuple(
    _float32(value) for value in _evenly_spaced(0.5, 0.95, 10)
)

#: The thresholds every per-image report shows: PASCAL VOC / COCO AP50, COCO AP75, and
#: near-exact.
SWEEP_THRESHOLDS: tuple[float, ...] = (0.5, 0.75, 0.95)


def threshold_list(field: str, values: object, *, keep_order: bool = False) -> tuple[float, ...]:
    """IoU thresholds given as a sequence of numbers: each finite and in [0, 1], at least
    one; ascending and each once (as :func:`iou_thresholds` reads them) unless
    ``keep_order``.

    Raises:
        RequestError: A threshold is not a number in [0, 1], or none is given.

    >>> threshold_list("sweep_thresholds", [0.75, 0.5, 0.5])
    (0.5, 0.75)
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, (tuple, list)):
        raise RequestError(
            field, f"expected a sequence of IoU thresholds, got {type(values).__name__}"
        )
    if not values:
        raise RequestError(field, "no threshold given")
    iou = FIELD_BOUNDS["iou"]  # each is an IoU threshold
    low, high = iou.low, iou.high
    numbers = [checked_number(field, value, low=low, high=high) for value in values]
    return tuple(numbers) if keep_order else tuple(sorted(set(numbers)))


@dataclass(frozen=True, slots=True)
class Conventions:
    """Every convention an evaluation depends on.

    Attributes:
        protocol: The preset these conventions started from.
        iou_threshold: The threshold for TP/FP/FN counts and, outside ``coco``, for AP.
        strict_threshold: Match at ``IoU > t`` (the Python ``voc_eval.py`` of py-faster-rcnn and
            Detectron) instead of ``IoU >= t`` (the MATLAB devkit's ``VOCevaldet.m``, pycocotools).
        pixel_inclusive: The devkit's ``+ 1`` widths and heights; otherwise continuous.
        match_rule: ``"unmatched"`` (best still-unmatched GT, the later one on IoU ties),
            ``"unmatched-first"`` (the same, the earlier one on ties, no preference of
            counting GT over ignored GT: the ``ultralytics`` package's), ``"devkit"`` or
            ``"iou-order"`` (the devkit's, IoU ties as the ``ultralytics`` package up to
            8.4.175 breaks them).
        difficult: ``"ignore"`` (neither TP, FP nor FN), ``"count"`` (ordinary objects),
            ``"crowd"`` (pycocotools ``iscrowd``: intersection over prediction area, absorbs
            any number of predictions, which are ignored) or ``"drop"`` (removed before
            matching: a prediction on one is a false positive).
        iou_arithmetic: ``"float64"`` or ``"float32"`` (:data:`IouArithmetic`).
        interpolation: How AP is read off the precision/recall curve.
        ap_thresholds: The IoU thresholds AP is averaged over.
        max_dets: Highest-scored predictions kept per image and class (COCO's 100).
        summary: The summary reported (:data:`SummaryKind`): ``"voc"``, ``"coco"``
            (pycocotools' 12 numbers, AP averaged over ``ap_thresholds``) or
            ``"ultralytics"`` (the package's P, R, mAP50 and mAP50-95).
        operating_point: Where the summary's precision and recall are read
            (:data:`OperatingPoint`).
        sweep_thresholds: The IoU thresholds of each image's TP/FP/FN sweep, ascending.

    Example:
        >>> conventions = Conventions("mine", iou_threshold=0.7, interpolation="11-point")
        >>> conventions.iou_threshold, conventions.match_rule
        (0.7, 'unmatched')
    """

    protocol: str
    iou_threshold: float = 0.5
    strict_threshold: bool = False
    pixel_inclusive: bool = False
    match_rule: MatchRule = "unmatched"
    difficult: DifficultRule = "ignore"
    interpolation: Interpolation = "all-point"
    ap_thresholds: tuple[float, ...] = (0.5,)
    max_dets: int | None = None
    summary: SummaryKind = "voc"
    sweep_thresholds: tuple[float, ...] = SWEEP_THRESHOLDS
    iou_arithmetic: IouArithmetic = "float64"
    operating_point: OperatingPoint = "all"

    def __post_init__(self) -> None:
        """Refuse a value no evaluation can use (NaN, out of range, an unknown name), naming
        its field: every convention, from a preset, a request or by hand, is checked here;
        the sweep's thresholds are kept ascending, each once."""
        if not isinstance(self.protocol, str):
            raise RequestError("protocol", "expected a name", str(self.protocol))
        checked_bounded("iou_threshold", self.iou_threshold, FIELD_BOUNDS["iou"])
        checked_flag("strict_threshold", self.strict_threshold)
        checked_flag("pixel_inclusive", self.pixel_inclusive)
        checked_name("match_rule", self.match_rule, MATCH_RULES, what="match rule")
        checked_name("difficult", self.difficult, DIFFICULT_RULES, what="difficult rule")
        checked_name("interpolation", self.interpolation, INTERPOLATIONS, what="interpolation")
        checked_name("summary", self.summary, SUMMARY_KINDS, what="summary kind")
        checked_name("iou_arithmetic", self.iou_arithmetic, IOU_ARITHMETICS, what="arithmetic")
        checked_name(
            "operating_point", self.operating_point, OPERATING_POINTS, what="operating point"
        )
        if self.operating_point == "max-f1" and self.summary != "ultralytics":
            raise RequestError(
                "operating_point", "'max-f1' is read by the ultralytics summary only", "max-f1"
            )
        checked_bounded("max_dets", self.max_dets, FIELD_BOUNDS["max_dets"], optional=True)
        threshold_list("ap_thresholds", self.ap_thresholds, keep_order=True)
        sweep = threshold_list("sweep_thresholds", self.sweep_thresholds)
        if sweep != self.sweep_thresholds:
            object.__setattr__(self, "sweep_thresholds", sweep)

    def describe(self) -> tuple[tuple[str, str], ...]:
        """The conventions in force as ``(name, value)`` pairs for a report header."""
        comparison = ">" if self.strict_threshold else ">="
        if self.summary in ("coco", "ultralytics"):
            ap = "mean over IoU 0.50:0.05:0.95"
        else:
            ap = f"at IoU {comparison} {self.iou_threshold:g}"
        rules = {
            "devkit": "best GT even if taken (VOC devkit)",
            "unmatched": "best unmatched GT",
            "unmatched-first": "best unmatched GT, the first on ties",
            "iou-order": "best GT even if taken, ties as ultralytics <= 8.4.175 sorts them",
        }
        extra: tuple[tuple[str, str], ...] = ()
        if self.summary == "ultralytics":
            extra = (
                ("IoU arithmetic", self.iou_arithmetic),
                ("classes averaged", "those with ground truth"),
                (
                    "P/R",
                    "at the confidence of the highest smoothed mean F1"
                    if self.operating_point == "max-f1"
                    else "all predictions",
                ),
            )
        elif self.iou_arithmetic != "float64":
            extra = (("IoU arithmetic", self.iou_arithmetic),)
        return (
            ("protocol", self.protocol),
            ("match", f"IoU {comparison} {self.iou_threshold:g}"),
            ("areas", "pixel-inclusive (+1)" if self.pixel_inclusive else "continuous"),
            ("match rule", rules[self.match_rule]),
            ("difficult", self.difficult),
            ("AP", f"{self.interpolation}, {ap}"),
            ("max dets", "all" if self.max_dets is None else f"{self.max_dets} per image-class"),
            *extra,
        )

    def with_threshold(self, threshold: float) -> Conventions:
        """A copy with another IoU threshold (and, outside COCO, AP at that threshold)."""
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"IoU threshold must be within [0, 1], got {threshold}")
        ap = self.ap_thresholds if self.summary in ("coco", "ultralytics") else (threshold,)
        return replace(self, iou_threshold=threshold, ap_thresholds=ap)


@dataclass(frozen=True, slots=True)
class Preset:
    """A named protocol: its conventions (named by ``conventions.protocol``) and the
    evaluator they reproduce.

    Attributes:
        conventions: The conventions the name stands for.
        source: The evaluator they reproduce, for the help (empty for vocmatch's own).
    """

    conventions: Conventions
    source: str = ""

    @property
    def name(self) -> str:
        """The protocol's name (``voc07``)."""
        return self.conventions.protocol


#: The ``ultralytics`` preset's conventions, which its earlier releases' presets vary.
_ULTRALYTICS = Conventions(
    protocol="ultralytics",
    match_rule="unmatched-first",
    difficult="drop",
    interpolation="101-point-trapezoid",
    ap_thresholds=ULTRALYTICS_IOU_THRESHOLDS,
    summary="ultralytics",
    iou_arithmetic="float32",
    operating_point="max-f1",
)

#: Every named protocol, each written once: the names, the command line's choices and help,
#: and :func:`protocol` read these.
PRESETS: tuple[Preset, ...] = (
    # vocmatch's default: VOC all-point AP on continuous coordinates, with the
    # one-to-one "best unmatched ground truth" rule of pycocotools.
    Preset(Conventions(protocol="default")),
    # PASCAL VOC 2007: as voc12 with 11-point interpolated AP.
    Preset(
        Conventions(
            protocol="voc07",
            pixel_inclusive=True,
            match_rule="devkit",
            interpolation="11-point",
        ),
        "PASCAL VOC devkit",
    ),
    # PASCAL VOC devkit 2010-2012 (VOCevaldet.m / voc_eval.py): all-point AP, +1 pixel
    # areas, the devkit's match rule, difficult objects ignored.
    Preset(
        Conventions(
            protocol="voc12",
            pixel_inclusive=True,
            match_rule="devkit",
            interpolation="all-point",
        ),
        "PASCAL VOC devkit",
    ),
    # pycocotools COCOeval, iouType="bbox".
    Preset(
        Conventions(
            protocol="coco",
            difficult="crowd",
            interpolation="101-point",
            ap_thresholds=COCO_IOU_THRESHOLDS,
            max_dets=100,
            summary="coco",
        ),
        "pycocotools COCOeval",
    ),
    # The ultralytics package's detection validation metrics (releases 8.4.176 on): float32
    # IoU, best unclaimed GT first on ties, AP by np.interp at 101 recall points and the
    # trapezoid rule, P and R at the highest smoothed mean F1; its VOC converter drops
    # difficult objects.
    Preset(_ULTRALYTICS, "ultralytics detection val"),
    # Its releases 8.4.37 to 8.4.175: each detection goes to the GT of highest IoU even if
    # taken (the highest-confidence detection keeps it), as the VOC devkit.
    Preset(
        replace(_ULTRALYTICS, protocol="ultralytics-8.4.175", match_rule="iou-order"),
        "ultralytics detection val",
    ),
    # Its releases 8.3.0 to 8.4.36: as 8.4.175, the envelope falling to 0 at recall 1.
    Preset(
        replace(
            _ULTRALYTICS,
            protocol="ultralytics-8.4.36",
            match_rule="iou-order",
            interpolation="101-point-trapezoid-to-1",
        ),
        "ultralytics detection val",
    ),
)

#: The conventions of each named protocol.
PROTOCOLS: dict[str, Conventions] = {preset.name: preset.conventions for preset in PRESETS}

#: The protocols' names, sorted.
PROTOCOL_NAMES: tuple[str, ...] = tuple(sorted(PROTOCOLS))


def iou_thresholds(text: str) -> tuple[float, ...]:
    """IoU thresholds written as a list (``0.5,0.75``) or a range ``start:stop:step``, the
    stop included (``0.5:0.95:0.05``, the COCO ten, built as pycocotools builds ``iouThrs``).

    Raises:
        ValueError: A value that is not a number in [0, 1], a range without a step or with a
            step that does not divide it, or no threshold.

    >>> iou_thresholds("0.5:0.95:0.05") == COCO_IOU_THRESHOLDS
    True
    >>> iou_thresholds("0.75, 0.5")
    (0.5, 0.75)
    """
    parts = [part.strip() for part in text.split(":")]

    def number(part: str) -> float:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"{part!r} is not a number") from None
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{part!r} is not an IoU in [0, 1]")
        return value

    if len(parts) == 1:
        values = sorted({number(part.strip()) for part in text.split(",") if part.strip()})
        if not values:
            raise ValueError("no threshold given: write 0.5,0.75 or 0.5:0.95:0.05")
        return tuple(values)
    if len(parts) != 3:
        raise ValueError(f"{text!r}: a range is start:stop:step, as 0.5:0.95:0.05")
    start, stop, step = (number(part) for part in parts)
    count = (stop - start) / step if step > 0 else -1.0
    if stop < start or step <= 0 or abs(count - round(count)) > 1e-9:
        raise ValueError(
            f"{text!r}: the step must be above 0 and divide stop - start, as 0.5:0.95:0.05"
        )
    return _evenly_spaced(start, stop, round(count) + 1)


def sweep_label(threshold: float) -> str:
    """A sweep threshold as the reports name it: two places, more only when needed.

    >>> sweep_label(0.5), sweep_label(0.555), sweep_label(COCO_IOU_THRESHOLDS[8])
    ('0.50', '0.555', '0.90')
    """
    two = f"{threshold:.2f}"
    # linspace's 0.9000000000000001 (pycocotools' own thresholds) is 0.90.
    return two if abs(float(two) - threshold) < 1e-9 else f"{threshold:g}"


def protocol(name: str) -> Conventions:
    """The preset conventions of a named protocol.

    Raises:
        RequestError: No protocol has that name (field ``protocol``); the message lists
            the known ones.

    >>> protocol("voc07").interpolation
    '11-point'
    >>> protocol("voc2012")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vocmatch.errors.RequestError: protocol 'voc2012': no such protocol (known: coco, ...)
    """
    return conventions_of(name)


def conventions_of(given: object, field: str = "protocol") -> Conventions:
    """The conventions a protocol name or a :class:`Conventions` stands for.

    Args:
        given: A protocol name (``"voc07"``) or conventions.
        field: The keyword the value was given as, named by the error.

    Raises:
        RequestError: No protocol has that name, or the value is neither.
    """
    if isinstance(given, Conventions):
        return given
    if isinstance(given, str) and given in PROTOCOLS:
        return PROTOCOLS[given]
    known = known_list(PROTOCOLS)
    if isinstance(given, str):
        raise RequestError(field, f"no such protocol (known: {known})", given)
    raise RequestError(
        field,
        f"expected a protocol name ({known}) or Conventions, got {type(given).__name__}",
    )

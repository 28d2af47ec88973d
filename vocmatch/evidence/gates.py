"""Quality gates: lower bounds on dataset and per-class metrics, and per-image limits on
false positives and missed objects, checked against an
:class:`~vocmatch.evaluation.scoring.Evaluation`.

A gate reads ``METRIC=VALUE`` (the dataset) or ``CLASS:METRIC=VALUE`` (one class) and passes
when the measured value is at least ``VALUE``. The metrics are ``map``, ``precision``,
``recall`` and ``f1``: for the dataset, mAP and the micro-averaged counts of the summary; for a
class, its AP (``ap`` and ``map`` name the same thing) and its own precision, recall and F1.

Decisions a gate has to make, stated once:

- A measured value equal to the bound up to float rounding (relative 1e-9) passes, so a mean
  that lands a hair below a value it equals on paper does not fail a job.
- A metric that is not defined (mAP without scores, recall of a class without ground truth)
  fails its gate, with the reason in the message: a gate that cannot be measured has not
  been met.
- A class named in a gate that appears in neither the ground truth nor the predictions is
  an error (:class:`~vocmatch.errors.InputError`), not a failed gate: it is almost always a
  typo, and a typo should not read as a model regression.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from vocmatch.core.numbers import read_number
from vocmatch.errors import InputError, Message, Option
from vocmatch.evaluation.scoring import ClassResult, Evaluation, ImageResult

if TYPE_CHECKING:
    from vocmatch.evidence.slices import Slice, SliceValue
    from vocmatch.evidence.target_thresholds import TargetThresholds

__all__ = [
    "METRICS",
    "Gate",
    "GateReport",
    "GateResult",
    "GateText",
    "ImageCheck",
    "Metric",
    "check_gates",
    "parse_gate",
    "read_gate_text",
]

Metric = Literal[
    "map", "precision", "recall", "f1", "ap50", "ap75", "reached", "map50-95", "p", "r"
]

#: The metrics a gate can bound, in the order messages list them. ``reached`` reads the
#: thresholds holding a target (:mod:`vocmatch.evidence.target_thresholds`): for the
#: dataset, the share of the classes with ground truth that got one; for a class, 1 when it
#: got one (undefined, with the reason, when not). ``map50-95`` is the mean AP over IoU
#: 0.50:0.95 (``coco`` and ``ultralytics`` summaries: their ``map``), ``p`` and ``r`` the
#: ``ultralytics`` summary's P and R (the dataset's only), ``ap50`` (also spelt ``mAP50``)
#: and ``ap75`` the AP at IoU 0.50 and 0.75 of those summaries.
METRICS: tuple[Metric, ...] = (
    "map", "precision", "recall", "f1", "ap50", "ap75", "reached", "map50-95", "p", "r"
)  # fmt: skip

# "ap" is accepted for "map": one class's AP and the dataset's mean AP are the same gate
# in spirit, and both spellings come naturally; "map50" is the ultralytics package's name.
_ALIASES: dict[str, Metric] = {"ap": "map", "map50": "ap50"}

#: The summaries that average AP over IoU thresholds (the ``ap50``, ``ap75`` and
#: ``map50-95`` gates read them).
_AVERAGED_SUMMARIES = ("coco", "ultralytics")

# Measured values this close (relative) to the bound count as equal to it.
_REL_TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class Gate:
    """A lower bound on one metric.

    Attributes:
        scope: None for the dataset, or the name of the class the gate applies to.
        metric: ``"map"``, ``"precision"``, ``"recall"`` or ``"f1"``; for a class, ``"map"``
            is the class's AP.
        value: The bound, in [0, 1]; the gate passes when the metric is at least this.
    """

    scope: str | None
    metric: Metric
    value: float

    @property
    def label(self) -> str:
        """What the gate measures: ``map``, ``recall``, ``person:ap``, ``person:recall``.

        >>> Gate("person", "map", 0.5).label
        'person:ap'
        """
        if self.scope is None:
            return self.metric
        metric = "ap" if self.metric == "map" else self.metric
        return f"{self.scope}:{metric}"

    def __str__(self) -> str:
        """The gate as a condition, ``person:recall >= 0.9``."""
        return f"{self.label} >= {self.value!r}"


@dataclass(frozen=True, slots=True)
class GateResult:
    """One gate checked against an evaluation.

    Attributes:
        gate: The gate.
        measured: The metric's value, or None when it is not defined.
        passed: The metric is defined and at least the gate's value.
        reason: Why the metric is not defined, when it is not.
    """

    gate: Gate
    measured: float | None
    passed: bool
    reason: str | None = None

    def __str__(self) -> str:
        """``person:recall 0.8500 < 0.9000``, or why the metric could not be measured."""
        bound = f"{self.gate.value:.4f}"
        if self.measured is None:
            return f"{self.gate.label} undefined, needs >= {bound} ({self.reason})"
        comparison = ">=" if self.passed else "<"
        return f"{self.gate.label} {self.measured:.4f} {comparison} {bound}"


@dataclass(frozen=True, slots=True)
class ImageCheck:
    """One image against the per-image limits.

    Attributes:
        key: The image's key.
        fp: False positives at the evaluation threshold.
        fn: Missed ground truth at the evaluation threshold.
        max_fp: The false-positive limit, or None for no limit.
        max_fn: The missed-object limit, or None for no limit.
    """

    key: str
    fp: int
    fn: int
    max_fp: int | None
    max_fn: int | None

    @property
    def fp_failed(self) -> bool:
        """More false positives than ``max_fp`` allows."""
        return self.max_fp is not None and self.fp > self.max_fp

    @property
    def fn_failed(self) -> bool:
        """More missed objects than ``max_fn`` allows."""
        return self.max_fn is not None and self.fn > self.max_fn

    @property
    def passed(self) -> bool:
        """Within every limit."""
        return not (self.fp_failed or self.fn_failed)

    def failures(self) -> tuple[str, ...]:
        """One phrase per limit exceeded: ``fp 2 > max-fp 1``, ``fn 2 > max-fn 0``."""
        out = []
        if self.fp_failed:
            out.append(f"fp {self.fp} > max-fp {self.max_fp}")
        if self.fn_failed:
            out.append(f"fn {self.fn} > max-fn {self.max_fn}")
        return tuple(out)


@dataclass(frozen=True, slots=True)
class GateReport:
    """Every gate and every image checked.

    Attributes:
        gates: Dataset and class gates, in the order given.
        images: Every evaluated image, sorted by key (all pass without limits).
        max_fp: The per-image false-positive limit, or None.
        max_fn: The per-image missed-object limit, or None.
    """

    gates: tuple[GateResult, ...]
    images: tuple[ImageCheck, ...]
    max_fp: int | None = None
    max_fn: int | None = None

    @property
    def passed(self) -> bool:
        """Every gate passed and every image is within the limits."""
        return all(g.passed for g in self.gates) and all(i.passed for i in self.images)

    @property
    def failed_gates(self) -> tuple[GateResult, ...]:
        """The dataset and class gates that failed, in the order given."""
        return tuple(g for g in self.gates if not g.passed)

    @property
    def failed_images(self) -> tuple[ImageCheck, ...]:
        """The images over a limit, sorted by key."""
        return tuple(i for i in self.images if not i.passed)

    @property
    def has_checks(self) -> bool:
        """Any gate or per-image limit was asked for."""
        return bool(self.gates) or self.max_fp is not None or self.max_fn is not None


@dataclass(frozen=True, slots=True)
class GateText:
    """A gate as written, ``[CLASS:]METRIC=NUMBER``, read but not yet bounded.

    Attributes:
        scope: The class (everything before the last ``:``), or None for the dataset.
        metric: The metric's name, lower-cased, an alias resolved.
        raw: The number as written, stripped.
        value: The number.
    """

    scope: str | None
    metric: str
    raw: str
    value: float


def read_gate_text(
    text: str,
    metrics: Sequence[str],
    number: str = "VALUE",
    aliases: Mapping[str, str] | None = None,
) -> GateText:
    """Read the one grammar of every gate, ``METRIC=NUMBER`` or ``CLASS:METRIC=NUMBER``:
    quality gates (:func:`parse_gate`) and regression gates
    (:func:`vocmatch.evidence.regression_gates.parse_regression_gate`) alike.

    The metric is case-insensitive, ``ap`` is read as ``map``, and the class name is
    everything before the last ``:`` (names holding a colon still work).

    Args:
        text: The gate as written.
        metrics: The metrics allowed, in the order messages list them.
        number: What the number is called in messages (``VALUE``, ``DELTA``).
        aliases: Other spellings of a metric; ``{"ap": "map"}`` by default.

    Returns:
        The gate's parts.

    Raises:
        ValueError: The text is not of that form, names an unknown metric, or its number is
            not a number; the message is one line.

    >>> read_gate_text("person:AP=-0.05", ("map", "recall"), "DELTA")
    GateText(scope='person', metric='map', raw='-0.05', value=-0.05)
    """
    left, equals, raw_value = text.rpartition("=")
    scope_text, colon, metric_text = left.rpartition(":")
    if not equals or not metric_text.strip() or not raw_value.strip():
        raise ValueError(f"expected METRIC={number} or CLASS:METRIC={number}, got {text!r}")
    scope = scope_text.strip() if colon else None
    if scope == "":
        raise ValueError(f"empty class name in {text!r}")
    name = metric_text.strip().lower()
    name = (_ALIASES if aliases is None else aliases).get(name, name)
    if name not in metrics:
        raise ValueError(
            f"unknown metric {metric_text.strip()!r} in {text!r}: "
            f"expected one of {', '.join(metrics)}"
        )
    raw = raw_value.strip()
    try:
        value = read_number(raw)
    except ValueError:
        raise ValueError(f"{number.lower()} {raw!r} in {text!r} is not a number") from None
    return GateText(scope, name, raw, value)


def parse_gate(text: str) -> Gate:
    """Read a gate written as ``METRIC=VALUE`` or ``CLASS:METRIC=VALUE``
    (:func:`read_gate_text`), its value a fraction in [0, 1].

    Args:
        text: The gate, for example ``map=0.5`` or ``person:recall=0.9``.

    Returns:
        The gate.

    Raises:
        ValueError: The text is not of that form, names an unknown metric, or its value is
            not a number in [0, 1]; the message is one line.

    >>> parse_gate("person:recall=0.9")
    Gate(scope='person', metric='recall', value=0.9)
    >>> parse_gate("mAP=0.5")
    Gate(scope=None, metric='map', value=0.5)
    """
    found = read_gate_text(text, METRICS)
    value = found.value
    if not 0.0 <= value <= 1.0:
        hint = f" (a percentage? write {value / 100:g})" if 1 < value <= 100 else ""
        raise ValueError(f"value {found.raw} in {text!r} is outside [0, 1]{hint}")
    return Gate(found.scope, found.metric, value)  # type: ignore[arg-type]  # one of METRICS


def check_gates(
    evaluation: Evaluation,
    gates: Iterable[Gate] = (),
    max_fp: int | None = None,
    max_fn: int | None = None,
    slices: Sequence[Slice] = (),
    *,
    fold_case: bool = False,
    targets: TargetThresholds | None = None,
) -> GateReport:
    """Check gates and per-image limits against an evaluation.

    A gate's scope that names no class but reads ``SLICE=VALUE`` (``size=small``,
    ``occluded=yes``) bounds that value of a slice: its mAP, precision, recall or F1.

    Args:
        evaluation: The evaluation to check.
        gates: Dataset, class and slice gates.
        max_fp: Most false positives an image may have, or None for no limit.
        max_fn: Most missed objects an image may have, or None for no limit.
        slices: The evaluated slices that slice gates are checked against.
        fold_case: The evaluation folded class names to lower case: a gate's class is
            looked up lower-cased too (``Car:ap`` bounds the class ``car``).
        targets: The thresholds holding a target, which ``reached`` gates read.

    Returns:
        A result per gate, in the order given, and a check per image.

    Raises:
        InputError: A gate names a class found in neither the ground truth nor the
            predictions, or a slice not evaluated, or a value the slice does not have; a
            ``reached`` gate without ``targets``.
        ValueError: ``max_fp`` or ``max_fn`` is negative.
    """
    for name, limit in (("max_fp", max_fp), ("max_fn", max_fn)):
        if limit is not None and limit < 0:
            raise ValueError(f"{name} must be at least 0, got {limit}")
    classes = {c.name: c for c in evaluation.classes}
    results = []
    for gate in gates:
        summary = evaluation.conventions.summary
        if gate.metric in ("p", "r") and (summary != "ultralytics" or gate.scope is not None):
            raise InputError(
                Message(
                    f"gate {gate.label!r}: {gate.metric.upper()} is the dataset's, measured under ",
                    Option("protocol", "ultralytics"),
                    "; elsewhere, and for a class, gate precision or recall",
                )
            )
        if gate.metric == "map50-95" and summary not in _AVERAGED_SUMMARIES:
            raise InputError(
                Message(
                    f"gate {gate.label!r}: map50-95 is measured under ",
                    Option("protocol", "coco"),
                    " or ",
                    Option("protocol", "ultralytics"),
                    "; elsewhere gate map at ",
                    Option("iou"),
                )
            )
        if gate.metric in ("ap50", "ap75") and summary not in _AVERAGED_SUMMARIES:
            raise InputError(
                Message(
                    f"gate {gate.label!r}: {gate.metric} is measured under ",
                    Option("protocol", "coco"),
                    f" (AP at IoU {0.5 if gate.metric == 'ap50' else 0.75:.2f} of the COCO "
                    "average); elsewhere gate map at ",
                    Option("iou"),
                )
            )
        if gate.metric == "reached" and targets is None:
            raise InputError(
                Message(
                    f"gate {gate.label!r} reads the thresholds holding a target: give ",
                    Option("target_precision"),
                    " or ",
                    Option("target_recall"),
                )
            )
        if gate.metric == "reached" and targets is not None and "=" not in (gate.scope or ""):
            if (
                gate.scope is not None
                and classes.get(gate.scope.lower() if fold_case else gate.scope) is None
            ):
                raise InputError(_unknown_class(gate, sorted(classes)))
            measured, reason = _reached(targets, gate.scope, fold_case)
        elif gate.scope is None:
            measured, reason = _dataset_metric(evaluation, gate.metric)
        else:
            cls = classes.get(gate.scope.lower() if fold_case else gate.scope)
            if cls is None and "=" in gate.scope:
                measured, reason = _slice_metric(_slice_value(gate, slices), gate.metric)
            elif cls is None:
                raise InputError(_unknown_class(gate, sorted(classes)))
            else:
                measured, reason = _class_metric(evaluation, cls, gate.metric)
        results.append(GateResult(gate, measured, _meets(measured, gate.value), reason))
    images = tuple(_image_check(image, max_fp, max_fn) for image in evaluation.images)
    return GateReport(tuple(results), images, max_fp, max_fn)


def _reached(
    targets: TargetThresholds, scope: str | None, fold_case: bool
) -> tuple[float | None, str | None]:
    """The share of the classes with ground truth that got a threshold, or one class's 1."""
    if scope is None:
        counted = [c for c in targets.classes if c.reason != "no ground truth"]
        if not counted:
            return None, "no ground truth"
        return sum(c.threshold is not None for c in counted) / len(counted), None
    name = scope.lower() if fold_case else scope
    for cls in targets.classes:
        if cls.name == name:
            return (1.0, None) if cls.threshold is not None else (None, cls.reason)
    return None, "no ground truth of this class"


def _meets(measured: float | None, bound: float) -> bool:
    if measured is None:
        return False
    return measured >= bound or math.isclose(measured, bound, rel_tol=_REL_TOLERANCE)


def _image_check(image: ImageResult, max_fp: int | None, max_fn: int | None) -> ImageCheck:
    return ImageCheck(image.key, image.fp, image.fn, max_fp, max_fn)


def _no_map_reason(evaluation: Evaluation) -> str:
    if evaluation.summary.pred == 0:
        return "no predictions"
    return "predictions carry no scores"


def _dataset_metric(evaluation: Evaluation, metric: Metric) -> tuple[float | None, str | None]:
    s = evaluation.summary
    no_gt = "no ground truth"
    no_pred = "no predictions"
    if metric in ("map", "map50-95"):
        if s.map is None:
            return None, no_gt if s.gt == 0 else _no_map_reason(evaluation)
        return s.map, None
    if metric == "precision":
        return s.precision, no_pred if s.precision is None else None
    if metric in ("p", "r", "ap50", "ap75") and evaluation.ultralytics is not None:
        return _ultralytics_metric(evaluation, metric)
    if metric == "recall":
        return s.recall, no_gt if s.recall is None else None
    if metric in ("ap50", "ap75"):
        coco = evaluation.coco
        value = None if coco is None else (coco.AP50 if metric == "ap50" else coco.AP75)
        if value is None or value < 0:
            return None, no_gt if s.gt == 0 else _no_map_reason(evaluation)
        return value, None
    if s.f1 is None:
        return None, no_pred if s.precision is None else no_gt
    return s.f1, None


def _ultralytics_metric(evaluation: Evaluation, metric: Metric) -> tuple[float | None, str | None]:
    """P, R, mAP50 of the ultralytics summary, and the mean AP at IoU 0.75 of its classes."""
    found = evaluation.ultralytics
    if evaluation.summary.gt == 0 or found is None:
        return None, "no ground truth"
    if metric == "ap75":
        values = [c.ap75 for c in evaluation.classes if c.in_map and c.ap75 is not None]
        return (sum(values) / len(values), None) if values else (None, "no ground truth")
    return {"p": found.precision, "r": found.recall, "ap50": found.map50}[metric], None


def _class_metric(
    evaluation: Evaluation, cls: ClassResult, metric: Metric
) -> tuple[float | None, str | None]:
    no_gt = "no ground truth of this class"
    no_pred = "no predictions of this class"
    if metric in ("map", "map50-95"):
        if cls.ap is None:
            return None, no_gt if cls.gt == 0 else _no_map_reason(evaluation)
        return cls.ap, None
    if metric == "precision":
        return cls.precision, no_pred if cls.precision is None else None
    if metric == "recall":
        return cls.recall, no_gt if cls.recall is None else None
    if metric in ("ap50", "ap75"):
        value = cls.ap50 if metric == "ap50" else cls.ap75
        if value is None:
            return None, no_gt if cls.gt == 0 else _no_map_reason(evaluation)
        return value, None
    if cls.f1 is None:
        return None, no_pred if cls.precision is None else no_gt
    return cls.f1, None


def _slice_value(gate: Gate, slices: Sequence[Slice]) -> SliceValue:
    """The slice value a gate's ``SLICE=VALUE`` scope names."""
    name, _, value = (gate.scope or "").partition("=")
    by_name = {s.name: s for s in slices}
    found = by_name.get(name.strip())
    if found is None:
        raise InputError(
            Message(
                f"gate {gate.label!r} names slice {name.strip()!r}, which was not evaluated (give ",
                Option("slices", [name.strip()]),
                ")",
            )
        )
    values = {v.value: v for v in found.values}
    if value not in values:
        message = f"gate {gate.label!r}: the {found.name} slice has no value {value!r}"
        import difflib  # only for the hint

        close = difflib.get_close_matches(value, sorted(values), n=1)
        listed = ", ".join(sorted(values))
        hint = f"did you mean {close[0]!r}?" if close else f"its values: {listed}"
        raise InputError(f"{message}; {hint}")
    return values[value]


def _slice_metric(value: SliceValue, metric: Metric) -> tuple[float | None, str | None]:
    no_gt = "no ground truth in this slice value"
    no_pred = "no predictions count in this slice value"
    if metric == "map":
        return value.map, None if value.map is not None else (
            no_gt if value.gt == 0 else "predictions carry no scores"
        )
    if metric == "precision":
        return value.precision, no_pred if value.precision is None else None
    if metric == "recall":
        return value.recall, no_gt if value.recall is None else None
    if metric == "f1":
        if value.f1 is None:
            return None, no_pred if value.precision is None else no_gt
        return value.f1, None
    return None, f"{metric} is not measured per slice value"


def _unknown_class(gate: Gate, known: list[str]) -> str:
    message = (
        f"gate {gate.label!r} names class {gate.scope!r}, "
        "which is in neither the ground truth nor the predictions"
    )
    import difflib  # only for the hint

    close = difflib.get_close_matches(gate.scope or "", known, n=1)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return message

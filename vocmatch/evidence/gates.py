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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from vocmatch.errors import InputError, Message, Option
from vocmatch.lazy import lazy_attribute

if TYPE_CHECKING:
    from vocmatch.evaluation.scoring import ClassResult, Evaluation, ImageResult
    from vocmatch.evidence.gate_records import Gate, GateResult, Metric
    from vocmatch.evidence.image_checks import ImageCheck
    from vocmatch.evidence.slices import Slice, SliceValue
    from vocmatch.evidence.target_thresholds import TargetThresholds

__all__ = ["GateReport", "ImageCheck", "ImageChecks", "check_gates"]

#: The summaries that average AP over IoU thresholds (the ``ap50``, ``ap75`` and
#: ``map50-95`` gates read them).
_AVERAGED_SUMMARIES = ("coco", "ultralytics")

# Measured values this close (relative) to the bound count as equal to it.
_REL_TOLERANCE = 1e-9

# ImageCheck is built with the first check made: a run without per-image limits makes none.
_WHERE = {"ImageCheck": "vocmatch.evidence.image_checks"}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _WHERE, name)


class ImageChecks(Sequence["ImageCheck"]):
    """Every evaluated image against the per-image limits, as a sequence of
    :class:`ImageCheck`, each made when it is read: a run without limits makes none, and
    finding the images over a limit makes a check for those images alone.

    Equal to a tuple of the same checks in the same order, as to another such sequence.

    Args:
        images: The evaluated images, sorted by key.
        max_fp: The false-positive limit, or None for no limit.
        max_fn: The missed-object limit, or None for no limit.
    """

    __slots__ = ("_images", "max_fn", "max_fp")

    def __init__(
        self, images: Sequence[ImageResult], max_fp: int | None, max_fn: int | None
    ) -> None:
        self._images = images
        self.max_fp = max_fp
        self.max_fn = max_fn

    def __len__(self) -> int:
        return len(self._images)

    @overload
    def __getitem__(self, index: int) -> ImageCheck: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[ImageCheck, ...]: ...

    def __getitem__(self, index: int | slice) -> ImageCheck | tuple[ImageCheck, ...]:
        if isinstance(index, slice):
            return tuple(self._check(image) for image in self._images[index])
        return self._check(self._images[index])

    def __iter__(self) -> Iterator[ImageCheck]:
        return (self._check(image) for image in self._images)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (tuple, ImageChecks)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({tuple(self)!r})"

    def failed(self) -> tuple[ImageCheck, ...]:
        """The images over a limit, in order; without limits none, at once."""
        max_fp, max_fn = self.max_fp, self.max_fn
        if max_fp is None and max_fn is None:
            return ()
        fp_limit = math.inf if max_fp is None else max_fp
        fn_limit = math.inf if max_fn is None else max_fn
        return tuple(
            self._check(image)
            for image in self._images
            if image.fp > fp_limit or image.fn > fn_limit
        )

    def _check(self, image: ImageResult) -> ImageCheck:
        from vocmatch.evidence.image_checks import ImageCheck

        return ImageCheck(image.key, image.fp, image.fn, self.max_fp, self.max_fn)


@dataclass(frozen=True, slots=True)
class GateReport:
    """Every gate and every image checked.

    Attributes:
        gates: Dataset and class gates, in the order given.
        images: Every evaluated image, sorted by key (all pass without limits):
            :func:`check_gates` gives them as :class:`ImageChecks`, made when read.
        max_fp: The per-image false-positive limit, or None.
        max_fn: The per-image missed-object limit, or None.
    """

    gates: tuple[GateResult, ...]
    images: Sequence[ImageCheck]
    max_fp: int | None = None
    max_fn: int | None = None

    @property
    def passed(self) -> bool:
        """Every gate passed and every image is within the limits."""
        return all(g.passed for g in self.gates) and not self.failed_images

    @property
    def failed_gates(self) -> tuple[GateResult, ...]:
        """The dataset and class gates that failed, in the order given."""
        return tuple(g for g in self.gates if not g.passed)

    @property
    def failed_images(self) -> tuple[ImageCheck, ...]:
        """The images over a limit, sorted by key."""
        if isinstance(self.images, ImageChecks):
            return self.images.failed()
        return tuple(i for i in self.images if not i.passed)

    @property
    def has_checks(self) -> bool:
        """Any gate or per-image limit was asked for."""
        return bool(self.gates) or self.max_fp is not None or self.max_fn is not None


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
        A result per gate, in the order given, and a check per image (made when read).

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
        # Imported with the first gate: a run without gates builds no result's record.
        from vocmatch.evidence.gate_records import GateResult

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
    return GateReport(
        tuple(results), ImageChecks(evaluation.images, max_fp, max_fn), max_fp, max_fn
    )


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

"""Regression gates over a diff of two runs (``vocmatch diff --fail-on-regression``).

A gate reads ``METRIC=DELTA`` or ``CLASS:METRIC=DELTA`` and passes when ``B - A >= DELTA``:
``map=-0.01`` tolerates a fall of at most 0.01, ``recall=0`` none. With a paired bootstrap
(:func:`vocmatch.evidence.paired.paired_bootstrap`) and a significance level ``alpha``, a
gate fails only when the change is below ``DELTA`` *and* significantly so: its one-sided
p-value, the share of resamples in which the change is not below ``DELTA``, is at most
``alpha``. As for quality gates, a change equal to the bound up to float rounding passes, a
metric undefined in either run fails its gate with the reason, and a class found in neither
run is an :class:`~vocmatch.errors.InputError`.

``*:METRIC=DELTA`` is a gate on every class: one test per class whose metric is defined in
either run, in name order (a class defined in one run only fails, as a named class would). A
family of tests at one level fails some class by chance alone as classes grow, so a
``correction`` (:mod:`vocmatch.evidence.multiple_testing`: ``holm`` or ``bh``) adjusts every
gate's p-value for the family of all gates checked with a p-value, and a gate below its
DELTA fails only when its *adjusted* p-value is at most ``alpha``.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from vocmatch.errors import InputError
from vocmatch.evidence.diff import Change, ClassDiff, EvaluationDiff
from vocmatch.evidence.gate_records import read_gate_text
from vocmatch.evidence.multiple_testing import (
    Correction,
    adjusted_p_values,
    describe,
    resolution_note,
)
from vocmatch.evidence.paired import DeltaInterval, PairedBootstrap

__all__ = [
    "EVERY_CLASS",
    "REGRESSION_METRICS",
    "RegressionGate",
    "RegressionMetric",
    "RegressionResult",
    "check_regressions",
    "correction_lines",
    "parse_regression_gate",
]

RegressionMetric = Literal["map", "precision", "recall", "f1"]

#: The metrics a regression gate can bound, higher being better for each.
REGRESSION_METRICS: tuple[RegressionMetric, ...] = ("map", "precision", "recall", "f1")

# Spellings accepted in a gate; "ap" is one class's AP, the same gate as "map" in spirit.
_METRIC_NAMES: dict[str, RegressionMetric] = {
    **{m: m for m in REGRESSION_METRICS},
    "ap": "map",
}

#: The class of a gate on every class (``*:ap=-0.01``).
EVERY_CLASS = "*"

# Changes this close (relative to the larger magnitude) to the bound count as equal to it.
_REL_TOLERANCE = 1e-9
_ABS_TOLERANCE = 1e-12


@dataclass(frozen=True, slots=True)
class RegressionGate:
    """A lower bound on the change of one metric from A to B.

    Attributes:
        scope: None for the dataset, the class the gate applies to, or
            :data:`EVERY_CLASS` for each class.
        metric: ``"map"``, ``"precision"``, ``"recall"`` or ``"f1"``; for a class,
            ``"map"`` is the class's AP.
        delta: The gate passes when ``B - A >= delta`` (negative: a tolerated fall).
    """

    scope: str | None
    metric: RegressionMetric
    delta: float

    @property
    def label(self) -> str:
        """``map``, ``recall``, ``person:ap``.

        >>> RegressionGate("person", "map", -0.05).label
        'person:ap'
        """
        if self.scope is None:
            return self.metric
        return f"{self.scope}:{'ap' if self.metric == 'map' else self.metric}"

    def __str__(self) -> str:
        """The gate as a condition, ``map change >= -0.01``."""
        return f"{self.label} change >= {self.delta!r}"


@dataclass(frozen=True, slots=True)
class RegressionResult:
    """One regression gate checked.

    Attributes:
        gate: The gate.
        change: The metric in both runs.
        passed: The change is defined and at least the gate's delta.
        reason: Why the change is undefined, when it is.
        p_value: With a bootstrap, the one-sided p-value of "the change is below the gate".
        alpha: The significance level, when one is given.
        p_adjusted: With a correction, ``p_value`` adjusted for the family of every gate
            checked with a p-value; the verdict reads it.
        correction: The correction, when one is given.
    """

    gate: RegressionGate
    change: Change
    passed: bool
    reason: str | None = None
    p_value: float | None = None
    alpha: float | None = None
    p_adjusted: float | None = None
    correction: Correction | None = None

    @property
    def below(self) -> bool:
        """The measured change is below the gate's delta (whether significant or not)."""
        delta = self.change.delta
        return delta is not None and not _meets(delta, self.gate.delta)

    def __str__(self) -> str:
        """``map 0.6250 -> 0.5900 (-0.0350 < -0.0100)``, or why it could not be measured;
        with a bootstrap, the one-sided p-value and, at a significance level, the verdict."""
        bound = f"{self.gate.delta:+.4f}"
        delta = self.change.delta
        if delta is None:
            return f"{self.gate.label} change undefined, needs >= {bound} ({self.reason})"
        comparison = "<" if self.below else ">="
        text = (
            f"{self.gate.label} {self.change.a:.4f} -> {self.change.b:.4f} "
            f"({delta:+.4f} {comparison} {bound}"
        )
        if self.p_value is None:
            return text + ")"
        text += f", p = {self.p_value:.4f}"
        if self.p_adjusted is not None and self.correction is not None:
            text += f", {self.correction}-adjusted {self.p_adjusted:.4f}"
        if self.alpha is None or not self.below:
            return text + ")"
        if self.passed:
            return f"{text} > {self.alpha:g}: not significant)"
        return f"{text} <= {self.alpha:g}: significant)"


def parse_regression_gate(text: str) -> RegressionGate:
    """Read a gate written as ``METRIC=DELTA`` or ``CLASS:METRIC=DELTA``, the grammar of
    every gate (:func:`vocmatch.evidence.gate_records.read_gate_text`), its delta in [-1, 1].

    Args:
        text: The gate, for example ``map=-0.01`` or ``person:recall=0``.

    Returns:
        The gate.

    Raises:
        ValueError: The text is not of that form, names an unknown metric, or its delta is
            not a number in [-1, 1].

    >>> parse_regression_gate("map=-0.01")
    RegressionGate(scope=None, metric='map', delta=-0.01)
    >>> parse_regression_gate("person:AP=-0.05")
    RegressionGate(scope='person', metric='map', delta=-0.05)
    """
    found = read_gate_text(text, REGRESSION_METRICS, "DELTA", _METRIC_NAMES)
    if not -1.0 <= found.value <= 1.0:
        raise ValueError(f"delta {found.raw} in {text!r} is outside [-1, 1]")
    return RegressionGate(found.scope, found.metric, found.value)  # type: ignore[arg-type]


def _dataset_change(diff: EvaluationDiff, metric: RegressionMetric) -> Change:
    s = diff.summary
    return {"map": s.map, "precision": s.precision, "recall": s.recall, "f1": s.f1}[metric]


def _class_change(cls: ClassDiff, metric: RegressionMetric) -> Change:
    return {"map": cls.ap, "precision": cls.precision, "recall": cls.recall, "f1": cls.f1}[metric]


def _undefined(change: Change) -> str:
    if change.a is None and change.b is None:
        return "undefined in both runs"
    return "undefined in run A" if change.a is None else "undefined in run B"


def _meets(delta: float, bound: float) -> bool:
    return delta >= bound or math.isclose(
        delta, bound, rel_tol=_REL_TOLERANCE, abs_tol=_ABS_TOLERANCE
    )


def _evidence(
    evidence: PairedBootstrap | None, scope: str | None, metric: RegressionMetric
) -> DeltaInterval | None:
    if evidence is None:
        return None
    if scope is None:
        found: DeltaInterval = getattr(evidence, metric)
        return found
    for cls in evidence.classes:
        if cls.name == scope:
            interval: DeltaInterval = getattr(cls, "ap" if metric == "map" else metric)
            return interval
    return None


def check_regressions(
    diff: EvaluationDiff,
    gates: Iterable[RegressionGate],
    evidence: PairedBootstrap | None = None,
    alpha: float | None = None,
    *,
    fold_case: bool = False,
    correction: Correction | None = None,
) -> tuple[RegressionResult, ...]:
    """Check regression gates against a diff.

    Args:
        diff: Run B against run A.
        gates: The gates, dataset or class; a gate on :data:`EVERY_CLASS` gives a result per
            class whose metric is defined in either run (one result, failed, when none is).
        evidence: The paired bootstrap of the two runs: each result then carries its
            one-sided p-value, the share of resamples whose change is not below the gate.
        alpha: With ``evidence``, the significance level: a change below the gate fails
            only when its p-value (adjusted, with a correction) is at most ``alpha``.
        fold_case: The runs folded class names to lower case: a gate's class is looked up
            lower-cased too (``Person:ap`` bounds the class ``person``).
        correction: With ``alpha``, ``"holm"`` or ``"bh"``: adjust the p-values for the
            family of every result that has one
            (:func:`~vocmatch.evidence.multiple_testing.adjusted_p_values`).

    Returns:
        A result per gate (per class for a gate on every class), in the order given.

    Raises:
        InputError: A gate names a class found in neither run.
        ValueError: ``alpha`` without ``evidence``, or outside (0, 1); a correction without
            ``alpha``.
    """
    if alpha is not None and evidence is None:
        raise ValueError("a significance level needs the paired bootstrap")
    if alpha is not None and not 0.0 < alpha < 1.0:
        raise ValueError(f"the significance level must be within (0, 1), got {alpha}")
    if correction is not None and alpha is None:
        raise ValueError("a correction for many gates needs a significance level")
    classes = {c.name: c for c in diff.classes}
    measured: list[tuple[RegressionGate, Change]] = []
    for gate in gates:
        if gate.scope == EVERY_CLASS:
            measured += _every_class(diff, gate)
        elif gate.scope is None:
            measured.append((gate, _dataset_change(diff, gate.metric)))
        else:
            cls = _named_class(classes, gate, fold_case)
            measured.append((gate, _class_change(cls, gate.metric)))
    results = [_result(gate, change, evidence, alpha, fold_case) for gate, change in measured]
    if correction is None:
        return tuple(results)
    return _corrected(results, correction)


def _named_class(classes: dict[str, ClassDiff], gate: RegressionGate, fold_case: bool) -> ClassDiff:
    scope = gate.scope or ""
    scope = scope.lower() if fold_case else scope
    cls = classes.get(scope)
    if cls is None:
        message = f"gate {gate.label!r} names class {gate.scope!r}, found in neither run"
        close = difflib.get_close_matches(scope, sorted(classes), n=1)
        if close:
            message += f"; did you mean {close[0]!r}?"
        raise InputError(message)
    return cls


def _every_class(diff: EvaluationDiff, gate: RegressionGate) -> list[tuple[RegressionGate, Change]]:
    """A gate per class whose metric is defined in either run, or the gate on every class
    itself, undefined, when no class has the metric (it fails, never passes unchecked)."""
    found = [
        (RegressionGate(cls.name, gate.metric, gate.delta), change)
        for cls in sorted(diff.classes, key=lambda c: c.name)
        for change in [_class_change(cls, gate.metric)]
        if change.a is not None or change.b is not None
    ]
    return found or [(gate, Change(None, None))]


def _result(
    gate: RegressionGate,
    change: Change,
    evidence: PairedBootstrap | None,
    alpha: float | None,
    fold_case: bool,
) -> RegressionResult:
    delta = change.delta
    if delta is None:
        reason = _undefined(change)
        if gate.scope == EVERY_CLASS:
            reason = f"{gate.metric if gate.metric != 'map' else 'ap'} undefined for every class"
        return RegressionResult(gate, change, False, reason)
    scope = gate.scope.lower() if fold_case and gate.scope is not None else gate.scope
    interval = _evidence(evidence, scope, gate.metric)
    p_value = interval.share_not_below(gate.delta) if interval is not None else None
    passed = _meets(delta, gate.delta)
    if not passed and alpha is not None:
        # Below the gate, but only a significant fall fails it.
        passed = p_value is None or p_value > alpha
    return RegressionResult(gate, change, passed, None, p_value, alpha)


def _corrected(
    results: list[RegressionResult], correction: Correction
) -> tuple[RegressionResult, ...]:
    """The results with their p-values adjusted for the family of those that have one, and
    the verdicts of the gates below their DELTA read from the adjusted values."""
    tested = [k for k, r in enumerate(results) if r.p_value is not None]
    adjusted = adjusted_p_values([results[k].p_value or 0.0 for k in tested], correction)
    out = list(results)
    for k, p in zip(tested, adjusted, strict=True):
        r = results[k]
        passed = r.passed
        if r.below and r.alpha is not None:
            passed = p > r.alpha
        out[k] = RegressionResult(
            r.gate, r.change, passed, r.reason, r.p_value, r.alpha, p, correction
        )
    return tuple(out)


def correction_lines(results: Sequence[RegressionResult], resamples: int | None) -> tuple[str, ...]:
    """What a report says of the correction the results were checked under: the method, the
    family and the level; and, given the bootstrap's ``resamples``, a warning when they are
    too few for the corrected level. Nothing without a correction.

    >>> import vocmatch
    >>> found = vocmatch.compare(
    ...     "fixtures/diff/gt", "fixtures/diff/pred_a", "fixtures/diff/pred_b",
    ...     gates=["*:ap=0"], bootstrap=100, alpha=0.05, correction="holm",
    ... )
    >>> correction_lines(found.results, 100)[0]
    "p-values adjusted by Holm's method over 6 tests (family-wise error rate at 0.05)"
    """
    corrected = [r for r in results if r.correction is not None and r.alpha is not None]
    if not corrected:
        return ()
    correction, alpha = corrected[0].correction, corrected[0].alpha
    if correction is None or alpha is None:
        return ()
    lines = [describe(correction, len(corrected), alpha)]
    if resamples is not None:
        note = resolution_note(correction, len(corrected), alpha, resamples)
        if note is not None:
            lines.append(note)
    return tuple(lines)

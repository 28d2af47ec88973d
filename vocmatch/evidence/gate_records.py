"""The records of quality gates and the one grammar they are written in: a gate
(:class:`Gate`), read from ``METRIC=VALUE`` or ``CLASS:METRIC=VALUE`` (:func:`parse_gate`,
through :func:`read_gate_text`, which regression gates read too), and its result once
checked (:class:`GateResult`) by :func:`vocmatch.evidence.gates.check_gates`.

A module of its own, imported where gates are given: a run without gates builds none of
these records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from vocmatch.core.numbers import read_number

__all__ = [
    "METRICS",
    "Gate",
    "GateResult",
    "GateText",
    "Metric",
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

"""The paired bootstrap of two runs: both evaluated on the same resamples of the images,
so that what they share cancels out, and each change of a metric given with its interval
and p-value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vocmatch.evaluation.result import Evaluation
from vocmatch.evidence.resampling import (
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    FloatArray,
    Resampled,
    Resampler,
    percentile_interval,
    resample,
)

__all__ = ["ClassDelta", "DeltaInterval", "PairedBootstrap", "paired_bootstrap"]


@dataclass(frozen=True, slots=True, eq=False)
class DeltaInterval:
    """The change of one metric from run A to run B, and its paired bootstrap interval.

    Attributes:
        a: The metric in run A; None where undefined.
        b: The metric in run B.
        low: The lower end of the interval of ``B - A``; None when no resample defines it.
        high: The upper end.
        p_value: Two-sided p-value of "no change": twice the smaller of the shares of
            resamples with ``B - A <= 0`` and with ``B - A >= 0``, at most 1.
        defined: Resamples in which the metric is defined in both runs.
        samples: ``(R,)`` ``B - A`` in each resample (NaN where undefined in either).
    """

    a: float | None
    b: float | None
    low: float | None
    high: float | None
    p_value: float | None
    defined: int
    samples: FloatArray

    @property
    def delta(self) -> float | None:
        """``B - A`` measured, or None when either is undefined."""
        if self.a is None or self.b is None:
            return None
        return self.b - self.a

    def share_not_below(self, bound: float) -> float | None:
        """The share of resamples (where defined) whose change is at least ``bound``: the
        one-sided p-value of "the change is below ``bound``"."""
        defined = self.samples[~np.isnan(self.samples)]
        if defined.size == 0:
            return None
        return float(np.count_nonzero(defined >= bound)) / defined.size


@dataclass(frozen=True, slots=True)
class ClassDelta:
    """One class's changes."""

    name: str
    ap: DeltaInterval
    precision: DeltaInterval
    recall: DeltaInterval
    f1: DeltaInterval


@dataclass(frozen=True, slots=True)
class PairedBootstrap:
    """The paired bootstrap of run B against run A: both evaluated on the same resamples
    of the images.

    Attributes:
        resamples: Resamples drawn.
        seed: Their seed.
        confidence: The intervals' coverage.
        images: Images drawn from (those of either run).
        map: The change of mAP.
        precision: Of micro precision.
        recall: Of micro recall.
        f1: Of micro F1.
        classes: Per class of either run, sorted by name.
    """

    resamples: int
    seed: int
    confidence: float
    images: int
    map: DeltaInterval
    precision: DeltaInterval
    recall: DeltaInterval
    f1: DeltaInterval
    classes: tuple[ClassDelta, ...]


def _two_sided(samples: FloatArray) -> float | None:
    defined = samples[~np.isnan(samples)]
    if defined.size == 0:
        return None
    low = np.count_nonzero(defined <= 0) / defined.size
    high = np.count_nonzero(defined >= 0) / defined.size
    return float(min(1.0, 2 * min(low, high)))


def _delta(
    a: float | None, b: float | None, a_samples: FloatArray, b_samples: FloatArray, c: float
) -> DeltaInterval:
    samples = b_samples - a_samples
    low, high, defined = percentile_interval(samples, c)
    return DeltaInterval(a, b, low, high, _two_sided(samples), defined, samples)


def _class_column(sampler: Resampler, resampled: Resampled, name: str, metric: str) -> FloatArray:
    if name not in sampler.class_names:
        return np.full(resampled.map.shape, np.nan)
    values: FloatArray = getattr(resampled, f"class_{metric}")[:, sampler.class_names.index(name)]
    return values


def paired_bootstrap(
    a: Evaluation,
    a_sampler: Resampler,
    b: Evaluation,
    b_sampler: Resampler,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    jobs: int = 1,
) -> PairedBootstrap:
    """Run B against run A on the same resamples of the images.

    Each resample draws the images of either run (usually the same set) with replacement
    and evaluates both runs on the draw, so the change is measured on the same images: the
    variation the two runs share cancels out.

    Args:
        a: Run A's evaluation (the reference).
        a_sampler: Its resampler.
        b: Run B's evaluation.
        b_sampler: Its resampler.
        resamples: Resamples to draw; at least 1.
        seed: Their seed.
        confidence: Coverage of the intervals.
        jobs: Threads.

    Returns:
        Every change with its interval and p-value.

    Raises:
        ValueError: ``resamples`` below 1 or ``confidence`` outside (0, 1).
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    keys = sorted({*a_sampler.images, *b_sampler.images})
    column = {key: i for i, key in enumerate(keys)}
    a_cols = np.array([column[k] for k in a_sampler.images], dtype=np.int64)
    b_cols = np.array([column[k] for k in b_sampler.images], dtype=np.int64)
    ra, rb = resample([(a_sampler, a_cols), (b_sampler, b_cols)], resamples, seed, jobs)
    sa, sb = a.summary, b.summary
    a_classes = {c.name: c for c in a.classes}
    b_classes = {c.name: c for c in b.classes}
    classes = []
    for name in sorted({*a_sampler.class_names, *b_sampler.class_names}):
        ca, cb = a_classes.get(name), b_classes.get(name)
        changes = {}
        for metric in ("ap", "precision", "recall", "f1"):
            changes[metric] = _delta(
                None if ca is None else getattr(ca, metric),
                None if cb is None else getattr(cb, metric),
                _class_column(a_sampler, ra, name, metric),
                _class_column(b_sampler, rb, name, metric),
                confidence,
            )
        classes.append(ClassDelta(name=name, **changes))
    return PairedBootstrap(
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        images=len(keys),
        map=_delta(sa.map, sb.map, ra.map, rb.map, confidence),
        precision=_delta(sa.precision, sb.precision, ra.precision, rb.precision, confidence),
        recall=_delta(sa.recall, sb.recall, ra.recall, rb.recall, confidence),
        f1=_delta(sa.f1, sb.f1, ra.f1, rb.f1, confidence),
        classes=tuple(classes),
    )

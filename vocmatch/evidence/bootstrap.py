"""Confidence intervals by the bootstrap: images resampled with replacement.

A resample draws as many images as the evaluation has, uniformly with replacement, and
evaluates the drawn set as if each image were there as often as it was drawn. Matching is
per image, so a prediction is a true or false positive in a resample exactly when it is one
in the evaluation: a resample is a *weight* per image (how often it was drawn), and every
metric follows from weighted counts over fixed arrays.

How a resample is drawn and every metric computed from its weights is in
:mod:`vocmatch.evidence.resampling`; the paired bootstrap of two runs is in
:mod:`vocmatch.evidence.paired`. Their public names are importable from here too.

The interval is the percentile interval: the 2.5th and 97.5th percentiles (linear
interpolation, numpy's default) of the metric over the resamples in which it is defined,
for 95 %. Resamples are drawn from ``numpy.random.default_rng(seed)``, one
``integers(0, n_images, n_images)`` call per resample, so a seed gives the same intervals on
every machine with the same numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

from vocmatch.evaluation.result import ClassResult, Evaluation, Summary
from vocmatch.evidence.paired import ClassDelta, DeltaInterval, PairedBootstrap, paired_bootstrap
from vocmatch.evidence.resampling import (
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    FloatArray,
    Resampled,
    Resampler,
    image_weights,
    percentile_interval,
    resample,
    resampler,
)
from vocmatch.evidence.resampling import BoolArray as BoolArray
from vocmatch.evidence.resampling import IntArray as IntArray
from vocmatch.evidence.resampling import evaluation_keys as evaluation_keys

# The resampling's and the paired bootstrap's public names are importable from here as well.
__all__ = [
    "CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "Bootstrap",
    "ClassDelta",
    "ClassInterval",
    "DeltaInterval",
    "Interval",
    "PairedBootstrap",
    "Resampled",
    "Resampler",
    "bootstrap",
    "image_weights",
    "paired_bootstrap",
    "percentile_interval",
    "resample",
    "resampler",
]


@dataclass(frozen=True, slots=True)
class Interval:
    """A metric of the evaluation and its bootstrap interval.

    Attributes:
        value: The evaluation's own value; None where it is not defined.
        low: The lower end of the interval; None when no resample defines the metric.
        high: The upper end.
        defined: Resamples in which the metric is defined (a class can be drawn out).
    """

    value: float | None
    low: float | None
    high: float | None
    defined: int


@dataclass(frozen=True, slots=True)
class ClassInterval:
    """One class's intervals."""

    name: str
    ap: Interval
    precision: Interval
    recall: Interval
    f1: Interval


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """Bootstrap intervals of an evaluation.

    Attributes:
        resamples: Resamples drawn.
        seed: The seed they were drawn with.
        confidence: The intervals' coverage (0.95).
        images: Images resampled.
        map: mAP (under ``coco``, pycocotools' AP).
        precision: Micro precision at the evaluation threshold.
        recall: Micro recall.
        f1: Micro F1.
        classes: Per class, sorted by name.
    """

    resamples: int
    seed: int
    confidence: float
    images: int
    map: Interval
    precision: Interval
    recall: Interval
    f1: Interval
    classes: tuple[ClassInterval, ...]


def _interval(value: float | None, samples: FloatArray, confidence: float) -> Interval:
    low, high, defined = percentile_interval(samples, confidence)
    return Interval(value, low, high, defined)


def bootstrap(
    evaluation: Evaluation,
    sampler: Resampler,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    jobs: int = 1,
) -> Bootstrap:
    """Bootstrap intervals of an evaluation's metrics.

    Args:
        evaluation: The evaluation (its own values are reported beside the intervals).
        sampler: Its resampler (:func:`resampler`).
        resamples: Resamples to draw; at least 1.
        seed: Seed of the draws.
        confidence: Coverage of the percentile intervals, in (0, 1).
        jobs: Threads to evaluate resamples with; the intervals do not depend on it.

    Returns:
        The intervals.

    Raises:
        ValueError: ``resamples`` below 1 or ``confidence`` outside (0, 1).
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    (samples,) = resample([(sampler, None)], resamples, seed, jobs)
    s: Summary = evaluation.summary
    by_name: dict[str, ClassResult] = {c.name: c for c in evaluation.classes}
    classes = []
    for c, name in enumerate(sampler.class_names):
        result = by_name[name]
        classes.append(
            ClassInterval(
                name=name,
                ap=_interval(result.ap, samples.class_ap[:, c], confidence),
                precision=_interval(result.precision, samples.class_precision[:, c], confidence),
                recall=_interval(result.recall, samples.class_recall[:, c], confidence),
                f1=_interval(result.f1, samples.class_f1[:, c], confidence),
            )
        )
    return Bootstrap(
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        images=len(sampler.images),
        map=_interval(s.map, samples.map, confidence),
        precision=_interval(s.precision, samples.precision, confidence),
        recall=_interval(s.recall, samples.recall, confidence),
        f1=_interval(s.f1, samples.f1, confidence),
        classes=tuple(classes),
    )

"""How tight matched boxes are.

For every true positive, :func:`tightness` reads the IoU and the signed offset of each edge
in pixels, positive where the predicted edge lies *outside* the ground-truth box:
``left = gt.x1 - pred.x1``, ``top = gt.y1 - pred.y1``, ``right = pred.x2 - gt.x2``,
``bottom = pred.y2 - gt.y2``. A second annotator whose boxes are systematically larger
shows positive means on all four edges.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from vocmatch.core.model import Box
from vocmatch.evaluation.scoring import Evaluation
from vocmatch.evidence.annotated import annotated_images, box_array
from vocmatch.readers.parse import AnnotationSet

__all__ = [
    "Distribution",
    "Tightness",
    "distribution",
    "offset_edges",
    "tightness",
]

FloatArray = npt.NDArray[np.float64]

#: Bins of the IoU histogram (threshold to 1) and of each edge-offset histogram.
IOU_BINS = 20
OFFSET_BINS = 21


@dataclass(frozen=True, slots=True)
class Distribution:
    """Summary statistics and a histogram of some values.

    Attributes:
        count: How many values.
        mean: Their mean.
        std: Their standard deviation (population, ``ddof=0``).
        median: Their median.
        p05: The 5th percentile (numpy's linear interpolation).
        p95: The 95th percentile.
        minimum: The smallest value.
        maximum: The largest value.
        edges: ``(B + 1,)`` bin edges, increasing.
        counts: ``(B,)`` values per bin; each bin holds ``edges[i] <= v < edges[i + 1]``,
            the last also its right edge; values beyond the ends count in the end bins.
    """

    count: int
    mean: float
    std: float
    median: float
    p05: float
    p95: float
    minimum: float
    maximum: float
    edges: tuple[float, ...]
    counts: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Tightness:
    """How tight matched boxes are: IoU and signed edge offsets of the true positives.

    Attributes:
        name: The class, or None for every class together.
        pairs: True positives measured.
        iou: Their IoU; None without pairs.
        left: ``gt.x1 - pred.x1`` in pixels (positive: the prediction reaches further out).
        top: ``gt.y1 - pred.y1``.
        right: ``pred.x2 - gt.x2``.
        bottom: ``pred.y2 - gt.y2``.
        classes: Per class, sorted by name (empty inside a per-class record).
    """

    name: str | None
    pairs: int
    iou: Distribution | None
    left: Distribution | None
    top: Distribution | None
    right: Distribution | None
    bottom: Distribution | None
    classes: tuple[Tightness, ...] = ()


def _nice_step(span: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least ``span`` (> 0).

    >>> _nice_step(0.3), _nice_step(1.0), _nice_step(2.2), _nice_step(7.0)
    (0.5, 1.0, 5.0, 10.0)
    """
    power = 10.0 ** math.floor(math.log10(span))
    for factor in (1.0, 2.0, 5.0, 10.0):
        step = factor * power
        if step >= span * (1 - 1e-12):
            return step
    return 10.0 * power


def offset_edges(values: npt.ArrayLike, bins: int = OFFSET_BINS) -> FloatArray:
    """Bin edges for signed offsets: ``bins`` (odd) bins of a round width, one centred on 0.

    The width is the smallest 1, 2 or 5 times a power of ten that makes the bins reach the
    95th percentile of ``|values|`` (1 pixel when every value is 0, and at least 1 pixel
    when every value is a whole number), so that a few outliers do not flatten the
    histogram; values beyond count in the end bins.

    Args:
        values: The offsets.
        bins: The number of bins, odd.

    Returns:
        ``(bins + 1,)`` edges.

    >>> offset_edges([-2.0, 0.0, 1.0, 3.0], bins=5).tolist()
    [-5.0, -3.0, -1.0, 1.0, 3.0, 5.0]
    """
    array = np.asarray(values, dtype=np.float64)
    reach = float(np.percentile(np.abs(array), 95)) if array.size else 0.0
    half = bins / 2
    step = _nice_step(reach / (half - 0.5)) if reach > 0 else 1.0
    if step < 1.0 and np.array_equal(array, np.round(array)):
        # Whole-pixel offsets in sub-pixel bins would leave every other bin empty.
        step = 1.0
    # The outermost bin centre sits at (half - 0.5) * step >= reach.
    return np.arange(bins + 1, dtype=np.float64) * step - half * step


def distribution(values: npt.ArrayLike, edges: npt.ArrayLike) -> Distribution:
    """Statistics and a histogram of ``values`` over ``edges``.

    Args:
        values: ``(N,)`` values, N >= 1.
        edges: ``(B + 1,)`` increasing bin edges; values beyond them count in the end bins.

    Returns:
        The distribution.

    Raises:
        ValueError: ``values`` is empty.

    >>> d = distribution([0.6, 0.8, 0.8, 1.0], [0.5, 0.75, 1.0])
    >>> d.counts, d.mean, d.median
    ((1, 3), 0.8, 0.8)
    """
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    bounds = np.asarray(edges, dtype=np.float64).reshape(-1)
    if array.size == 0:
        raise ValueError("Expected at least one value")
    # searchsorted right: edges[i] <= v < edges[i + 1]; the right end joins the last bin.
    bins = np.clip(np.searchsorted(bounds, array, side="right") - 1, 0, bounds.size - 2)
    counts = np.bincount(bins, minlength=bounds.size - 1)
    if array.size == 1:
        # One value is every statistic (numpy's own answer, without its machinery: classes
        # with a single match are common when there are tens of thousands of classes).
        value = float(array[0])
        return Distribution(
            count=1,
            mean=value,
            std=0.0,
            median=value,
            p05=value,
            p95=value,
            minimum=value,
            maximum=value,
            edges=tuple(float(e) for e in bounds),
            counts=tuple(int(c) for c in counts),
        )
    return Distribution(
        count=int(array.size),
        mean=float(np.mean(array)),
        std=float(np.std(array)),
        median=float(np.median(array)),
        p05=float(np.percentile(array, 5)),
        p95=float(np.percentile(array, 95)),
        minimum=float(np.min(array)),
        maximum=float(np.max(array)),
        edges=tuple(float(e) for e in bounds),
        counts=tuple(int(c) for c in counts),
    )


def _tightness_of(
    name: str | None, pairs: Sequence[tuple[Box, Box, float]], threshold: float
) -> Tightness:
    if not pairs:
        return Tightness(name, 0, None, None, None, None, None)
    gt = box_array([g for g, _, _ in pairs])
    pred = box_array([p for _, p, _ in pairs])
    iou = np.array([v for _, _, v in pairs], dtype=np.float64)
    offsets = {
        "left": gt[:, 0] - pred[:, 0],
        "top": gt[:, 1] - pred[:, 1],
        "right": pred[:, 2] - gt[:, 2],
        "bottom": pred[:, 3] - gt[:, 3],
    }
    edges = offset_edges(np.concatenate(list(offsets.values())))
    return Tightness(
        name=name,
        pairs=len(pairs),
        iou=distribution(iou, np.linspace(threshold, 1.0, IOU_BINS + 1)),
        left=distribution(offsets["left"], edges),
        top=distribution(offsets["top"], edges),
        right=distribution(offsets["right"], edges),
        bottom=distribution(offsets["bottom"], edges),
    )


def tightness(evaluation: Evaluation, gt: AnnotationSet, pred: AnnotationSet) -> Tightness:
    """IoU and signed edge offsets of every true positive, overall and per class.

    The four edges share one set of bins (so their histograms compare at a glance); the
    IoU bins run from the threshold to 1.

    Args:
        evaluation: The evaluation of ``pred`` against ``gt``.
        gt: The ground truth it was computed from.
        pred: The predictions it was computed from.

    Returns:
        The tightness over every class (``name`` None) with one record per class in
        ``classes``.

    Raises:
        InputError: An evaluated image is not in ``gt`` or ``pred``.
    """
    pairs: list[tuple[Box, Box, float]] = []
    by_class: dict[str, list[tuple[Box, Box, float]]] = {c.name: [] for c in evaluation.classes}
    for image in annotated_images(evaluation, gt, pred):
        if image.pred is None:
            continue
        for m in image.result.matches:
            if m.outcome == "tp" and m.gt_index is not None and m.pred_index is not None:
                pair = (image.gt.boxes[m.gt_index], image.pred.boxes[m.pred_index], m.iou)
                pairs.append(pair)
                by_class[m.name].append(pair)
    threshold = evaluation.conventions.iou_threshold
    overall = _tightness_of(None, pairs, threshold)
    classes = tuple(_tightness_of(name, by_class[name], threshold) for name in sorted(by_class))
    return replace(overall, classes=classes)

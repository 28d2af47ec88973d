"""Slices as match records: each value of a slice matched in the shard that holds its
images, as COCO's area ranges are (:mod:`vocmatch.evaluation.to_records`), so that the
slices of merged shards, of a Dask run and of one run are the same numbers.

A slice value is a subset of the ground truth, matched again with the ground truth outside
it ignored (pycocotools' ``evaluateImg`` for an area range). The records keep, per kept
prediction and value, its match flags at every IoU threshold the protocol matches at
(matched; matched to ignored ground truth) and whether, unmatched, it lies outside the value
by a property of its own (its area for ``size``, its image for a file pattern); and per class
and value the ground truth that counts and that is ignored, and the true and false positives
at the evaluation threshold. :mod:`vocmatch.evidence.slices` accumulates them.

A ``pose`` slice's values are the poses its images hold, so the records of two shards may
name different ones: each pose slice keeps one more column, :data:`NO_VALUE`, the matching
with every object outside (what a value absent from a shard's images is there), and joined
records take it for the values a part lacks.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.evaluation.result import COCO_AREAS
from vocmatch.readers.scan import ColumnSet

__all__ = [
    "ATTRIBUTES",
    "COCO_SIZE_EDGES",
    "NO_VALUE",
    "SLICE_COUNTS",
    "Membership",
    "SliceInputs",
    "SliceRecords",
    "SliceSpec",
    "memberships",
    "parse_slices",
    "slice_rule",
    "values_fit",
]

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
FlagArray = npt.NDArray[np.integer[Any]]

#: Object attributes a slice can be by.
ATTRIBUTES: tuple[str, ...] = ("difficult", "truncated", "occluded", "pose")

#: pycocotools' area range edges, as box sides in pixels (areas 32², 96²).
COCO_SIZE_EDGES: tuple[float, ...] = (32.0, 96.0)

#: The column of a ``pose`` slice with every object outside: what a pose its images do
#: not hold is in a shard (never shown: no name of a value starts with a NUL).
NO_VALUE = "\0no value"
#: The per-class integers of each value, in order.
SLICE_COUNTS = ("gt", "gt_ignored", "tp", "fp")

_EDGES = re.compile(r"\s*(?:size\s*[:=]\s*)?(\d+(?:\.\d*)?(?:\s*,\s*\d+(?:\.\d*)?)*)\s*")


@dataclass(frozen=True, slots=True)
class SliceSpec:
    """What one slice is by.

    Attributes:
        name: ``difficult``, ``truncated``, ``occluded``, ``pose``, ``size`` or ``file``.
        edges: For ``size``, the bucket edges as box sides in pixels, ascending.
        globs: For ``file``, the file-name patterns, each a value.
    """

    name: str
    edges: tuple[float, ...] = ()
    globs: tuple[str, ...] = ()


def _size_names(edges: tuple[float, ...]) -> list[tuple[str, float, float]]:
    """Each bucket's name and area range (both ends inclusive)."""
    if edges == COCO_SIZE_EDGES:
        names = ["small", "medium", "large"]
    else:
        names = [f"{_side(lo)}-{_side(hi)}" for lo, hi in zip((0.0, *edges), edges, strict=False)]
        names.append(f"{_side(edges[-1])}+")
    # COCO's own upper bound for its buckets (1e5² px), so that they are its area ranges.
    top = COCO_AREAS[3][1] if edges == COCO_SIZE_EDGES else math.inf
    bounds = [0.0, *(e * e for e in edges), top]
    return [(name, bounds[i], bounds[i + 1]) for i, name in enumerate(names)]


def _side(value: float) -> str:
    return f"{value:g}"


def parse_slices(texts: Sequence[str]) -> tuple[SliceSpec, ...]:
    """Read slice specs, as text (the values of the command line's ``--slice``).

    Each is a keyword (``difficult``, ``truncated``, ``occluded``, ``pose``, ``size``), size
    edges as box sides in pixels (``16,32,96`` or ``size:16,32,96``), or else a file-name
    pattern (``night_*``, ``cam2/*``): every pattern given is a value of one ``file`` slice.

    Returns:
        One spec per slice, in the order first given.

    Raises:
        ValueError: A slice is given twice, size edges are not increasing and positive, or a
            pattern is empty.

    >>> [s.name for s in parse_slices(["size", "pose", "night_*", "day_*"])]
    ['size', 'pose', 'file']
    >>> parse_slices(["16,32"])[0].edges
    (16.0, 32.0)
    """
    specs: list[SliceSpec] = []
    globs: list[str] = []
    seen: set[str] = set()

    def add(spec: SliceSpec, text: str) -> None:
        if spec.name in seen:
            raise ValueError(f"slice {text!r}: the {spec.name} slice is given twice")
        seen.add(spec.name)
        specs.append(spec)

    for text in texts:
        word = text.strip().lower()
        edges = _EDGES.fullmatch(text)
        if word in ATTRIBUTES:
            add(SliceSpec(word), text)
        elif word == "size":
            add(SliceSpec("size", COCO_SIZE_EDGES), text)
        elif edges is not None:
            values = tuple(float(v) for v in edges.group(1).split(","))
            if any(v <= 0 for v in values) or list(values) != sorted(set(values)):
                raise ValueError(
                    f"slice {text!r}: size edges must be box sides in pixels, positive and "
                    "increasing, such as 16,32,96"
                )
            add(SliceSpec("size", values), text)
        elif not text.strip():
            raise ValueError("a slice needs a value: an attribute, size, edges or a pattern")
        else:
            if text in globs:
                raise ValueError(f"slice {text!r}: the pattern is given twice")
            if "file" not in seen:
                add(SliceSpec("file"), text)
            globs.append(text)
    return tuple(
        SliceSpec("file", globs=tuple(globs)) if spec.name == "file" else spec for spec in specs
    )


def slice_rule(spec: SliceSpec) -> str:
    """One line on how objects and predictions fall into the slice's values."""
    if spec.name in ("difficult", "truncated", "occluded"):
        return (
            f"ground truth by its <{spec.name}>; an unmatched prediction is a false positive "
            "in both values"
        )
    if spec.name == "pose":
        return (
            "ground truth by its <pose>; an unmatched prediction is a false positive in every value"
        )
    if spec.name == "size":
        return (
            "objects by box area, both ends inclusive (pycocotools' area ranges); an "
            "unmatched prediction by its own area"
        )
    return (
        "images by their key (the path without extension) against each pattern; a "
        "prediction by its image"
    )


@dataclass(frozen=True, slots=True)
class Membership:
    """One value's ground truth, and the predictions that lie outside it by a property of
    their own.

    Attributes:
        value: Its name.
        gt_in: ``(G,)`` the ground truth in the value.
        pred_out: ``(P,)`` the prediction, when unmatched, is outside the value.
    """

    value: str
    gt_in: BoolArray
    pred_out: BoolArray


@dataclass(frozen=True, slots=True)
class SliceInputs:
    """What the values of a slice are read from, for a set of matched images.

    Attributes:
        keys: ``(I,)`` each image's key.
        gt: The ground-truth columns (attributes and poses).
        gt_rows: ``(G,)`` each ground truth's row in ``gt``.
        gt_image: ``(G,)`` its image.
        gt_area: ``(G,)`` its continuous area (as COCO's area ranges read it).
        pred_image: ``(P,)`` each kept prediction's image.
        pred_area: ``(P,)`` its continuous area.
    """

    keys: tuple[str, ...]
    gt: ColumnSet
    gt_rows: FlagArray
    gt_image: FlagArray
    gt_area: FloatArray
    pred_image: FlagArray
    pred_area: FloatArray


def memberships(spec: SliceSpec, found: SliceInputs) -> list[Membership]:
    """Each value of the slice among the images, in report order (buckets by size, words
    as listed, poses and globs sorted, with ``(none)`` and ``(other)`` last); a ``pose``
    slice ends with its :data:`NO_VALUE` column."""
    n_pred = found.pred_image.size
    nowhere = np.zeros(n_pred, dtype=bool)
    if spec.name in ("difficult", "truncated", "occluded"):
        flag = np.asarray(getattr(found.gt, spec.name)[found.gt_rows], dtype=bool)
        return [Membership("no", ~flag, nowhere), Membership("yes", flag, nowhere)]
    if spec.name == "pose":
        codes = found.gt.pose[found.gt_rows]
        names = found.gt.pose_names
        # A pose written "(none)" is the value of objects without one: one value a name.
        none = (codes == -1) | np.isin(codes, [k for k, n in enumerate(names) if n == "(none)"])
        values = [
            Membership(names[k], codes == k, nowhere)
            for k in sorted(set(codes[~none].tolist()), key=lambda k: names[k])
        ]
        if none.any():
            values.append(Membership("(none)", none, nowhere))
        values.append(Membership(NO_VALUE, np.zeros(codes.size, dtype=bool), nowhere))
        return values
    if spec.name == "size":
        gt_area, pred_area = found.gt_area, found.pred_area
        return [
            Membership(
                name,
                (gt_area >= low) & (gt_area <= high),
                (pred_area < low) | (pred_area > high),
            )
            for name, low, high in _size_names(spec.edges)
        ]
    matches = [
        np.array([fnmatch.fnmatchcase(key, glob) for key in found.keys], dtype=bool)
        for glob in spec.globs
    ]
    values = [
        Membership(glob, hit[found.gt_image], ~hit[found.pred_image])
        for glob, hit in sorted(zip(spec.globs, matches, strict=True))
    ]
    other = ~np.logical_or.reduce(matches) if matches else np.ones(len(found.keys), dtype=bool)
    values.append(Membership("(other)", other[found.gt_image], ~other[found.pred_image]))
    return values


def values_fit(spec: SliceSpec, values: Sequence[str]) -> bool:
    """Whether ``values`` can be the values of the slice in match records: a ``pose``
    slice's distinct poses, sorted, then ``(none)`` if any, then :data:`NO_VALUE`; any
    other slice's own values, in report order."""
    if spec.name == "pose":
        named = [v for v in values[:-1] if v != "(none)"]
        none = list(values[len(named) : -1])
        return (
            bool(values)
            and values[-1] == NO_VALUE
            and named == sorted(set(named))
            and none in ([], ["(none)"])
            and NO_VALUE not in named
        )
    if spec.name in ("difficult", "truncated", "occluded"):
        return list(values) == ["no", "yes"]
    if spec.name == "size":
        return list(values) == [name for name, _, _ in _size_names(spec.edges)]
    return list(values) == [*sorted(spec.globs), "(other)"]


@dataclass(frozen=True, slots=True)
class SliceRecords:
    """The slices' match records of a set of images (see the module doc): one column per
    value, the slices' columns one after another.

    Attributes:
        specs: The slices.
        values: Per slice, its values' names in report order (a ``pose`` slice's last is
            :data:`NO_VALUE`).
        matched: ``(P, V)`` per kept prediction (rows of the records' predictions) and
            value, bit ``t`` set: matched at the ``t``-th IoU threshold of the engine's
            levels with the ground truth outside the value ignored.
        ignored: ``(P, V)`` likewise, matched to ignored ground truth.
        out: ``(P, V)`` the prediction, unmatched, lies outside the value by its own
            property (its area, its image).
        counts: ``(K, V, 4)`` per class and value :data:`SLICE_COUNTS`: ground truth that
            counts and that the protocol ignores, TP and FP at the evaluation threshold (of
            the predictions at or above their score threshold).
        unscored: ``(K, V, 4)`` the same with predictions paired highest IoU first, when the
            records keep that reading (:attr:`MatchRecords.unscored
            <vocmatch.evaluation.records.MatchRecords>`).
    """

    specs: tuple[SliceSpec, ...]
    values: tuple[tuple[str, ...], ...]
    matched: FlagArray
    ignored: FlagArray
    out: BoolArray
    counts: IntArray
    unscored: IntArray | None

    def columns(self, s: int) -> range:
        """The columns of the ``s``-th slice."""
        start = sum(len(v) for v in self.values[:s])
        return range(start, start + len(self.values[s]))

    def rows(self, rows: npt.NDArray[np.integer[Any]] | None) -> SliceRecords:
        """The same records with the predictions taken at ``rows`` (None: all of them)."""
        if rows is None:
            return self
        return SliceRecords(
            self.specs, self.values, np.take(self.matched, rows, axis=0),
            np.take(self.ignored, rows, axis=0), np.take(self.out, rows, axis=0), self.counts,
            self.unscored,
        )  # fmt: skip

    @staticmethod
    def join(
        parts: Sequence[SliceRecords], remaps: Sequence[IntArray], n_classes: int
    ) -> SliceRecords:
        """The records of every part (disjoint images), predictions in part order, classes
        by ``remaps`` (each part's class indices among the ``n_classes`` joined ones); a
        value a part's images lack takes its :data:`NO_VALUE` column there.

        Raises:
            ValueError: The parts were made with other slices.
        """
        specs = parts[0].specs
        if any(p.specs != specs for p in parts):
            raise ValueError("match records of other slices cannot be joined")
        values = tuple(
            _joined_values(spec, [p.values[s] for p in parts]) for s, spec in enumerate(specs)
        )
        picks = [_columns_of(p, values) for p in parts]
        n_v = sum(len(v) for v in values)
        unscored = [p.unscored for p in parts]
        return SliceRecords(
            specs,
            values,
            np.concatenate([p.matched[:, c] for p, c in zip(parts, picks, strict=True)]),
            np.concatenate([p.ignored[:, c] for p, c in zip(parts, picks, strict=True)]),
            np.concatenate([p.out[:, c] for p, c in zip(parts, picks, strict=True)]),
            _class_sum([p.counts[:, c] for p, c in zip(parts, picks, strict=True)], remaps,
                       n_classes, n_v),
            None
            if any(u is None for u in unscored)
            else _class_sum([u[:, c] for u, c in zip(unscored, picks, strict=True)
                             if u is not None], remaps, n_classes, n_v),
        )  # fmt: skip


def _joined_values(spec: SliceSpec, parts: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    """A slice's values in joined records: every part's, in report order."""
    if spec.name != "pose":
        return parts[0]  # the same in every part: fixed by the slice
    named = {v for part in parts for v in part if v not in ("(none)", NO_VALUE)}
    none = ("(none)",) if any("(none)" in part for part in parts) else ()
    return (*sorted(named), *none, NO_VALUE)


def _columns_of(part: SliceRecords, values: Sequence[tuple[str, ...]]) -> IntArray:
    """The part's column of each joined value (its slice's :data:`NO_VALUE` column for a
    value it lacks)."""
    picked: list[int] = []
    for s, names in enumerate(values):
        if part.specs[s].name != "pose":
            picked += list(part.columns(s))  # the same values in every part, in order
            continue
        own = dict(zip(part.values[s], part.columns(s), strict=True))
        picked += [own.get(name, own[NO_VALUE]) for name in names]
    return np.array(picked, dtype=np.int64)


def _class_sum(
    parts: Sequence[IntArray], remaps: Sequence[IntArray], n_classes: int, n_values: int
) -> IntArray:
    """``(K, V, 4)`` per-class counts of parts added into the joined classes."""
    total = np.zeros((n_classes, n_values, len(SLICE_COUNTS)), dtype=np.int64)
    for values, remap in zip(parts, remaps, strict=True):
        np.add.at(total, remap, values)
    return total

"""Whether a state's stored rankings are the ones its predictions give.

A cache keeps each class's ranking (its predictions by descending score, ties in row order)
and each prediction's place in its image-class, so that a run reading it does not sort
again. A file can hold arrays of the right shapes and a valid checksum and still rank
wrongly; read as they are, such rankings would change AP without a word. Both are checked
here in passes over the predictions, without sorting by score: a ranking is right when
every neighbour pair in it is in order, and the places are those a stable sort by class
gives (a radix sort on 16-bit class indices).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.evaluation.from_records import ranking_score
from vocmatch.evaluation.records import IntArray, PredRecords

try:  # the compiled reader, built with the package where a C compiler was found
    from vocmatch.readers import fastxml as _compiled
except ImportError:  # pragma: no cover - a build without a compiler
    _compiled = None  # type: ignore[assignment]

#: Each prediction's class, of any integer type.
Labels = npt.NDArray[np.integer[Any]]

__all__ = ["places_sorted", "rankings_hold", "rows_counted", "rows_fit"]


def rankings_hold(rows: IntArray, sizes: IntArray, rank: IntArray, preds: PredRecords) -> bool:
    """Whether ``rows`` (every class's ranking, class after class, ``sizes`` long each) and
    ``rank`` are what ranking ``preds`` gives.

    The caller has checked that ``rows`` holds every prediction once, class by class, and
    that ``rank`` is within bounds.

    Args:
        rows: ``(P,)`` rows of ``preds``, each class's in its ranking.
        sizes: ``(K,)`` the classes' ranking lengths.
        rank: ``(P,)`` each prediction's place in its image-class.
        preds: The records' predictions.
    """
    return _in_score_order(rows, sizes, preds) and _places_hold(rank, preds, sizes.size)


def rows_fit(rows: IntArray, sizes: IntArray, label: Labels) -> bool:
    """Whether ``rows`` (every class's ranking, class after class, ``sizes`` long each)
    holds every prediction once (``label``: each one's class), each in its own class's
    ranking: in one pass of the compiled reader's kernel (a bitmap of the rows seen, without
    Python's lock) where it is built and the labels are int32, else by numpy (a count of
    each row, the labels gathered)."""
    kernel = getattr(_compiled, "rows_fit", None)
    if kernel is not None and label.dtype == np.int32:
        return bool(
            kernel(
                np.ascontiguousarray(rows, dtype=np.int64),
                np.ascontiguousarray(sizes, dtype=np.int64),
                np.ascontiguousarray(label),
            )
        )
    return rows_counted(rows, sizes, label)


def rows_counted(rows: IntArray, sizes: IntArray, label: Labels) -> bool:
    """:func:`rows_fit` by numpy."""
    n_pred = label.size
    return not (
        rows.shape != (n_pred,)
        or bool((sizes < 0).any())
        or int(sizes.sum()) != n_pred
        or bool((rows < 0).any())
        or bool((rows >= n_pred).any())
        # Within range and none twice: each prediction once (a count, not a sort).
        or bool((np.bincount(rows, minlength=n_pred) > 1).any())
        or not np.array_equal(label[rows], np.repeat(np.arange(sizes.size), sizes))
    )


def _in_score_order(rows: IntArray, sizes: IntArray, preds: PredRecords) -> bool:
    """Every neighbour pair of a class's ranking by descending score, ties by row."""
    if rows.size < 2:
        return True
    score = ranking_score(preds, rows)
    before, after = score[:-1], score[1:]
    ordered = (before > after) | ((before == after) & (rows[:-1] < rows[1:]))
    # A pair that straddles two classes is not compared.
    ends = np.cumsum(sizes)[:-1] - 1
    ordered[ends[(ends >= 0) & (ends < ordered.size)]] = True
    return bool(ordered.all())


def _places_hold(rank: IntArray, preds: PredRecords, n_classes: int) -> bool:
    """Each prediction's place among the predictions of its image and class before it:
    in one pass of the compiled reader's kernel (a counter a class, reset after each image;
    without Python's lock) where it is built, else by :func:`places_sorted`."""
    kernel = getattr(_compiled, "places_hold", None)
    if kernel is None:
        return places_sorted(rank, preds, n_classes)
    return bool(
        kernel(
            np.ascontiguousarray(preds.label, dtype=np.int32),
            np.ascontiguousarray(preds.count, dtype=np.int64),
            np.ascontiguousarray(rank, dtype=np.int64),
            n_classes,
        )
    )


def places_sorted(rank: IntArray, preds: PredRecords, n_classes: int) -> bool:
    """:func:`_places_hold` by numpy: the predictions sorted by class (stably, a radix
    sort), each image-class's first found, each place counted from it."""
    label = preds.label
    if label.size == 0:
        return True
    keys = label.astype(np.int16) if n_classes < 2**15 else label
    members = np.argsort(keys, kind="stable")  # by class, rows in order
    # An image-class starts where the image changes, or the class (at known places: the
    # caller checked that every label is a class's).
    small = np.int32 if preds.count.size < 2**31 else np.int64
    image = np.repeat(np.arange(preds.count.size, dtype=small), preds.count)[members]
    starts = np.empty(members.size, dtype=bool)
    starts[0] = True
    np.not_equal(image[1:], image[:-1], out=starts[1:])
    classes = np.cumsum(np.bincount(keys, minlength=n_classes))[:-1]
    starts[classes[classes < members.size]] = True
    # Each one's place: its position less that of its image-class's first.
    at = np.arange(members.size, dtype=np.int64)
    first = at * starts
    np.maximum.accumulate(first, out=first)
    return bool(np.array_equal(rank[members], at - first))

"""A run with a cache lists both sides' files with their stats
(:mod:`vocmatch.readers.listed_stats`), and compares them with the cache's stat index in
the order of its chunks (:mod:`vocmatch.run.cached`).

The predictions are listed by a thread of their own while the ground truth is listed by the
run's: each folder is read and its files stat'ed by the compiled reader without Python's
lock, so the two folders take about the time of one (80,000 files each: 0.2-0.25 s of
processor time a folder, half of it the stats).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from vocmatch.errors import no_annotation_files

if TYPE_CHECKING:
    from concurrent.futures import Future

    from vocmatch.evaluation.shards.parts import Part, PartListing
    from vocmatch.readers.listed_stats import ListedStats
    from vocmatch.run.evaluate import EvalRequest

__all__ = ["chunk_stats", "listed_sides"]


def listed_sides(
    request: EvalRequest, annotations: str
) -> tuple[PartListing, tuple[ListedStats, ListedStats]]:
    """Both sides' files listed, with their stats (:mod:`vocmatch.readers.listed_stats`):
    the predictions by a thread of their own while the ground truth is listed here (each
    folder is read and its files stat'ed without Python's lock), unless one thread is
    asked for or the system refuses it.

    Raises:
        InputError: As :meth:`~vocmatch.evaluation.shards.parts.PartListing.of` raises
            it: a side cannot be listed (the ground truth's first), or holds no annotation
            file.
    """
    from concurrent.futures import ThreadPoolExecutor

    from vocmatch.evaluation.shards.parts import PartListing
    from vocmatch.readers.listed_stats import listed_with_stats

    pred = os.fspath(request.pred)
    with ThreadPoolExecutor(1, thread_name_prefix="vocmatch-list") as lister:
        pred_side: Future[ListedStats] | None = None
        if request.jobs != 1:
            try:
                pred_side = lister.submit(listed_with_stats, pred, ".xml", request.jobs)
            except RuntimeError:  # no thread: listed after the ground truth
                pred_side = None
        gt = listed_with_stats(annotations, ".xml", request.jobs)
        found = (
            pred_side.result()
            if pred_side is not None
            else listed_with_stats(pred, ".xml", request.jobs)
        )
    if not gt.listing.files:
        raise no_annotation_files(annotations, gt.listing.skipped)
    return PartListing(gt.listing, found.listing), (gt, found)


def chunk_stats(
    chunks: Sequence[Part], listed: tuple[ListedStats, ListedStats]
) -> npt.NDArray[np.int64] | None:
    """The stats of the chunks' files in the order of the chunks (each one's ground truth,
    then its predictions), from those taken as the sides were listed; None when the chunks
    do not hold each side's listed files in their listed order."""
    gt, pred = listed
    if [f for p in chunks for f in p.gt_files] != list(gt.listing.files) or [
        f for p in chunks for f in p.pred_files
    ] != list(pred.listing.files):
        return None
    gt_ends = np.cumsum([0, *(len(p.gt_files) for p in chunks)]).tolist()
    pred_ends = np.cumsum([0, *(len(p.pred_files) for p in chunks)]).tolist()
    pieces = [np.zeros((0, 4), np.int64)]
    for k in range(len(chunks)):
        pieces.append(gt.stats[gt_ends[k] : gt_ends[k + 1]])
        pieces.append(pred.stats[pred_ends[k] : pred_ends[k + 1]])
    return np.concatenate(pieces)

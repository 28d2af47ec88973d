"""pycocotools' accumulation of every class in its area ranges at once, by the compiled
kernel (:class:`CocoTables`); a class's from its matched predictions alone is
:mod:`vocmatch.evaluation.coco_sparse`'s (:func:`coco_accumulate_sparse`, given here too).

Imported only under the ``coco`` summary: the records of these tables are not built for a
run that reports no COCO numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import COCO_RECALL_THRESHOLDS
from vocmatch.lazy import lazy_attribute

if TYPE_CHECKING:
    from concurrent.futures import Future

    from vocmatch.evaluation.coco_sparse import CocoHits as CocoHits
    from vocmatch.evaluation.coco_sparse import coco_accumulate_sparse as coco_accumulate_sparse

__all__ = ["MAX_DETS", "CocoHits", "CocoTables", "TablesAhead", "coco_accumulate_sparse"]

#: pycocotools' maxDets.
MAX_DETS = (1, 10, 100)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class CocoTables:
    """pycocotools' accumulation of every class in every area range, made in one call of
    the compiled kernel (``fastaccumulate.c``): what
    :meth:`~vocmatch.evaluation.accumulate.ClassBits.coco_area` gives for each class and area
    range with ground truth, the same bits.

    Attributes:
        precision: ``(K, A, T, 101, 3)`` interpolated precision (cells of a class and area
            range without ground truth are not set).
        recall: ``(K, A, T, 3)`` recall.
    """

    precision: FloatArray
    recall: FloatArray

    @classmethod
    def of(
        cls,
        kernel: ModuleType,
        rankings: Sequence[tuple[IntArray, IntArray]],
        flags: tuple[IntArray, IntArray, IntArray],
        coco_gt: IntArray,
        n_t: int,
    ) -> CocoTables:
        """The tables of every class.

        Args:
            kernel: The compiled module ``vocmatch.evaluation.fastaccumulate``.
            rankings: Each class's predictions (rows of the flags) in its ranking, and each
                one's rank in its image-class.
            flags: ``(P,)`` area bits, ``(P, A)`` COCO matched and ignored bits (see
                :class:`~vocmatch.evaluation.accumulate.ClassBits`).
            coco_gt: ``(K, A)`` ground truth that counts in each area range.
            n_t: The AP thresholds.
        """
        area, matched, ignored = (np.ascontiguousarray(flag) for flag in flags)
        n_k, n_a = len(rankings), matched.shape[1]
        sizes = [rows.size for rows, _ in rankings]
        starts = np.zeros(n_k + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        rows = np.concatenate([np.zeros(0, np.int64), *(rows for rows, _ in rankings)])
        rank = np.concatenate([np.zeros(0, np.int64), *(rank for _, rank in rankings)])
        precision = np.zeros((n_k, n_a, n_t, COCO_RECALL_THRESHOLDS.size, len(MAX_DETS)))
        recall = np.zeros((n_k, n_a, n_t, len(MAX_DETS)))
        kernel.coco_accumulate(
            rows.astype(np.int64, copy=False), rank.astype(np.int64, copy=False), starts,
            np.ascontiguousarray(coco_gt, dtype=np.int64).reshape(n_k, n_a),
            COCO_RECALL_THRESHOLDS, np.asarray(MAX_DETS, dtype=np.int64), area, matched,
            ignored, n_t, n_a, float(np.spacing(1)), precision, recall,
        )  # fmt: skip
        return cls(precision, recall)


class TablesAhead:
    """:class:`CocoTables` of every class a chunk of classes at a time, each chunk made by
    the compiled kernel in a thread while the caller reads the chunks before it, or does
    other work (the kernel leaves the GIL): with ``threads`` threads, that many chunks are
    made at once; ``ahead`` chunks (``threads`` by default) are begun ahead of the one being
    read, and at most one more is held (the one being read).

    Use it as a context manager: the threads end with the block, chunks not begun dropped.

    Attributes:
        rankings: Each class's predictions in its ranking, with their ranks.
        chunk: Classes a chunk.
        threads: Chunks made at once.
        ahead: Chunks begun ahead of the one being read.
    """

    def __init__(
        self,
        kernel: ModuleType,
        rankings: Sequence[tuple[IntArray, IntArray]],
        flags: tuple[IntArray, IntArray, IntArray],
        coco_gt: IntArray,
        n_t: int,
        chunk: int,
        threads: int = 1,
        ahead: int | None = None,
    ) -> None:
        """Begin the first chunks' tables (arguments as :meth:`CocoTables.of`'s; ``chunk``:
        classes a chunk, at least one; ``threads``: at least one; ``ahead``: at least
        ``threads``)."""
        from concurrent.futures import ThreadPoolExecutor

        self.rankings = rankings
        self.chunk = max(1, chunk)
        self.threads = max(1, threads)
        self.ahead = max(self.threads, ahead or 0)
        area, matched, ignored = (np.ascontiguousarray(flag) for flag in flags)
        self._made = (kernel, (area, matched, ignored), coco_gt, n_t)
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="vocmatch-coco-tables")
        self._pending: dict[int, Future[CocoTables]] = {}
        for j in range(self.ahead):
            self._begin(j * self.chunk)

    def _begin(self, first: int) -> None:
        if first >= len(self.rankings) or first in self._pending:
            return
        kernel, flags, coco_gt, n_t = self._made
        last = first + self.chunk
        self._pending[first] = self._pool.submit(
            CocoTables.of, kernel, self.rankings[first:last], flags, coco_gt[first:last], n_t
        )

    def tables(self, first: int) -> CocoTables:
        """The tables of the chunk whose first class is ``first`` (a multiple of
        :attr:`chunk`), the chunk :attr:`ahead` chunks on begun meanwhile.

        Raises:
            ValueError: The kernel refused its arguments.
        """
        self._begin(first)
        future = self._pending.pop(first)
        self._begin(first + self.ahead * self.chunk)
        return future.result()

    def close(self) -> None:
        """Drop the chunks not begun and wait for those being made."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> TablesAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Names of :mod:`vocmatch.evaluation.coco_sparse`, given here on first use (PEP 562): the
#: kernel's accumulation builds no record of a class's sparse one.
_ELSEWHERE = {
    "CocoHits": "vocmatch.evaluation.coco_sparse",
    "coco_accumulate_sparse": "vocmatch.evaluation.coco_sparse",
}


def __getattr__(name: str) -> Any:
    """Import a name of :data:`_ELSEWHERE` from its module on first use (PEP 562)."""
    return lazy_attribute(__name__, _ELSEWHERE, name)

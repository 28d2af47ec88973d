"""The JSON report's image rows made ahead, before the report is rendered.

A local run in parts makes each part's image results as the part comes back
(:mod:`vocmatch.run.in_parts`), while the workers match the other parts; where the JSON report
is to be written (:func:`rows_ahead`), it makes that part's rows then too (:func:`part_rows`:
the text :class:`~vocmatch.render.json_report.ImageRows` writes of those images), and the
evaluation's images carry them (:class:`ImagesWithRows`). The report then writes the rows
made ahead, one part after the other, joined by the same separator as every row: the bytes
it would have written from the images, as the rows are made of the very same image results
(checked object by object) by the same writer.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import chain
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vocmatch.evaluation.result import ImageResult

__all__ = ["ROW_SEPARATOR", "ImagesWithRows", "part_rows", "rows_ahead", "rows_asked", "with_rows"]

#: Between two rows of the report's ``images`` list: one image a line, at the indentation of
#: a list held by the report's top-level mapping.
ROW_SEPARATOR = ",\n    "

_ASKED: ContextVar[bool] = ContextVar("vocmatch_json_rows_ahead", default=False)


@contextmanager
def rows_ahead() -> Iterator[None]:
    """Within the block, a run that makes its images' results ahead of its evaluation makes
    their JSON rows too (the command line asks for them when it writes the JSON report)."""
    token = _ASKED.set(True)
    try:
        yield
    finally:
        _ASKED.reset(token)


def rows_asked() -> bool:
    """Whether the JSON rows are to be made ahead (within :func:`rows_ahead`)."""
    return _ASKED.get()


def part_rows(images: Sequence[ImageResult]) -> bytes:
    """The rows of ``images``, joined by :data:`ROW_SEPARATOR`, as the report writes them."""
    from vocmatch.render.json_report import ImageRows

    return ImageRows(images).joined(ROW_SEPARATOR)


class ImagesWithRows(tuple["ImageResult", ...]):
    """An evaluation's images, with their JSON rows made ahead: consecutive pieces (each
    the rows of consecutive images joined by :data:`ROW_SEPARATOR`) that, joined by it
    too, are every image's row. Compared, hashed and pickled as the plain tuple it is (the
    rows are not pickled).

    Attributes:
        rows: The pieces, in the images' order.
    """

    rows: tuple[bytes, ...]

    def __new__(cls, images: Sequence[ImageResult], rows: Sequence[bytes]) -> ImagesWithRows:
        made = super().__new__(cls, images)
        made.rows = tuple(rows)
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (tuple(self),)


def with_rows(
    images: tuple[ImageResult, ...], parts: Sequence[tuple[Sequence[ImageResult], bytes]]
) -> tuple[ImageResult, ...]:
    """``images`` carrying the rows of ``parts`` (``(images, rows)`` of each part, in any
    order) where the parts' images, ordered by their first key, are ``images`` themselves,
    object by object; else ``images`` as they are."""
    ordered = sorted((p for p in parts if p[0]), key=lambda p: p[0][0].key)
    if sum(len(p[0]) for p in ordered) != len(images):
        return images
    if not all(map(operator.is_, chain.from_iterable(p[0] for p in ordered), images)):
        return images
    return ImagesWithRows(images, [rows for _, rows in ordered])

"""The float lists of a JSON report formatted ahead of its writing, by two threads at once.

A large report's text is mostly its classes' curves (40 MB of the 72 MB of 80,000
Objects365-shaped images: 2.5 million numbers). The compiled writer formats a list of
numbers without holding the interpreter's lock (``vocmatch.render.fastjson.float_list``, for
lists of finite numbers none of which is subnormal), so where two cores are, a second thread
formats the later half of the lists while this one formats the first: each list's text is
the one the writer gives it either way, and :func:`~vocmatch.render.json_report.dumps_chunks`
writes it where the list is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from vocmatch.render.json_report import FloatArray, NumberList

__all__ = ["THREADED_VALUES", "format_ahead"]

#: Numbers from which the lists are formatted by two threads (fewer cost less than a
#: thread's start).
THREADED_VALUES = 100_000


def format_ahead(data: Any, fast: ModuleType) -> None:
    """Give each :class:`FloatArray` held in ``data``'s mappings its text (``text``), the
    later half of them (by numbers) formatted by a second thread where two cores are and
    there are at least :data:`THREADED_VALUES` numbers; none where fewer (each is formatted
    as it is written). A list the writer refuses is left without text, to be refused where
    it is written."""
    from vocmatch.readers.workers import available_cores

    arrays = list(_float_arrays(data))
    sizes = [a.array.size for a in arrays]
    total = sum(sizes)
    if total < THREADED_VALUES or available_cores() < 2:
        return
    half, split = 0, len(arrays)
    for k, size in enumerate(sizes):
        if half >= total / 2:
            split = k
            break
        half += size
    helper = threading.Thread(target=_format, args=(arrays[split:], fast), daemon=True)
    helper.start()
    try:
        _format(arrays[:split], fast)
    finally:
        helper.join()


def _format(arrays: list[FloatArray], fast: ModuleType) -> None:
    for array in arrays:
        try:
            array.text = fast.float_list(array.array)
        except (ValueError, TypeError, MemoryError):
            return  # refused where it is written, on the writing thread


def _float_arrays(value: Any) -> Iterator[FloatArray]:
    """The :class:`FloatArray` objects held by ``value``'s mappings, in the order the
    report writes them: within mappings, and lists of mappings (not lists of numbers or of
    lists)."""
    if isinstance(value, dict):
        for item in value.values():
            if isinstance(item, FloatArray):
                yield item
            elif isinstance(item, (dict, list, tuple)):
                yield from _float_arrays(item)
    elif (
        isinstance(value, (list, tuple))
        and not isinstance(value, NumberList)
        and value
        and isinstance(value[0], dict)
    ):
        for item in value:
            yield from _float_arrays(item)

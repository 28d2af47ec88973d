"""The checks of a value given to the library, each naming the field at fault: numbers
(finite, in range, of the right type), flags, names from a known list, paths.

Every door runs them: a request built in Python, the command line's options (which it turns
into requests) and the incremental evaluator's arguments, so that a value one door refuses
is never taken silently by another. Each raises :class:`~vocmatch.errors.RequestError`,
whose ``field`` a caller words as it names the field (the command line names its flag).

Standard library only.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from vocmatch.errors import RequestError

__all__ = [
    "FIELD_BOUNDS",
    "Bounds",
    "checked_bounded",
    "checked_flag",
    "checked_name",
    "checked_number",
    "checked_optional_number",
    "checked_path",
    "checked_whole",
    "known_list",
]

T = TypeVar("T")


def _shown(value: object) -> str:
    """A value as a message repeats it, cut short."""
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True, slots=True)
class Bounds:
    """The values a number field takes: the one rule of its range, which the library's
    checks and the command line's option types both read.

    Attributes:
        low: The lowest value allowed (or, with ``low_open``, the bound above which).
        high: The highest value allowed (or, with ``high_open``, the bound below which).
        low_open: ``low`` itself is refused.
        high_open: ``high`` itself is refused.
        whole: A whole number (a count); ``low`` is then its least value.
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    whole: bool = False


_FRACTION = Bounds(0.0, 1.0)

#: The range of every number field of a request: the one rule of each, which a request's
#: checks (:mod:`vocmatch.run.request_checks`) and the conventions apply and the command
#: line's option types read (``--iou`` takes its bounds from ``iou``), so that no door takes
#: a value another refuses.
FIELD_BOUNDS: dict[str, Bounds] = {
    "max_file_size": Bounds(0, whole=True),
    "jobs": Bounds(0, whole=True),
    "iou": _FRACTION,  # and each threshold of a sweep or of the AP's average
    "max_dets": Bounds(1, whole=True),
    "score_threshold": Bounds(),
    "max_fp": Bounds(0, whole=True),
    "max_fn": Bounds(0, whole=True),
    "background_iou": _FRACTION,
    "bootstrap": Bounds(1, whole=True),
    "seed": Bounds(0, whole=True),
    "calibration_bins": Bounds(1, whole=True),
    "beta": Bounds(0.0, low_open=True),
    "alpha": Bounds(0.0, 1.0, low_open=True, high_open=True),
    "confidence": _FRACTION,
    "target_precision": Bounds(0.0, 1.0, low_open=True),
    "target_recall": Bounds(0.0, 1.0, low_open=True),
    "confidence_level": Bounds(0.0, 1.0, low_open=True, high_open=True),
    "match_iou": _FRACTION,
    "duplicate_iou": _FRACTION,
    "min_score": Bounds(),
    "nms": _FRACTION,
    "max_per_image": Bounds(1, whole=True),
}


def checked_bounded(
    field: str, value: object, bounds: Bounds, *, optional: bool = False
) -> float | int | None:
    """``value`` checked by its field's :class:`Bounds` (None kept as None when
    ``optional``: the option not given).

    Raises:
        RequestError: Not such a number (:func:`checked_number`, :func:`checked_whole`).

    >>> checked_bounded("alpha", 1.0, Bounds(0.0, 1.0, low_open=True, high_open=True))
    Traceback (most recent call last):
    ...
    vocmatch.errors.RequestError: alpha '1': expected a finite number in (0, 1)
    """
    if value is None and optional:
        return None
    if bounds.whole:
        return checked_whole(field, value, low=int(bounds.low or 0))
    return checked_number(
        field, value, low=bounds.low, high=bounds.high, low_open=bounds.low_open,
        high_open=bounds.high_open,
    )  # fmt: skip


def _range_words(
    low: float | None, high: float | None, low_open: bool, high_open: bool = False
) -> str:
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"above {low:g}" if low_open else f"at least {low:g}"
    if high is not None:
        return f"below {high:g}" if high_open else f"at most {high:g}"
    return ""


def checked_number(
    field: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a finite float within the bounds given.

    Args:
        field: The field named by the error.
        value: The value given: an int or a float (a bool is refused, as a number given
            by mistake for a flag).
        low: The lowest value allowed (or, with ``low_open``, the bound above which).
        high: The highest value allowed.
        low_open: ``low`` itself is refused.
        high_open: ``high`` itself is refused.

    Raises:
        RequestError: Not a number, NaN or infinite, or out of range.

    >>> checked_number("iou", 0.7, low=0.0, high=1.0)
    0.7
    >>> checked_number("iou", float("nan"), low=0.0, high=1.0)
    Traceback (most recent call last):
    ...
    vocmatch.errors.RequestError: iou 'nan': expected a finite number in [0, 1]
    """
    wanted = " ".join(
        filter(None, ("a finite number", _range_words(low, high, low_open, high_open)))
    )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise RequestError(field, f"expected {wanted}, got {type(value).__name__}", _shown(value))
    number = float(value)
    in_range = math.isfinite(number)
    if in_range and low is not None:
        in_range = number > low if low_open else number >= low
    if in_range and high is not None:
        in_range = number < high if high_open else number <= high
    if not in_range:
        raise RequestError(field, f"expected {wanted}", f"{number:g}")
    return number


def checked_optional_number(
    field: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float | None:
    """:func:`checked_number`, with None kept as None (the option not given)."""
    if value is None:
        return None
    return checked_number(field, value, low=low, high=high, low_open=low_open)


def checked_whole(field: str, value: object, *, low: int, optional: bool = False) -> int | None:
    """``value`` as a whole number of at least ``low`` (None kept when ``optional``).

    Raises:
        RequestError: Not an int (a float such as ``2.0`` or a bool is refused), or below
            ``low``.

    >>> checked_whole("bootstrap", 0, low=1)
    Traceback (most recent call last):
    ...
    vocmatch.errors.RequestError: bootstrap '0': expected a whole number of at least 1
    """
    if value is None and optional:
        return None
    wanted = f"a whole number of at least {low}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise RequestError(field, f"expected {wanted}, got {type(value).__name__}", _shown(value))
    if int(value) < low:
        raise RequestError(field, f"expected {wanted}", str(int(value)))
    return int(value)


def checked_max_bytes(value: object) -> int:
    """A file-size limit given to a reader of the library (``max_bytes``): a whole number
    of bytes. Any integer is taken (one below a file's size refuses that file, so a
    negative one refuses every file); a request's ``max_file_size`` is further bounded by
    :data:`FIELD_BOUNDS`.

    Raises:
        RequestError: A float (even ``1e6``), a bool, a string or None.

    >>> checked_max_bytes(1e6)
    Traceback (most recent call last):
    ...
    vocmatch.errors.RequestError: max_bytes '1000000.0': expected a whole number, got float
    """
    return _checked_integer("max_bytes", value)


def checked_jobs(value: object) -> int:
    """The workers asked of a reader of the library (``jobs``): a whole number, 0 or less
    meaning every core.

    Raises:
        RequestError: A float, a bool, a string or None.
    """
    return _checked_integer("jobs", value)


def _checked_integer(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise RequestError(
            field, f"expected a whole number, got {type(value).__name__}", _shown(value)
        )
    return int(value)


def checked_flag(field: str, value: object, *, optional: bool = False) -> bool | None:
    """``value``, which must be True or False (or None when ``optional``: the protocol's).

    Raises:
        RequestError: Anything else (``"no"`` would be true).
    """
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        raise RequestError(
            field, f"expected True or False, got {type(value).__name__}", _shown(value)
        )
    return value


def known_list(known: Iterable[str]) -> str:
    """The known names as a message lists them, sorted.

    >>> known_list(["voc12", "coco"])
    'coco, voc12'
    """
    return ", ".join(sorted(known))


def checked_name(
    field: str, value: object, known: Sequence[T], *, what: str, optional: bool = False
) -> T | None:
    """``value``, which must be one of ``known`` (None kept when ``optional``).

    Args:
        field: The field named by the error.
        value: The value given.
        known: The names allowed.
        what: What the names are, for the message (``"match rule"``).
        optional: None is allowed (the protocol's choice is kept).

    Raises:
        RequestError: Not one of ``known``; the message lists them.

    >>> checked_name("match_rule", "greedy", ("unmatched", "devkit"), what="match rule")
    Traceback (most recent call last):
    ...
    vocmatch.errors.RequestError: match_rule 'greedy': no such match rule (known: devkit, unmatched)
    """
    if value is None and optional:
        return None
    for name in known:
        if isinstance(value, str) and value == name:
            return name
    names = known_list(str(name) for name in known)
    raise RequestError(field, f"no such {what} (known: {names})", _shown(value))


def checked_path(field: str, value: object) -> str | os.PathLike[str]:
    """A path or URL given as ``str`` or ``os.PathLike``, not empty (the system would read
    ``""`` as the current folder).

    Raises:
        RequestError: Empty, or not a path.

    >>> checked_path("gt", "")
    Traceback (most recent call last):
    ...
    vocmatch.errors.RequestError: gt: the path is empty
    """
    if not isinstance(value, (str, os.PathLike)):
        raise RequestError(field, f"expected a path, got {type(value).__name__}", _shown(value))
    text = os.fspath(value)
    if not text:
        raise RequestError(field, "the path is empty")
    if isinstance(text, bytes) or "\0" in text:
        raise RequestError(field, "expected a path as text, without NUL characters")
    return value

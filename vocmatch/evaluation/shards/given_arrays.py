"""The arrays a caller gives :class:`~vocmatch.evaluation.shards.incremental.Evaluator`, checked
as the XML reader checks a file's boxes and names.

The same rules as :mod:`vocmatch.readers.parse` (:func:`~vocmatch.core.model.coordinate_problem`,
:func:`~vocmatch.core.model.corner_problem`, :func:`~vocmatch.core.model.class_name_problem`):
coordinates finite and within ±2^53, ``x1 <= x2`` and ``y1 <= y2``, class names stripped and
not empty. A box the reader refuses in a file is refused here, naming the array and the row,
rather than scored (inverted boxes, as ``xywh`` given for ``xyxy``, would all be misses and
false positives; a coordinate of 1e155 overflows the area).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.model import (
    MAX_COORDINATE,
    class_name_problem,
    coordinate_problem,
    corner_problem,
)
from vocmatch.errors import InputError, RequestError

__all__ = [
    "bad_rows",
    "batch_entry",
    "box_array",
    "checked_boxes",
    "checked_image_size",
    "checked_names",
    "checked_vector",
    "class_table",
    "image_key",
    "numbered_key",
    "to_numpy",
]

FloatArray = npt.NDArray[np.float64]
_CORNERS = ("x1", "y1", "x2", "y2")


def to_numpy(value: Any) -> npt.NDArray[Any]:
    """``value`` as a numpy array; a tensor (anything with ``detach`` and ``cpu``) is moved
    to the host first, with no import of its library."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu()
    try:
        return np.asarray(value)
    except (TypeError, ValueError):
        # A ragged list: numpy cannot make one array of it.
        return np.asarray(value, dtype=object)


def bad_rows(boxes: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """``(N,)`` the rows of ``(N, 4)`` float boxes that :func:`checked_boxes` refuses (NaN
    fails every comparison)."""
    in_range = (np.abs(boxes) <= MAX_COORDINATE).all(axis=1)
    ordered = (boxes[:, 2] >= boxes[:, 0]) & (boxes[:, 3] >= boxes[:, 1])
    return ~(in_range & ordered)  # type: ignore[no-any-return]


def checked_boxes(value: Any, what: str) -> FloatArray:
    """``(N, 4)`` boxes ``x1, y1, x2, y2`` as float64, ``(0, 4)`` for none.

    Args:
        value: The boxes given (an array, a list of rows, a tensor).
        what: How the message names them (```gt_boxes```, ```gt_boxes` of image 3``).

    Raises:
        InputError: Another shape, not numbers, or a row the XML reader would refuse.

    >>> checked_boxes([[10, 0, 4, 5]], "`gt_boxes`")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vocmatch.errors.InputError: Expected `gt_boxes` to be ...: row 0: x2 4 is less than x1 10
    """
    boxes = to_numpy(value)
    if boxes.size == 0 and boxes.ndim <= 2:
        return np.zeros((0, 4))
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise InputError(f"Expected {what} to have shape (N, 4), got {boxes.shape}")
    if boxes.dtype.kind not in "iuf":
        raise InputError(f"Expected {what} to hold numbers, got dtype {boxes.dtype}")
    result = boxes.astype(np.float64)
    bad = np.flatnonzero(bad_rows(result))
    if bad.size:
        row = int(bad[0])
        x1, y1, x2, y2 = (float(v) for v in result[row])
        for name, coordinate in zip(_CORNERS, (x1, y1, x2, y2), strict=True):
            problem = coordinate_problem(coordinate)
            if problem is not None:
                wanted = (
                    "finite" if np.isnan(coordinate) or np.isinf(coordinate) else "within ±2^53"
                )
                raise InputError(
                    f"Expected {what} to be {wanted}: row {row}: {name} {coordinate:g} {problem}"
                )
        problem = corner_problem(x1, y1, x2, y2, _CORNERS)
        raise InputError(
            f"Expected {what} to be x1, y1, x2, y2 with x1 <= x2 and y1 <= y2: row {row}: {problem}"
        )
    return result


def box_array(value: Any) -> npt.NDArray[Any] | None:
    """``(N, 4)`` numeric boxes as given, ``(0, 4)`` for none; None for another shape or
    type (:func:`checked_boxes` then says why). The values are not looked at: a batch's are
    checked at once (:func:`bad_rows`)."""
    boxes = to_numpy(value)
    if boxes.size == 0 and boxes.ndim <= 2:
        return np.zeros((0, 4))
    if boxes.ndim != 2 or boxes.shape[1] != 4 or boxes.dtype.kind not in "iuf":
        return None
    return boxes


def checked_vector(value: Any, n: int, what: str) -> npt.NDArray[Any]:
    """``(n,)`` numbers (or booleans).

    Raises:
        InputError: Another shape, or not numbers.
    """
    values = to_numpy(value)
    if values.ndim != 1 or values.shape[0] != n:
        raise InputError(f"Expected {what} to have shape ({n},), got {values.shape}")
    if values.dtype.kind not in "biuf":
        raise InputError(f"Expected {what} to hold numbers, got dtype {values.dtype}")
    return values


def checked_names(names: list[str], what: str) -> list[str]:
    """Class names stripped as the XML reader strips ``<name>`` (``'car '`` is ``car``).

    Raises:
        InputError: A name is empty once stripped.

    >>> checked_names([" car", "dog"], "`gt_labels`")
    ['car', 'dog']
    """
    stripped = [name.strip() for name in names]
    for given in names:
        problem = class_name_problem(given)
        if problem is not None:
            raise InputError(f"{what}: a class name {problem}: {given!r}")
    return stripped


def batch_entry(item: object, key: str, what: str, *, optional: bool = False) -> Any:
    """``item[key]`` of an image of
    :meth:`~vocmatch.evaluation.shards.incremental.Evaluator.add_batch` (torchmetrics'
    layout: one mapping per image).

    Args:
        item: The image's mapping.
        key: The entry wanted (``"boxes"``).
        what: How the message names the image (``preds[3]``).
        optional: A missing entry is None rather than an error.

    Raises:
        InputError: Not a mapping, or the entry is missing.
    """
    if not isinstance(item, Mapping):
        raise InputError(
            f"Expected {what} to be a mapping such as {{'boxes': ..., 'labels': ...}}, "
            f"got {type(item).__name__}"
        )
    if key not in item:
        if optional:
            return None
        raise InputError(f"Expected {what} to have a {key!r} entry, got {sorted(map(str, item))}")
    return item[key]


def class_table(class_names: object) -> dict[int, str]:
    """The names of integer labels, each stripped as the XML reader strips ``<name>``.

    Raises:
        RequestError: Not a sequence or mapping of names, or a name empty once stripped.
    """
    if class_names is None:
        return {}
    if isinstance(class_names, Mapping):
        pairs = list(class_names.items())
    elif isinstance(class_names, Sequence) and not isinstance(class_names, (str, bytes)):
        pairs = list(enumerate(class_names))
    else:
        raise RequestError(
            "class_names", f"expected a list of names or a mapping of ids to names, got "
            f"{type(class_names).__name__}"
        )  # fmt: skip
    table = {}
    for label, name in pairs:
        if isinstance(label, bool) or not isinstance(label, (int, np.integer)):
            raise RequestError("class_names", "expected integer ids", str(label))
        if not isinstance(name, str) or not name.strip():
            raise RequestError("class_names", f"the name of id {label} is empty", str(name))
        table[int(label)] = name.strip()
    return table


def checked_image_size(value: Any) -> tuple[float, float] | None:
    """``(width, height)`` as floats, checked: two positive finite numbers, or None.

    Raises:
        InputError: Anything else.
    """
    if value is None:
        return None
    try:
        width, height = (float(v) for v in value)
    except (TypeError, ValueError):
        width = height = math.nan
    if isinstance(value, (str, bytes)) or not (
        math.isfinite(width) and math.isfinite(height) and width > 0 and height > 0
    ):
        raise InputError(
            f"Expected `image_size` to be (width, height), two positive finite numbers, "
            f"got {value!r:.60}"
        )
    return width, height


def image_key(value: Any, field: str = "image_id") -> str:
    """An image's key from the id a caller gives: a string as it is, a whole number (an
    ``int``, a numpy integer or 0-d integer array, a one-element integer tensor) as its
    decimal text.

    Anything else is refused rather than turned into text: ``str()`` would make ``1.0``,
    ``None``, ``b"x"`` or a tensor's ``tensor(3)`` keys that never pair with the same image's
    ``"1"`` or ``"x"`` given by another shard, so a merge would count one image twice.

    Raises:
        InputError: A bool, a float, None, bytes or any other object.
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, bool):
        try:
            return str(operator.index(value))
        except TypeError:
            pass
    raise InputError(
        f"Expected `{field}` to be a string or a whole number, got "
        f"{type(value).__name__} {value!r:.60}"
    )


def numbered_key(key: str, ranges: Sequence[tuple[int, int]]) -> bool:
    """Whether ``key`` is a number add_batch gave, in one of the ``[start, stop)`` ranges."""
    if not (key.isdecimal() and key.isascii()) or (key.startswith("0") and key != "0"):
        return False
    # A key longer than every stop is no number in the ranges; this also keeps int() within
    # the digits Python converts (a 5,000-digit key would raise ValueError).
    if all(len(key) > len(str(stop)) for _, stop in ranges):
        return False
    number = int(key)
    return any(start <= number < stop for start, stop in ranges)

"""The classes an :class:`~vocmatch.evaluation.shards.incremental.Evaluator` has seen, and how
the integer labels it is given name them.

Labels come as class names or as integer ids. An id is named by the evaluator's class table
(``class_names``); without a table, by its text (id ``3`` is class ``"3"``). The ids named by
their text are remembered (and saved with the state): a merge with an evaluator whose table
names such an id otherwise, or not at all, is refused, since the two may mean one class.
Each class gets an index, in the order the classes are first seen; the indices of small ids
are kept in an array, so that images naming no new class are looked up without a sort.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.errors import InputError, StateError
from vocmatch.evaluation.shards.given_arrays import checked_names, to_numpy

__all__ = ["ClassLabels", "text_ids_of_header"]

IntArray = npt.NDArray[np.int64]

#: Integer label ids below this are looked up in an array (at most 8 bytes each).
_ID_INDEX_LIMIT = 1 << 16


class ClassLabels:
    """The class table, the classes seen (name -> index) and the ids looked up so far.

    Args:
        table: The names of integer labels (checked by
            :func:`~vocmatch.evaluation.shards.given_arrays.class_table`).
        names: The classes already seen, each with its index (0, 1, ... in order).
    """

    __slots__ = ("_id_index", "names", "table", "text_ids")

    def __init__(self, table: dict[int, str], names: dict[str, int] | None = None) -> None:
        self.table = table
        self.names: dict[str, int] = {} if names is None else names
        #: The integer ids named by their text for want of a table.
        self.text_ids: set[int] = set()
        # Integer label -> class index, for the labels seen so far (-1: not yet seen): most
        # images name no new class, and a lookup spares them the sort of ``np.unique``.
        self._id_index = np.full(0, -1, dtype=np.int64)

    def copy(self) -> ClassLabels:
        """A copy that changes apart from this one."""
        copied = ClassLabels(dict(self.table), dict(self.names))
        copied._id_index = self._id_index.copy()
        copied.text_ids = set(self.text_ids)
        return copied

    def intern(self, name: str) -> int:
        """The index of class ``name``, a new one if it was not seen."""
        return self.names.setdefault(name, len(self.names))

    def merge(self, other: ClassLabels) -> None:
        """Take in another evaluator's classes and class table.

        Raises:
            StateError: The two tables give one id two names, or an id one of them named by
                its text is named otherwise, or not at all, by the other's table.
        """
        for ids, table_of_other in ((self.text_ids, other.table), (other.text_ids, self.table)):
            _check_text_ids(ids, table_of_other)
        table = dict(self.table)
        for label, name in other.table.items():
            if table.setdefault(label, name) != name:
                raise StateError(
                    f"cannot merge states whose class tables disagree: id {label} is "
                    f"{table[label]!r} in one and {name!r} in the other"
                )
        for name in other.names:
            self.intern(name)
        if table != self.table:  # ids named by their text for want of a table: forgotten
            self._id_index = np.full(0, -1, dtype=np.int64)
        self.table = table
        self.text_ids |= other.text_ids

    def indices(self, labels: Any, n: int, what: str) -> IntArray:
        """Class indices of ``labels`` (names, or ids named by the class table).

        Raises:
            InputError: ``labels`` is not ``(n,)`` names or integer ids, or an id has no
                name in the table.
        """
        values = to_numpy(labels)
        if values.ndim != 1 or values.shape[0] != n:
            raise InputError(f"Expected {what} to have shape ({n},), got {values.shape}")
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if values.dtype.kind in "iu":
            known = self.known_ids(values)
            if known is not None:
                return known
            distinct, inverse = np.unique(values, return_inverse=True)
            names = []
            for label in distinct.tolist():
                if self.table:
                    if label not in self.table:
                        raise InputError(f"{what} holds {label}, which has no class name")
                    names.append(self.table[label])
                else:
                    names.append(str(label))
                    self.text_ids.add(label)
        elif values.dtype.kind in "UO":
            if values.dtype.kind == "O" and not all(isinstance(v, str) for v in values):
                raise InputError(f"Expected {what} to hold class names or integer ids")
            distinct, inverse = np.unique(values.astype(str), return_inverse=True)
            names = checked_names(distinct.tolist(), what)
        else:
            raise InputError(
                f"Expected {what} to hold class names or integer ids, got dtype {values.dtype}"
            )
        index = np.array([self.intern(name) for name in names], dtype=np.int64)
        if values.dtype.kind in "iu":
            self._remember_ids(distinct, index)
        return index[inverse.reshape(-1)]

    def known_ids(self, values: npt.NDArray[Any]) -> IntArray | None:
        """The class indices of integer labels that were all seen before, else None."""
        lowest, highest = int(values.min()), int(values.max())
        if lowest < 0 or highest >= self._id_index.size:
            return None
        index = self._id_index[values]
        return None if (index < 0).any() else index

    def _remember_ids(self, distinct: npt.NDArray[Any], index: IntArray) -> None:
        """Keep the class index of each small non-negative label id for :meth:`known_ids`."""
        small = (distinct >= 0) & (distinct < _ID_INDEX_LIMIT)
        if not small.any():
            return
        ids = distinct[small].astype(np.int64)
        size = int(ids.max()) + 1
        if size > self._id_index.size:
            grown = np.full(size, -1, dtype=np.int64)
            grown[: self._id_index.size] = self._id_index
            self._id_index = grown
        self._id_index[ids] = index[small]


def _check_text_ids(ids: set[int], table: dict[int, str]) -> None:
    """Refuse ids named by their text that ``table`` (when there is one) names otherwise."""
    if not table:
        return
    for label in sorted(ids):
        name = table.get(label)
        if name != str(label):
            other = "has no name" if name is None else repr(name)
            raise StateError(
                f"cannot merge states whose class tables disagree: id {label} is "
                f"{str(label)!r} (named by its text, without a class table) in one and "
                f"{other} in the other"
            )


def text_ids_of_header(
    value: object, names: list[str], table: dict[int, str], source: str
) -> set[int]:
    """The ids a state's header says were named by their text (``text_ids``; absent in
    states that hold none).

    Raises:
        StateError: Not a list of distinct integer ids, each a class of the state whose
            table, if it names the id, names it by its text.
    """
    known = set(names)
    if not isinstance(value, list) or not all(type(v) is int for v in value):
        raise StateError(f"{source}: corrupted header (text_ids)")
    ids = set(value)
    if len(ids) != len(value) or any(
        str(v) not in known or table.get(v, str(v)) != str(v) for v in ids
    ):
        raise StateError(f"{source}: corrupted header (text_ids)")
    return ids

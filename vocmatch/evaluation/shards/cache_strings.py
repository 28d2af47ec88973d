"""The strings of a cache file (:mod:`vocmatch.evaluation.shards.cache_file`) kept as
they were read: the stat index's paths, and the joined records' image keys and paths.

Each is stored as one array, the UTF-8 of its strings joined by NUL bytes. A run after a
few edits lists the same files and images as the run that wrote its cache, so the new
file holds the same strings: their bytes are written again as read (views of the old
file's bytes, already in memory) instead of being joined and encoded again. They are
taken only when the values to write are the values read, equal string by string (and
when re-encoding what was read gives the bytes read: UTF-8 with ``surrogatepass`` reads
and writes the same bytes, and an image without a prediction file has an empty path),
so the new file is byte for byte the one the run would have encoded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = [
    "FILE_PATHS",
    "GT_PATHS",
    "IMAGE_KEYS",
    "NO_PRED",
    "PRED_PATHS",
    "StoredStrings",
    "joined_strings",
    "string_bytes",
]

#: The names of the arrays kept (those of the joined layout with their ``joined.`` prefix).
FILE_PATHS = "file_paths"
IMAGE_KEYS = "joined.keys"
GT_PATHS = "joined.gt_paths"
PRED_PATHS = "joined.pred_paths"
NO_PRED = "joined.no_pred"


@dataclass(frozen=True, slots=True, eq=False)
class StoredStrings:
    """Strings of a cache file as read: per array name, the values its bytes hold and the
    bytes (read-only views of the file's bytes).

    Attributes:
        held: Per array name, the values read (a tuple: compared with ``==``) and the
            array that holds them.
    """

    held: Mapping[str, tuple[tuple[str | None, ...], npt.NDArray[np.uint8]]] = field(
        default_factory=dict
    )

    def bytes_of(self, name: str, values: tuple[str | None, ...]) -> npt.NDArray[np.uint8] | None:
        """The array read for ``name`` when it held ``values``, else None."""
        found = self.held.get(name)
        if found is None or found[0] != values:
            return None
        return found[1]

    def with_images(
        self,
        keys: tuple[str, ...],
        gt_paths: tuple[str, ...],
        pred_paths: tuple[str | None, ...],
        arrays: Mapping[str, npt.NDArray[np.uint8]],
    ) -> StoredStrings:
        """These strings and the joined records' image keys and paths read from ``arrays``
        (the joined layout's, without the prefix): a prediction path is kept only when
        every image without a prediction file has an empty one, as a run writes it."""
        held = dict(self.held)
        for name, values, stored in (
            (IMAGE_KEYS, keys, "keys"),
            (GT_PATHS, gt_paths, "gt_paths"),
            (NO_PRED, pred_paths, "no_pred"),
        ):
            if stored in arrays:
                held[name] = (values, arrays[stored])
        pred, no_pred = arrays.get("pred_paths"), arrays.get("no_pred")
        if pred is not None and no_pred is not None and _empty_where_none(pred, no_pred):
            held[PRED_PATHS] = (pred_paths, pred)
        return StoredStrings(held)


def _empty_where_none(pred: npt.NDArray[np.uint8], no_pred: npt.NDArray[np.uint8]) -> bool:
    """Whether the stored prediction paths (``pred``, joined by NUL bytes) are the empty
    string wherever an image has no prediction file (``no_pred``), as a run writes them."""
    missing = no_pred.astype(bool)
    if not missing.any():
        return True
    cuts = np.flatnonzero(pred == 0)
    if cuts.size + 1 != missing.size:
        return False
    starts = np.concatenate([[0], cuts + 1])
    ends = np.concatenate([cuts, [pred.size]])
    return not bool((ends - starts)[missing].any())


def joined_strings(values: Sequence[str]) -> npt.NDArray[np.uint8]:
    """Strings (none holding a NUL) as the bytes of their UTF-8 joined by NUL bytes."""
    joined = "\0".join(values).encode("utf-8", "surrogatepass")
    return np.frombuffer(joined, dtype=np.uint8)


def string_bytes(
    stored: StoredStrings | None, name: str, values: tuple[str | None, ...]
) -> npt.NDArray[np.uint8]:
    """The array of ``values`` under ``name``: the one read when it held them, else made
    (for the prediction paths, an image without one as the empty string; for ``no_pred``,
    a 1 for each such image)."""
    if stored is not None:
        found = stored.bytes_of(name, values)
        if found is not None:
            return found
    if name == NO_PRED:
        return np.array([p is None for p in values], dtype=np.uint8)
    return joined_strings(["" if p is None else p for p in values])

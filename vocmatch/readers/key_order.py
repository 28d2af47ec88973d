"""Whether a listing's keys clash once case is ignored: a folder of many files is checked
all at once, the file-by-file rules of :func:`vocmatch.readers.parse.list_directory`
applied only when two keys do clash."""

from __future__ import annotations

__all__ = ["distinct_folded"]


def distinct_folded(keys: list[str]) -> bool:
    """No two keys are equal once case-folded (:meth:`str.casefold`).

    >>> distinct_folded(["a", "b"]), distinct_folded(["a", "A"]), distinct_folded(["ß", "ss"])
    (True, False, False)
    """
    joined = "\0".join(keys)
    if joined.isascii() and joined.lower() == joined:
        # ASCII folds letter by letter: each key is its own folding, and none is twice.
        return len(set(keys)) == len(keys)
    return len({key.casefold() for key in keys}) == len(keys)

"""The order of a listing's files, and whether its keys clash once case is ignored: a
folder of many files is listed by sorting its keys alone (strings sort faster than pairs)
and checking them all at once, the file-by-file rules of
:func:`vocmatch.readers.parse.list_directory` applied only when two keys do clash."""

from __future__ import annotations

__all__ = ["by_key", "distinct_folded"]


def by_key(keys: list[str], paths: list[str]) -> list[tuple[str, str]]:
    """``(key, path)`` pairs sorted (by key, then path); ``keys`` is sorted in place.

    >>> by_key(["b", "a", "b"], ["p/b.xml", "p/a.xml", "p/b.XML"])
    [('a', 'p/a.xml'), ('b', 'p/b.XML'), ('b', 'p/b.xml')]
    """
    path_of = dict(zip(keys, paths, strict=True))
    if len(path_of) < len(keys):  # a key of two files: the pairs sorted
        return sorted(zip(keys, paths, strict=True))
    keys.sort()
    return [(key, path_of[key]) for key in keys]


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

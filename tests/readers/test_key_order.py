"""The quick listing order and key check give what the file-by-file rules give: pairs
sorted by key then path, and a clash whenever two keys fold to one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vocmatch.readers.key_order import by_key, distinct_folded

KEYS = st.lists(st.text(alphabet="aAbBß\u00e9\u00c9sS\u0130i.-/", max_size=4), max_size=12)


@given(KEYS)
def test_pairs_are_sorted_by_key_then_path(keys: list[str]) -> None:
    paths = [f"p/{n}" for n in range(len(keys))]
    assert by_key(list(keys), paths) == sorted(zip(keys, paths, strict=True))


@given(KEYS)
def test_keys_clash_when_two_fold_to_one(keys: list[str]) -> None:
    assert distinct_folded(keys) == (len({k.casefold() for k in keys}) == len(keys))

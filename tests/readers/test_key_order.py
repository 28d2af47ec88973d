"""The quick key check gives what the file-by-file rules give: a clash whenever two keys
fold to one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vocmatch.readers.key_order import distinct_folded

KEYS = st.lists(st.text(alphabet="aAbBß\u00e9\u00c9sS\u0130i.-/", max_size=4), max_size=12)


@given(KEYS)
def test_keys_clash_when_two_fold_to_one(keys: list[str]) -> None:
    assert distinct_folded(keys) == (len({k.casefold() for k in keys}) == len(keys))

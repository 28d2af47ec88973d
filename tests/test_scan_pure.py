"""The pure reader's bulk number decoder (``scan_pure._numbers``) is the one number grammar:
over the bytes a number can hold, it reads exactly what ``read_number`` reads, alone or many
at once. It does not depend on which reader is active, so these run once (tests/test_scan.py
runs each of its tests once per reader)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.readers import scan_pure
from vocmatch.readers.parse import read_number


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="0123456789+-.eE \t\r\n", max_size=14))
def test_float_over_the_grammar_bytes_is_the_grammar(text: str) -> None:
    """The fast reader proves numbers in bulk: over the bytes a number of the grammar can
    hold, float() accepts exactly the texts read_number accepts, with the same value, and
    a text of digits (with or without a trailing .0) is the integer float() reads."""
    try:
        expected: float | None = read_number(text)
    except ValueError:
        expected = None
    try:
        got: float | None = float(text)
    except ValueError:
        got = None
    assert got == expected or (got != got and expected != expected)
    values = scan_pure._numbers([text.encode()])
    if expected is None:
        assert values is None
    else:
        assert values is not None and values.tolist() == [expected]
        assert math.copysign(1.0, values[0]) == math.copysign(1.0, expected)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.text(alphabet="0123456789+-.eE \t\r\n,", max_size=8), min_size=1, max_size=5))
def test_numbers_read_in_bulk_are_each_read_alone(texts: list[str]) -> None:
    """Read together (one text, one check, one decoder call), numbers give exactly what
    each gives alone, or nothing when one is not in the grammar: no value runs into its
    neighbour (``0 .0``, ``1,``)."""
    expected: list[float] | None = []
    for text in texts:
        try:
            value = read_number(text)  # infinite past float's range: callers refuse it
        except ValueError:
            expected = None
            break
        expected.append(value)
    values = scan_pure._numbers([t.encode() for t in texts])
    if expected is None:
        assert values is None
    else:
        assert values is not None and values.tolist() == expected
        signs = [math.copysign(1.0, v) for v in values.tolist()]
        assert signs == [math.copysign(1.0, v) for v in expected]

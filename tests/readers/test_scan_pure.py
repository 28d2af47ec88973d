"""The pure reader's bulk number decoder (``scan_pure._numbers``) is the one number grammar:
over the bytes a number can hold, it reads exactly what ``read_number`` reads, alone or many
at once. It does not depend on which reader is active, so these run once (tests/readers/test_scan.py
runs each of its tests once per reader)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.readers import scan_pure
from vocmatch.readers.parse import read_number

#: The bytes a number of the grammar can hold; in bulk, with the comma between numbers.
NUMBER_BYTES = "0123456789+-.eE \t\r\n"
BULK_BYTES = NUMBER_BYTES + ","


def _read_alone_as_the_grammar(text: str) -> bool:
    """float() accepts exactly the texts read_number accepts, with the same value, and the
    decoder reads the text to that value, its sign included."""
    try:
        expected: float | None = read_number(text)
    except ValueError:
        expected = None
    try:
        got: float | None = float(text)
    except ValueError:
        got = None
    if not (got == expected or (got != got and expected != expected)):
        return False
    values = scan_pure._numbers([text.encode()])
    if expected is None:
        return values is None
    return (
        values is not None
        and values.tolist() == [expected]
        and math.copysign(1.0, values[0]) == math.copysign(1.0, expected)
    )


def _read_in_bulk_as_alone(texts: list[str]) -> bool:
    """Read together, the texts give what each gives alone, or nothing when one is not in
    the grammar."""
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
        return values is None
    if values is None or values.tolist() != expected:
        return False
    signs = [math.copysign(1.0, v) for v in values.tolist()]
    return signs == [math.copysign(1.0, v) for v in expected]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=NUMBER_BYTES, max_size=14))
def test_float_over_the_grammar_bytes_is_the_grammar(text: str) -> None:
    """The fast reader proves numbers in bulk: over the bytes a number of the grammar can
    hold, float() accepts exactly the texts read_number accepts, with the same value, and
    a text of digits (with or without a trailing .0) is the integer float() reads."""
    assert _read_alone_as_the_grammar(text)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet=BULK_BYTES, max_size=8), min_size=1, max_size=5))
def test_numbers_read_in_bulk_are_each_read_alone(texts: list[str]) -> None:
    """Read together (one text, one check, one decoder call), numbers give exactly what
    each gives alone, or nothing when one is not in the grammar: no value runs into its
    neighbour (``0 .0``, ``1,``)."""
    assert _read_in_bulk_as_alone(texts)


def _random_text(rng: random.Random, alphabet: str, most: int) -> str:
    return "".join(rng.choices(alphabet, k=rng.randint(0, most)))


@pytest.mark.parametrize("seed", range(3))
def test_the_decoder_sweeps_as_the_properties_do(seed: int) -> None:
    """The two properties above shrink a failure to its smallest text; this sweep draws
    20,000 texts and 10,000 lists of texts of the same kinds per seed from a seeded
    generator, so that rare texts are met on every run and not only across many."""
    rng = random.Random(seed)
    texts = [_random_text(rng, NUMBER_BYTES, 14) for _ in range(20_000)]
    assert [t for t in texts if not _read_alone_as_the_grammar(t)] == []
    lists = [
        [_random_text(rng, BULK_BYTES, 8) for _ in range(rng.randint(1, 5))] for _ in range(10_000)
    ]
    assert [t for t in lists if not _read_in_bulk_as_alone(t)] == []

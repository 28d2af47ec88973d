"""The parts of a local run in parts (:func:`~vocmatch.evaluation.shards.parts.key_ranges`):
runs of consecutive keys, every key in exactly one part with all its files, about as many
files a part, none empty, so that the parts' records joined in part order are in key order."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.errors import InputError
from vocmatch.evaluation.shards.parts import Part, key_ranges

Files = list[tuple[str, str]]


def _files(keys: list[str], side: str) -> Files:
    return [(key, f"{side}/{key}.xml") for key in keys]


def _check(gt: Files, pred: Files, parts: int, shares: tuple[Part, ...]) -> None:
    """Every file once, in key order part after part; parts numbered 1..N of N, none empty;
    a key's files (of both sides) in one part."""
    assert 1 <= len(shares) <= parts
    assert [(p.index, p.count) for p in shares] == [
        (k + 1, len(shares)) for k in range(len(shares))
    ]
    assert [f for p in shares for f in p.gt_files] == sorted(gt)
    assert [f for p in shares for f in p.pred_files] == sorted(pred)
    if gt or pred:
        assert all(p.file_count() for p in shares)
    keys = [sorted({k for k, _ in (*p.gt_files, *p.pred_files)}) for p in shares]
    for before, after in itertools.pairwise(keys):
        assert before[-1] < after[0]


KEYS = st.lists(st.text("abcdeXY09_", min_size=1, max_size=4), max_size=60, unique=True)


@settings(max_examples=300, deadline=None)
@given(gt_keys=KEYS, pred_keys=KEYS, parts=st.integers(1, 20), data=st.data())
def test_every_file_once_in_key_order(
    gt_keys: list[str], pred_keys: list[str], parts: int, data: st.DataObject
) -> None:
    gt, pred = _files(gt_keys, "g"), _files(pred_keys, "p")
    shuffled = data.draw(st.permutations(gt))  # listings are sorted; any order is taken
    _check(gt, pred, parts, key_ranges(shuffled, pred, parts))


@pytest.mark.parametrize(
    ("gt", "pred", "parts", "expected"),
    [
        pytest.param(
            [("a", "g/a"), ("b", "g/b"), ("c", "g/c"), ("e", "g/e")],
            [("a", "p/a"), ("d", "p/d"), ("e", "p/e")],
            2,
            [
                ((("a", "g/a"), ("b", "g/b"), ("c", "g/c")), (("a", "p/a"),)),
                ((("e", "g/e"),), (("d", "p/d"), ("e", "p/e"))),
            ],
            id="a-key-of-predictions-only",
        ),
        pytest.param(
            [("a", "g/a"), ("b", "g/b")], [], 5, [((("a", "g/a"),), ()), ((("b", "g/b"),), ())],
            id="more-parts-than-keys",
        ),
        pytest.param(
            [("b", "g/b"), ("b", "g/B")], [("b", "p/b")], 3,
            [((("b", "g/B"), ("b", "g/b")), (("b", "p/b"),))],
            id="a-key-of-two-files-stays-whole",
        ),
        pytest.param([], [], 4, [((), ())], id="no-file"),
        pytest.param(
            [], [("x", "p/x"), ("y", "p/y")], 2, [((), (("x", "p/x"),)), ((), (("y", "p/y"),))],
            id="predictions-only",
        ),
    ],
)  # fmt: skip
def test_parts_of_consecutive_keys(
    gt: Files, pred: Files, parts: int, expected: list[tuple[tuple[tuple[str, str], ...], ...]]
) -> None:
    shares = key_ranges(gt, pred, parts)
    assert [(p.gt_files, p.pred_files) for p in shares] == expected
    _check(gt, pred, parts, shares)


@pytest.mark.parametrize("parts", [2, 3, 7, 16, 64])
def test_parts_hold_about_as_many_files(parts: int) -> None:
    """Balanced by the files of both sides, predictions-only keys included: no part holds
    more than a part's share and one key's files."""
    gt = _files([f"{k:05d}" for k in range(0, 3000, 2)], "g")
    pred = _files([f"{k:05d}" for k in range(0, 3000)], "p")  # every other key: no ground truth
    shares = key_ranges(gt, pred, parts)
    assert len(shares) == parts
    share = (len(gt) + len(pred)) / parts
    assert all(abs(p.file_count() - share) <= 2 for p in shares)


def test_no_part_is_refused() -> None:
    with pytest.raises(InputError, match="Expected at least one part, got 0"):
        key_ranges([("a", "g/a")], [], 0)


SIZES = st.lists(st.integers(1, 9), min_size=1, max_size=20)


@settings(max_examples=300, deadline=None)
@given(gt_keys=KEYS, pred_keys=KEYS, sizes=SIZES)
def test_sized_parts_hold_every_file_once_in_key_order(
    gt_keys: list[str], pred_keys: list[str], sizes: list[int]
) -> None:
    gt, pred = _files(gt_keys, "g"), _files(pred_keys, "p")
    _check(gt, pred, len(sizes), key_ranges(gt, pred, len(sizes), [float(s) for s in sizes]))


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        pytest.param([1.0, 1.0, 1.0, 1.0], [1125, 1125, 1125, 1125], id="equal"),
        pytest.param([2.0, 2.0, 1.0, 1.0], [1500, 1500, 750, 750], id="tapered"),
        pytest.param([1.0, 3.0], [1125, 3375], id="growing"),
        pytest.param([4.0, 4.0, 3.0, 3.0, 2.0, 2.0, 1.0, 1.0],
                     [900, 900, 675, 675, 450, 450, 225, 225], id="tapered-by-rounds"),
    ],
)  # fmt: skip
def test_parts_hold_their_share_of_the_files(sizes: list[float], expected: list[int]) -> None:
    """Each part holds its size's share of the files of both sides (within a key's files)."""
    gt = _files([f"{k:05d}" for k in range(0, 3000, 2)], "g")
    pred = _files([f"{k:05d}" for k in range(0, 3000)], "p")  # every other key: no ground truth
    shares = key_ranges(gt, pred, len(sizes), sizes)
    assert all(abs(p.file_count() - e) <= 2 for p, e in zip(shares, expected, strict=True))
    _check(gt, pred, len(sizes), shares)


@pytest.mark.parametrize(
    "sizes",
    [
        pytest.param([1.0], id="too-few"),
        pytest.param([1.0, 1.0, 1.0], id="too-many"),
        pytest.param([1.0, 0.0], id="empty-part"),
        pytest.param([1.0, -1.0], id="negative"),
    ],
)
def test_sizes_not_one_positive_a_part_are_refused(sizes: list[float]) -> None:
    with pytest.raises(InputError, match=r"Expected 2 positive part sizes, got \["):
        key_ranges([("a", "g/a"), ("b", "g/b")], [], 2, sizes)

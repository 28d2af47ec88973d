"""Non-maximum suppression (vocmatch.core.nms): exact cases, a loop written plainly on
random sets, and torchvision.ops.nms applied class by class (recorded in
fixtures/reference/torchvision-nms, and run live where torchvision is installed)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from vocmatch.core.nms import nms

CASES = ROOT / "fixtures" / "reference" / "torchvision-nms"


@pytest.mark.parametrize(
    ("boxes", "scores", "labels", "iou", "kept"),
    [
        pytest.param([], [], None, 0.5, [], id="none"),
        pytest.param([[0, 0, 10, 10]], [0.3], None, 0.5, [0], id="one"),
        # IoU 81/100 = 0.81: above 0.5, the lower-scored box goes.
        pytest.param([[0, 0, 10, 10], [1, 1, 10, 10]], [0.9, 0.8], None, 0.5, [0], id="above"),
        pytest.param([[0, 0, 10, 10], [1, 1, 10, 10]], [0.8, 0.9], None, 0.5, [1], id="score-wins"),
        # IoU exactly 0.5 (50 / 100): kept, a box goes only above the threshold.
        pytest.param([[0, 0, 10, 10], [0, 0, 10, 5]], [0.9, 0.8], None, 0.5, [0, 1], id="equal-kept"),
        pytest.param([[0, 0, 10, 10], [0, 0, 10, 5]], [0.9, 0.8], None, 0.49, [0], id="just-above"),
        pytest.param([[0, 0, 10, 10], [1, 1, 10, 10]], [0.9, 0.8], ["a", "b"], 0.5, [0, 1], id="classes"),
        # Ties: the one given first is kept.
        pytest.param([[0, 0, 10, 10], [1, 1, 10, 10]], [0.5, 0.5], None, 0.5, [0], id="tie-first"),
        pytest.param([[1, 1, 10, 10], [0, 0, 10, 10]], [0.5, 0.5], None, 0.5, [0], id="tie-first-2"),
        # A chain: b is suppressed by a, so c (overlapping b only) stays.
        pytest.param(
            [[0, 0, 10, 10], [5, 0, 15, 10], [10, 0, 20, 10]], [0.9, 0.8, 0.7], None, 0.3,
            [0, 2], id="chain",
        ),
        # Two empty boxes at one point: union 0, never suppressed.
        pytest.param([[5, 5, 5, 5], [5, 5, 5, 5]], [0.9, 0.8], None, 0.0, [0, 1], id="empty"),
        # Touching boxes: IoU 0, kept at iou=0.
        pytest.param([[0, 0, 10, 10], [10, 0, 20, 10]], [0.9, 0.8], None, 0.0, [0, 1], id="touching"),
        pytest.param([[0, 0, 10, 10], [0, 0, 10, 10]], [0.9, 0.8], None, 1.0, [0, 1], id="iou-1"),
    ],
)  # fmt: skip
def test_exact_cases(
    boxes: list[list[float]], scores: list[float], labels: list[str] | None, iou: float,
    kept: list[int],
) -> None:  # fmt: skip
    found = nms(np.array(boxes, dtype=np.float64).reshape(-1, 4), scores, labels, iou)
    assert found.tolist() == kept


def plain(
    boxes: list[list[float]], scores: list[float], labels: list[int], iou: float
) -> list[int]:
    """NMS as a loop over Python floats (float64 arithmetic in the same order)."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])  # stable: ties in order
    gone: set[int] = set()
    kept = []
    for n, i in enumerate(order):
        if i in gone:
            continue
        kept.append(i)
        a = boxes[i]
        for j in order[n + 1 :]:
            if j in gone or labels[j] != labels[i]:
                continue
            b = boxes[j]
            w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
            h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
            inter = w * h
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
            if union != 0 and inter / union > iou:
                gone.add(j)
    return sorted(kept, key=lambda i: (-scores[i], i))


BOX = st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 15), st.integers(0, 15)).map(
    lambda t: [float(t[0]), float(t[1]), float(t[0] + t[2]), float(t[1] + t[3])]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(BOX, st.sampled_from([0.1, 0.5, 0.9, 0.3]), st.integers(0, 2)), max_size=25),
    st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]),
    st.booleans(),
)
def test_equals_a_plain_loop(
    items: list[tuple[list[float], float, int]], iou: float, agnostic: bool
) -> None:
    boxes = [b for b, _, _ in items]
    scores = [s for _, s, _ in items]
    labels = [0 if agnostic else c for _, _, c in items]
    found = nms(np.array(boxes, dtype=np.float64).reshape(-1, 4), scores,
                None if agnostic else labels, iou)  # fmt: skip
    assert found.tolist() == plain(boxes, scores, labels, iou)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_equals_torchvision_class_by_class(dtype: str) -> None:
    """The indices torchvision 0.29.1 (torch 2.14.1, run on the CPU) kept on 40 seeded sets (clusters,
    tied scores, empty boxes, coordinates float32 rounds), class by class."""
    cases = json.loads((CASES / "cases.json").read_text())
    recorded = json.loads((CASES / "kept.json").read_text())
    for case, kept in zip(cases, recorded[dtype], strict=True):
        boxes = np.array(case["boxes"], dtype=dtype).reshape(-1, 4)
        scores = np.array(case["scores"], dtype=dtype)
        assert nms(boxes, scores, case["labels"], case["iou"]).tolist() == kept


def test_equals_torchvision_live() -> None:
    torch = pytest.importorskip("torch")
    ops = pytest.importorskip("torchvision.ops")
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(1, 80))
        xy = rng.uniform(0, 100, (n, 2))
        boxes = np.concatenate([xy, xy + rng.uniform(0, 30, (n, 2))], axis=1)
        scores = np.round(rng.random(n), 2)
        keep = ops.nms(torch.tensor(boxes), torch.tensor(scores), 0.5).tolist()
        assert nms(boxes, scores, None, 0.5).tolist() == keep


@pytest.mark.parametrize(
    ("boxes", "scores", "iou", "message"),
    [
        pytest.param([[0, 0, 1, 1]], [float("nan")], 0.5, "every score must be a finite", id="nan"),
        pytest.param([[0, 0, 1]], [0.5], 0.5, "expected boxes (N, 4)", id="shape"),
        pytest.param([[0, 0, 1, 1]], [0.5, 0.4], 0.5, "expected boxes (N, 4)", id="lengths"),
        pytest.param([[0, 0, 1, 1]], [0.5], 1.5, "iou must be a number in [0, 1]", id="iou"),
        pytest.param([[0, 0, 1, 1]], [0.5], float("nan"), "iou must be a number", id="iou-nan"),
    ],
)
def test_refused(boxes: list[list[float]], scores: list[float], iou: float, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        nms(boxes, scores, None, iou)

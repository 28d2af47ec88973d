"""The predictions' scores for ranking, converted once when they are sorted
(SortedPredictions.score_all) and read by every later stage (RankingScores.of): the same bits
as converting them from the columns in the sorted order, with the compiled sort and with
numpy's, under every protocol, with ties, unscored predictions and maxDets cuts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import PROTOCOL_NAMES, protocol
from vocmatch.evaluation import stage_inputs, stages
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations

SCORES = st.one_of(st.none(), st.sampled_from([0.0, 0.5, 0.5, 0.9, 1.0, -0.0, 1e-300]))


@st.composite
def annotation_sets(draw: st.DrawFn) -> tuple[AnnotationSet, AnnotationSet]:
    """A few images of two classes: predictions with tied or missing scores, some images
    with more predictions of a class than small maxDets keep."""
    n_images = draw(st.integers(1, 4))
    gt_images, pred_images = [], []
    for i in range(n_images):
        key = f"i{i}"
        gt_boxes = tuple(
            Box(draw(st.sampled_from(["cat", "dog"])), x, 0, x + 10, 10)
            for x in draw(st.lists(st.integers(0, 40), max_size=3))
        )
        pred_boxes = tuple(
            Box(draw(st.sampled_from(["cat", "dog", "cow"])), x, 0, x + 10, 10, score=score)
            for x, score in draw(st.lists(st.tuples(st.integers(0, 40), SCORES), max_size=6))
        )
        gt_images.append(ImageAnnotation(key, f"gt/{key}.xml", gt_boxes))
        pred_images.append(ImageAnnotation(key, f"pred/{key}.xml", pred_boxes))
    return (
        AnnotationSet("gt", tuple(gt_images), ()),
        AnnotationSet("pred", tuple(pred_images), ()),
    )


@pytest.mark.parametrize(
    "engine", [pytest.param("0", id="compiled"), pytest.param("1", id="numpy")]
)
@pytest.mark.parametrize("name", PROTOCOL_NAMES)
@settings(max_examples=25, deadline=None)
@given(sets=annotation_sets(), max_dets=st.sampled_from([None, 1, 2]))
def test_scores_converted_once_are_the_columns_scores(
    engine: str, name: str, sets: tuple[AnnotationSet, AnnotationSet], max_dets: int | None
) -> None:
    gt, pred = (columns_from_annotations(s) for s in sets)
    conv = protocol(name)
    if max_dets is not None:
        conv = replace(conv, max_dets=max_dets)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VOCMATCH_PURE_ENGINE", engine)
        selection = stages.select_images(gt, pred)
        prepared, _ = stages.prepare_cells(gt, pred, selection, conv)
    rows = prepared.pred.rows_all
    expected = stage_inputs.ranking_scores(pred.scores, rows)
    assert prepared.pred.score_all.view(np.uint64).tolist() == expected.view(np.uint64).tolist()
    scores = stage_inputs.RankingScores.of(prepared)
    assert scores.all.view(np.uint64).tolist() == expected.view(np.uint64).tolist()
    kept = expected[prepared.pred.kept]
    assert scores.kept.view(np.uint64).tolist() == kept.view(np.uint64).tolist()
    assert scores.kept.size == prepared.pred.rows.size

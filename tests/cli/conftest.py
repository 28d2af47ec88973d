"""Fixtures the command line's tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.evaluation.test_preparation import case_image, dense_predictions
from tests.oracle import write_voc
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.readers.parse import AnnotationSet


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Raw detector output (the dense cases, each twice: 60 images, enough files for
    --jobs to read in parts), its ground truth, and the predictions torchvision's NMS at 0.7
    kept class by class (``kept/pred``)."""
    root = tmp_path_factory.mktemp("raw")
    cases, kept = dense_predictions()
    gt, pred, chosen = [], [], []
    for copy in "ab":
        for k, (case, keep) in enumerate(zip(cases, kept, strict=True)):
            key = f"{copy}{k:02d}"
            objects = [
                Box(f"c{case['labels'][i]}", *case["boxes"][i]) for i in keep[::2]
            ]  # every other box torchvision kept is an object
            gt.append(ImageAnnotation(key, f"gt/{key}.xml", tuple(objects)))
            pred.append(case_image(key, case))
            chosen.append(case_image(key, case, keep))
    write_voc(AnnotationSet("gt", tuple(gt), ()), root / "gt")
    write_voc(AnnotationSet("pred", tuple(pred), ()), root / "pred")
    write_voc(AnnotationSet("pred", tuple(chosen), ()), root / "kept" / "pred")
    return root

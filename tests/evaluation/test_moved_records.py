"""Records kept in modules of their own are still importable where they were, as the very
classes of their modules: ``coco_tables`` gives the sparse accumulation, ``summary_stats`` the
ultralytics numbers, ``core.geometry`` the overlap of two regions."""

from __future__ import annotations

import importlib

import pytest

CASES = [
    pytest.param(
        "vocmatch.evaluation.coco_tables", "CocoHits", "vocmatch.evaluation.coco_sparse",
        id="CocoHits",
    ),
    pytest.param(
        "vocmatch.evaluation.coco_tables", "coco_accumulate_sparse",
        "vocmatch.evaluation.coco_sparse", id="coco_accumulate_sparse",
    ),
    pytest.param(
        "vocmatch.evaluation.summary_stats", "UltralyticsStats",
        "vocmatch.evaluation.ultralytics_stats", id="UltralyticsStats",
    ),
    pytest.param(
        "vocmatch.core.geometry", "PairOverlap", "vocmatch.core.overlap_record", id="PairOverlap"
    ),
]  # fmt: skip


@pytest.mark.parametrize(("where", "name", "home"), CASES)
def test_a_moved_name_is_importable_where_it_was(where: str, name: str, home: str) -> None:
    """``from WHERE import NAME`` gives the object of its own module, not a copy."""
    namespace: dict[str, object] = {}
    exec(f"from {where} import {name}", namespace)
    assert namespace[name] is getattr(importlib.import_module(home), name)


@pytest.mark.parametrize(
    "where",
    [
        "vocmatch.evaluation.coco_tables",
        "vocmatch.evaluation.summary_stats",
        "vocmatch.core.geometry",
    ],
)
def test_an_unknown_name_is_an_attribute_error(where: str) -> None:
    """A name the module does not have still raises AttributeError (``hasattr`` works)."""
    assert not hasattr(importlib.import_module(where), "NoSuchRecord")

"""Every record :mod:`vocmatch.evaluation.scoring` lists is importable from it, those kept in
modules of their own (imported on first use) too, as the very classes of those modules."""

from __future__ import annotations

import importlib

import pytest

from vocmatch.evaluation import scoring


@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in scoring.__all__])
def test_every_listed_name_is_importable(name: str) -> None:
    """``from vocmatch.evaluation.scoring import NAME`` works for each name of ``__all__``."""
    namespace: dict[str, object] = {}
    exec(f"from vocmatch.evaluation.scoring import {name}", namespace)
    assert namespace[name] is getattr(scoring, name)


@pytest.mark.parametrize(
    ("name", "module"),
    [
        pytest.param("Match", "vocmatch.evaluation.box_outcomes", id="Match"),
        pytest.param("CocoStats", "vocmatch.evaluation.summary_stats", id="CocoStats"),
    ],
)
def test_records_kept_elsewhere_are_their_modules_classes(name: str, module: str) -> None:
    """A record imported on first use is the class of its own module, not a copy."""
    assert getattr(scoring, name) is getattr(importlib.import_module(module), name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    """A name the module does not have still raises AttributeError (``hasattr`` works)."""
    assert not hasattr(scoring, "NoSuchRecord")

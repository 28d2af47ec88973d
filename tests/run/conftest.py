"""What the tests of whole runs share: the bench scripts as modules, and a generated set."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT


def bench(name: str) -> ModuleType:
    """The script ``bench/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """150 generated images (gt/, pred/, coco/), ten predictions each, with the other
    prediction formats written by bench/convert.py (converted/). Read only: a test that
    changes files changes a copy."""
    folder = tmp_path_factory.mktemp("generated")
    bench("generate").generate(folder, 150, pred_per_image=10)
    bench("convert").convert(folder / "gt", folder / "pred", folder / "converted")
    return folder

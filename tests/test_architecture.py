"""The module graph stays one-way: cli -> report -> evaluate -> match -> iou, parse -> model
(and geometry, the only module that knows shapely)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "vocmatch"

# Modules each module may import (besides errors, which anyone may import).
ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "errors": set(),
    "numbers": set(),  # the one number grammar, for files and options alike
    "escapes": set(),  # how names are written in each kind of output
    "output": set(),  # atomic report files
    "workers": set(),  # the process pools
    "iou": set(),
    "ap": set(),
    "match": set(),
    "protocol": {"ap", "match"},
    "parse": {"model", "geometry", "numbers"},  # geometry judges whether a <polygon> is valid
    "geometry": {"iou", "model"},
    "result": {"ap", "model", "protocol"},
    "evaluate": {"batch", "parse", "protocol", "result", "scan"},
    "analysis": {"ap", "batch", "evaluate", "iou", "match", "model", "parse", "protocol", "scan"},
    "diff": {"bootstrap", "evaluate", "iou", "model", "numbers", "parse", "protocol"},
    "report": {
        "analysis",
        "bootstrap",
        "calibration",
        "slices",
        "suspects",
        "diff",
        "evaluate",
        "protocol",
        "model",
        "labels",
        "seg",
        "escapes",
        "thresholds",
    },
    "formats": {
        "ap",
        "bootstrap",
        "calibration",
        "slices",
        "analysis",
        "diff",
        "evaluate",
        "gates",
        "protocol",
        "model",
        "__init__",
        "labels",
        "seg",
        "escapes",
        "thresholds",
    },
    "gates": {"evaluate", "model", "numbers", "slices"},
    "lint": {"parse", "iou", "model", "workers", "escapes"},
    "seg": {"parse", "model", "workers"},
    "labels": {"iou", "model", "parse"},
    "calculator": {"geometry", "iou", "model", "numbers"},
    "diagram": {"calculator", "geometry", "iou", "model", "escapes"},
    "html": {
        "bootstrap",
        "calibration",
        "slices",
        "evaluate",
        "parse",
        "model",
        "protocol",
        "analysis",
        "__init__",
        "escapes",
    },
    "scan": {"parse", "model", "workers"},
    "batch": {"ap", "match", "model", "pairs", "protocol", "result", "scan", "thresholds"},
    "pairs": {"geometry", "iou", "model"},
    "thresholds": {"ap", "parse"},  # parse reads regular files only, without blocking
    "pairing": set(),  # names only: why no ground truth found its predictions
    "detections": {"model", "parse", "scan"},
    "bootstrap": {"ap", "batch", "result"},
    "slices": {"ap", "batch", "result"},
    "calibration": {"batch"},
    "layout": {"model", "parse", "scan"},
    "shapes": {"scan"},
    "suspects": {"__init__", "escapes", "iou", "model", "parse"},
    "cli": {"*"},
    "__main__": {"cli"},
    "__init__": {"*"},
}

# Third-party packages a module may import; the library never knows click.
THIRD_PARTY = {
    "lxml": {"parse", "lint"},  # lint inspects the raw tree to report every finding
    "click": {"cli"},
    "rich": {"cli", "report", "diagram"},
    "PIL": {"seg", "html"},  # html scales the pictures it embeds
    "jinja2": {"html"},
    "shapely": {"geometry"},  # exact polygon clipping, in one module
    "markupsafe": {"html"},
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "vocmatch":
                names.update(f"vocmatch.{alias.name}" for alias in node.names)
            else:
                names.add(node.module)
    return names


MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))


@pytest.mark.parametrize("module", MODULES)
def test_imports_follow_the_module_graph(module: str) -> None:
    """A module imports only the modules below it, and only cli knows click."""
    allowed = ALLOWED.get(module)
    assert allowed is not None, f"vocmatch/{module}.py is not placed in the module graph"
    for name in imports_of(PACKAGE / f"{module}.py"):
        top = name.split(".")[0]
        if top == "vocmatch":
            target = name.split(".")[1] if "." in name else "__init__"
            if target in ("errors", "__version__") or "*" in allowed:
                continue
            if target == "__version__":
                continue
            assert target in allowed, f"{module} must not import vocmatch.{target}"
        elif top in THIRD_PARTY:
            assert module in THIRD_PARTY[top], f"{module} must not import {top}"


def test_nothing_imports_cli() -> None:
    """cli is the top of the graph."""
    for module in MODULES:
        if module in ("cli", "__main__"):
            continue
        assert "vocmatch.cli" not in imports_of(PACKAGE / f"{module}.py"), module


def test_library_never_prints() -> None:
    """Only cli writes to the terminal."""
    for module in MODULES:
        if module in ("cli", "__main__"):
            continue
        tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "print", f"{module} calls print()"

"""The benchmark's scripts (``bench/*.py``) loaded as modules, for tests that run them or
need sets of their shape: bench is a folder of scripts, not a package."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench(name: str) -> ModuleType:
    """``bench/<name>.py`` as the module ``bench_<name>``, loaded once and registered in
    :data:`sys.modules` (dataclasses and process pools look a module up by name). bench/ is
    on :data:`sys.path` while the script loads, for the siblings it imports; the path is
    restored after."""
    loaded = sys.modules.get(f"bench_{name}")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    path = list(sys.path)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    finally:
        sys.path[:] = path
    return module


def unscored(every: int) -> Callable[[Path], None]:
    """A change of a generated set's prediction folder: the predictions of every
    ``every``-th image without scores."""

    def change(pred: Path) -> None:
        for path in sorted(pred.glob("*.xml"))[::every]:
            path.write_text(re.sub(r"\s*<score>[^<]*</score>", "", path.read_text()))

    return change


def changed_copy(generated: Path, folder: Path, change: Callable[[Path], None] | None) -> Path:
    """The generated set itself when ``change`` is None, else a copy of it in ``folder``
    with ``change`` made to the copy's prediction folder (the set is shared: read only)."""
    if change is None:
        return generated
    shutil.copytree(generated / "gt", folder / "gt")
    shutil.copytree(generated / "pred", folder / "pred")
    change(folder / "pred")
    return folder

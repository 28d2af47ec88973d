"""The benchmark's scripts (``bench/*.py``) loaded as modules, for tests that run them or
need sets of their shape: bench is a folder of scripts, not a package."""

from __future__ import annotations

import importlib.util
import sys
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

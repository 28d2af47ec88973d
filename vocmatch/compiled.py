"""The compiled kernels of matching and accumulation, and the switch that leaves them to numpy.

Where the package was built with a C compiler, parts of matching and accumulation run as C
extensions of this package (``vocmatch/core/*.c``, ``vocmatch/evaluation/*.c``: plain C over
the Python C API and the buffer protocol, like the compiled reader). Each layer loads its own
by its full name here. Each kernel has a numpy implementation that
stays the reference and the fallback: without the extension, or with
``VOCMATCH_PURE_ENGINE=1`` in the environment, the numpy one runs, and both give the same
bits (the test suite compares them).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["PURE_ENGINE_VARIABLE", "active_engine", "kernels"]

#: Set to anything but "" or "0" to run the numpy implementation of every kernel.
PURE_ENGINE_VARIABLE = "VOCMATCH_PURE_ENGINE"

_loaded: dict[str, ModuleType | None] = {}


def _module(name: str) -> ModuleType | None:
    if name not in _loaded:
        try:
            _loaded[name] = importlib.import_module(name)
        except ImportError:
            _loaded[name] = None
    return _loaded[name]


def kernels(name: str) -> ModuleType | None:
    """The compiled module ``name`` (its full name: ``"vocmatch.core.fastmatch"``), or None
    where it was not built or the environment asks for the numpy implementation (read at each
    call: call it once per stage, not per image)."""
    if os.environ.get(PURE_ENGINE_VARIABLE, "") not in ("", "0"):
        return None
    return _module(name)


def active_engine(name: str) -> str:
    """``"compiled"`` where :func:`kernels` gives the module ``name``, else ``"numpy"``."""
    return "numpy" if kernels(name) is None else "compiled"

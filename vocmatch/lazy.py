"""Names a module gives from other modules, imported on first use (PEP 562).

A module that re-exports names whose modules cost to import (numpy behind the library's
public names, the process pool behind the readers) defines::

    def __getattr__(name: str) -> Any:
        return lazy_attribute(__name__, _WHERE, name)

with ``_WHERE`` mapping each such name to the module it lives in: the first look-up imports
that module and keeps the value in the namespace, so the next one is a plain attribute.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["lazy_attribute"]


def lazy_attribute(module: str, where: Mapping[str, str], name: str) -> Any:
    """``name`` of the module named ``module``, imported from the module ``where`` names
    for it and kept in ``module``'s namespace.

    Raises:
        AttributeError: ``where`` does not name it (as for any attribute a module lacks).

    >>> import vocmatch.lazy as here
    >>> lazy_attribute("vocmatch.lazy", {"dedent": "textwrap"}, "dedent")("  x")
    'x'
    >>> here.dedent.__module__
    'textwrap'
    """
    source = where.get(name)
    if source is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(source), name)
    setattr(sys.modules[module], name, value)
    return value

"""The version of vocmatch, in a module of its own that imports nothing, so every layer can
name it (reports and state files record it) without loading the package's public face."""

from __future__ import annotations

__all__ = ["__version__"]

#: The released version; pyproject.toml declares the same.
__version__ = "0.1.0"

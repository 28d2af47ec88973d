"""Counted nouns for messages and reports: ``1 image``, ``2 images``, never ``1 images`` or
``image(s)``."""

from __future__ import annotations

__all__ = ["plural", "shown_key"]


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one, with thousands separators.

    Args:
        count: How many.
        noun: The singular.
        many: The plural when it is not ``noun + "s"``.

    >>> plural(1, "image"), plural(2, "image"), plural(1_000, "class", "classes")
    ('1 image', '2 images', '1,000 classes')
    """
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"


def shown_key(key: str) -> str:
    """A key in a message: its first characters when it is long.

    >>> shown_key("street_01")
    "'street_01'"
    """
    return repr(key) if len(key) <= 60 else f"{key[:50]!r}... ({len(key):,} characters)"

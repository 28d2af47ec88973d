"""The preparation of predictions in a state file (format version 7): the options'
``preparation`` object and the header's ``removed`` list, read back with every field checked.

A state made with a preparation records it in its options (``{"min_score": 0.001, "nms":
0.7, "nms_agnostic": false, "max_per_image": 300}``), so that states of other preparations
refuse to merge, and what it removed in the header's ``removed`` list, one ``[class,
min_score, nms, max_per_image]`` entry a class, which a merge adds up. A state without a
preparation has neither (and is written in the version its other fields need).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from vocmatch.core.preparation import PREPARATION_STEPS, Preparation
from vocmatch.errors import RequestError, StateError
from vocmatch.evaluation.preparation import Removed
from vocmatch.evaluation.records import MatchRecords

__all__ = [
    "preparation_header",
    "preparation_of_header",
    "records_with_removed",
    "removed_header",
    "removed_of_header",
    "removed_to_header",
    "with_preparation",
]


def preparation_header(preparation: Preparation) -> dict[str, Any]:
    """The preparation as a state's options record it.

    >>> preparation_header(Preparation(nms=0.7))
    {'min_score': None, 'nms': 0.7, 'nms_agnostic': False, 'max_per_image': None}
    """
    return {
        "min_score": preparation.min_score,
        "nms": preparation.nms,
        "nms_agnostic": preparation.nms_agnostic,
        "max_per_image": preparation.max_per_image,
    }


def preparation_of_header(options: object, source: str) -> Preparation | None:
    """The preparation a state's options record (None when ``preparation`` is absent).

    Raises:
        StateError: The field is not such an object, or one of its values is out of range
            (naming it).

    >>> preparation_of_header({"preparation": {"min_score": None, "nms": 2,
    ...     "nms_agnostic": False, "max_per_image": None}}, "s.vms")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vocmatch.errors.StateError: s.vms: corrupted header (options: preparation.nms '2': ...)
    """
    value = options.get("preparation") if isinstance(options, dict) else None
    if value is None:
        return None
    fields = ("min_score", "nms", "nms_agnostic", "max_per_image")
    if not isinstance(value, dict) or set(value) != set(fields):
        raise StateError(
            f"{source}: corrupted header (options: preparation is not an object of "
            + ", ".join(fields)
            + ")"
        )
    try:
        preparation = Preparation(**{name: value[name] for name in fields})
    except RequestError as error:
        raise StateError(f"{source}: corrupted header (options: preparation.{error})") from None
    if not preparation.active:
        raise StateError(f"{source}: corrupted header (options: preparation asks for no step)")
    return preparation


def removed_header(removed: Removed) -> list[list[Any]]:
    """What a preparation removed, as a state's header records it: ``[class, min_score,
    nms, max_per_image]`` per class."""
    return [[name, *row] for name, row in zip(removed.class_names, removed.counts, strict=True)]


def removed_of_header(value: object, preparation: Preparation, source: str) -> Removed:
    """The header's ``removed`` list, checked: distinct class names, counts whole and not
    negative.

    Raises:
        StateError: It is not such a list.
    """
    width = 1 + len(PREPARATION_STEPS)
    if not isinstance(value, list) or not all(
        isinstance(entry, list)
        and len(entry) == width
        and isinstance(entry[0], str)
        and all(type(n) is int and 0 <= n < 2**62 for n in entry[1:])
        for entry in value
    ):
        raise StateError(
            f"{source}: corrupted header (removed is not a list of [class, count, count, count])"
        )
    names = [entry[0] for entry in value]
    if names != sorted(set(names)):
        raise StateError(f"{source}: corrupted header (removed: classes repeat or are not sorted)")
    counts = tuple((entry[1], entry[2], entry[3]) for entry in value)
    return Removed(preparation, tuple(names), counts)


def removed_to_header(
    header: dict[str, Any], preparation: Preparation | None, records: MatchRecords
) -> int:
    """Record what ``preparation`` removed of the records' predictions in ``header`` (its
    ``removed`` list); the format version that needs (7), or 0 without a preparation."""
    if preparation is None:
        return 0
    header["removed"] = removed_header(records.removed or Removed.nothing(preparation))
    return 7


def with_preparation(options: dict[str, Any], preparation: Preparation | None) -> dict[str, Any]:
    """A state's options with the preparation's (absent without one, so that such a state
    reads in an earlier vocmatch)."""
    if preparation is not None:
        options["preparation"] = preparation_header(preparation)
    return options


def records_with_removed(
    records: MatchRecords, header: Mapping[str, Any], preparation: Preparation | None, source: str
) -> MatchRecords:
    """The records read from a state, with what its preparation removed.

    Raises:
        StateError: The ``removed`` list is damaged, or there without a preparation.
    """
    if preparation is None:
        if "removed" in header:
            raise StateError(f"{source}: corrupted header (removed without a preparation)")
        return records
    removed = removed_of_header(header.get("removed"), preparation, source)
    return dataclasses.replace(records, removed=removed)

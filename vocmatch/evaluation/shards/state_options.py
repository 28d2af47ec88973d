"""The options of a state file's header, read back with every field checked.

A state's header records the options its numbers depend on (``options``: the conventions,
``fold_case``, the score thresholds). Each field is checked for its type and its range
before anything is made of it, so a damaged or crafted header is refused with one
:class:`~vocmatch.errors.StateError` naming the file and the field
(``s.vms: corrupted header (options: conventions.match_rule is 'zzz', not one of
'unmatched', 'devkit')``), never evaluated under a convention that does not exist nor turned
into a ``TypeError`` later.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, get_args

from vocmatch.core.ap import Interpolation
from vocmatch.core.match import MatchRule
from vocmatch.core.protocol import (
    Conventions,
    DifficultRule,
    IouArithmetic,
    OperatingPoint,
    SummaryKind,
)
from vocmatch.errors import RequestError, StateError
from vocmatch.evaluation.slice_records import ATTRIBUTES, SliceSpec
from vocmatch.evaluation.thresholds import ScoreThresholds

__all__ = [
    "CONVENTION_CHECKS",
    "SUMMARY_FIELD",
    "conventions_header",
    "options_difference",
    "options_of_header",
    "slices_header",
    "slices_of_header",
]


def _is_number(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]


def _is_iou(value: object) -> bool:
    return _is_number(value) and 0.0 <= value <= 1.0  # type: ignore[operator]


def _text(value: object) -> str | None:
    return None if isinstance(value, str) else "not a string"


def _flag(value: object) -> str | None:
    return None if isinstance(value, bool) else "not true or false"


def _iou(value: object) -> str | None:
    return None if _is_iou(value) else "not a number in [0, 1]"


def _ious(value: object) -> str | None:
    if not isinstance(value, list) or not value or not all(_is_iou(v) for v in value):
        return "not a list of numbers in [0, 1]"
    return None


def _ascending_ious(value: object) -> str | None:
    problem = _ious(value)
    if problem is None and isinstance(value, list) and value != sorted(value):
        return "not in ascending order"
    return problem


def _max_dets(value: object) -> str | None:
    if value is None or (type(value) is int and value >= 1):
        return None
    return "not a whole number above 0 or null"


def _choice(choices: tuple[str, ...]) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        if isinstance(value, str) and value in choices:
            return None
        return "not one of " + ", ".join(repr(c) for c in choices)

    return check


#: How each field of :class:`~vocmatch.core.protocol.Conventions` is checked in a header:
#: a function of the JSON value giving what is wrong with it, or None. The summary kind is
#: recorded as ``coco_stats`` (:data:`SUMMARY_FIELD`), with ``summary`` beside it for the
#: ``ultralytics`` summary (which ``coco_stats`` cannot name); every other field under its
#: own name. A header without ``iou_arithmetic`` or ``operating_point`` (a state written
#: before them) reads as vocmatch's own (``float64``, ``all``).
CONVENTION_CHECKS: Mapping[str, Callable[[object], str | None]] = {
    "protocol": _text,
    "iou_threshold": _iou,
    "strict_threshold": _flag,
    "pixel_inclusive": _flag,
    "match_rule": _choice(get_args(MatchRule)),
    "difficult": _choice(get_args(DifficultRule)),
    "interpolation": _choice(get_args(Interpolation)),
    "ap_thresholds": _ious,
    "max_dets": _max_dets,
    "coco_stats": _flag,
    "sweep_thresholds": _ascending_ious,
    "iou_arithmetic": _choice(get_args(IouArithmetic)),
    "operating_point": _choice(get_args(OperatingPoint)),
    "summary": _choice(("ultralytics",)),
}

#: The header field of :attr:`Conventions.summary <vocmatch.core.protocol.Conventions>`:
#: states (format versions 2-4) record the kind as ``coco_stats``, true for ``"coco"`` and
#: false for ``"voc"`` (and ``"ultralytics"``, which ``summary`` names beside it).
SUMMARY_FIELD = "coco_stats"


def conventions_header(conventions: Conventions) -> dict[str, Any]:
    """The conventions as a state's header records them: JSON values, field by field in
    the dataclass's order, thresholds as lists, the summary kind as ``coco_stats`` (and
    ``summary``, for the ``ultralytics`` summary only).

    >>> from vocmatch.core.protocol import protocol
    >>> header = conventions_header(protocol("coco"))
    >>> header["coco_stats"], "summary" in header
    (True, False)
    >>> options_of_header({"conventions": header, "fold_case": False,
    ...                    "score_thresholds": None}, "s.vms")[0] == protocol("coco")
    True
    """
    header: dict[str, Any] = {}
    for field in dataclasses.fields(Conventions):
        value = getattr(conventions, field.name)
        if field.name == "summary":
            header[SUMMARY_FIELD] = value == "coco"
            if value == "ultralytics":
                header["summary"] = value
        else:
            header[field.name] = list(value) if isinstance(value, tuple) else value
    return header


def _summary_kind(coco_stats: bool) -> SummaryKind:
    return "coco" if coco_stats else "voc"


def _corrupted(source: str, field: str, value: object, problem: str) -> StateError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return StateError(f"{source}: corrupted header (options: {field} is {shown}, {problem})")


def _conventions(value: object, source: str) -> Conventions:
    if not isinstance(value, dict):
        raise _corrupted(source, "conventions", value, "not an object")
    known = set(CONVENTION_CHECKS)
    unknown = sorted(str(name) for name in value if name not in known)
    if unknown:
        raise StateError(
            f"{source}: corrupted header (options: conventions.{unknown[0]} is unknown)"
        )
    if "protocol" not in value:
        raise StateError(f"{source}: corrupted header (options: conventions.protocol is missing)")
    fields: dict[str, Any] = {}
    for name, field in value.items():
        problem = CONVENTION_CHECKS[name](field)
        if problem is not None:
            raise _corrupted(source, f"conventions.{name}", field, problem)
        if isinstance(field, list):  # the thresholds: AP's and the sweep's
            fields[name] = tuple(float(v) for v in field)
        elif type(field) is int and name == "iou_threshold":
            fields[name] = float(field)
        elif name == SUMMARY_FIELD:
            fields.setdefault("summary", _summary_kind(field))
        elif name == "summary":
            fields["summary"] = field
        else:
            fields[name] = field
    try:
        return Conventions(**fields)
    except RequestError as error:
        # The checks every door runs, past the header's own (a combination of fields).
        raise StateError(
            f"{source}: corrupted header (options: conventions.{error.field}: {error})"
        ) from None


def _score_thresholds(value: object, source: str) -> ScoreThresholds | None:
    if value is None:
        return None
    field = "score_thresholds"
    if not isinstance(value, dict) or set(value) != {"default", "per_class"}:
        raise _corrupted(source, field, value, "not an object of default and per_class")
    default, per_class = value["default"], value["per_class"]
    if default is not None and not _is_number(default):
        raise _corrupted(source, f"{field}.default", default, "not a number or null")
    if not isinstance(per_class, list) or not all(
        isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], str)
        and _is_number(entry[1])
        for entry in per_class
    ):
        raise _corrupted(
            source, f"{field}.per_class", per_class, "not a list of [class, number] pairs"
        )
    return ScoreThresholds(
        None if default is None else float(default),
        tuple((name, float(threshold)) for name, threshold in per_class),
    )


def options_of_header(
    options: object, source: str
) -> tuple[Conventions, bool, ScoreThresholds | None]:
    """The conventions, ``fold_case`` and score thresholds a state's header records.

    A conventions field left out takes its default (a state saved before the field
    existed); every field given is checked.

    Args:
        options: The header's ``options`` value.
        source: What to call the file in errors (its path).

    Raises:
        StateError: A field is missing, unknown, or of the wrong type or range (naming it).

    >>> options_of_header({"conventions": {"protocol": "mine"}, "fold_case": False,
    ...                    "score_thresholds": None}, "s.vms")[0].iou_threshold
    0.5
    >>> options = {"conventions": {"protocol": "x", "match_rule": "zzz"}, "fold_case": False,
    ...            "score_thresholds": None}
    >>> options_of_header(options, "s.vms")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    vocmatch.errors.StateError: s.vms: corrupted header (options: conventions.match_rule ...)
    """
    if not isinstance(options, dict):
        raise StateError(f"{source}: corrupted header (options is not an object)")
    for name in ("conventions", "fold_case", "score_thresholds"):
        if name not in options:
            raise StateError(f"{source}: corrupted header (options: {name} is missing)")
    conventions = _conventions(options["conventions"], source)
    fold_case = options["fold_case"]
    if not isinstance(fold_case, bool):
        raise _corrupted(source, "fold_case", fold_case, "not true or false")
    return conventions, fold_case, _score_thresholds(options["score_thresholds"], source)


def slices_header(specs: Sequence[SliceSpec]) -> list[dict[str, Any]]:
    """The slices as a state's options record them (``options.slices``, format version 6):
    one object a slice, its ``name``, ``edges`` and ``globs``.

    >>> slices_header([SliceSpec("size", (32.0, 96.0))])
    [{'name': 'size', 'edges': [32.0, 96.0], 'globs': []}]
    """
    return [{"name": s.name, "edges": list(s.edges), "globs": list(s.globs)} for s in specs]


def slices_of_header(options: object, source: str) -> tuple[SliceSpec, ...]:
    """The slices a state's options record (none when ``slices`` is absent), each checked:
    a known name, size edges positive and increasing, file patterns distinct and not empty.

    Raises:
        StateError: The field is not such a list (naming it).

    >>> slices_of_header({"slices": [{"name": "pose", "edges": [], "globs": []}]}, "s.vms")
    (SliceSpec(name='pose', edges=(), globs=()),)
    >>> slices_of_header({"slices": [{"name": "size", "edges": [9, 3], "globs": []}]}, "s.vms")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    vocmatch.errors.StateError: s.vms: corrupted header (options: slices[0].edges is [9, 3], ...)
    """
    value = options.get("slices", []) if isinstance(options, dict) else []
    if not isinstance(value, list):
        raise _corrupted(source, "slices", value, "not a list")
    specs: list[SliceSpec] = []
    for i, entry in enumerate(value):
        field = f"slices[{i}]"
        if not isinstance(entry, dict) or set(entry) != {"name", "edges", "globs"}:
            raise _corrupted(source, field, entry, "not an object of name, edges and globs")
        name, edges, globs = entry["name"], entry["edges"], entry["globs"]
        if name not in (*ATTRIBUTES, "size", "file"):
            raise _corrupted(source, f"{field}.name", name, "not a slice")
        if (
            not isinstance(edges, list)
            or not all(_is_number(e) and e > 0 for e in edges)
            or (edges != sorted(set(edges)) or bool(edges) != (name == "size"))
        ):
            raise _corrupted(source, f"{field}.edges", edges, "not positive increasing numbers")
        if (
            not isinstance(globs, list)
            or not all(isinstance(g, str) and g.strip() for g in globs)
            or (len(set(globs)) != len(globs) or bool(globs) != (name == "file"))
        ):
            raise _corrupted(source, f"{field}.globs", globs, "not distinct file patterns")
        specs.append(SliceSpec(name, tuple(float(e) for e in edges), tuple(globs)))
    if len({s.name for s in specs}) != len(specs):
        raise _corrupted(source, "slices", value, "a slice is given twice")
    return tuple(specs)


def _edges_fit(edges: object, size: bool) -> bool:
    """Size edges (of a ``size`` slice only): positive numbers, increasing."""
    if not isinstance(edges, list) or bool(edges) != size:
        return False
    return all(_is_number(e) and e > 0 for e in edges) and edges == sorted(set(edges))


def _globs_fit(globs: object, file: bool) -> bool:
    """File patterns (of a ``file`` slice only): distinct texts, not blank."""
    if not isinstance(globs, list) or bool(globs) != file:
        return False
    return all(isinstance(g, str) and g.strip() for g in globs) and len(set(globs)) == len(globs)


def options_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The first option that differs, as ``name a != b``."""
    for name in ("conventions", "fold_case", "score_thresholds", "slices", "preparation"):
        x, y = a.get(name), b.get(name)
        if isinstance(x, dict) and isinstance(y, dict):
            for field in [*x, *(f for f in y if f not in x)]:
                if x.get(field) != y.get(field):
                    return f"{field} {x.get(field)!r} != {y.get(field)!r}"
        if x != y:
            return f"{name} {x!r} != {y!r}"
    return "options differ"

"""The one check of a request, whichever door it came through: built in Python
(``vocmatch.evaluate(gt, pred, iou=0.7)``, :class:`~vocmatch.run.evaluate.EvalRequest`) or
from the command line's options, which builds the same request.

Every field that changes what is computed is checked when the request is made: numbers are
finite, in range and of the right type, flags are True or False, names are known (the error
lists the known ones), paths are not empty. A bad value raises
:class:`~vocmatch.errors.RequestError` naming the field; the command line names its flag.

Example:
    >>> from vocmatch.run.evaluate import EvalRequest
    >>> EvalRequest(gt="gt", pred="pred", max_dets=-1)
    Traceback (most recent call last):
    ...
    vocmatch.errors.RequestError: max_dets '-1': expected a whole number of at least 1
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vocmatch.checks import (
    FIELD_BOUNDS,
    Bounds,
    checked_bounded,
    checked_flag,
    checked_name,
    checked_path,
    known_list,
)
from vocmatch.errors import RequestError
from vocmatch.readers.formats import BOX_FORMATS, PRED_FORMATS

__all__ = [
    "CHECKED_FIELDS",
    "GEOMETRIES",
    "PRED_FORMATS",
    "SCHEDULER",
    "check_request",
    "unknown_keywords",
]

#: How an object is scored: by its shape (polygon, rotated box) or its bounding box.
GEOMETRIES = ("shape", "box")
#: A Dask scheduler: ``local:N`` (N >= 1), a scheduler's URL (``tcp://host:8786``,
#: ``tls://...``), or ``host:port`` (but not ``local:0``).
SCHEDULER = re.compile(
    r"local:[1-9][0-9]{0,17}|[A-Za-z][A-Za-z0-9+.-]*://\S+|(?!local:)[^\s:/]+:[0-9]{1,5}"
)

Check = Callable[[str, Any], Any]


def _bounded(bounds: Bounds) -> Check:
    return lambda field, value: checked_bounded(field, value, bounds, optional=True)


def _flag(field: str, value: Any) -> Any:
    return checked_flag(field, value, optional=True)


def _name(known: Sequence[str], what: str) -> Check:
    return lambda field, value: checked_name(field, value, known, what=what, optional=True)


def _correction(field: str, value: Any) -> Any:
    # Imported here: only a comparison's request has a correction.
    from vocmatch.evidence.multiple_testing import CORRECTIONS

    return _name(CORRECTIONS, "correction")(field, value)


def _path(field: str, value: Any) -> Any:
    return None if value is None else checked_path(field, value)


def _text_or_none(field: str, value: Any) -> Any:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise RequestError(field, "expected a split name or a file of image ids", str(value))
    return value


def _sequence(field: str, value: Any) -> Any:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise RequestError(field, f"expected a sequence, got {type(value).__name__}", str(value))
    return value


def _items(field: str, value: Any, kind: type[Any]) -> Any:
    """A sequence of texts (read by the field's grammar later) or ``kind`` records."""
    _sequence(field, value)
    for item in value:
        if not isinstance(item, (str, kind)):
            raise RequestError(
                field, f"expected texts or {kind.__name__} records, got {type(item).__name__}",
                str(item),
            )  # fmt: skip
    return value


def _gates(field: str, value: Any, request: Any) -> Any:
    _sequence(field, value)
    if all(isinstance(item, str) for item in value):
        return value  # the gates' modules stay unimported
    if type(request).__name__ == "DiffRequest":
        from vocmatch.evidence.regression_gates import RegressionGate

        return _items(field, value, RegressionGate)
    from vocmatch.evidence.gate_records import Gate

    return _items(field, value, Gate)


def _slices(field: str, value: Any) -> Any:
    _sequence(field, value)
    if all(isinstance(item, str) for item in value):
        return value  # the slices' module stays unimported (a run without slices)
    from vocmatch.evidence.slices import SliceSpec

    return _items(field, value, SliceSpec)


def _protocol(field: str, value: Any) -> Any:
    from vocmatch.core.protocol import conventions_of

    conventions_of(value, field)
    return value


def _sweep(field: str, value: Any) -> Any:
    if value is None:
        return None
    from vocmatch.core.protocol import iou_thresholds, threshold_list

    if isinstance(value, str):
        # As the command line reads it: a list (0.5,0.75) or a range (0.5:0.95:0.05).
        try:
            return iou_thresholds(value)
        except ValueError as error:
            raise RequestError(field, str(error)) from None
    return threshold_list(field, value)


def _score_thresholds(field: str, value: Any) -> Any:
    if value is None or isinstance(value, Mapping):
        return value
    return _path(field, value)


def _scheduler(field: str, value: Any) -> Any:
    if value is not None and not (isinstance(value, str) and SCHEDULER.fullmatch(value)):
        raise RequestError(
            field,
            "is neither local:N (N >= 1) nor a scheduler address such as tcp://host:8786",
            str(value),
        )
    return value


def _class_choice(field: str, value: Any) -> Any:
    if value is None:
        return None
    from vocmatch.evaluation.class_map import ClassChoice

    if not isinstance(value, ClassChoice):
        raise RequestError(field, f"expected a ClassChoice, got {type(value).__name__}")
    return value


#: The check of each request field, by name: every request class shares the fields it has.
_CHECKS: dict[str, Check] = {
    **{field: _bounded(bounds) for field, bounds in FIELD_BOUNDS.items()},
    "gt": _path,
    "pred": _path,
    "pred_a": _path,
    "pred_b": _path,
    "pred_format": _name(PRED_FORMATS, "prediction format"),
    "box_format": _name(BOX_FORMATS, "box format"),
    "coco_gt": _path,
    "names": _path,
    "split": _text_or_none,
    "geometry": _name(GEOMETRIES, "geometry"),
    "correction": _correction,
    "class_choice": _class_choice,
    "class_map": _path,
    "dask": _scheduler,
    "cache": _path,
    "cache_verify": _flag,
    "protocol": _protocol,
    "strict_threshold": _flag,
    "pixel_inclusive": _flag,
    "fold_case": _flag,
    "sweep_thresholds": _sweep,
    "score_thresholds": _score_thresholds,
    "slices": _slices,
    "analysis": _flag,
    "boxes": _flag,
    "reliability": _flag,
    "count": _flag,
    "nms_agnostic": _flag,
}

#: Every field :func:`check_request` checks: a test holds each request record's fields to it,
#: so that a field added to a request is checked too.
CHECKED_FIELDS = frozenset(
    (*_CHECKS, "gates", "difficult", "match_rule", "interpolation", "iou_arithmetic",
     "operating_point")
)  # fmt: skip

#: Fields whose value must be given (None is the option left out for the others).
_REQUIRED = frozenset(
    ("gt", "pred", "pred_a", "pred_b", "pred_format", "box_format", "geometry", "max_file_size",
     "jobs", "protocol", "fold_case", "seed", "beta", "background_iou", "analysis", "boxes",
     "reliability", "count", "confidence", "confidence_level", "match_iou", "duplicate_iou")
)  # fmt: skip


def check_request(request: Any) -> None:
    """Check every field of a request (any of the library's request records) and keep the
    normalised value of those read in more than one form (the sweep's thresholds given as
    ``"0.5:0.95:0.05"``, kept ascending).

    Raises:
        RequestError: A field holds a value that cannot be used; ``field`` names it.
    """
    for item in dataclasses.fields(request):
        name = item.name
        value = getattr(request, name)
        if value is None and name in _REQUIRED:
            raise RequestError(name, "a value is needed")
        check = _CHECKS.get(name)
        if name == "difficult" and type(request).__name__ == "LabelsRequest":
            continue  # checked where label sets are read, in their words
        if name == "gates":
            _gates(name, value, request)
            continue
        if name == "difficult":
            from vocmatch.core.protocol import DIFFICULT_RULES

            check = _name(DIFFICULT_RULES, "difficult rule")
        elif name in ("match_rule", "interpolation"):
            from vocmatch.core.protocol import INTERPOLATIONS, MATCH_RULES

            known = MATCH_RULES if name == "match_rule" else INTERPOLATIONS
            check = _name(known, name.replace("_", " "))
        elif name in ("iou_arithmetic", "operating_point"):
            from vocmatch.core.protocol import IOU_ARITHMETICS, OPERATING_POINTS

            names: tuple[str, ...] = (
                IOU_ARITHMETICS if name == "iou_arithmetic" else OPERATING_POINTS
            )
            check = _name(names, name.replace("_", " "))
        if check is None:
            continue
        checked = check(name, value)
        if name == "sweep_thresholds" and checked != value:
            object.__setattr__(request, name, checked)
    if getattr(request, "nms_agnostic", False) and getattr(request, "nms", None) is None:
        raise RequestError("nms_agnostic", "suppresses with an NMS IoU: give one too")
    if getattr(request, "target_precision", None) is not None and (
        getattr(request, "target_recall", None) is not None
    ):
        raise RequestError(
            "target_recall", "one target at a time: give a target precision or a target recall"
        )


def unknown_keywords(given: Mapping[str, Any], request_type: type[Any]) -> str | None:
    """The first keyword no field of ``request_type`` has, with the known ones, or None:
    a misspelt ``protocl=`` says what could be meant.

    >>> from vocmatch.run.evaluate import EvalRequest
    >>> unknown_keywords({"protocl": "coco"}, EvalRequest).split(" (")[0]
    "'protocl'"
    """
    known = [f.name for f in dataclasses.fields(request_type) if f.name not in ("gt", "pred")]
    unknown = sorted(name for name in given if name not in known)
    if not unknown:
        return None
    return f"{unknown[0]!r} (known: {known_list(known)})"

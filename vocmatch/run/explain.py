"""Why two protocols' mAP differ: what ``vocmatch explain`` does between reading its options
and rendering, as a library (:func:`explain`, also ``vocmatch.explain``).

The inputs are read once and paired by image; every setting is then evaluated on the same
columns, so an explanation costs one reading and one evaluation per setting.

* **Steps** (the default attribution): from the first setting, the conventions are changed
  one at a time to the second's values, in the fixed order of :data:`CONVENTION_ORDER`; each
  step reports the mAP after it and its delta, the difference of two consecutive mAPs, so the
  steps add up to the whole difference. The mAP compared is the summary mAP that ``vocmatch
  eval`` reports (``summary.map``: AP at the AP thresholds, averaged over classes; under the
  ``coco`` summary, the "all" area range over IoU 0.50:0.95).
* **Shapley**: each differing convention's Shapley value, its delta averaged over every
  order of the changes (2^k evaluations for k differing conventions, at most
  :data:`MAX_SHAPLEY_CONVENTIONS`).
* **Target**: the presets and their one- and two-convention variants whose mAP rounds to a
  number reported elsewhere, or the closest when none does.

Example:
    >>> import vocmatch
    >>> import warnings
    >>> warnings.simplefilter("ignore")  # the demo's street_05 has no prediction file
    >>> found = vocmatch.explain("fixtures/demo/gt", "fixtures/demo/pred", "voc07", "coco")
    >>> found.steps[0].convention, found.steps[0].delta
    ('+1 pixel areas', 0.0)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from decimal import Decimal, InvalidOperation
from itertools import combinations
from typing import TYPE_CHECKING, Any

from vocmatch.core.preparation import ULTRALYTICS_PREPARATION, Preparation
from vocmatch.core.protocol import (
    COCO_IOU_THRESHOLDS,
    DIFFICULT_RULES,
    INTERPOLATIONS,
    IOU_ARITHMETICS,
    MATCH_RULES,
    PRESETS,
    SUMMARY_KINDS,
    ULTRALYTICS_IOU_THRESHOLDS,
    Conventions,
    conventions_of,
    sweep_label,
)
from vocmatch.errors import InputError, RequestError
from vocmatch.evidence.explanation import (
    Attribution,
    Candidate,
    ExplainStep,
    Explanation,
    Setting,
    Target,
)
from vocmatch.run.evaluate import Inputs, PathLike, Progress, ReadOptions
from vocmatch.run.read_stage import read_inputs
from vocmatch.words import plural

if TYPE_CHECKING:
    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.readers.scan import ColumnSet

__all__ = [
    "ATTRIBUTIONS",
    "CONVENTION_ORDER",
    "MAX_SHAPLEY_CONVENTIONS",
    "ConventionRow",
    "ExplainRequest",
    "explain",
    "explain_columns",
    "parse_target",
]

#: The attributions :func:`explain` offers.
ATTRIBUTIONS: tuple[Attribution, ...] = ("steps", "shapley")
#: Shapley values evaluate every subset of the differing conventions: 2^k settings.
MAX_SHAPLEY_CONVENTIONS = 8
#: Settings listed as the closest when none reproduces a target.
CLOSEST = 5

#: A convention's value (each field has its own type).
Value = Any


def _thresholds_words(values: Value) -> str:
    assert isinstance(values, tuple)
    if values == COCO_IOU_THRESHOLDS:
        return "0.50:0.95"
    if values == ULTRALYTICS_IOU_THRESHOLDS:
        return "0.50:0.95 (float32)"
    return ",".join(sweep_label(float(v)) for v in values)


def _word(kind: str) -> Callable[[Value], str]:
    """How a convention's value is written in a report."""
    words: dict[str, Callable[[Value], str]] = {
        "pixels": lambda v: "+1 pixel" if v else "continuous",
        "strict": lambda v: "IoU > t" if v else "IoU >= t",
        "iou": lambda v: f"{v:g}" if isinstance(v, float) else str(v),
        "name": str,
        "dets": lambda v: "all" if v is None else str(v),
        "summary": lambda v: _SUMMARY_WORDS.get(v, str(v)),
        "thresholds": _thresholds_words,
        "preparation": _preparation_words,
    }
    return words[kind]


#: How each summary's mAP is read (:data:`~vocmatch.core.protocol.SummaryKind`).
_SUMMARY_WORDS = {
    "voc": "mean class AP",
    "coco": "COCOeval, area all",
    "ultralytics": "Ultralytics mAP50-95, classes with ground truth",
}


def _preparation_words(value: Value) -> str:
    """A preparation as the command line would give it (``none``: predictions as given)."""
    if value is None:
        return "none"
    assert isinstance(value, Preparation)
    parts = []
    if value.min_score is not None:
        parts.append(f"score > {value.min_score:g}")
    if value.nms is not None:
        parts.append(f"NMS {value.nms:g}{' agnostic' if value.nms_agnostic else ''}")
    if value.max_per_image is not None:
        parts.append(f"{value.max_per_image} per image")
    return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class ConventionRow:
    """One convention of the canonical order.

    Attributes:
        label: The convention as a report names it.
        field: The :class:`~vocmatch.core.protocol.Conventions` field it sets, or
            ``preparation``: how the predictions are prepared before matching
            (:class:`~vocmatch.core.preparation.Preparation`, None for none).
        word: How its value is written.
        values: The values the target search tries (none: not searched, as a threshold
            that changes the counts but not the mAP).
    """

    label: str
    field: str
    word: Callable[[Value], str]
    values: tuple[Value, ...] = ()


#: The canonical order in which :func:`explain` changes conventions, one row each: the
#: predictions' preparation first (which predictions there are to match), then geometry
#: (areas, the threshold's comparison and value), then which predictions and objects
#: count (match rule, difficult objects, detections kept), then the IoU thresholds AP
#: averages over, AP's integration, and last the summary: under ``coco`` the mAP is
#: pycocotools' AP of the area range "all" (every object: the ranges only split AP_small,
#: AP_medium and AP_large), read at 101 recall points whatever the integration. A convention
#: added to :class:`~vocmatch.core.protocol.Conventions` is one row here; a field with no row
#: that differs is changed in a last step named after it.
CONVENTION_ORDER: tuple[ConventionRow, ...] = (
    ConventionRow(
        "prediction pre-processing",
        "preparation",
        _word("preparation"),
        (None, ULTRALYTICS_PREPARATION),
    ),
    ConventionRow("+1 pixel areas", "pixel_inclusive", _word("pixels"), (False, True)),
    ConventionRow("IoU arithmetic", "iou_arithmetic", _word("name"), IOU_ARITHMETICS),
    ConventionRow("threshold comparison", "strict_threshold", _word("strict"), (False, True)),
    ConventionRow("match IoU threshold", "iou_threshold", _word("iou")),
    ConventionRow("match rule", "match_rule", _word("name"), MATCH_RULES),
    ConventionRow("difficult and crowd", "difficult", _word("name"), DIFFICULT_RULES),
    ConventionRow("maximum detections", "max_dets", _word("dets"), (None, 100)),
    ConventionRow(
        "AP IoU thresholds", "ap_thresholds", _word("thresholds"), ((0.5,), COCO_IOU_THRESHOLDS)
    ),
    ConventionRow("AP integration", "interpolation", _word("name"), INTERPOLATIONS),
    ConventionRow("summary and area ranges", "summary", _word("summary"), SUMMARY_KINDS),
)

#: Fields that change neither the summary mAP nor the matching: carried to the second
#: setting's values with the last step, never a step of their own.
#: The operating point moves P and R, not the mAP (and is set with the summary that reads it).
_UNCOMPARED = ("protocol", "sweep_thresholds", "operating_point")


@dataclass(frozen=True, slots=True)
class Configuration:
    """A setting as evaluated: its conventions and its predictions' preparation.

    Attributes:
        conventions: The conventions.
        preparation: What is done to the predictions before matching (None: nothing).
    """

    conventions: Conventions
    preparation: Preparation | None = None

    def value(self, field: str) -> Value:
        """A convention's value (``preparation``, or a field of the conventions)."""
        if field == "preparation":
            return self.preparation
        return getattr(self.conventions, field)

    def with_values(self, values: dict[str, Value]) -> Configuration:
        """A copy with the values given (by field); the P/R operating point of the
        ``ultralytics`` summary goes back to ``all`` with another summary (it moves no
        mAP, and no other summary reads it)."""
        changed = dict(values)
        preparation = changed.pop("preparation", self.preparation)
        summary = changed.get("summary", self.conventions.summary)
        if summary != "ultralytics" and self.conventions.operating_point != "all":
            changed.setdefault("operating_point", "all")
        conventions = replace(self.conventions, **changed) if changed else self.conventions
        return Configuration(conventions, preparation)

    def key(self) -> Configuration:
        """What its evaluation depends on (the protocol's name does not)."""
        return Configuration(replace(self.conventions, protocol=""), self.preparation)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExplainRequest(ReadOptions):
    """Two settings to compare, or a target to reproduce, on one set of inputs.

    Attributes:
        gt: The ground truth (a folder of XML files, or a VOC folder).
        pred: The predictions.
        from_protocol: The first setting: a protocol's name or conventions.
        to_protocol: The second setting.
        from_preparation: The first setting's preparation of the predictions (None: as
            given).
        to_preparation: The second setting's.
        target: A reported mAP to reproduce, as text (``"0.6123"``, ``"61.23"`` for a
            percentage) or a number; with it, no settings are compared.
        attribution: ``steps`` (one convention at a time, :data:`CONVENTION_ORDER`) or
            ``shapley``.
        fold_case: Lower-case class names before matching.
        names_of: Names to give the two settings in the report (their protocols' otherwise).

    Example:
        >>> request = ExplainRequest(gt="g", pred="p", from_protocol="voc07", to_protocol="coco")
        >>> request.attribution, request.pred_format
        ('steps', 'voc')
    """

    gt: PathLike
    pred: PathLike
    from_protocol: str | Conventions | None = None
    to_protocol: str | Conventions | None = None
    from_preparation: Preparation | None = None
    to_preparation: Preparation | None = None
    target: str | float | None = None
    attribution: Attribution = "steps"
    fold_case: bool = False
    names_of: tuple[str, str] | None = None

    def folds_case(self) -> bool:
        """Class names are lower-cased before matching when ``fold_case`` says so."""
        return self.fold_case


_NUMBER = re.compile(r"[0-9]*\.?[0-9]+|[0-9]+\.")


def parse_target(given: str | float) -> Target:
    """A reported mAP as a fraction and its digits: ``61.23`` (above 1 with a decimal point)
    is a percentage.

    Raises:
        RequestError: Not a number written with digits, or outside [0, 1] (field
            ``target``).

    >>> parse_target("0.6123").decimals, parse_target("61.23").value
    (4, 0.6123)
    """
    # A number is read as its shortest repr, written out without an exponent (1e-05 is
    # 0.00001): its digits are the digits given.
    text = format(Decimal(repr(given)), "f") if isinstance(given, float) else given
    if isinstance(given, bool) or not isinstance(text, str):
        raise RequestError("target", "expected a number such as 0.6123", str(given))
    written = text.strip()
    if not _NUMBER.fullmatch(written):
        raise RequestError("target", "expected a number written with digits, such as 0.6123", text)
    try:
        number = Decimal(written)
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        raise RequestError("target", "expected a number such as 0.6123", text) from None
    decimals = len(written.split(".")[1]) if "." in written else 0
    note = ""
    if number > 1 and "." in written and number <= 100:
        number /= 100
        decimals += 2
        note = f"target {written} read as a percentage: {number}"
    if not 0 <= number <= 1:
        raise RequestError(
            "target", "expected an mAP in [0, 1] (or a percentage such as 61.23)", text
        )
    return Target(text, float(number), decimals, note)


class _Evaluator:
    """Settings evaluated on inputs read once, each distinct setting once."""

    def __init__(self, gt: ColumnSet, pred: ColumnSet, fold_case: bool) -> None:
        self.gt, self.pred, self.fold_case = gt, pred, fold_case
        self.found: dict[Configuration, tuple[float, dict[str, float | None]]] = {}
        self.evaluations = 0
        self.missing_pred: tuple[str, ...] = ()
        # Match records by setting but the AP integration, which only their accumulation
        # reads: the variants of a search share their pairing and matching.
        self.records: dict[Configuration, MatchRecords] = {}
        # The predictions under each preparation (None: as given).
        self.prepared: dict[Preparation | None, ColumnSet] = {None: pred}

    def __call__(self, setting: Configuration) -> tuple[float, dict[str, float | None]]:
        key = setting.key()
        known = self.found.get(key)
        if known is not None:
            return known
        from vocmatch.evaluation.from_records import map_of
        from vocmatch.evaluation.to_records import Asked, match_records

        conventions = setting.conventions
        # What the matching reads: the summary only as to whether it is COCO's (its area
        # ranges); neither the AP integration nor the operating point.
        matched = key.with_values({
            "interpolation": INTERPOLATIONS[0],
            "summary": "coco" if conventions.summary == "coco" else "voc",
            "operating_point": "all",
        })  # fmt: skip
        records = self.records.get(matched)
        if records is None:
            # What evaluate_columns matches for a run that keeps no per-box records.
            asked = Asked(whole_run=True)
            records = match_records(
                self.gt, self._predictions(setting.preparation), conventions,
                fold_case=self.fold_case, asked=asked,
            )  # fmt: skip
            self.records[matched] = records
            self.missing_pred = tuple(
                k for k, p in zip(records.keys, records.pred_paths, strict=True) if p is None
            )
        value, results = map_of(records, conventions)
        self.evaluations += 1
        classes = {c.name: (c.ap if c.in_map else None) for c in results}
        found = (math.nan if value is None else value, classes)
        self.found[key] = found
        return found

    def _predictions(self, preparation: Preparation | None) -> ColumnSet:
        """The predictions prepared as a setting says (each preparation once).

        Raises:
            InputError: A preparation of predictions without a score.
        """
        found = self.prepared.get(preparation)
        if found is None:
            from vocmatch.evaluation.preparation import prepare_columns

            found = prepare_columns(self.pred, preparation)[0] if preparation else self.pred
            self.prepared[preparation] = found
        return found

    def notes(self) -> tuple[str, ...]:
        """What every setting shares and a reader should know: images without predictions."""
        missing = self.missing_pred
        if not missing:
            return ()
        return (
            f"{plural(len(missing), 'image')} with no prediction file: their objects count as "
            f"missed in every setting (first: {missing[0]})",
        )

    def setting(self, name: str, setting: Configuration) -> Setting:
        value, classes = self(setting)
        return Setting(
            name, setting.conventions, value, tuple(classes.items()), setting.preparation
        )


def explain(
    request: ExplainRequest | PathLike,
    pred: PathLike | None = None,
    from_protocol: str | Conventions | None = None,
    to_protocol: str | Conventions | None = None,
    *,
    progress: Progress | None = None,
    **options: object,
) -> Explanation:
    """Explain why two settings' mAP differ, or find the settings that give a reported mAP.

    Args:
        request: The request, or the ground truth's path.
        pred: The predictions' path, when ``request`` is a path.
        from_protocol: The first setting, when ``request`` is a path.
        to_protocol: The second setting, when ``request`` is a path.
        progress: Told how many files are read.
        **options: The other fields of :class:`ExplainRequest`, when ``request`` is a path.

    Returns:
        The two settings and the steps between them, or the target's candidates.

    Raises:
        RequestError: No protocol of that name (the known ones listed), a target that is not
            an mAP, Shapley values over too many conventions, neither two settings nor a
            target (each names its field).
        InputError: The inputs cannot be read, or nothing pairs.

    Example:
        >>> import vocmatch
        >>> found = vocmatch.explain("fixtures/demo/gt", "fixtures/demo/pred", target="0.625")
        >>> found.reproduced, found.candidates[0].protocol
        (True, 'default')
    """
    if not isinstance(request, ExplainRequest):
        if pred is None:
            raise TypeError("explain() needs the predictions' path after the ground truth's")
        request = ExplainRequest(
            gt=request, pred=pred, from_protocol=from_protocol, to_protocol=to_protocol,
            **options,  # type: ignore[arg-type]
        )  # fmt: skip
    elif pred is not None or from_protocol is not None or to_protocol is not None or options:
        raise TypeError("explain() takes a request or paths and keywords, not both")
    _plan(
        request.from_protocol, request.to_protocol, request.target, request.attribution,
        preparations=(request.from_preparation, request.to_preparation),
    )  # fmt: skip
    gt, pred_columns = read_inputs(
        Inputs(request.gt, request.pred, request), progress.files if progress is not None else None
    )
    return explain_columns(
        gt, pred_columns, request.from_protocol, request.to_protocol, target=request.target,
        attribution=request.attribution, fold_case=request.fold_case, names_of=request.names_of,
        preparations=(request.from_preparation, request.to_preparation),
    )  # fmt: skip


def explain_columns(
    gt: ColumnSet,
    pred: ColumnSet,
    from_protocol: str | Conventions | None = None,
    to_protocol: str | Conventions | None = None,
    *,
    target: str | float | None = None,
    attribution: Attribution = "steps",
    fold_case: bool = False,
    names_of: tuple[str, str] | None = None,
    preparations: tuple[Preparation | None, Preparation | None] = (None, None),
) -> Explanation:
    """:func:`explain` on columns already read (:func:`~vocmatch.run.evaluate.read_inputs`):
    every setting is evaluated on the same columns.

    Args:
        gt: The ground truth's columns.
        pred: The predictions' columns.
        from_protocol: The first setting.
        to_protocol: The second setting.
        target: A reported mAP to reproduce, instead of two settings.
        attribution: ``steps`` or ``shapley``.
        fold_case: Lower-case class names before matching.
        names_of: Names of the two settings in the report.
        preparations: The two settings' preparations of the predictions (None: as given).

    Raises:
        RequestError: As :func:`explain`.
        InputError: A preparation of predictions without a score.

    Example:
        >>> from vocmatch.run.evaluate import Inputs
        >>> from vocmatch.run.read_stage import read_inputs
        >>> gt, pred = read_inputs(Inputs("fixtures/demo/gt", "fixtures/demo/pred"))
        >>> found = explain_columns(gt, pred, "default", "voc12")
        >>> tuple((step.convention, step.delta) for step in found.steps)
        (('+1 pixel areas', 0.0), ('match rule', 0.0))
    """
    parsed, ends = _plan(
        from_protocol, to_protocol, target, attribution, names_of, preparations=preparations
    )
    evaluate = _Evaluator(gt, pred, fold_case)
    notes = tuple(str(note) for note in (*gt.notes, *pred.notes))
    if parsed is not None:
        found = _search(evaluate, parsed, notes)
        return replace(found, notes=(*found.notes, *evaluate.notes()))
    assert ends is not None
    (a_name, a), (b_name, b) = ends
    start, end = evaluate.setting(a_name, a), evaluate.setting(b_name, b)
    attribute = _shapley if attribution == "shapley" else _steps
    steps = attribute(evaluate, a, b)
    return Explanation(
        start, end, attribution, steps, evaluations=evaluate.evaluations,
        notes=(*notes, *evaluate.notes()),
    )  # fmt: skip


_Ends = tuple[tuple[str, Configuration], tuple[str, Configuration]]


def _plan(
    from_protocol: str | Conventions | None,
    to_protocol: str | Conventions | None,
    target: str | float | None,
    attribution: str,
    names_of: tuple[str, str] | None = None,
    *,
    preparations: tuple[Preparation | None, Preparation | None] = (None, None),
) -> tuple[Target | None, _Ends | None]:
    """The target, or the two settings' names and conventions: checked before any file is
    read.

    Raises:
        RequestError: An unknown attribution or protocol, a target that is no mAP, both a
            target and settings or neither, Shapley values over too many conventions.
    """
    if attribution not in ATTRIBUTIONS:
        known = ", ".join(ATTRIBUTIONS)
        raise RequestError("attribution", f"no such attribution (known: {known})", attribution)
    for field, preparation in zip(
        ("from_preparation", "to_preparation"), preparations, strict=True
    ):
        if preparation is not None and not isinstance(preparation, Preparation):
            raise RequestError(
                field, f"expected a Preparation or None, got {type(preparation).__name__}"
            )
    if target is not None:
        if from_protocol is not None or to_protocol is not None or any(preparations):
            raise RequestError("target", "is searched for alone: give no settings to compare")
        return parse_target(target), None
    if from_protocol is None or to_protocol is None:
        missing = "from_protocol" if from_protocol is None else "to_protocol"
        raise RequestError(missing, "give two settings to compare, or a target")
    if names_of is not None and (
        not isinstance(names_of, tuple)
        or len(names_of) != 2
        or not all(isinstance(name, str) for name in names_of)
    ):
        raise RequestError("names_of", "expected two names, one for each setting")
    a = Configuration(conventions_of(from_protocol, "from_protocol"), preparations[0] or None)
    b = Configuration(conventions_of(to_protocol, "to_protocol"), preparations[1] or None)
    names = names_of or (a.conventions.protocol, b.conventions.protocol)
    differing = len(_differing(a, b))
    if attribution == "shapley" and differing > MAX_SHAPLEY_CONVENTIONS:
        raise RequestError(
            "attribution",
            f"Shapley values over {differing} differing conventions need 2^{differing} "
            f"evaluations; at most {MAX_SHAPLEY_CONVENTIONS} conventions are attributed so",
            "shapley",
        )
    return None, ((names[0], a), (names[1], b))


@dataclass(frozen=True, slots=True)
class _Change:
    """A convention that differs between two settings: its label, fields and values."""

    label: str
    fields: tuple[str, ...]
    from_value: str
    to_value: str


def _differing(a: Configuration, b: Configuration) -> list[_Change]:
    """The conventions that differ, in the canonical order; fields without a row last."""
    changes = [
        _Change(row.label, (row.field,), row.word(a.value(row.field)), row.word(b.value(row.field)))
        for row in CONVENTION_ORDER
        if a.value(row.field) != b.value(row.field)
    ]
    ordered = {row.field for row in CONVENTION_ORDER}
    others = [
        f.name
        for f in fields(Conventions)
        if f.name not in ordered
        and f.name not in _UNCOMPARED
        and a.value(f.name) != b.value(f.name)
    ]
    for name in others:
        changes.append(
            _Change(name.replace("_", " "), (name,), str(a.value(name)), str(b.value(name)))
        )
    return changes


def _with(
    a: Configuration, b: Configuration, changes: Sequence[_Change], everything: bool
) -> Configuration:
    """``a`` with the fields of ``changes`` taken from ``b`` (``b`` itself for every change)."""
    if everything:
        return b
    return a.with_values({f: b.value(f) for change in changes for f in change.fields})


def _class_steps(
    before: dict[str, float | None], after: dict[str, float | None], names: Sequence[str]
) -> tuple[tuple[str, float | None, float | None], ...]:
    rows = []
    for name in names:
        was, now = before.get(name), after.get(name)
        rows.append((name, now, None if was is None or now is None else now - was))
    return tuple(rows)


def _class_names(*found: dict[str, float | None]) -> list[str]:
    return sorted({name for classes in found for name in classes})


def _steps(evaluate: _Evaluator, a: Configuration, b: Configuration) -> tuple[ExplainStep, ...]:
    """One convention at a time, in the canonical order; each delta the difference of two
    consecutive mAPs, so that they telescope to the whole difference."""
    changes = _differing(a, b)
    before_map, before = evaluate(a)
    names = _class_names(before, evaluate(b)[1])
    steps = []
    for i, change in enumerate(changes):
        last = i == len(changes) - 1
        after_map, after = evaluate(_with(a, b, changes[: i + 1], last))
        steps.append(
            ExplainStep(
                change.label, change.from_value, change.to_value, after_map,
                after_map - before_map, _class_steps(before, after, names),
            )
        )  # fmt: skip
        before_map, before = after_map, after
    return tuple(steps)


def _shapley(evaluate: _Evaluator, a: Configuration, b: Configuration) -> tuple[ExplainStep, ...]:
    """Each differing convention's Shapley value: its delta averaged over every order in
    which the conventions can be changed (every subset evaluated once)."""
    changes = _differing(a, b)
    k = len(changes)
    value: dict[frozenset[int], tuple[float, dict[str, float | None]]] = {}
    for size in range(k + 1):
        for members in combinations(range(k), size):
            chosen = [changes[i] for i in members]
            value[frozenset(members)] = evaluate(_with(a, b, chosen, size == k))
    names = _class_names(value[frozenset()][1], value[frozenset(range(k))][1])
    steps = []
    for i, change in enumerate(changes):
        total = 0.0
        per_class: dict[str, float | None] = dict.fromkeys(names, 0.0)
        for subset, (without_map, without) in value.items():
            if i in subset:
                continue
            weight = (
                math.factorial(len(subset))
                * math.factorial(k - len(subset) - 1)
                / math.factorial(k)
            )
            with_map, with_ = value[subset | {i}]
            total += weight * (with_map - without_map)
            for name in names:
                was, now, sum_ = without.get(name), with_.get(name), per_class[name]
                per_class[name] = (
                    None
                    if was is None or now is None or sum_ is None
                    else sum_ + weight * (now - was)
                )
        classes = tuple((name, None, per_class[name]) for name in names)
        steps.append(
            ExplainStep(change.label, change.from_value, change.to_value, None, total, classes)
        )
    return tuple(steps)


def _variants(preset: Configuration) -> list[tuple[tuple[tuple[str, Value], ...], Configuration]]:
    """A preset, its one-convention and its two-convention variants (values of the rows that
    are searched), each with the changes that make it."""
    singles = [
        (row.field, value)
        for row in CONVENTION_ORDER
        for value in row.values
        if value != preset.value(row.field)
    ]
    found: list[tuple[tuple[tuple[str, Value], ...], Configuration]] = [((), preset)]
    for size in (1, 2):
        for chosen in combinations(singles, size):
            if len({name for name, _ in chosen}) < size:
                continue
            found.append((chosen, preset.with_values(dict(chosen))))
    return found


def _distance(value: float, target: Target) -> float:
    return abs(value - target.value) if math.isfinite(value) else math.inf


def _search(evaluate: _Evaluator, target: Target, notes: tuple[str, ...]) -> Explanation:
    """Every preset and its one- and two-convention variants: those that reproduce the
    target, or the closest."""
    words = {row.field: row.word for row in CONVENTION_ORDER}
    candidates: list[Candidate] = []
    seen: set[Configuration] = set()
    for preset in PRESETS:
        for chosen, setting in _variants(Configuration(preset.conventions)):
            key = setting.key()
            if key in seen:
                continue
            seen.add(key)
            try:
                value, _ = evaluate(setting)
            except InputError:
                # A preparation of predictions without a score: not a setting of these.
                continue
            options = tuple((name, words[name](v)) for name, v in chosen)
            candidates.append(Candidate(preset.name, options, value))
    hits = [c for c in candidates if target.matches(c.map)]
    if hits:
        shown = sorted(hits, key=lambda c: len(c.options))
    else:
        shown = sorted(candidates, key=lambda c: (_distance(c.map, target), len(c.options)))
        shown = shown[:CLOSEST]
    return Explanation(
        None, None, target=target, candidates=tuple(shown), reproduced=bool(hits),
        tried=len(candidates), evaluations=evaluate.evaluations,
        notes=(*((target.note,) if target.note else ()), *notes),
    )  # fmt: skip

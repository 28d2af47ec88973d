"""Whole runs: a request in, one result out. What ``vocmatch eval``, ``diff`` and
``suspects`` do between reading their options and rendering, as a library.

A request names the inputs (a folder of XML files, a VOC year folder and its split, or
predictions from a detector as COCO results, YOLO txt files or the VOC devkit's results
files), the protocol and its overrides, and the extras (error analysis, bootstrap, slices,
calibration, gates, score thresholds). :func:`evaluate` reads, evaluates and adds the extras,
and returns an :class:`~vocmatch.evidence.run_report.EvalReport` that every renderer of
:mod:`vocmatch.render.outputs` takes.

The modules a run needs are imported when it needs them: reading a request loads nothing.

Example:
    >>> import vocmatch
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     report = vocmatch.evaluate("fixtures/demo/gt", "fixtures/demo/pred", protocol="voc12")
    >>> print(caught[0].message)  # the demo's street_05 has no prediction file
    no prediction file for 'street_05': its objects count as missed (missing_pred lists it)
    >>> report.evaluation.summary.map
    0.625
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from vocmatch.core.preparation import Preparation
from vocmatch.errors import (
    InputError,
    RequestError,
    VocmatchWarning,
)
from vocmatch.evidence.run_report import EvalReport, Evidence
from vocmatch.lazy import lazy_attribute
from vocmatch.readers.formats import BoxFormat, prediction_suffixes
from vocmatch.readers.formats import PredFormat as PredFormat
from vocmatch.run.extras import Extras, evidence_of
from vocmatch.run.hints import input_warnings, warn_missing_predictions
from vocmatch.run.read_stage import (
    check_class_tables,
    check_pred_path,
    chosen_columns,
    read_inputs,
    reads_elsewhere,
)
from vocmatch.run.request_checks import check_request, unknown_keywords

if TYPE_CHECKING:
    from vocmatch.core.ap import Interpolation
    from vocmatch.core.match import MatchRule
    from vocmatch.core.protocol import (
        Conventions,
        DifficultRule,
        IouArithmetic,
        OperatingPoint,
    )
    from vocmatch.evaluation.class_map import ClassChoice
    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.evaluation.scoring import Evaluation
    from vocmatch.evaluation.threshold_files import ClassThresholds
    from vocmatch.evaluation.thresholds import ScoreThresholds
    from vocmatch.evidence.gate_records import Gate
    from vocmatch.evidence.slices import SliceSpec
    from vocmatch.evidence.target_thresholds import Target
    from vocmatch.readers.parse import AnnotationSet
    from vocmatch.readers.scan import ColumnSet
    from vocmatch.run.compare import DiffReport as DiffReport
    from vocmatch.run.compare import DiffRequest as DiffRequest
    from vocmatch.run.compare import compare as compare
    from vocmatch.run.evaluate_labels import LabelsRequest as LabelsRequest
    from vocmatch.run.evaluate_labels import evaluate_labels as evaluate_labels
    from vocmatch.run.find_suspects import SuspectsFound as SuspectsFound
    from vocmatch.run.find_suspects import SuspectsRequest as SuspectsRequest
    from vocmatch.run.find_suspects import find_suspects as find_suspects
    from vocmatch.run.remote_inputs import Elsewhere
    from vocmatch.run.shard_states import MergedStates as MergedStates
    from vocmatch.run.shard_states import ShardState as ShardState
    from vocmatch.run.shard_states import evaluator_for as evaluator_for
    from vocmatch.run.shard_states import read_states as read_states
    from vocmatch.run.shard_states import shard_state as shard_state

__all__ = [
    "DiffReport",
    "DiffRequest",
    "EvalReport",
    "EvalRequest",
    "Evidence",
    "Inputs",
    "LabelsRequest",
    "MergedStates",
    "Progress",
    "ReadOptions",
    "ScoreOptions",
    "ShardState",
    "SuspectsFound",
    "SuspectsRequest",
    "compare",
    "evaluate",
    "evaluate_labels",
    "evaluator_for",
    "find_suspects",
    "prediction_suffixes",
    "read_states",
    "score_thresholds_of",
    "shard_state",
    "slice_specs",
]

PathLike = str | os.PathLike[str]
Geometry = Literal["shape", "box"]


class Progress(Protocol):
    """Where a long run reports how far it is (a progress bar, a log)."""

    def files(self, done: int, total: int) -> None:
        """Files read so far, of all the files to read."""

    def stages(self, stage: str, done: int, total: int) -> None:
        """The evaluation's stages, each over every image at once."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadOptions:
    """How the inputs are read; the options every request shares.

    Attributes:
        pred_format: ``voc`` (a folder of XML files), ``coco`` (a COCO results JSON file),
            ``yolo`` (a folder of txt files; needs ``names``), ``voc-results`` (a folder of
            the VOC devkit's ``comp4_det_<set>_<class>.txt`` files) or ``txt`` (a folder of
            txt files, one per image, ``class score x1 y1 x2 y2`` in pixels).
        box_format: With ``txt``: ``xyxy`` (``x1 y1 x2 y2``) or ``xywh`` (``x y w h``, the
            top-left corner and the size).
        coco_gt: With ``coco``: a COCO ground-truth JSON file naming the numeric ids.
        names: With ``yolo``: a file of class names, one per line, in class-index order.
        split: Only the images of a list: a split name of a VOC folder given as ground
            truth (``ImageSets/Main/<split>.txt``) or a file of image ids.
        geometry: ``shape`` scores an object by its polygon or rotated box when it has one;
            ``box`` scores every object as its bounding box.
        max_file_size: Larger annotation files are skipped unread (bytes).
        jobs: Worker processes; 0 uses every core. Above one, each reads and matches a
            part of the images when the report lists or draws no box
            (:mod:`vocmatch.run.in_parts`), else they read files in parallel.
        class_choice: Prediction classes renamed to ground-truth names (a class map), only
            some classes kept, or every class made one (class-agnostic matching).
        class_map: Prediction classes renamed to ground-truth names by a built-in map
            (``coco-to-voc``: a COCO model's names on VOC ground truth) or a map file; the
            same as a ``class_choice`` holding that map.
    """

    pred_format: PredFormat = "voc"
    box_format: BoxFormat = "xyxy"
    coco_gt: PathLike | None = None
    names: PathLike | None = None
    split: str | None = None
    geometry: Geometry = "shape"
    max_file_size: int = 32 * 1024 * 1024
    jobs: int = 0
    class_choice: ClassChoice | None = None
    class_map: PathLike | None = None

    def class_selection(self) -> ClassChoice | None:
        """``class_choice`` with ``class_map``'s map in it, when one is given.

        Raises:
            RequestError: A map in both (field ``class_map``).
            InputError: The map file cannot be read.
        """
        if self.class_map is None:
            return self.class_choice
        from vocmatch.evaluation.class_map import ClassChoice, class_map

        choice = self.class_choice or ClassChoice()
        if choice.class_map is not None:
            raise RequestError("class_map", "a class map is given twice (also in class_choice)")
        return replace(choice, class_map=class_map(self.class_map))

    def __post_init__(self) -> None:
        """Check every field when the request is made (:mod:`vocmatch.run.request_checks`), for
        every request type: a value no run can use is refused here, never computed with."""
        check_request(self)

    def workers(self) -> int:
        """The processes to read with: ``jobs``, or every core for 0."""
        return self.jobs or os.cpu_count() or 1

    def folds_case(self) -> bool:
        """Class names are compared lower-cased (``Car`` and ``car`` are one class)."""
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreOptions(ReadOptions):
    """How predictions are scored: a protocol and the conventions laid over it.

    Attributes:
        protocol: ``default``, ``voc07``, ``voc12``, ``coco`` or ``ultralytics``, or a
            :class:`~vocmatch.core.protocol.Conventions`.
        iou: The IoU threshold of a match (None keeps the protocol's).
        strict_threshold: Match at ``IoU > t`` instead of ``IoU >= t`` (None keeps it).
        pixel_inclusive: The devkit's ``+ 1`` pixel areas (None keeps the protocol's).
        match_rule: ``unmatched``, ``devkit`` or ``unmatched-first`` (None keeps the
            protocol's).
        difficult: ``ignore``, ``count``, ``crowd`` or ``drop`` (None keeps the protocol's).
        interpolation: ``all-point``, ``11-point``, ``101-point`` or
            ``101-point-trapezoid`` (None keeps it).
        fold_case: Lower-case class names before matching (Car and car are one class).
        sweep_thresholds: The IoU thresholds of each image's TP/FP/FN sweep (None keeps
            0.50, 0.75, 0.95).
        max_dets: The highest-scored predictions kept per image and class, as pycocotools'
            maxDets (None keeps the protocol's).
        iou_arithmetic: ``float64`` or ``float32`` (None keeps the protocol's).
        operating_point: Where the ``ultralytics`` summary reads P and R: ``max-f1`` or
            ``all`` (None keeps the protocol's).
        min_score: Remove every prediction scored at or below this before anything else
            (:mod:`vocmatch.core.preparation`; None: none).
        nms: Non-maximum suppression of each image's predictions at this IoU, class by
            class, before matching (None: none).
        nms_agnostic: The suppression runs across classes.
        max_per_image: Keep the highest-scored predictions of each image, across classes,
            before matching (None: all).
    """

    protocol: str | Conventions = "default"
    iou: float | None = None
    strict_threshold: bool | None = None
    pixel_inclusive: bool | None = None
    match_rule: MatchRule | None = None
    difficult: DifficultRule | None = None
    interpolation: Interpolation | None = None
    fold_case: bool = False
    sweep_thresholds: tuple[float, ...] | None = None
    max_dets: int | None = None
    iou_arithmetic: IouArithmetic | None = None
    operating_point: OperatingPoint | None = None
    min_score: float | None = None
    nms: float | None = None
    nms_agnostic: bool = False
    max_per_image: int | None = None

    def preparation(self) -> Preparation | None:
        """The preparation of the predictions asked for, or None.

        Raises:
            RequestError: ``nms_agnostic`` without ``nms`` (field ``nms_agnostic``).
        """
        found = Preparation(self.min_score, self.nms, self.nms_agnostic, self.max_per_image)
        return found if found.active else None

    def conventions(self) -> Conventions:
        """The protocol's conventions with every override given laid over them.

        Raises:
            RequestError: No protocol has that name (field ``protocol``).

        >>> ScoreOptions(protocol="voc07", iou=0.7).conventions().iou_threshold
        0.7
        """
        from vocmatch.core.protocol import conventions_of

        conventions = conventions_of(self.protocol)
        if self.iou is not None:
            conventions = conventions.with_threshold(self.iou)
        names = (
            "strict_threshold", "pixel_inclusive", "match_rule", "difficult", "interpolation",
            "sweep_thresholds", "max_dets", "iou_arithmetic", "operating_point",
        )  # fmt: skip
        changes = {n: getattr(self, n) for n in names if getattr(self, n) is not None}
        return replace(conventions, **changes) if changes else conventions

    def folds_case(self) -> bool:
        """Class names are lower-cased before matching when ``fold_case`` says so."""
        return self.fold_case


@dataclass(frozen=True, slots=True)
class Inputs:
    """One ground truth and one set of predictions, and how to read them.

    Attributes:
        gt: A folder of ground-truth XML files, or a VOC folder holding ``Annotations/``.
        pred: The predictions: a folder, or a file for ``coco``.
        options: How to read them.
    """

    gt: PathLike
    pred: PathLike
    options: ReadOptions = ReadOptions()


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalRequest(ScoreOptions):
    """Everything one evaluation is asked to do: what ``vocmatch eval`` reads from its options.

    The reading options and the protocol are those of :class:`ReadOptions` and
    :class:`ScoreOptions`; the rest asks for extras.

    Attributes:
        gt: A folder of ground-truth XML files, or a VOC folder holding ``Annotations/``.
        pred: The predictions: a folder, or a COCO results file.
        score_threshold: Count only predictions scored at least this (AP uses every one).
        score_thresholds: Per-class thresholds: a ``class,threshold`` CSV file or a mapping.
        gates: Lower bounds, as :class:`~vocmatch.evidence.gate_records.Gate` or text such as
            ``map=0.5`` or ``person:recall=0.9``.
        max_fp: Most false positives an image may have (None: no limit).
        max_fn: Most missed objects an image may have (None: no limit).
        analysis: Add the error analysis (TIDE types, confusion, tightness).
        background_iou: The error analysis's background threshold.
        boxes: Keep every box and match in the report (HTML and JUnit reports draw them).
        reliability: Compute the calibration the HTML report draws (10 bins by default).
        bootstrap: Resamples of the images for 95 % intervals (None: no bootstrap).
        seed: The bootstrap's seed.
        slices: Slices to report, as specs or text (``size``, ``occluded``, ``night_*``).
        calibration_bins: Equal score bins for each class's calibration (None: none): ECE,
            MCE, and OCE and D-ECE, whose inputs the matching then keeps
            (:mod:`vocmatch.evidence.calibration`).
        target_precision: Give each class the score threshold whose precision holds this
            target at the bootstrap's lower bound (:mod:`vocmatch.evidence.target_thresholds`),
            over ``bootstrap`` resamples (1,000 when not given).
        target_recall: The same for recall (one target at a time).
        confidence_level: The lower bound's confidence for the targets.
        count: Add the per-image count errors and presence of each class
            (:mod:`vocmatch.evidence.counting`), with intervals when ``bootstrap`` is given.
        beta: The F-beta each class's operating point maximises.
        dask: Read the files on a Dask cluster: ``local:N`` starts N local worker
            processes for the run, anything else is a scheduler's address
            (``tcp://host:8786``); needs ``pip install 'vocmatch[dask]'``. Workers read and
            match parts of the images and send back their match records (with each image's
            per-box records and boxes when the report lists or draws boxes); the report is
            that of one process. None reads here.
        cache: A folder where the run keeps its images' match records, keyed by the
            content of their files and by the options: a run again matches only the images
            whose files changed, and reports what a run without it reports
            (:mod:`vocmatch.run.cached`). For XML predictions in folders read here, the
            whole set, a report that lists or draws no box; None keeps no cache.
        cache_verify: Hash every file, not only those whose size or times changed (files
            edited within one mtime tick, or whose times were restored).

    Example:
        >>> EvalRequest(gt="gt", pred="pred", protocol="coco").conventions().interpolation
        '101-point'
    """

    gt: PathLike
    pred: PathLike
    score_threshold: float | None = None
    score_thresholds: PathLike | Mapping[str, float] | None = None
    gates: Sequence[Gate | str] = ()
    max_fp: int | None = None
    max_fn: int | None = None
    analysis: bool = False
    background_iou: float = 0.1
    boxes: bool = False
    reliability: bool = False
    bootstrap: int | None = None
    seed: int = 0
    slices: Sequence[SliceSpec | str] = ()
    calibration_bins: int | None = None
    count: bool = False
    target_precision: float | None = None
    target_recall: float | None = None
    confidence_level: float = 0.95
    beta: float = 1.0
    dask: str | None = None
    cache: PathLike | None = None
    cache_verify: bool = False

    def inputs(self) -> Inputs:
        """The ground truth, the predictions and how to read them."""
        return Inputs(self.gt, self.pred, self)

    def target(self) -> Target | None:
        """The target the score thresholds must hold, if one is given.

        Raises:
            RequestError: Both targets are given (field ``target_recall``).
        """
        from vocmatch.run.extras import target_of

        return target_of(
            self.target_precision, self.target_recall, self.confidence_level,
            self.bootstrap, self.seed,
        )  # fmt: skip

    def keeps_boxes(self) -> bool:
        """Every box and match is kept: an output draws them, or the analysis reads them."""
        return self.boxes or self.analysis


@dataclass(frozen=True, slots=True)
class _Scored:
    """An evaluation and what its extras read: its match records (the slices' among them)
    and, when kept, the annotations box by box."""

    evaluation: Evaluation
    records: MatchRecords | None
    gt: AnnotationSet | None = None
    pred: AnnotationSet | None = None
    warnings: tuple[VocmatchWarning, ...] = ()


def evaluate(
    request: EvalRequest | PathLike,
    pred: PathLike | None = None,
    *,
    progress: Progress | None = None,
    on_evaluated: Callable[[Evaluation], None] | None = None,
    **options: Any,
) -> EvalReport:
    """Read, evaluate and add every extra asked for: all of ``vocmatch eval`` but the output.

    Call it with a request, or with the two paths and the request's fields as keywords.

    Args:
        request: The request, or the ground truth's path.
        pred: The predictions' path, when ``request`` is a path.
        progress: Told how far the reading and the matching are.
        on_evaluated: Called with the evaluation before the gates and the analysis run
            (the command line shows its warnings there, before any gate's error).
            Inputs given as URLs (``s3://...``, ``file:///...``) and a request's ``dask``
            cluster are read as ``vocmatch eval`` reads them
            (:mod:`vocmatch.run.remote_inputs`): on a cluster, the workers send their match
            records, with each image's boxes when the report keeps them
            (:meth:`EvalRequest.keeps_boxes`).
        **options: The fields of :class:`EvalRequest`, when ``request`` is a path.

    Returns:
        The evaluation, its gates and every extra asked for.

    Raises:
        RequestError: A field holds a value that cannot be used (its ``field`` says which);
            an ``evaluation`` given for a report that needs boxes (field ``evaluation``).
        InputError: The inputs cannot be evaluated (no annotation file, nothing pairs).
        AnnotationError: A file that must be read cannot be.

    Example:
        >>> import vocmatch
        >>> import warnings
        >>> from vocmatch.errors import MissingPredictionWarning
        >>> warnings.simplefilter("ignore", MissingPredictionWarning)  # street_05: no predictions
        >>> demo = ("fixtures/demo/gt", "fixtures/demo/pred")
        >>> report = vocmatch.evaluate(*demo, gates=["map=0.9"])
        >>> report.passed, str(report.gates.gates[0])
        (False, 'map 0.6250 < 0.9000')
    """
    if not isinstance(request, EvalRequest):
        if pred is None:
            raise TypeError("evaluate() needs the predictions' path after the ground truth's")
        unknown = unknown_keywords(options, EvalRequest)
        if unknown is not None:
            raise TypeError(f"evaluate() got an unexpected keyword argument {unknown}")
        request = EvalRequest(gt=request, pred=pred, **options)
    elif pred is not None or options:
        raise TypeError("evaluate() takes a request or paths and keywords, not both")

    if request.cache is not None or request.cache_verify:
        # Imported only then: the cache's machinery (the parts of a run) costs a run that
        # keeps none 40 ms of imports.
        from vocmatch.run.cached import check_cached

        check_cached(request)
    conventions = request.conventions()
    gates = _gates(request.gates)
    specs = slice_specs(request.slices)
    thresholds = score_thresholds_of(request)
    # Inputs given as URLs, or read on a cluster: as the command line reads them.
    elsewhere = None
    if reads_elsewhere(request):
        from vocmatch.run.remote_inputs import read_elsewhere

        elsewhere = read_elsewhere(request)
    scored = _score(request, conventions, thresholds, progress, elsewhere)
    warn_missing_predictions(scored.evaluation.missing_pred)
    evidence = evidence_of(
        scored.evaluation, scored.records, conventions, thresholds or None,
        Extras(
            bootstrap=request.bootstrap, seed=request.seed, slices=specs,
            calibration_bins=request.calibration_bins, reliability=request.reliability,
            count=request.count, target=request.target(),
        ),
    )  # fmt: skip
    if on_evaluated is not None:
        on_evaluated(scored.evaluation)
    for warning in scored.warnings:
        warnings.warn(warning, stacklevel=2)
    from vocmatch.evidence.gates import check_gates

    evaluation = scored.evaluation
    report = check_gates(
        evaluation, gates, request.max_fp, request.max_fn, evidence.slices,
        fold_case=request.folds_case(), targets=evidence.targets,
    )  # fmt: skip
    analysis = None
    if request.analysis and scored.gt is not None and scored.pred is not None:
        from vocmatch.evidence.analysis import error_analysis

        analysis = error_analysis(evaluation, scored.gt, scored.pred, request.background_iou)
    return EvalReport(
        evaluation, report, analysis, evidence, thresholds or None, request.beta,
        scored.gt, scored.pred,
    )  # fmt: skip


def score_thresholds_of(request: EvalRequest) -> ScoreThresholds:
    """The request's score thresholds: one for every class and the per-class ones.

    With ``fold_case``, the per-class names are lower-cased as the files' class names are,
    so that ``Animal`` names the class of ``animal`` and ``ANIMAL``.

    Raises:
        AnnotationError: The per-class thresholds file cannot be read, or (with
            ``fold_case``) two of its names fold to one class with different thresholds.
        RequestError: The same of a mapping (field ``score_thresholds``).

    Example:
        >>> score_thresholds_of(EvalRequest(gt="gt", pred="pred", score_threshold=0.5)).default
        0.5
    """
    from vocmatch.evaluation.thresholds import ScoreThresholds

    given = _class_thresholds(request)
    if given is None:
        return ScoreThresholds.of(request.score_threshold, {})
    # Matching sees lower-cased class names under fold_case: so do the thresholds.
    per_class = given.folded() if request.folds_case() else given.as_dict()
    return ScoreThresholds.of(request.score_threshold, per_class)


def _gates(gates: Sequence[Gate | str]) -> tuple[Gate, ...]:
    if not gates:
        return ()  # no gate: their records stay unbuilt
    from vocmatch.evidence.gate_records import parse_gate

    try:
        return tuple(parse_gate(g) if isinstance(g, str) else g for g in gates)
    except ValueError as error:
        raise RequestError("gates", str(error)) from None


def slice_specs(slices: Sequence[SliceSpec | str]) -> tuple[SliceSpec, ...]:
    """The slices of a request's field, texts parsed.

    Raises:
        RequestError: A text is not a slice (field ``slices``).
    """
    texts = [s for s in slices if isinstance(s, str)]
    if not texts:
        return tuple(s for s in slices if not isinstance(s, str))
    from vocmatch.evidence.slices import parse_slices

    try:
        parsed = iter(parse_slices(texts))
    except ValueError as error:
        raise RequestError("slices", str(error)) from None
    return tuple(next(parsed) if isinstance(s, str) else s for s in slices)


def _class_thresholds(request: EvalRequest) -> ClassThresholds | None:
    given = request.score_thresholds
    if given is None:
        return None
    from vocmatch.evaluation.threshold_files import ClassThresholds, read_class_thresholds

    if isinstance(given, Mapping):
        return ClassThresholds(None, tuple(given.items()))
    return read_class_thresholds(given)


def _score(
    request: EvalRequest,
    conventions: Conventions,
    thresholds: ScoreThresholds,
    progress: Progress | None,
    elsewhere: Elsewhere | None = None,
) -> _Scored:
    """Read the inputs and evaluate them (or take the evaluation made on a cluster); the
    columns are dropped on return (they are the largest thing a run holds)."""
    from vocmatch.evaluation.engine import evaluate_columns
    from vocmatch.evaluation.score_counts import ScoreCounts

    if elsewhere is not None and elsewhere.evaluation is not None:
        found = input_warnings(request, elsewhere.evaluation)
        evaluated = _with_threshold_note(elsewhere.evaluation, thresholds, request)
        if elsewhere.boxes is None or not request.keeps_boxes():
            return _Scored(evaluated, elsewhere.records, warnings=found)
        gt, pred = _annotations_matched(*elsewhere.boxes, request)
        return _Scored(evaluated, elsewhere.records, gt, pred, found)
    if request.cache is not None:
        return _scored_with_cache(request, thresholds, progress)
    if elsewhere is None:
        in_parts = _scored_in_parts(request, thresholds, progress)
        if in_parts is not None:
            return in_parts
    if elsewhere is not None and elsewhere.columns is not None:
        gt_columns, pred_columns = chosen_columns(*elsewhere.columns, request)
    else:
        gt_columns, pred_columns = read_inputs(
            request.inputs(), progress.files if progress is not None else None
        )
    # Per-box records are built only for the outputs that show boxes: they cost more than
    # the evaluation itself on large sets.
    keep = request.keeps_boxes()
    kept: list[MatchRecords] = []
    evaluated = evaluate_columns(
        gt_columns,
        pred_columns,
        conventions,
        keep_matches=keep,
        fold_case=request.fold_case,
        progress=progress.stages if progress is not None else None,
        score_thresholds=thresholds or None,
        kept=kept.append,
        slices=slice_specs(request.slices),
        calibration=request.calibration_bins is not None,
        preparation=request.preparation(),
    )
    found = input_warnings(request, evaluated, ScoreCounts.of(gt_columns, pred_columns))
    evaluation = _with_threshold_note(evaluated, thresholds, request)
    if not keep:
        return _Scored(evaluation, kept[0], warnings=found)
    gt, pred = _annotations_matched(gt_columns, pred_columns, request)
    return _Scored(evaluation, kept[0], gt, pred, found)


def _annotations_matched(
    gt: ColumnSet, pred: ColumnSet, request: EvalRequest
) -> tuple[AnnotationSet, AnnotationSet]:
    """The annotations as matched, for the error analysis and the HTML report: the names
    folded when the run folds them, the predictions prepared."""
    from vocmatch.evaluation.scoring import fold_names
    from vocmatch.run.prepared_inputs import prepared_columns

    gt_set, pred_set = gt.to_annotations(), prepared_columns(pred, request).to_annotations()
    if request.fold_case:
        gt_set, pred_set = fold_names(gt_set), fold_names(pred_set)
    return gt_set, pred_set


def _scored_in_parts(
    request: EvalRequest, thresholds: ScoreThresholds, progress: Progress | None
) -> _Scored | None:
    """The run read and matched in parts by worker processes (:mod:`vocmatch.run.in_parts`),
    or None when it is read here."""
    from vocmatch.run.in_parts import evaluated_in_parts, runs_in_parts

    if not runs_in_parts(request):
        return None
    check_class_tables(request)
    check_pred_path(request, request.pred)
    found = evaluated_in_parts(request, progress.files if progress is not None else None)
    if found is None:
        return None
    if progress is not None:
        progress.stages("done", 1, 1)
    hints = input_warnings(request, found.evaluation, found.scores)
    evaluation = _with_threshold_note(found.evaluation, thresholds, request)
    return _Scored(evaluation, found.records, warnings=hints)


def _scored_with_cache(
    request: EvalRequest, thresholds: ScoreThresholds, progress: Progress | None
) -> _Scored:
    """The run read and matched where its cache does not hold the images' records
    (:mod:`vocmatch.run.cached`)."""
    from vocmatch.run.cached import evaluated_with_cache

    check_class_tables(request)
    check_pred_path(request, request.pred)
    cached = evaluated_with_cache(request, progress.files if progress is not None else None)
    if progress is not None:
        progress.stages("done", 1, 1)
    found = cached.found
    hints = input_warnings(request, found.evaluation, found.scores)
    evaluation = _with_threshold_note(found.evaluation, thresholds, request)
    return _Scored(evaluation, found.records, warnings=(*cached.warnings, *hints))


def _with_threshold_note(
    evaluation: Evaluation, thresholds: ScoreThresholds, request: EvalRequest
) -> Evaluation:
    """The evaluation with the note of its score thresholds, refused when one names a class
    the evaluation does not know."""
    if thresholds:
        _refuse_unknown_classes(thresholds, evaluation, request)
        evaluation = replace(evaluation, notes=(*evaluation.notes, thresholds.note()))
    return evaluation


def _refuse_unknown_classes(
    thresholds: ScoreThresholds, evaluation: Evaluation, request: EvalRequest
) -> None:
    """A threshold of a class in neither the ground truth nor the predictions is nearly
    always a typo, or the file of another data set."""
    known = sorted(c.name for c in evaluation.classes)
    unknown = [name for name, _ in thresholds.per_class if name not in known]
    if not unknown:
        return
    import difflib

    name = unknown[0]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    given = request.score_thresholds
    where = f"{os.fspath(given)}: " if isinstance(given, (str, os.PathLike)) else ""
    written = _class_thresholds(request)
    if request.folds_case() and written is not None:
        # Named as the user wrote it, not lower-cased.
        name = written.spellings().get(name, name)
    raise InputError(
        f"{where}a threshold for class {name!r}, which is in neither the ground "
        f"truth nor the predictions{hint}"
    )


#: Names defined in their own modules, imported from there when first asked for here (PEP
#: 562): an evaluation of boxes builds no record of a comparison, of the suspects finder or
#: of label sets.
_ELSEWHERE = {
    "DiffReport": "vocmatch.run.compare",
    "DiffRequest": "vocmatch.run.compare",
    "compare": "vocmatch.run.compare",
    "SuspectsFound": "vocmatch.run.find_suspects",
    "SuspectsRequest": "vocmatch.run.find_suspects",
    "find_suspects": "vocmatch.run.find_suspects",
    "LabelsRequest": "vocmatch.run.evaluate_labels",
    "evaluate_labels": "vocmatch.run.evaluate_labels",
    "MergedStates": "vocmatch.run.shard_states",
    "ShardState": "vocmatch.run.shard_states",
    "evaluator_for": "vocmatch.run.shard_states",
    "read_states": "vocmatch.run.shard_states",
    "shard_state": "vocmatch.run.shard_states",
}


def __getattr__(name: str) -> Any:
    """Import a name of :data:`_ELSEWHERE` from its module on first use (PEP 562)."""
    return lazy_attribute(__name__, _ELSEWHERE, name)

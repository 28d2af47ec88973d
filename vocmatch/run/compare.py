"""Comparing two runs on one ground truth: what ``vocmatch diff`` does between reading its
options and rendering, as a library (:func:`compare`, also ``vocmatch.compare``).

Its records live apart from :mod:`vocmatch.run.evaluate` so that an evaluation, which never
compares, does not build them when it starts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from vocmatch.errors import RequestError
from vocmatch.run.evaluate import (
    Inputs,
    PathLike,
    Progress,
    ScoreOptions,
)
from vocmatch.run.read_stage import read_inputs

if TYPE_CHECKING:
    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.evaluation.scoring import Evaluation
    from vocmatch.evidence.diff import EvaluationDiff
    from vocmatch.evidence.multiple_testing import Correction
    from vocmatch.evidence.paired import PairedBootstrap
    from vocmatch.evidence.regression_gates import RegressionGate, RegressionResult
    from vocmatch.readers.parse import AnnotationSet

__all__ = ["DiffReport", "DiffRequest", "compare"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffRequest(ScoreOptions):
    """Two prediction sets compared on one ground truth: what ``vocmatch diff`` reads.

    Both prediction sets are read the same way (:class:`ReadOptions`) and scored under the
    same conventions (:class:`ScoreOptions`).

    Attributes:
        gt: The ground truth (a folder of XML files, or a VOC folder).
        pred_a: The reference run's predictions.
        pred_b: The candidate run's predictions.
        score_threshold: Count only predictions scored at least this (AP uses every one).
        gates: Regression gates, as :class:`~vocmatch.evidence.diff.RegressionGate` or text
            such as ``map=-0.01``.
        bootstrap: Resamples of the images shared by both runs (None: no bootstrap).
        seed: The bootstrap's seed.
        alpha: With a bootstrap, a gate fails only when its fall is significant at this level.
        correction: With ``alpha``, ``"holm"`` or ``"bh"``: the gates' p-values are adjusted
            for the family of every gate checked (a gate on every class, ``*:ap=-0.01``,
            is one test per class); see :mod:`vocmatch.evidence.multiple_testing`.

    Example:
        >>> request = DiffRequest(gt="gt", pred_a="a", pred_b="b", gates=["map=-0.01"])
        >>> request.conventions().protocol, request.pred_format
        ('default', 'voc')
    """

    gt: PathLike
    pred_a: PathLike
    pred_b: PathLike
    score_threshold: float | None = None
    gates: Sequence[RegressionGate | str] = ()
    bootstrap: int | None = None
    seed: int = 0
    alpha: float | None = None
    correction: Correction | None = None


@dataclass(frozen=True, slots=True)
class DiffReport:
    """What :func:`compare` found.

    Attributes:
        diff: The change overall, per class and per image, worst regression first.
        results: Every regression gate checked, in the order given.
        evidence: The paired bootstrap, when asked for.
        skipped: Files that could not be read in either run, each once.
        notes: Warnings on the verdicts: resamples too few for the corrected level.

    Example:
        >>> import vocmatch
        >>> found = vocmatch.compare(
        ...     "fixtures/diff/gt", "fixtures/diff/pred_a", "fixtures/diff/pred_b",
        ...     gates=["map=0"],
        ... )
        >>> found.passed, str(found.results[0]).split(" (")[0]
        (False, 'map 0.8333 -> 0.7500')
    """

    diff: EvaluationDiff
    results: tuple[RegressionResult, ...]
    evidence: PairedBootstrap | None = None
    skipped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """Every regression gate passed."""
        return all(r.passed for r in self.results)


def compare(
    request: DiffRequest | PathLike,
    pred_a: PathLike | None = None,
    pred_b: PathLike | None = None,
    *,
    progress: Progress | None = None,
    **options: Any,
) -> DiffReport:
    """Evaluate two runs on the same ground truth and compare them, image by image.

    Args:
        request: The request, or the ground truth's path.
        pred_a: The reference run's predictions, when ``request`` is a path.
        pred_b: The candidate run's predictions, when ``request`` is a path.
        progress: Told how far the reading and the matching are.
        **options: The fields of :class:`DiffRequest`, when ``request`` is a path.

    Returns:
        The diff, its gates and the paired bootstrap if asked for.

    Raises:
        RequestError: A field holds a value that cannot be used (its ``field`` says which).
        InputError: An input cannot be read, or nothing pairs.

    Example:
        >>> import vocmatch
        >>> found = vocmatch.compare("fixtures/demo/gt", "fixtures/demo/pred", "fixtures/demo/pred")
        >>> found.diff.summary.map.delta, found.passed
        (0.0, True)
    """
    if not isinstance(request, DiffRequest):
        if pred_a is None or pred_b is None:
            raise TypeError("compare() needs both runs' paths after the ground truth's")
        request = DiffRequest(gt=request, pred_a=pred_a, pred_b=pred_b, **options)
    elif pred_a is not None or pred_b is not None or options:
        raise TypeError("compare() takes a request or paths and keywords, not both")
    from vocmatch.evaluation.thresholds import ScoreThresholds
    from vocmatch.evidence.diff import evaluation_diff
    from vocmatch.evidence.regression_gates import (
        check_regressions,
        correction_lines,
        parse_regression_gate,
    )

    try:
        gates = [parse_regression_gate(g) if isinstance(g, str) else g for g in request.gates]
    except ValueError as error:
        raise RequestError("gates", str(error)) from None
    if request.alpha is not None and request.bootstrap is None:
        raise RequestError("alpha", "tests the paired bootstrap: ask for resamples too")
    if request.correction is not None and request.alpha is None:
        raise RequestError(
            "correction", "adjusts the significance of many gates: give a significance level too"
        )
    conventions = request.conventions()
    thresholds = ScoreThresholds.of(request.score_threshold, {}) or None
    a = _run(request, request.pred_a, progress)
    b = _run(request, request.pred_b, progress)
    evidence = None
    if request.bootstrap is not None:
        from vocmatch.evidence.paired import paired_bootstrap
        from vocmatch.evidence.resampling import resampler

        evidence = paired_bootstrap(
            a.evaluation, resampler(a.evaluation, a.records, conventions, thresholds),
            b.evaluation, resampler(b.evaluation, b.records, conventions, thresholds),
            request.bootstrap, request.seed, jobs=request.workers(),
        )  # fmt: skip
    names = (os.fspath(request.pred_a), os.fspath(request.pred_b))
    diff = evaluation_diff(a.evaluation, b.evaluation, a.pred, b.pred, *names)
    results = check_regressions(
        diff, gates, evidence, request.alpha, fold_case=request.folds_case(),
        correction=request.correction,
    )  # fmt: skip
    skipped = {str(s): None for s in (*a.evaluation.skipped, *b.evaluation.skipped)}
    notes = correction_lines(results, request.bootstrap)[1:]
    return DiffReport(diff, results, evidence, tuple(skipped), notes)


@dataclass(frozen=True, slots=True)
class _Run:
    """One run of a comparison: its evaluation, its match records, its predictions."""

    evaluation: Evaluation
    records: MatchRecords
    pred: AnnotationSet


def _run(request: DiffRequest, pred: PathLike, progress: Progress | None) -> _Run:
    """One run of a comparison, evaluated with every match and its predictions box by box."""
    from vocmatch.evaluation.engine import evaluate_columns
    from vocmatch.evaluation.scoring import fold_names
    from vocmatch.evaluation.thresholds import ScoreThresholds

    thresholds = ScoreThresholds.of(request.score_threshold, {})
    gt_columns, pred_columns = read_inputs(
        Inputs(request.gt, pred, request), progress.files if progress is not None else None
    )
    kept: list[MatchRecords] = []
    evaluation = evaluate_columns(
        gt_columns,
        pred_columns,
        request.conventions(),
        fold_case=request.fold_case,
        progress=progress.stages if progress is not None else None,
        score_thresholds=thresholds or None,
        kept=kept.append,  # the paired bootstrap reads the match records
    )
    if thresholds:
        evaluation = replace(evaluation, notes=(*evaluation.notes, thresholds.note()))
    predictions = pred_columns.to_annotations()
    if request.fold_case:
        # The image-by-image comparison sees the names that were matched.
        predictions = fold_names(predictions)
    return _Run(evaluation, kept[0], predictions)

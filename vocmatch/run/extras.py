"""What a report adds to its evaluation, read from its match records: bootstrap intervals,
slices, calibration, counts and the score thresholds holding a target.

One function (:func:`evidence_of`) computes them for a run (:func:`vocmatch.evaluate`) and
for saved states merged (:meth:`vocmatch.run.shard_states.MergedStates.report`), so that a
merge gives one run's numbers by construction. :func:`operating_thresholds` writes the
thresholds file of a report.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from vocmatch.errors import RequestError
from vocmatch.evidence.run_report import EvalReport, Evidence

if TYPE_CHECKING:
    from vocmatch.core.protocol import Conventions
    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.evaluation.scoring import Evaluation
    from vocmatch.evaluation.thresholds import ScoreThresholds
    from vocmatch.evidence.slices import SliceSpec
    from vocmatch.evidence.target_thresholds import Target, TargetMetric

__all__ = ["Extras", "evidence_of", "operating_thresholds", "target_of"]


@dataclass(frozen=True, slots=True)
class Extras:
    """The extras a report asks for.

    Attributes:
        bootstrap: Resamples of the images for intervals (None: none).
        seed: The resamples' seed.
        slices: Slices to evaluate (the records must hold their matchings).
        calibration_bins: Score bins of each class's calibration (None: none).
        reliability: Compute the calibration the HTML report draws (10 bins by default).
        count: The per-image count errors.
        target: The target the score thresholds must hold (None: none).
    """

    bootstrap: int | None = None
    seed: int = 0
    slices: tuple[SliceSpec, ...] = ()
    calibration_bins: int | None = None
    reliability: bool = False
    count: bool = False
    target: Target | None = None


def evidence_of(
    evaluation: Evaluation,
    records: MatchRecords | None,
    conventions: Conventions,
    thresholds: ScoreThresholds | None,
    extras: Extras,
) -> Evidence:
    """The extras asked for, from the evaluation's match records; the HTML report's
    reliability plot uses the calibration's bins, or 10.

    Raises:
        RequestError: An extra that reads match records is asked of an evaluation without
            them (no image was evaluated), or slices of records that hold none: the field
            names the extra.
    """

    def needed(field: str) -> MatchRecords:
        if records is None:
            raise RequestError(field, "no image was evaluated")
        return records

    found = Evidence()
    if extras.bootstrap is not None:
        from vocmatch.evidence.bootstrap import bootstrap
        from vocmatch.evidence.resampling import resampler

        sampler = resampler(evaluation, needed("bootstrap"), conventions, thresholds)
        found = replace(
            found, bootstrap=bootstrap(evaluation, sampler, extras.bootstrap, extras.seed)
        )
    if extras.slices:
        from vocmatch.evidence.slices import slice_evaluation

        sliced = needed("slices")
        if sliced.slices is None:
            raise RequestError("slices", "no image was evaluated")
        found = replace(found, slices=slice_evaluation(evaluation, sliced, extras.slices))
    if extras.target is not None:
        from vocmatch.evidence.target_thresholds import target_thresholds

        target = extras.target
        kept = needed(f"target_{target.metric}")
        found = replace(found, targets=target_thresholds(kept, conventions, target))
    if extras.count:
        from vocmatch.evidence.counting import counting

        counted = counting(
            needed("count"), conventions, thresholds, resamples=extras.bootstrap, seed=extras.seed
        )
        found = replace(found, counting=counted)
    bins = extras.calibration_bins
    if records is not None and (bins is not None or extras.reliability):
        from vocmatch.evidence.calibration import DEFAULT_BINS, calibration

        reliability = calibration(records, conventions, bins or DEFAULT_BINS)
        found = replace(
            found, calibration=reliability if bins is not None else None, reliability=reliability
        )
    return found


def target_of(
    precision: float | None,
    recall: float | None,
    confidence: float,
    resamples: int | None,
    seed: int,
) -> Target | None:
    """The target of ``target_precision`` or ``target_recall``, resampled ``resamples``
    times (1,000 when None), or None when neither is given.

    Raises:
        RequestError: Both are given (field ``target_recall``).
    """
    if precision is not None and recall is not None:
        raise RequestError(
            "target_recall", "one target at a time: give a target precision or a target recall"
        )
    if precision is None and recall is None:
        return None
    from vocmatch.evidence.resampling import DEFAULT_RESAMPLES
    from vocmatch.evidence.target_thresholds import Target

    metric: TargetMetric = "precision" if precision is not None else "recall"
    value = precision if precision is not None else recall
    return Target(metric, float(value or 0.0), confidence, resamples or DEFAULT_RESAMPLES, seed)


def operating_thresholds(report: EvalReport) -> str:
    """Each class's threshold as ``class,threshold`` CSV lines, to read back as
    ``score_thresholds``: the threshold holding the report's target when it has one (a
    ``#`` line names each class without one, and why: applying the file keeps every
    prediction of such a class), else the operating point maximising the report's F-beta.

    Example:
        >>> import vocmatch
        >>> import warnings
        >>> from vocmatch.errors import MissingPredictionWarning
        >>> warnings.simplefilter("ignore", MissingPredictionWarning)  # street_05: no predictions
        >>> text = operating_thresholds(vocmatch.evaluate("fixtures/demo/gt", "fixtures/demo/pred"))
        >>> text.splitlines()[0]
        'class,threshold'
    """
    from vocmatch.evaluation.threshold_files import thresholds_csv
    from vocmatch.evaluation.thresholds import operating_point

    targets = report.evidence.targets
    if targets is not None:
        notes = [
            f"thresholds holding {targets.target.describe()} over "
            f"{targets.target.resamples:,} resamples (seed {targets.target.seed})",
            *(
                f"{c.name!r}: no threshold ({c.reason}); every prediction of it counts"
                for c in targets.classes
                if c.threshold is None
            ),
        ]
        return thresholds_csv([(c.name, c.threshold) for c in targets.classes], notes)
    classes = report.evaluation.classes
    points = [(c.name, operating_point(c.curve, c.gt, report.beta)) for c in classes]
    return thresholds_csv([(name, None if p is None else p.threshold) for name, p in points])

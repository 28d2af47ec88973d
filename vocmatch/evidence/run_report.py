"""One result for one evaluation run: the evaluation and everything asked for beside it.

:class:`EvalReport` is what :func:`vocmatch.evaluate` returns and what every renderer of
:mod:`vocmatch.render.outputs` takes. Its parts are imported only for type checking, so that
holding a report loads none of the analyses that were not run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vocmatch.core.model import SkippedFile
    from vocmatch.evaluation.scoring import Evaluation
    from vocmatch.evaluation.shards.shard_origin import ShardCheck
    from vocmatch.evaluation.thresholds import ScoreThresholds
    from vocmatch.evidence.analysis import ErrorAnalysis
    from vocmatch.evidence.bootstrap import Bootstrap
    from vocmatch.evidence.calibration import Calibration
    from vocmatch.evidence.counting import Counting
    from vocmatch.evidence.gates import GateReport
    from vocmatch.evidence.slices import Slice
    from vocmatch.evidence.target_thresholds import TargetThresholds
    from vocmatch.readers.parse import AnnotationSet

__all__ = ["EvalReport", "Evidence"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the bootstrap, the slices and the calibration added to an evaluation.

    Attributes:
        bootstrap: Intervals from resampling the images, when asked for.
        slices: AP and counts per value of each slice asked for.
        calibration: Each class's calibration, when bins were asked for.
        reliability: The calibration the HTML report draws (always computed for it).
        counting: The per-image count errors and presence of each class, when asked for.
        targets: Each class's score threshold holding a target precision or recall, when
            one is asked for.

    >>> Evidence().slices
    ()
    """

    bootstrap: Bootstrap | None = None
    slices: tuple[Slice, ...] = ()
    calibration: Calibration | None = None
    reliability: Calibration | None = None
    counting: Counting | None = None
    targets: TargetThresholds | None = None


@dataclass(frozen=True, slots=True)
class EvalReport:
    """Everything one evaluation run found, for any output.

    Attributes:
        evaluation: The numbers: summary, classes, images, skipped files, notes.
        gates: Every gate and per-image limit checked (none when none were asked for).
        analysis: Error types, confusion and tightness, when asked for.
        evidence: Bootstrap intervals, slices and calibration, when asked for.
        thresholds: The score thresholds in force, or None when every prediction counts.
        beta: The F-beta each class's operating point maximises.
        gt: The ground truth box by box, kept when an output draws boxes (else None).
        pred: The predictions box by box, kept with ``gt``.
        merge: For saved states merged (:func:`vocmatch.read_states`) that are not known
            to be every shard of one run (a partial merge, states recording no shard):
            what the check found. None for a run, and for a complete merge.

    Example:
        >>> import vocmatch
        >>> import warnings
        >>> from vocmatch.errors import MissingPredictionWarning
        >>> warnings.simplefilter("ignore", MissingPredictionWarning)  # street_05: no predictions
        >>> report = vocmatch.evaluate("fixtures/demo/gt", "fixtures/demo/pred")
        >>> report.passed, len(report.skipped), report.missing_pred
        (True, 0, ('street_05',))
    """

    evaluation: Evaluation
    gates: GateReport
    analysis: ErrorAnalysis | None = None
    evidence: Evidence = Evidence()
    thresholds: ScoreThresholds | None = None
    beta: float = 1.0
    gt: AnnotationSet | None = None
    pred: AnnotationSet | None = None
    merge: ShardCheck | None = None

    @property
    def passed(self) -> bool:
        """Every gate passed and every image is within the per-image limits."""
        return self.gates.passed

    @property
    def skipped(self) -> tuple[SkippedFile, ...]:
        """Files that could not be read, each with its error."""
        return self.evaluation.skipped

    @property
    def missing_pred(self) -> tuple[str, ...]:
        """Keys of ground-truth images without a prediction file (their objects are missed)."""
        return self.evaluation.missing_pred

    @property
    def orphan_pred(self) -> tuple[str, ...]:
        """Prediction files without a ground-truth file (not evaluated)."""
        return self.evaluation.orphan_pred

    @property
    def notes(self) -> tuple[str, ...]:
        """Things to know about the numbers (conventions, folded names, thresholds)."""
        return self.evaluation.notes

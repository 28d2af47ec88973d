"""Label-error suspects of a ground-truth set: what ``vocmatch suspects`` does between reading
its options and rendering, as a library (:func:`find_suspects`, also
``vocmatch.find_suspects``).

Its records live apart from :mod:`vocmatch.run.evaluate` so that an evaluation, which looks for
no suspects, does not build them when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from vocmatch.errors import RequestError
from vocmatch.run.evaluate import Inputs, PathLike, Progress, ReadOptions
from vocmatch.run.read_stage import read_inputs

if TYPE_CHECKING:
    from vocmatch.evidence.suspects import SuspectOptions, SuspectReport
    from vocmatch.readers.parse import AnnotationSet

__all__ = ["SuspectsFound", "SuspectsRequest", "find_suspects"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SuspectsRequest(ReadOptions):
    """Ground-truth objects that look mislabelled or missing: what ``vocmatch suspects`` reads.

    Attributes:
        gt: The ground truth (a folder of XML files, or a VOC folder).
        pred: The predictions, in any format :class:`ReadOptions` reads.
        confidence: A prediction at or above this score is confident.
        background_iou: At most this IoU with every object, a prediction overlaps nothing.
        match_iou: At or above this IoU a prediction is on an object.
        duplicate_iou: At or above this IoU two objects of one class are one object twice.

    Example:
        >>> request = SuspectsRequest(gt="gt", pred="results.json", pred_format="coco")
        >>> request.options().confidence
        0.5
    """

    gt: PathLike
    pred: PathLike
    confidence: float = 0.5
    background_iou: float = 0.1
    match_iou: float = 0.5
    duplicate_iou: float = 0.9

    def options(self) -> SuspectOptions:
        """The thresholds as the suspects finder takes them.

        Raises:
            ValueError: They do not go together (the background IoU above the match IoU).
        """
        from vocmatch.evidence.suspects import SuspectOptions

        return SuspectOptions(
            self.confidence, self.background_iou, self.match_iou, self.duplicate_iou
        )


@dataclass(frozen=True, slots=True)
class SuspectsFound:
    """What :func:`find_suspects` found, and the ground truth it was found in (to write
    annotated copies of its files).

    Attributes:
        report: The suspects, most confident first.
        gt: The ground truth, box by box.
        skipped: Files that could not be read.
    """

    report: SuspectReport
    gt: AnnotationSet
    skipped: tuple[str, ...] = ()


def find_suspects(request: SuspectsRequest, *, progress: Progress | None = None) -> SuspectsFound:
    """Every label-error suspect of a ground-truth set, from confident predictions.

    Raises:
        RequestError: A field holds a value that cannot be used (its ``field`` says which).
        InputError: An input cannot be read, or nothing pairs.

    Example:
        >>> found = find_suspects(SuspectsRequest(gt="fixtures/demo/gt", pred="fixtures/demo/pred"))
        >>> len(found.gt.annotations), found.skipped
        (6, ())
    """
    from vocmatch.evidence import suspects

    try:
        options = request.options()
    except ValueError as error:
        raise RequestError("thresholds", str(error)) from None
    gt_columns, pred_columns = read_inputs(
        Inputs(request.gt, request.pred, request), progress.files if progress is not None else None
    )
    gt, pred = gt_columns.to_annotations(), pred_columns.to_annotations()
    del gt_columns, pred_columns
    report = suspects.find_suspects(gt, pred, options)
    return SuspectsFound(report, gt, tuple(str(s) for s in (*gt.skipped, *pred.skipped)))

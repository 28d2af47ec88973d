"""What a run's inputs suggest was meant otherwise, said as warnings the library raises and
the command line words: ground-truth images without a prediction file, prediction-only
classes that a built-in class map would rename to ground-truth classes, and a ground truth
and predictions given in the wrong order."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vocmatch.errors import ClassMapWarning, SwappedInputsWarning, VocmatchWarning

if TYPE_CHECKING:
    from vocmatch.evaluation.score_counts import ScoreCounts
    from vocmatch.evaluation.scoring import Evaluation
    from vocmatch.run.evaluate import EvalRequest

__all__ = ["SHOWN_MISSING", "input_warnings", "warn_missing_predictions"]


#: Images a missing-prediction warning names before counting the rest.
SHOWN_MISSING = 3


def warn_missing_predictions(missing: Sequence[str]) -> None:
    """Warn (:class:`~vocmatch.errors.MissingPredictionWarning`) that ground-truth images
    have no prediction file, as the command line's note does: one warning for the run,
    naming the first few.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_missing_predictions(["street_03"])
    >>> print(caught[0].message)
    no prediction file for 'street_03': its objects count as missed (missing_pred lists it)
    """
    if not missing:
        return
    import warnings

    from vocmatch.errors import MissingPredictionWarning

    if len(missing) == 1:
        text = f"no prediction file for {missing[0]!r}: its objects count as missed"
        text += " (missing_pred lists it)"
    else:
        shown = ", ".join(repr(key) for key in missing[:SHOWN_MISSING])
        more = ", ..." if len(missing) > SHOWN_MISSING else ""
        text = (
            f"{len(missing):,} images have no prediction file ({shown}{more}): their objects "
            "count as missed (missing_pred lists them all)"
        )
    warnings.warn(MissingPredictionWarning(text), stacklevel=3)


def input_warnings(
    request: EvalRequest,
    evaluation: Evaluation,
    scores: ScoreCounts | None = None,
) -> tuple[VocmatchWarning, ...]:
    """What the inputs suggest was meant otherwise: prediction-only classes that a built-in
    class map gives ground-truth names (when no map was given), and, from how many boxes of
    each side read have a score, a ground truth and predictions given in the wrong order."""
    found: list[VocmatchWarning] = []
    choice = request.class_choice
    if request.class_map is None and (
        choice is None or (not choice.class_map and not choice.agnostic)
    ):
        from vocmatch.evaluation.class_map import builtin_map_hint

        hint = builtin_map_hint(
            [c.name for c in evaluation.classes if c.in_map],
            [c.name for c in evaluation.classes if not c.in_map],
        )
        if hint is not None:
            found.append(ClassMapWarning(hint.message()))
    if scores is not None and scores.swapped():
        gt, pred = os.fspath(request.gt), os.fspath(request.pred)
        found.append(
            SwappedInputsWarning(
                f"every object of the ground truth {gt} has a score and no prediction of "
                f"{pred} has one: were the ground truth and the predictions given in the "
                "wrong order?"
            )
        )
    return tuple(found)

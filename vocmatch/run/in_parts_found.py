"""What a run in parts found (:class:`EvaluatedInParts`): its evaluation, and the records and
counts its extras and warnings read; built by :func:`vocmatch.run.in_parts.evaluated_in_parts`
and by the cache's reading (:mod:`vocmatch.run.cached`).

A module of its own, imported when a run goes in parts: a run of few files, read here, does
not build its record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.evaluation.result import Evaluation
    from vocmatch.evaluation.score_counts import ScoreCounts

__all__ = ["EvaluatedInParts"]


@dataclass(frozen=True, slots=True)
class EvaluatedInParts:
    """The evaluation of a run in parts and what its extras and warnings read.

    Attributes:
        evaluation: The evaluation.
        records: Every part's match records, joined (the extras read them).
        scores: How many boxes of each side have a score (the swapped-inputs warning).
    """

    evaluation: Evaluation
    records: MatchRecords
    scores: ScoreCounts

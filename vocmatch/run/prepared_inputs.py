"""The predictions as a run matched them, for what reads them box by box after the
evaluation (the error analysis, the HTML report, a comparison image by image): prepared
(:mod:`vocmatch.core.preparation`) as the matching prepared them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from vocmatch.core.preparation import Preparation
    from vocmatch.readers.scan import ColumnSet

__all__ = ["prepared_columns"]


class _Prepares(Protocol):
    """A request that may prepare its predictions."""

    @property
    def fold_case(self) -> bool: ...

    def preparation(self) -> Preparation | None: ...


def prepared_columns(pred: ColumnSet, request: _Prepares) -> ColumnSet:
    """The prediction columns with what the request's preparation removes taken out (the
    same columns without one). Under ``fold_case`` the classes are those the matching
    compared (lower-cased), so that NMS class by class removes what it removed there; the
    preparation gives the same predictions again when they were prepared already."""
    preparation = request.preparation()
    if preparation is None:
        return pred
    from vocmatch.evaluation.preparation import prepare_columns
    from vocmatch.evaluation.stages import fold_columns

    return prepare_columns(fold_columns(pred) if request.fold_case else pred, preparation)[0]

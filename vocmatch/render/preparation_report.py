"""What the preparation of the predictions removed, in every report: the steps asked for and
the predictions each removed, per class and in all
(:class:`~vocmatch.evaluation.preparation.Removed`).

Nothing is shown when no preparation was asked for (the evaluation's ``removed`` is None).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vocmatch.core.preparation import PREPARATION_STEPS

if TYPE_CHECKING:
    from vocmatch.evaluation.preparation import Removed

__all__ = ["STEP_TITLES", "preparation_json", "preparation_rows", "preparation_title"]

#: Each step's column title, in the order the steps run.
STEP_TITLES = ("score", "NMS", "per image")


def preparation_json(removed: Removed) -> dict[str, Any]:
    """The JSON report's ``preparation`` object: the steps asked for (``min_score``,
    ``nms``, ``nms_agnostic``, ``max_per_image``, null where not asked), the predictions
    each step removed in all (``removed``, with their ``total``) and per class
    (``classes``: those with something removed)."""
    p = removed.preparation
    totals = removed.by_step()
    return {
        "min_score": p.min_score,
        "nms": p.nms,
        "nms_agnostic": p.nms_agnostic,
        "max_per_image": p.max_per_image,
        "removed": {**totals, "total": sum(totals.values())},
        "classes": {
            name: {**counts, "total": sum(counts.values())}
            for name, counts in removed.per_class().items()
        },
    }


def preparation_title(removed: Removed) -> str:
    """``Preparation (score > 0.001, NMS 0.7 by class, 300 per image): 12 removed``."""
    total = sum(removed.by_step().values())
    return f"Preparation ({removed.preparation.describe()}): {total:,} removed"


def preparation_rows(removed: Removed) -> list[list[str]]:
    """One row per class with something removed (class, each step's count, total), then
    ``all``; a step not asked for shows ``—``."""
    p = removed.preparation
    asked = (p.min_score is not None, p.nms is not None, p.max_per_image is not None)

    def row(name: str, counts: dict[str, int]) -> list[str]:
        cells = [
            f"{counts[step]:,}" if on else "—"
            for step, on in zip(PREPARATION_STEPS, asked, strict=True)
        ]
        return [name, *cells, f"{sum(counts.values()):,}"]

    rows = [row(name, counts) for name, counts in removed.per_class().items()]
    return [*rows, row("all", removed.by_step())]

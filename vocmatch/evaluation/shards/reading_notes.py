"""What the notes of a run's reading are worded from: counts of the files as read, which add
up over the parts or shards of a run read apart, so that the notes of the whole are those
one process reading every file gives.
"""

from __future__ import annotations

from dataclasses import dataclass

from vocmatch.evaluation.class_map import ClassChoice, choice_notes, class_counts
from vocmatch.readers.scan import ColumnSet
from vocmatch.readers.shapes import Geometry, geometry_note, shape_counts

__all__ = ["ReadCounts"]


@dataclass(frozen=True, slots=True)
class ReadCounts:
    """What the notes of the class choice and of the geometry are worded from, of the files
    as read: counts that add up over the parts of a run.

    Attributes:
        gt_classes: Each ground-truth class name and its count of objects, sorted by name.
        pred_classes: The same of the predictions.
        gt_shapes: Ground-truth objects that are a shape with a ``<bndbox>``, and alone.
        pred_shapes: The same of the predictions.
    """

    gt_classes: tuple[tuple[str, int], ...] = ()
    pred_classes: tuple[tuple[str, int], ...] = ()
    gt_shapes: tuple[int, int] = (0, 0)
    pred_shapes: tuple[int, int] = (0, 0)

    @classmethod
    def of(cls, gt: ColumnSet, pred: ColumnSet) -> ReadCounts:
        """The counts of columns as read."""
        return cls(
            tuple(sorted(class_counts(gt).items())),
            tuple(sorted(class_counts(pred).items())),
            shape_counts(gt),
            shape_counts(pred),
        )

    def plus(self, other: ReadCounts) -> ReadCounts:
        """The counts of both parts."""

        def added(
            a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]
        ) -> tuple[tuple[str, int], ...]:
            total = dict(a)
            for name, count in b:
                total[name] = total.get(name, 0) + count
            return tuple(sorted(total.items()))

        return ReadCounts(
            added(self.gt_classes, other.gt_classes),
            added(self.pred_classes, other.pred_classes),
            _pair_sum(self.gt_shapes, other.gt_shapes),
            _pair_sum(self.pred_shapes, other.pred_shapes),
        )

    def notes(
        self, class_choice: ClassChoice | None, fold_case: bool, geometry: Geometry
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The notes one process adds to the ground truth and to the predictions it read
        (the class choice's, then the geometry's), under a run's class choice, case folding
        and geometry.

        Raises:
            InputError: A class chosen is in neither set.
            AnnotationError: With ``fold_case``, two names of the class map fold to one
                and map to different classes.
        """
        gt_notes: tuple[str, ...] = ()
        pred_notes: tuple[str, ...] = ()
        if class_choice:
            gt_notes, pred_notes = choice_notes(
                dict(self.gt_classes), dict(self.pred_classes), class_choice,
                fold_case,
            )  # fmt: skip
        sides = (("ground truth", self.gt_shapes), ("predictions", self.pred_shapes))
        found = [geometry_note(geometry, side, *counts) for side, counts in sides]
        return (
            (*gt_notes, *([found[0]] if found[0] is not None else [])),
            (*pred_notes, *([found[1]] if found[1] is not None else [])),
        )


def _pair_sum(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] + b[0], a[1] + b[1]

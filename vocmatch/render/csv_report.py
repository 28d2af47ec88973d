"""An :class:`~vocmatch.evaluation.scoring.Evaluation` as CSV: one row per image or per
class, sorted by key or name.

Names are data: every file and class name goes through
:func:`~vocmatch.escapes.csv_text` (formula prefixes neutralised).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from vocmatch.core.protocol import sweep_label
from vocmatch.escapes import csv_text

if TYPE_CHECKING:
    # Only for the annotations: a report imports the modules of the parts it writes.
    from vocmatch.evaluation.scoring import Evaluation

__all__ = [
    "to_csv_classes",
    "to_csv_images",
]

_IMAGE_COLUMNS: tuple[str, ...] = (
    "image", "gt_path", "pred_path", "gt", "gt_ignored", "pred", "tp", "fp", "fn", "mean_iou",
)  # fmt: skip
_CLASS_COLUMNS: tuple[str, ...] = (
    "name", "gt", "gt_ignored", "pred", "tp", "fp", "fn", "precision", "recall", "f1", "ap",
    "in_map",
)  # fmt: skip


def _csv_cell(value: str | int | float | bool | None) -> str:
    # Empty for undefined; floats in full (repr round-trips); booleans as in JSON; text
    # (names, paths) escaped, never a formula.
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return csv_text(value)
    return str(value)


def _csv(header: Sequence[str], rows: Iterable[Sequence[str | int | float | bool | None]]) -> str:
    buffer = io.StringIO()
    # "\n" line ends, not the csv module's "\r\n": the files diff and commit cleanly.
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    # An int (most cells: the counts) is handed to the writer as it is, which writes str()
    # of it, as _csv_cell would: a call per count would cost most of a large set's CSV.
    # Only an exact int: a bool is written as in JSON.
    writer.writerows([v if type(v) is int else _csv_cell(v) for v in row] for row in rows)
    return buffer.getvalue()


def to_csv_images(evaluation: Evaluation) -> str:
    """One CSV row per image, sorted by key.

    Columns: ``image`` (the key), ``gt_path``, ``pred_path`` (empty without a prediction
    file), ``gt``, ``gt_ignored``, ``pred``, ``tp``, ``fp``, ``fn``, ``mean_iou`` (empty
    without a TP), then ``tp@0.50``, ``fp@0.50``, ``fn@0.50`` and so on for each sweep
    threshold. Floats are written in full; lines end in ``\\n``.
    """
    sweep = [
        f"{n}@{sweep_label(t)}"
        for t in evaluation.conventions.sweep_thresholds
        for n in ("tp", "fp", "fn")
    ]
    rows = []
    for i in evaluation.images:
        row: list[str | int | float | None] = [
            i.key, i.gt_path, i.pred_path, i.gt, i.gt_ignored, i.pred, i.tp, i.fp, i.fn,
            i.mean_iou,
        ]  # fmt: skip
        for s in i.sweep:
            row.extend((s.tp, s.fp, s.fn))
        rows.append(row)
    return _csv((*_IMAGE_COLUMNS, *sweep), rows)


def to_csv_classes(evaluation: Evaluation) -> str:
    """One CSV row per class, sorted by name.

    Columns as the JSON ``classes`` entries without the curve: ``name``, ``gt``,
    ``gt_ignored``, ``pred``, ``tp``, ``fp``, ``fn``, ``precision``, ``recall``, ``f1``,
    ``ap`` (empty when undefined) and ``in_map`` (``true`` or ``false``).
    """
    rows = [
        [c.name, c.gt, c.gt_ignored, c.pred, c.tp, c.fp, c.fn, c.precision, c.recall, c.f1,
         c.ap, c.in_map]
        for c in evaluation.classes
    ]  # fmt: skip
    return _csv(_CLASS_COLUMNS, rows)

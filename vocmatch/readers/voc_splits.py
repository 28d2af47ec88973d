"""A split of the images: the image list a split names (:func:`read_split`, one image id per
line, as ``VOC2007/ImageSets/Main/<split>.txt``) and the ground truth and predictions of the
images it lists (:func:`only_split`); where the list lies is
:func:`vocmatch.readers.voc_layout.split_file`.

A module of its own, imported when a split is asked for: a run of every image does not build
its record.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from vocmatch.core.model import SkippedFile
from vocmatch.errors import AnnotationError, InputError
from vocmatch.limits import MAX_SPLIT_BYTES
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.regular_files import read_bytes
from vocmatch.readers.scan import ColumnSet, columns_from_annotations

__all__ = ["Split", "only_split", "read_split"]


@dataclass(frozen=True, slots=True)
class Split:
    """The images a split lists.

    Attributes:
        path: The list file.
        ids: Image ids in file order, each once.
        lines: The line of each id.
    """

    path: str
    ids: tuple[str, ...]
    lines: tuple[int, ...]


def read_split(path: str | os.PathLike[str]) -> Split:
    """Read an image list: one image id per line (the first word; the per-class lists'
    ``000005 -1`` works too); blank lines are skipped, a repeated id counts once.

    Raises:
        InputError: The file cannot be read, or lists no image.
        AnnotationError: The file is not UTF-8 text.
    """
    name = os.fspath(path)
    data = read_bytes(name, MAX_SPLIT_BYTES)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise AnnotationError(
            name, "not UTF-8 text", data[: error.start].count(b"\n") + 1
        ) from None
    ids: list[str] = []
    lines: list[int] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words or words[0] in seen:
            continue
        seen.add(words[0])
        ids.append(words[0])
        lines.append(number)
    if not ids:
        raise InputError(f"{name}: lists no image")
    return Split(name, tuple(ids), tuple(lines))


def only_split(gt: ColumnSet, pred: ColumnSet, split: Split) -> tuple[ColumnSet, ColumnSet, int]:
    """The ground truth and predictions of the images a split lists.

    A listed image without an annotation file is an error of the list (``path:line``), kept
    in the ground truth's skipped files; a prediction for an image outside the split is not
    evaluated (and not an orphan: other splits' predictions are expected there).

    Returns:
        The ground truth, the predictions, and the number of prediction files left out.
    """
    wanted = set(split.ids)
    gt_set, pred_set = gt.to_annotations(), pred.to_annotations()
    present = {a.key for a in gt_set.annotations} | {s.key for s in gt.skipped if s.key}
    missing = [
        SkippedFile(
            split.path,
            f"no annotation file for {image!r} in {gt.root}",
            line,
            key=image,
        )
        for image, line in zip(split.ids, split.lines, strict=True)
        if image not in present
    ]
    kept_gt = _only(gt_set, wanted, missing)
    kept_pred = _only(pred_set, wanted, [])
    left_out = len(pred_set.annotations) - len(kept_pred.annotations)
    return columns_from_annotations(kept_gt), columns_from_annotations(kept_pred), left_out


def _only(annotations: AnnotationSet, wanted: set[str], extra: list[SkippedFile]) -> AnnotationSet:
    return replace(
        annotations,
        annotations=tuple(a for a in annotations.annotations if a.key in wanted),
        skipped=tuple(
            sorted(
                [s for s in annotations.skipped if s.key is None or s.key in wanted] + extra,
                key=lambda s: (s.path, s.line or 0),
            )
        ),
    )

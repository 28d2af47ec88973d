"""PASCAL VOC's own folder layout: ``VOC2007/Annotations/*.xml`` and the image lists of
``VOC2007/ImageSets/Main/<split>.txt`` that name a split (``train``, ``val``, ``test``).

``vocmatch VOCdevkit/VOC2007 PRED`` reads the ground truth from ``Annotations/``; ``--split``
restricts it to the images a list names, as the devkit evaluates one split.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from vocmatch.core.model import SkippedFile
from vocmatch.errors import AnnotationError, InputError, RequestError
from vocmatch.limits import MAX_SPLIT_BYTES
from vocmatch.readers.parse import AnnotationSet, read_bytes
from vocmatch.readers.scan import ColumnSet, columns_from_annotations

__all__ = ["Split", "annotation_folder", "only_split", "read_split", "split_file"]


def annotation_folder(gt_dir: str | os.PathLike[str]) -> tuple[str, str | None]:
    """The folder holding the ground truth, and the VOC root when ``gt_dir`` is one.

    Args:
        gt_dir: A folder of XML files, or a VOC year folder holding ``Annotations/``.

    Returns:
        ``(annotations, root)``: ``gt_dir/Annotations`` and ``gt_dir`` for a VOC year
        folder; else ``gt_dir`` itself and, when it is an ``Annotations`` folder, its parent.
    """
    top = os.fspath(gt_dir)
    inner = os.path.join(top, "Annotations")
    if os.path.isdir(inner):
        return inner, top
    if os.path.basename(os.path.normpath(top)) == "Annotations":
        return top, os.path.dirname(os.path.normpath(top)) or "."
    return top, None


def split_file(split: str, root: str | None) -> str:
    """The image list a split names: a file, or ``ImageSets/Main/<split>.txt`` of the VOC
    root.

    Raises:
        RequestError: Neither exists (field ``split``); the message lists the splits the
            root has.
    """
    if os.path.isfile(split):
        return split
    # A folder is named as one only when the split is no name of the VOC folder's lists
    # (``--split test`` run beside a folder called test is the list test.txt).
    folder = RequestError("split", "it is a folder; give a list file or a split name", split)
    if root is None:
        if os.path.isdir(split):
            raise folder
        raise RequestError(
            "split",
            "no such file, and the ground truth is not a VOC folder "
            "(one holding Annotations/ and ImageSets/Main/)",
            split,
        )
    main = os.path.join(root, "ImageSets", "Main")
    path = os.path.join(main, f"{split}.txt")
    if os.path.isfile(path):
        return path
    if os.path.isdir(split):
        raise folder
    try:
        known = sorted(
            name[:-4]
            for name in os.listdir(main)
            if name.endswith(".txt") and "_" not in name  # not the per-class lists
        )
    except OSError:
        known = []
    listed = f" (the splits there: {', '.join(known)})" if known else ""
    raise RequestError("split", f"no {path}{listed}", split)


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

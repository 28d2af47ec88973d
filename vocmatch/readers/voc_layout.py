"""PASCAL VOC's own folder layout: ``VOC2007/Annotations/*.xml`` and the image lists of
``VOC2007/ImageSets/Main/<split>.txt`` that name a split (``train``, ``val``, ``test``).

``vocmatch VOCdevkit/VOC2007 PRED`` reads the ground truth from ``Annotations/``; ``--split``
restricts it to the images a list names, as the devkit evaluates one split (the list read and
applied by :mod:`vocmatch.readers.voc_splits`).
"""

from __future__ import annotations

import os

from vocmatch.errors import RequestError

__all__ = ["annotation_folder", "split_file"]


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

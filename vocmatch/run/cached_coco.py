"""The predictions of a COCO results file in a run with a cache (:mod:`vocmatch.run.cached`).

The results file holds every image's predictions: it is read whole on every run, against the
ground truth's keys, as a run without a cache reads it. Each image's predictions as read are
then keyed by their content (:func:`image_digests`: the image's key and path, and each of
its boxes' class name, corners, score and flags, in the order the file gives them; and
whether one of its records could not be read), and a chunk's key holds those of its images
beside its ground-truth files' digests. So an edit of one image's records changes the key of
its chunk alone, and records reordered across images change no key; records of one image
reordered change its key (their order breaks ties of equal scores, as in a run without a
cache).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vocmatch.core.model import ImageAnnotation
from vocmatch.readers.parse import AnnotationSet, DirectoryListing
from vocmatch.readers.scan import ColumnSet, columns_from_annotations

__all__ = ["CocoPredictions", "image_digests", "read_coco_predictions"]


@dataclass(frozen=True, slots=True)
class CocoPredictions:
    """A results file's predictions as read, and what the chunks of a cached run need.

    Attributes:
        pred: The predictions, one image per key (those the ground truth covers and those
            of images without ground truth), as a run without a cache reads them.
        digests: Per key, the digest of that image's predictions (:func:`image_digests`).
    """

    pred: ColumnSet
    digests: dict[str, bytes]

    def listing(self) -> DirectoryListing:
        """The images as a listing of ``(key, path)`` (where the chunks find their keys)."""
        return DirectoryListing(
            self.pred.root, tuple(zip(self.pred.keys, self.pred.paths, strict=True)), ()
        )

    def key_bytes(self, keys: Sequence[str]) -> bytes:
        """What a chunk's key holds of its images' predictions: each key and its digest."""
        return b"".join(
            key.encode("utf-8", "surrogateescape") + b"\0" + self.digests.get(key, b"")
            for key in keys
        )

    def of_keys(self, keys: Sequence[str]) -> ColumnSet:
        """The predictions of ``keys`` (and the records of theirs that could not be read),
        as columns of their own."""
        wanted = set(keys)
        pred = self.pred
        place = {key: i for i, key in enumerate(pred.keys)}
        starts: list[int] = np.searchsorted(pred.image, np.arange(len(pred.keys) + 1)).tolist()
        images = []
        for key in sorted(k for k in wanted if k in place):
            i = place[key]
            images.append(_image(pred, i, starts[i], starts[i + 1]))
        skipped = tuple(s for s in pred.skipped if s.key in wanted)
        return columns_from_annotations(AnnotationSet(pred.root, tuple(images), skipped, ()))


def _image(pred: ColumnSet, i: int, start: int, end: int) -> ImageAnnotation:
    """Image ``i`` of the columns (rows ``start:end``) as parser records."""
    one = ColumnSet(
        pred.root,
        (pred.keys[i],),
        (pred.paths[i],),
        (pred.sizes[i],),
        (pred.filenames[i],),
        np.zeros(end - start, dtype=np.int32),
        pred.labels[start:end],
        pred.label_names,
        pred.boxes[start:end],
        pred.difficult[start:end],
        pred.truncated[start:end],
        pred.occluded[start:end],
        pred.pose[start:end],
        pred.pose_names,
        pred.scores[start:end],
        (),
        (),
        tuple((row - start, s) for row, s in pred.shapes if start <= row < end),
        tuple((row - start, b) for row, b in pred.bndboxes if start <= row < end),
    )
    return one.to_annotations().annotations[0]


def image_digests(pred: ColumnSet) -> dict[str, bytes]:
    """Per key, the BLAKE2b digest of that image's predictions as read (see the module doc).

    >>> from vocmatch.core.model import Box
    >>> boxes = (Box("cat", 0, 0, 4, 3, score=0.5), Box("dog", 1, 1, 2, 2, score=0.5))
    >>> one = columns_from_annotations(AnnotationSet("r.json", (
    ...     ImageAnnotation("a", "r.json", boxes),), (), ()))
    >>> other = columns_from_annotations(AnnotationSet("r.json", (
    ...     ImageAnnotation("a", "r.json", boxes[::-1]),), (), ()))
    >>> image_digests(one)["a"] == image_digests(other)["a"]
    False
    """
    starts: list[int] = np.searchsorted(pred.image, np.arange(len(pred.keys) + 1)).tolist()
    unreadable = {s.key for s in pred.skipped if s.key is not None}
    names = [n.encode("utf-8", "surrogateescape") for n in pred.label_names]
    labels: list[int] = pred.labels.tolist()
    boxes = np.ascontiguousarray(pred.boxes, dtype=np.float64)
    scores = np.ascontiguousarray(pred.scores, dtype=np.float64)
    flags = np.stack([pred.difficult, pred.truncated, pred.occluded]).T.astype(np.uint8)
    pose = np.ascontiguousarray(pred.pose, dtype=np.int32)
    shaped = dict(pred.shapes)
    given = dict(pred.bndboxes)
    found: dict[str, bytes] = {}
    for i, key in enumerate(pred.keys):
        start, end = starts[i], starts[i + 1]
        hasher = hashlib.blake2b(digest_size=16)
        head = (key, pred.paths[i], repr(pred.sizes[i]), repr(pred.filenames[i]))
        hasher.update("\0".join(head).encode("utf-8", "surrogateescape"))
        hasher.update(b"\0skipped" if key in unreadable else b"\0read")
        hasher.update(b"\0".join(names[k] for k in labels[start:end]) + b"\0")
        hasher.update(boxes[start:end].tobytes())
        hasher.update(scores[start:end].tobytes())
        hasher.update(flags[start:end].tobytes())
        poses = [pred.pose_names[k] if k >= 0 else "" for k in pose[start:end].tolist()]
        hasher.update("\0".join(poses).encode("utf-8", "surrogateescape"))
        extra = [(r - start, shaped.get(r), given.get(r)) for r in range(start, end)]
        if any(s is not None or b is not None for _, s, b in extra):
            hasher.update(repr(extra).encode("utf-8", "surrogateescape"))
        found[key] = hasher.digest()
    return found


def read_coco_predictions(
    path: str,
    gt_root: str,
    gt_files: Sequence[tuple[str, str]],
    coco_gt: str | None,
    max_bytes: int,
) -> CocoPredictions:
    """A COCO results file read against the ground-truth images ``gt_files`` (``(key,
    path)``: those read, as a run without a cache reads it against the ground truth read).

    Raises:
        InputError: As :func:`~vocmatch.readers.pred_formats.read_detections`.
        AnnotationError: As :func:`~vocmatch.readers.pred_formats.read_detections`.
    """
    from vocmatch.readers.pred_formats import read_detections

    images = tuple(ImageAnnotation(key, where, (), None, None) for key, where in gt_files)
    gt = columns_from_annotations(AnnotationSet(gt_root, images, (), ()))
    pred = read_detections("coco", path, gt, coco_gt=coco_gt, max_bytes=max_bytes)
    return CocoPredictions(pred, image_digests(pred))

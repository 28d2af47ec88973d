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
import numpy.typing as npt

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


def _name_digests(names: Sequence[str]) -> npt.NDArray[np.uint8]:
    """``(len(names) + 1, 16)``: each name's digest, the last row that of no name (-1)."""
    rows = [hashlib.blake2b(n.encode("utf-8", "surrogateescape"), digest_size=16).digest()
            for n in (*names, "\0none")]  # fmt: skip
    return np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(-1, 16)


#: One prediction as its image's digest reads it.
_ROW = np.dtype([
    ("box", "<f8", (4,)), ("score", "<f8"), ("flags", "u1", (3,)), ("name", "u1", (16,)),
    ("pose", "u1", (16,)),
])  # fmt: skip


def image_digests(pred: ColumnSet) -> dict[str, bytes]:
    """Per key, the BLAKE2b digest of that image's predictions as read (see the module doc):
    of its key, path, size and file name, whether a record of it could not be read, and its
    rows in order (corners, score, flags, and the digests of its class and pose names, so
    that a class added elsewhere changes no other image's digest).

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
    rows = np.zeros(len(pred.labels), dtype=_ROW)
    rows["box"] = pred.boxes
    rows["score"] = pred.scores
    rows["flags"] = np.stack([pred.difficult, pred.truncated, pred.occluded], axis=-1)
    rows["name"] = _name_digests(pred.label_names)[pred.labels]
    rows["pose"] = _name_digests(pred.pose_names)[pred.pose]
    data = rows.tobytes()
    size = _ROW.itemsize
    shaped: dict[int, tuple[object, object]] = {row: (s, None) for row, s in pred.shapes}
    for row, given in pred.bndboxes:
        shaped[row] = (shaped.get(row, (None, None))[0], given)
    found: dict[str, bytes] = {}
    for i, key in enumerate(pred.keys):
        start, end = starts[i], starts[i + 1]
        head = (key, pred.paths[i], repr(pred.sizes[i]), repr(pred.filenames[i]))
        hasher = hashlib.blake2b("\0".join(head).encode("utf-8", "surrogateescape"),
                                 digest_size=16)  # fmt: skip
        hasher.update(b"\0skipped\0" if key in unreadable else b"\0read\0")
        hasher.update(data[start * size : end * size])
        if shaped:
            extra = [(r - start, shaped[r]) for r in range(start, end) if r in shaped]
            if extra:
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

    gt = _gt_index(gt_root, gt_files)
    pred = read_detections("coco", path, gt, coco_gt=coco_gt, max_bytes=max_bytes)
    return CocoPredictions(pred, image_digests(pred))


def _gt_index(root: str, gt_files: Sequence[tuple[str, str]]) -> ColumnSet:
    """The ground-truth images ``gt_files`` (sorted by key) as columns of no object: what
    the results file is read against (their keys and paths)."""
    n = len(gt_files)
    return ColumnSet(
        root,
        tuple(key for key, _ in gt_files),
        tuple(path for _, path in gt_files),
        (None,) * n,
        (None,) * n,
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.int32),
        (),
        np.zeros((0, 4), dtype=np.float64),
        np.zeros(0, dtype=bool),
        np.zeros(0, dtype=bool),
        np.zeros(0, dtype=bool),
        np.zeros(0, dtype=np.int32),
        (),
        np.zeros(0, dtype=np.float64),
        (),
    )

"""Label-error suspects: places where confident predictions suggest the ground truth is wrong.

A model that is usually right is a cheap second annotator. Where a confident prediction
(score at or above ``confidence``) disagrees with the ground truth in one of these ways, the
annotation is a suspect, to be looked at by a person:

``missing``
    The prediction overlaps no ground truth of any class: its IoU with every object is at
    most ``background_iou`` (TIDE's background threshold). An object may be unlabelled.
    Suggested: the predicted box and class.
``wrong-class``
    The prediction has no object of its own class at ``match_iou`` or above, but one of
    another class there. The object may carry the wrong name. Suggested: that object's
    box under the predicted class.
``loose``
    The prediction's best IoU with an object of its own class lies above
    ``background_iou`` and below ``match_iou``, and no object of another class is at
    ``match_iou``: the box may be drawn loosely. Suggested: the predicted box.
``duplicate``
    Two objects of one class with IoU at or above ``duplicate_iou`` (0.9): one object
    labelled twice. Suggested: the later one (in file order), to delete. Its confidence is
    the pair's IoU.

Each prediction gives at most one suspect, tested in that order (a prediction as sure of
the other class as of a loose box of its own is more likely a naming error). Suspects that
point at the same thing are kept once, the most confident: one ``wrong-class`` and one
``loose`` per object, and ``missing`` boxes of one class that overlap each other at
``match_iou`` or above (as non-maximum suppression would). Predictions without a score
(a second labelling pass) are all taken as confident and rank after scored ones.

IoU is the one IoU core's (:func:`vocmatch.core.iou.iou_matrix`, continuous areas); a rotated
box or polygon is taken by its bounding box, as a LabelImg copy can only hold boxes.

Suspects are ranked by confidence (highest first; ties by kind, image, object), and can be
written as JSON, CSV, and as copies of the ground-truth files with each suggestion added as
an object named ``suspect:<kind>:<class>``, so that a reviewer opens them in LabelImg.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from xml.sax.saxutils import escape

import numpy as np
import numpy.typing as npt

from vocmatch.core.iou import iou_matrix
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.escapes import csv_text, xml_text
from vocmatch.readers.parse import AnnotationSet
from vocmatch.version import __version__

__all__ = [
    "COPIES_FOLDER",
    "KINDS",
    "Suspect",
    "SuspectOptions",
    "SuspectReport",
    "find_suspects",
    "suspect_copy",
    "suspects_csv",
    "suspects_json",
]

SuspectKind = Literal["missing", "wrong-class", "loose", "duplicate"]

#: The kinds, in the order a prediction is tested for them.
KINDS: tuple[SuspectKind, ...] = ("missing", "wrong-class", "loose", "duplicate")

FloatArray = npt.NDArray[np.float64]

#: The folder of an output folder that holds the LabelImg copies.
COPIES_FOLDER = "annotations"


@dataclass(frozen=True, slots=True)
class SuspectOptions:
    """The thresholds that make a suspect.

    Attributes:
        confidence: A prediction at or above this score is confident.
        background_iou: At most this IoU with every object, a prediction overlaps nothing;
            above it with an object of its class, it is on that object.
        match_iou: At or above this IoU a prediction is on an object (a match).
        duplicate_iou: At or above this IoU two objects of one class are one object twice.
    """

    confidence: float = 0.5
    background_iou: float = 0.1
    match_iou: float = 0.5
    duplicate_iou: float = 0.9

    def __post_init__(self) -> None:
        for name in ("confidence", "background_iou", "match_iou", "duplicate_iou"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0 or math.isnan(value):
                raise ValueError(f"{name} must be within [0, 1], got {value!r}")
        if self.background_iou >= self.match_iou:
            raise ValueError(
                f"background_iou ({self.background_iou:g}) must be below match_iou "
                f"({self.match_iou:g})"
            )


@dataclass(frozen=True, slots=True)
class Suspect:
    """One likely annotation mistake.

    Attributes:
        kind: ``missing``, ``wrong-class``, ``loose`` or ``duplicate``.
        image: The image's key.
        gt_path: Its ground-truth file.
        name: The class suggested (the prediction's; a duplicate's own).
        box: The suggested box ``x1, y1, x2, y2``.
        confidence: The prediction's score (None without one); a duplicate's pair IoU.
        iou: ``missing``: the best IoU with any object; ``wrong-class``: with the object of
            the other class; ``loose``: with the object of its class; ``duplicate``: of the
            pair.
        pred_index: The prediction, by its index in its file (from 0); None for duplicates.
        gt_index: The object concerned (the later of a duplicate pair); None for missing.
        other_index: A duplicate's earlier object; None otherwise.
        gt_name: The object's class as labelled (``wrong-class``: not the suggested one).
    """

    kind: SuspectKind
    image: str
    gt_path: str
    name: str
    box: tuple[float, float, float, float]
    confidence: float | None
    iou: float
    pred_index: int | None = None
    gt_index: int | None = None
    other_index: int | None = None
    gt_name: str | None = None

    @property
    def label(self) -> str:
        """The object name of the suggestion in a LabelImg copy: ``suspect:<kind>:<class>``.

        >>> Suspect("loose", "a", "a.xml", "car", (0, 0, 1, 1), 0.9, 0.3).label
        'suspect:loose:car'
        """
        return f"suspect:{self.kind}:{self.name}"


@dataclass(frozen=True, slots=True)
class SuspectReport:
    """Every suspect of a set, ranked.

    Attributes:
        options: The thresholds used.
        images: Ground-truth images looked at.
        confident: Confident predictions looked at.
        suspects: The suspects, most confident first.
        foreign: Confident predictions that would be ``wrong-class`` suspects naming a class
            the ground truth never uses: not suggested (a COCO model's ``couch`` on VOC's
            ``sofa`` is no naming error of this set).
    """

    options: SuspectOptions
    images: int
    confident: int
    suspects: tuple[Suspect, ...]
    foreign: int = 0

    def count(self, kind: SuspectKind) -> int:
        """Suspects of one kind."""
        return sum(1 for s in self.suspects if s.kind == kind)


def _corners(boxes: Sequence[Box]) -> FloatArray:
    if not boxes:
        return np.zeros((0, 4))
    return np.array([(b.x1, b.y1, b.x2, b.y2) for b in boxes], dtype=np.float64)


def _box(b: Box) -> tuple[float, float, float, float]:
    return (b.x1, b.y1, b.x2, b.y2)


def _image_suspects(
    gt: ImageAnnotation,
    pred: ImageAnnotation | None,
    options: SuspectOptions,
    known: frozenset[str],
) -> tuple[list[Suspect], int, int]:
    """An image's suspects, how many confident predictions it has, and how many would
    rename an object to a class the ground truth never uses."""
    found: list[Suspect] = []
    gt_boxes = gt.boxes
    gt_corners = _corners(gt_boxes)
    gt_names = [b.name for b in gt_boxes]
    # Duplicates: a later object of one class on an earlier one.
    if len(gt_boxes) > 1:
        pairs = iou_matrix(gt_corners, gt_corners)
        for j in range(1, len(gt_boxes)):
            for i in range(j):
                if gt_names[i] == gt_names[j] and pairs[i, j] >= options.duplicate_iou:
                    iou = float(pairs[i, j])
                    found.append(
                        Suspect("duplicate", gt.key, gt.path, gt_names[j], _box(gt_boxes[j]),
                                iou, iou, gt_index=j, other_index=i, gt_name=gt_names[j])
                    )  # fmt: skip
                    break
    if pred is None:
        return found, 0, 0
    confident = [
        j for j, b in enumerate(pred.boxes) if b.score is None or b.score >= options.confidence
    ]
    # Highest score first (unscored last), file order on ties: the one kept of a group.
    confident.sort(key=lambda j: (-_score(pred.boxes[j]), j))
    if not confident:
        return found, 0, 0
    ious = iou_matrix(gt_corners, _corners([pred.boxes[j] for j in confident]))
    taken: set[tuple[SuspectKind, int]] = set()
    missing: list[Suspect] = []
    foreign = 0
    for column, j in enumerate(confident):
        p = pred.boxes[j]
        column_ious = ious[:, column]
        same = np.array([n == p.name for n in gt_names], dtype=bool)
        best_any = float(column_ious.max(initial=0.0))
        best_same = float(column_ious[same].max(initial=0.0))
        if best_same >= options.match_iou:
            continue  # on an object of its class: the ground truth agrees
        other = np.where(~same, column_ious, -1.0)
        if other.size and other.max() >= options.match_iou:
            g = int(np.argmax(other))
            if p.name not in known:
                # A class the ground truth never uses (a COCO model's couch on VOC's sofa):
                # no naming error of this set; counted, not suggested.
                foreign += 1
            elif ("wrong-class", g) not in taken:
                taken.add(("wrong-class", g))
                found.append(
                    Suspect("wrong-class", gt.key, gt.path, p.name, _box(gt_boxes[g]), p.score,
                            float(other[g]), pred_index=j, gt_index=g, gt_name=gt_names[g])
                )  # fmt: skip
            continue
        if best_same > options.background_iou:
            g = int(np.argmax(np.where(same, column_ious, -1.0)))
            if ("loose", g) not in taken:
                taken.add(("loose", g))
                found.append(
                    Suspect("loose", gt.key, gt.path, p.name, _box(p), p.score, best_same,
                            pred_index=j, gt_index=g, gt_name=gt_names[g])
                )  # fmt: skip
            continue
        if best_any <= options.background_iou:
            box = _corners([p])
            kept = [s for s in missing if s.name == p.name]
            if kept and iou_matrix(_corners_of(kept), box).max() >= options.match_iou:
                continue  # a second box on the same unlabelled object
            suspect = Suspect("missing", gt.key, gt.path, p.name, _box(p), p.score, best_any,
                              pred_index=j)  # fmt: skip
            missing.append(suspect)
            found.append(suspect)
    return found, len(confident), foreign


def _score(box: Box) -> float:
    return box.score if box.score is not None else -math.inf


def _corners_of(suspects: Sequence[Suspect]) -> FloatArray:
    return np.array([s.box for s in suspects], dtype=np.float64)


def _rank(suspect: Suspect) -> tuple[float, int, str, int]:
    confidence = suspect.confidence if suspect.confidence is not None else -math.inf
    index = suspect.pred_index if suspect.pred_index is not None else suspect.gt_index or 0
    return (-confidence, KINDS.index(suspect.kind), suspect.image, index)


def find_suspects(
    gt: AnnotationSet, pred: AnnotationSet, options: SuspectOptions | None = None
) -> SuspectReport:
    """Every label-error suspect of a ground-truth set, from confident predictions.

    Args:
        gt: The ground truth.
        pred: The predictions, paired with it by key (an image without predictions still
            has its duplicates looked for).
        options: The thresholds; the defaults of :class:`SuspectOptions` otherwise.

    Returns:
        The suspects, most confident first.
    """
    opts = options or SuspectOptions()
    pred_by_key = {a.key: a for a in pred.annotations}
    suspects: list[Suspect] = []
    confident = 0
    # A wrong-class suspect names only classes the ground truth uses.
    known = frozenset(b.name for image in gt.annotations for b in image.boxes)
    foreign = 0
    for image in gt.annotations:
        found, count, other = _image_suspects(image, pred_by_key.get(image.key), opts, known)
        suspects.extend(found)
        confident += count
        foreign += other
    suspects.sort(key=_rank)
    return SuspectReport(opts, len(gt.annotations), confident, tuple(suspects), foreign)


# Outputs --------------------------------------------------------------------------------

_CSV_COLUMNS = (
    "rank", "kind", "image", "gt_path", "class", "xmin", "ymin", "xmax", "ymax", "confidence",
    "iou", "pred_index", "gt_index", "other_index", "gt_class",
)  # fmt: skip


def _row(rank: int, s: Suspect) -> dict[str, object]:
    return {
        "rank": rank,
        "kind": s.kind,
        "image": s.image,
        "gt_path": s.gt_path,
        "class": s.name,
        "xmin": s.box[0],
        "ymin": s.box[1],
        "xmax": s.box[2],
        "ymax": s.box[3],
        "confidence": s.confidence,
        "iou": s.iou,
        "pred_index": s.pred_index,
        "gt_index": s.gt_index,
        "other_index": s.other_index,
        "gt_class": s.gt_name,
    }


def suspects_json(report: SuspectReport, copies: Sequence[str] = ()) -> str:
    """The report as indented JSON: the thresholds, counts per kind, each suspect (its
    rank from 1, ``kind``, ``image``, ``gt_path``, ``class``, the box, ``confidence``,
    ``iou``, ``pred_index``, ``gt_index``, ``other_index``, ``gt_class``), ``copies``,
    the LabelImg copies written (paths relative to the output folder), and
    ``foreign_class_predictions``, the wrong-class suspects not suggested because they name
    a class the ground truth never uses."""
    o = report.options
    data = {
        "vocmatch": __version__,
        "options": {
            "confidence": o.confidence,
            "background_iou": o.background_iou,
            "match_iou": o.match_iou,
            "duplicate_iou": o.duplicate_iou,
        },
        "images": report.images,
        "confident_predictions": report.confident,
        "foreign_class_predictions": report.foreign,
        "counts": {kind: report.count(kind) for kind in KINDS},
        "suspects": [_row(rank, s) for rank, s in enumerate(report.suspects, 1)],
        "copies": list(copies),
    }
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def suspects_csv(report: SuspectReport) -> str:
    """One row per suspect, ranked; an undefined value is an empty cell, floats in full,
    names written as spreadsheets read them safely."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(_CSV_COLUMNS)
    for rank, s in enumerate(report.suspects, 1):
        cells = []
        for key, value in _row(rank, s).items():
            if value is None:
                cells.append("")
            elif isinstance(value, float):
                cells.append(repr(value))
            elif key in ("image", "gt_path", "class", "gt_class"):
                cells.append(csv_text(str(value)))
            else:
                cells.append(str(value))
        writer.writerow(cells)
    return buffer.getvalue()


def _number(value: float) -> str:
    # LabelImg writes integers; a fractional coordinate keeps its digits.
    return str(int(value)) if value.is_integer() else repr(value)


def _object_xml(suspect: Suspect, newline: str) -> str:
    x1, y1, x2, y2 = (_number(v) for v in suspect.box)
    name = escape(xml_text(suspect.label))
    lines = [
        "\t<object>",
        f"\t\t<name>{name}</name>",
        "\t\t<pose>Unspecified</pose>",
        "\t\t<truncated>0</truncated>",
        "\t\t<difficult>0</difficult>",
        "\t\t<bndbox>",
        f"\t\t\t<xmin>{x1}</xmin>",
        f"\t\t\t<ymin>{y1}</ymin>",
        f"\t\t\t<xmax>{x2}</xmax>",
        f"\t\t\t<ymax>{y2}</ymax>",
        "\t\t</bndbox>",
        "\t</object>",
    ]
    return newline.join(lines) + newline


_ROOT_END = re.compile(rb"</(?:[A-Za-z_][\w.-]*:)?annotation\s*>\s*\Z")
_DECLARED = re.compile(rb"\A\s*<\?xml[^>]*encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")


def suspect_copy(original: bytes, suspects: Sequence[Suspect]) -> bytes:
    r"""A ground-truth file with each suspect's suggestion added as an object.

    The file is kept byte for byte; the objects, laid out as LabelImg writes its own, go
    just before the closing ``</annotation>``, in the file's encoding and line endings.

    Args:
        original: The ground-truth file's bytes (already read and parsed once).
        suspects: The suspects of its image.

    Returns:
        The copy's bytes.

    Raises:
        ValueError: The file does not end with ``</annotation>``.

    >>> s = Suspect("missing", "a", "a.xml", "dog", (1.0, 2.0, 30.0, 40.5), 0.9, 0.0, 0)
    >>> copy = suspect_copy(b"<annotation>\n</annotation>\n", [s]).decode()
    >>> [line.strip() for line in copy.splitlines()][:3]
    ['<annotation>', '<object>', '<name>suspect:missing:dog</name>']
    >>> [line.strip() for line in copy.splitlines()][7:11]
    ['<xmin>1</xmin>', '<ymin>2</ymin>', '<xmax>30</xmax>', '<ymax>40.5</ymax>']
    """
    end = _ROOT_END.search(original)
    if end is None:
        raise ValueError("the file does not end with </annotation>")
    declared = _DECLARED.match(original)
    encoding = declared.group(1).decode("ascii") if declared else "utf-8"
    newline = "\r\n" if b"\r\n" in original else "\n"
    text = "".join(_object_xml(s, newline) for s in suspects)
    try:
        added = text.encode(encoding, errors="xmlcharrefreplace")
    except LookupError:
        added = text.encode("utf-8", errors="xmlcharrefreplace")
    before = original[: end.start()]
    if not before.endswith((b"\n", b"\r")):
        before += newline.encode("ascii")
    return before + added + original[end.start() :]

"""The prediction formats vocmatch reads, each named and described once.

A format is one record of :data:`PREDICTION_FORMATS`: its name, what it is, the files it reads
(a folder's suffixes, or one file), the class table it needs (``coco_gt``, ``names``), the
reader that turns it into columns, and how a folder of its files is recognised when it is
given as XML. The request's checks, the command line's choices and help, the report-path
checks and the unpaired-files hint all read these records; a new format is one more record
(and its reader).

This module imports nothing beyond the standard library, so that a request is checked, and
the command line's help drawn, without loading a reader.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from vocmatch.errors import Message, Option

__all__ = [
    "BOX_FORMATS",
    "PREDICTION_FORMATS",
    "PRED_FORMATS",
    "BoxFormat",
    "ClassTable",
    "FolderHint",
    "PredFormat",
    "PredictionFormat",
    "prediction_format",
    "prediction_suffixes",
]

#: The names of the prediction formats (the type of a request's ``pred_format``); each has
#: its record in :data:`PREDICTION_FORMATS` (a test keeps the two equal).
PredFormat = Literal["voc", "coco", "yolo", "voc-results", "txt"]

#: How a line of ``txt`` predictions gives its box: corners ``x1 y1 x2 y2`` (``xyxy``) or
#: the top-left corner and the size ``x y w h`` (``xywh``), in pixels.
BoxFormat = Literal["xyxy", "xywh"]
BOX_FORMATS: tuple[BoxFormat, ...] = ("xyxy", "xywh")

#: A class table a format reads its class ids from: a COCO ground-truth file (``coco_gt``)
#: or a list of names by index (``names``).
ClassTable = Literal["coco_gt", "names"]


@dataclass(frozen=True, slots=True)
class FolderHint:
    """How a folder of a format's files is recognised when it is read as XML, for the line
    that says why no image paired.

    Attributes:
        pattern: A file's name (the last part of its path) that the format writes, matched
            whole (``(?i)`` for any case).
        holds: What such files are called in the line (``.txt files``).
        guess: The guess, before the option that reads them (``YOLO predictions? ``).
        rank: The hints are tried in ascending rank: a narrower pattern (the devkit's
            ``comp4_det_*.txt``) before a wider one (any ``.txt``). Formats whose hints share
            a rank and a pattern are told apart by ``line``, or all suggested.
        line: The shape of a line of the format, matched whole against the first non-blank
            line of the first such file: of formats sharing a pattern, those whose shape it
            has are suggested (all of them when it has none's, or cannot be read).
    """

    pattern: str
    holds: str
    guess: str = ""
    rank: int = 0
    line: str = ""

    def matches(self, name: str) -> bool:
        """Whether a file's relative path names a file of the format."""
        return re.fullmatch(self.pattern, name.rsplit("/", 1)[-1]) is not None


@dataclass(frozen=True, slots=True)
class PredictionFormat:
    """One prediction format.

    Attributes:
        name: The ``pred_format`` value.
        description: What the predictions are, for the help: a :class:`Message` whose
            options a caller names in its own words.
        suffixes: The suffixes of the files read from a prediction folder; None when the
            predictions are one file.
        table: The class table the format reads its ids from, if any.
        table_required: The class table must be given; ``missing`` says so.
        missing: Why the predictions cannot be read without their class table.
        reader: ``module:function`` of the reader, None for XML (read as the ground truth
            is). The function takes ``(path, gt, request)`` (see
            :func:`vocmatch.readers.pred_formats.read_detections`) and gives the annotations.
        hint: How a folder of its files is recognised among files read as XML (None for
            XML itself).
    """

    name: PredFormat
    description: Message | str
    suffixes: tuple[str, ...] | None
    table: ClassTable | None = None
    table_required: bool = False
    missing: str = ""
    reader: str | None = None
    hint: FolderHint | None = None

    @property
    def one_file(self) -> bool:
        """The predictions are one file (not a folder)."""
        return self.suffixes is None

    def read(self, *args: Any, **kwargs: Any) -> Any:
        """Call the format's reader (imported now, not with this module)."""
        if self.reader is None:
            raise ValueError(f"{self.name!r} is read as the ground truth is, not by a reader")
        module, function = self.reader.split(":")
        reader: Callable[..., Any] = getattr(importlib.import_module(module), function)
        return reader(*args, **kwargs)


_READERS = "vocmatch.readers.pred_formats"
# A number of a txt line, and one between 0 and 1 (YOLO's normalised coordinates).
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_UNIT = r"(?:0?\.[0-9]+|[01](?:\.[0-9]*)?)(?:[eE][+-]?[0-9]+)?"

#: Every prediction format, XML first (the default).
PREDICTION_FORMATS: Mapping[PredFormat, PredictionFormat] = {
    record.name: record
    for record in (
        PredictionFormat("voc", "a folder of XML files", (".xml",)),
        PredictionFormat(
            "coco",
            "a COCO results JSON file (image_id, category_id, bbox [x, y, w, h], score)",
            None,
            table="coco_gt",
            reader=f"{_READERS}:read_coco_detections",
            hint=FolderHint(r"(?i).*\.json", "JSON", "COCO results? ", rank=2),
        ),
        PredictionFormat(
            "yolo",
            Message(
                "a folder of txt files (class cx cy w h [conf], normalised; needs ",
                Option("names"),
                ")",
            ),
            (".txt",),
            table="names",
            table_required=True,
            missing="YOLO predictions need the class names, one per line",
            reader=f"{_READERS}:read_yolo_detections",
            hint=FolderHint(
                r"(?i).*\.txt",
                ".txt files",
                "YOLO predictions? ",
                rank=1,
                line=rf"\s*[0-9]+(?:\s+{_UNIT}){{4,5}}\s*",
            ),
        ),
        PredictionFormat(
            "voc-results",
            "a folder of the VOC devkit's comp4_det_<set>_<class>.txt files",
            (".txt",),
            reader=f"{_READERS}:read_voc_result_detections",
            # The devkit's per-class result files: comp4_det_test_car.txt.
            hint=FolderHint(r"comp\d+_det_[^_]+_.+\.txt", "VOC devkit result files", rank=0),
        ),
        PredictionFormat(
            "txt",
            Message(
                "a folder of txt files, one per image (class score x1 y1 x2 y2 in pixels, or ",
                Option("box_format", "xywh"),
                ": class score x y w h)",
            ),
            (".txt",),
            reader=f"{_READERS}:read_txt_detections",
            hint=FolderHint(
                r"(?i).*\.txt",
                ".txt files",
                "class-named boxes in pixels? ",
                rank=1,
                # Not a YOLO line: an integer class and coordinates within 0 to 1.
                line=rf"(?!\s*[0-9]+(?:\s+{_UNIT}){{4,5}}\s*$)\s*\S.*?(?:\s+{_NUMBER}){{5}}\s*",
            ),
        ),
    )
}

#: The prediction formats' names, XML first (the default).
PRED_FORMATS: tuple[PredFormat, ...] = tuple(PREDICTION_FORMATS)


def prediction_format(name: str) -> PredictionFormat:
    """The record of a format by name (a request's ``pred_format`` is checked before).

    >>> prediction_format("yolo").table
    'names'
    """
    return PREDICTION_FORMATS[name]  # type: ignore[index]


def prediction_suffixes(pred_format: str) -> tuple[str, ...] | None:
    """The suffixes of the files read from a prediction folder, or None when the
    predictions are one file (COCO results): a report must not be written among them.

    >>> prediction_suffixes("yolo")
    ('.txt',)
    """
    return prediction_format(pred_format).suffixes

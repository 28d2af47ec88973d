"""Predictions from any detector: COCO results JSON, YOLO txt files and the PASCAL VOC devkit's
per-class result files, read into the same columns as prediction XML
(:class:`~vocmatch.readers.scan.ColumnSet`), so that everything downstream works unchanged.

* ``coco``: a results list ``[{"image_id", "category_id", "bbox": [x, y, w, h], "score"}]``.
  Ids are named by a COCO ground-truth file (``images[].file_name``, ``categories[].name``);
  an ``image_id`` or ``category_id`` that is a string is the image's file stem or the class
  name itself. ``bbox`` becomes ``x, y, x + w, y + h``.
* ``yolo``: one txt file per image, ``class cx cy w h [conf]`` per line, normalised to the
  image, class an index into a list of names; the image's size is the ground truth's
  ``<size>``.
* ``voc-results``: ``comp4_det_<set>_<class>.txt`` files, ``image_id score x1 y1 x2 y2`` per
  line, in the annotations' own pixel coordinates.
* ``txt``: one txt file per image, paired by name as XML is, ``class score x1 y1 x2 y2`` per
  line (or ``class score x y w h``), in pixels; the class is everything before the last five
  fields, so it may hold spaces.

A results file covers the whole set: a ground-truth image without any detection had none,
and is evaluated with no predictions (YOLO writes one file per image, so there a missing
file is a missing prediction file, as for XML). Every line or record that cannot be read is
a :class:`~vocmatch.core.model.SkippedFile` with ``path:line``, and its image is left out (so a
broken record does not turn into missed objects); numbers in text files follow the
annotations' own grammar (:func:`vocmatch.readers.parse.read_number`).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from vocmatch.checks import checked_max_bytes
from vocmatch.core.model import (
    Box,
    ImageAnnotation,
    ImageSize,
    SkippedFile,
    class_name_problem,
    coordinate_problem,
    corner_problem,
)
from vocmatch.errors import AnnotationError, InputError, Message, Option, RequestError, message_of
from vocmatch.limits import MAX_JSON_BYTES
from vocmatch.readers.formats import PRED_FORMATS, BoxFormat, PredFormat, prediction_format
from vocmatch.readers.parse import (
    DEFAULT_MAX_BYTES,
    MAX_COORDINATE,
    AnnotationSet,
    list_directory,
    number_problem,
)
from vocmatch.readers.regular_files import read_bytes
from vocmatch.readers.scan import ColumnSet, columns_from_annotations

__all__ = [
    "MAX_JSON_BYTES",
    "PRED_FORMATS",
    "DetectionRequest",
    "PredFormat",
    "read_class_list",
    "read_coco_detections",
    "read_detections",
    "read_txt_detections",
    "read_voc_result_detections",
    "read_yolo_detections",
]


# The devkit's result files: comp<N>_det_<set>_<class>.txt; the set has no underscore.
_VOC_RESULT_NAME = re.compile(r"comp[0-9]+_det_([^_/]+)_(.+)\.txt\Z")
# The run a result file belongs to: its competition and set (comp4_det_test).
_VOC_RESULT_RUN = re.compile(r"comp[0-9]+_det_[^_/]+")
_PICTURE_SUFFIX = re.compile(r"\.(jpe?g|png|bmp|tiff?|webp|gif)\Z", re.IGNORECASE)
_INTEGER = re.compile(r"[ \t]*([0-9]+)[ \t]*")
_EXAMPLES = 3
#: Decimals of a pixel kept when YOLO's normalised boxes are scaled to the image.
_YOLO_DIGITS = 9


@dataclass(frozen=True, slots=True)
class _GroundTruth:
    """What the readers need of the ground truth: its keys, sizes and paths; and the keys of
    the other shards' images when it holds a shard of them."""

    keys: tuple[str, ...]
    sizes: dict[str, ImageSize | None]
    paths: dict[str, str]
    by_base: dict[str, str | None]  # base name -> key, None where two keys share it
    elsewhere: frozenset[str]  # images of other shards: their predictions are theirs

    @classmethod
    def of(cls, gt: ColumnSet, images: Iterable[str] | None = None) -> _GroundTruth:
        # Names are resolved against every image of the run, so that a shard pairs a name
        # with the image one run pairs it with.
        every = set(gt.keys) if images is None else set(images) | set(gt.keys)
        by_base: dict[str, str | None] = {}
        for key in sorted(every):
            base = key.rpartition("/")[2]
            by_base[base] = None if base in by_base else key
        return cls(
            keys=gt.keys,
            sizes=dict(zip(gt.keys, gt.sizes, strict=True)),
            paths=dict(zip(gt.keys, gt.paths, strict=True)),
            by_base=by_base,
            elsewhere=frozenset(every - set(gt.keys)),
        )

    def key_of(self, name: str) -> str:
        """The ground-truth key an image name stands for: the name itself, without a picture
        suffix (``a/b.jpg`` is ``a/b``), or its base name when one key has it; otherwise
        the name as given (an image without ground truth)."""
        stem = _PICTURE_SUFFIX.sub("", name.replace("\\", "/"))
        if stem in self.sizes or stem in self.elsewhere:
            return stem
        found = self.by_base.get(stem.rpartition("/")[2])
        return found if found is not None else stem


def _quoted(names: Iterable[str]) -> str:
    listed = sorted(set(names))
    shown = ", ".join(repr(n) for n in listed[:_EXAMPLES])
    return shown + (", ..." if len(listed) > _EXAMPLES else "")


def _no_pairs(what: str, named: Iterable[str], gt: _GroundTruth, hint: str = "") -> InputError:
    return InputError(
        Message(
            f"no ground-truth image pairs with a prediction: {what} ({_quoted(named)}) name no "
            f"ground-truth image ({_quoted(gt.keys)})",
            hint,
        )
    )


# Reading text ---------------------------------------------------------------------------


def _text(path: str, max_bytes: int) -> str:
    """A file's text: UTF-8 (a byte-order mark allowed), at most ``max_bytes``."""
    data = read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise AnnotationError(path, "not UTF-8 text", line) from None


def _number(text: str, what: str) -> float:
    """A number in the annotations' grammar; ValueError naming ``what`` otherwise."""
    value, problem = number_problem(text)
    if value is None:
        raise ValueError(f"{what} {problem}: {text.strip()!r}")
    if abs(value) > MAX_COORDINATE:
        raise ValueError(f"{what} {value:g} is out of range (the limit is ±2^53)")
    return value


def read_class_list(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """Class names, one per line, in index order (YOLO's ``classes.txt`` or ``obj.names``).

    Every line names a class: the line number minus one is its index, so a blank line
    inside the list is an error (blank lines at the end are not).

    Raises:
        AnnotationError: A blank line inside the list, or a name given twice.
        InputError: The file cannot be read, or holds no name.
    """
    name = os.fspath(path)
    try:
        text = _text(name, DEFAULT_MAX_BYTES)
    except AnnotationError as error:
        if error.line is None:
            raise InputError(str(error)) from None
        raise
    lines = [line.strip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise InputError(f"{name}: no class names (one per line, in index order)")
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line:
            raise AnnotationError(
                name, "blank line: each line names the class of its index (line - 1)", number
            )
        if line in seen:
            raise AnnotationError(
                name, f"class {line!r} named twice (first on line {seen[line]})", number
            )
        seen[line] = number
    return tuple(lines)


# COCO JSON ------------------------------------------------------------------------------


def _not_finite(text: str) -> float:
    # JSON has no NaN or Infinity; Python's reader accepts them: keep them to refuse per record.
    return float(text)


def _integer(text: str) -> int | float:
    # An integer beyond float64's range is read as infinity, refused per record as NaN is:
    # as an int it would overflow in float() and, past 4,300 digits, not be read at all.
    number = float(text)
    return int(text) if math.isfinite(number) else number


def _load_json(path: str) -> Any:
    text = _text(path, MAX_JSON_BYTES)
    try:
        return json.loads(text, parse_constant=_not_finite, parse_int=_integer)
    except json.JSONDecodeError as error:
        raise AnnotationError(path, f"not valid JSON: {error.msg}", error.lineno) from None
    except RecursionError:
        raise AnnotationError(path, "JSON nested too deeply") from None


def _record_lines(path: str, indices: Sequence[int], key: str | None = None) -> dict[int, int]:
    """The line on which each listed element of a JSON array starts: the top-level array,
    or the array under ``key`` of the top-level object. Read element by element with the
    standard decoder (no recursion of our own), only when some element is bad."""
    text = _text(path, MAX_JSON_BYTES)
    decoder = json.JSONDecoder(parse_constant=_not_finite, parse_int=_integer)
    wanted = set(indices)
    position = _skip_space(text, 0)
    if key is not None:
        position = _array_of(text, key, decoder)
        if position < 0:
            return {}
    if text[position : position + 1] != "[":
        return {}
    position = _skip_space(text, position + 1)
    found: dict[int, int] = {}
    index = 0
    newlines = 0
    last = 0
    while position < len(text) and text[position] != "]" and len(found) < len(wanted):
        if index in wanted:
            newlines += text.count("\n", last, position)
            last = position
            found[index] = newlines + 1
        try:
            _, end = decoder.raw_decode(text, position)
        except (json.JSONDecodeError, RecursionError):
            break
        position = _skip_space(text, end)
        if text[position : position + 1] == ",":
            position = _skip_space(text, position + 1)
        index += 1
    return found


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _array_of(text: str, key: str, decoder: json.JSONDecoder) -> int:
    """Where the array value of ``key`` in the top-level object starts, or -1."""
    position = _skip_space(text, 0)
    if text[position : position + 1] != "{":
        return -1
    position = _skip_space(text, position + 1)
    while position < len(text) and text[position] == '"':
        name, end = decoder.raw_decode(text, position)
        position = _skip_space(text, end)
        if text[position : position + 1] != ":":
            return -1
        position = _skip_space(text, position + 1)
        if name == key:
            return position
        try:
            _, end = decoder.raw_decode(text, position)
        except (json.JSONDecodeError, RecursionError):
            return -1
        position = _skip_space(text, end)
        if text[position : position + 1] == ",":
            position = _skip_space(text, position + 1)
    return -1


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class _CocoNames:
    """Image file names and class names by id, from a COCO ground-truth file."""

    images: dict[int | str, str]
    categories: dict[int | str, str]


def _coco_names(path: str) -> _CocoNames:
    """Read ``images`` (id, file_name) and ``categories`` (id, name) of a COCO file."""
    data = _load_json(path)
    if not isinstance(data, dict):
        raise AnnotationError(path, "a COCO ground-truth file is an object with 'images'", 1)
    found: dict[str, dict[int | str, str]] = {}
    for section, field in (("images", "file_name"), ("categories", "name")):
        entries = data.get(section)
        if not isinstance(entries, list):
            raise AnnotationError(path, f"no {section!r} list", 1)
        table: dict[int | str, str] = {}
        bad: dict[int, str] = {}
        for index, entry in enumerate(entries):
            problem = None
            if not isinstance(entry, dict):
                problem = f"an entry of {section!r} is not an object"
            elif not isinstance(entry.get("id"), (int, str)) or isinstance(entry.get("id"), bool):
                problem = f"{section!r} entry without an integer or string 'id'"
            elif not isinstance(entry.get(field), str) or not entry[field].strip():
                problem = f"{section!r} entry {entry['id']!r} without a {field!r}"
            elif entry["id"] in table:
                problem = f"{section!r} id {entry['id']!r} given twice"
            if problem is not None:
                bad[index] = problem
                break
            table[entry["id"]] = entry[field].strip()
        if bad:
            index, problem = next(iter(bad.items()))
            line = _record_lines(path, [index], section).get(index)
            raise AnnotationError(path, problem, line)
        found[section] = table
    return _CocoNames(found["images"], found["categories"])


@dataclass(slots=True)
class _Collected:
    """Boxes gathered per image key, in reading order."""

    boxes: dict[str, list[Box]]
    paths: dict[str, str]
    skipped: list[SkippedFile]
    landed: int = 0  # detections on a ground-truth image
    elsewhere: int = 0  # detections on another shard's image (left to that shard)


def _annotations(
    root: str,
    collected: _Collected,
    covered: Iterable[str],
    notes: Sequence[str] = (),
) -> AnnotationSet:
    """Every key with boxes and every covered key, sorted."""
    keys = sorted(set(collected.boxes) | set(covered))
    images = tuple(
        ImageAnnotation(
            key, collected.paths.get(key, root), tuple(collected.boxes.get(key, ())), None, None
        )
        for key in keys
    )
    skipped = tuple(sorted(collected.skipped, key=lambda s: (s.path, s.line or 0)))
    return AnnotationSet(root, images, skipped, tuple(notes))


def _read_coco(path: str, gt: _GroundTruth, coco_gt: str | None) -> AnnotationSet:
    names = _coco_names(coco_gt) if coco_gt is not None else None
    data = _load_json(path)
    if isinstance(data, dict) and "annotations" in data and "images" in data:
        raise InputError(
            Message(
                f"{path} is a COCO ground-truth file (images, annotations), not a results list: "
                "give it as ",
                Option("coco_gt"),
                " and the detections as ",
                Option("pred"),
            )
        )
    if not isinstance(data, list):
        raise AnnotationError(path, "a COCO results file is a list of detections", 1)
    if not data:
        raise InputError(
            f"no ground-truth image pairs with a prediction: {path} holds no detections"
        )
    if names is None and all(
        isinstance(r, dict) and _is_number(r.get("image_id")) for r in data[:1000]
    ):
        raise InputError(
            Message(
                f"{path}: image_id values are numbers: give ",
                Option("coco_gt", placeholder="FILE"),
                " (a COCO ground-truth file whose images[].file_name names them)",
            )
        )
    collected = _Collected({}, {}, [])
    bad: list[tuple[int, str, str | None]] = []
    image_names: dict[int | str, str] = names.images if names is not None else {}
    categories: dict[int | str, str] = names.categories if names is not None else {}
    unnamed: list[str] = []
    for index, record in enumerate(data):
        key = None
        try:
            if not isinstance(record, dict):
                raise ValueError("a detection is not an object")
            key = _coco_key(record, gt, image_names)
            box = _coco_box(record, categories, names is not None)
        except ValueError as error:
            if key in gt.elsewhere:
                collected.elsewhere += 1  # another shard's to report
            else:
                bad.append((index, message_of(error), key))
            continue
        if key in gt.elsewhere:
            collected.elsewhere += 1
            continue
        if key not in gt.sizes:
            unnamed.append(key)
            collected.paths.setdefault(key, f"{path} (image {record.get('image_id')!r})")
        else:
            collected.landed += 1
            collected.paths.setdefault(key, path)
        collected.boxes.setdefault(key, []).append(box)
    if bad:
        lines = _record_lines(path, [index for index, _, _ in bad])
        for index, message, key in bad:
            collected.skipped.append(
                SkippedFile(
                    path, Message(f"detection {index}: ", message), lines.get(index), key=key
                )
            )
    if not (collected.landed or collected.elsewhere) and not any(
        s.key in gt.sizes for s in collected.skipped
    ):
        hint = (
            ""
            if names is not None
            else Message("; numeric ids need ", Option("coco_gt", placeholder="FILE"))
        )
        raise _no_pairs(f"the image ids of {path}", unnamed or ["(none readable)"], gt, hint)
    # Every image of the set is covered by the results: those the COCO ground truth lists, or all.
    covered = (
        [gt.key_of(file_name) for file_name in image_names.values()]
        if names is not None
        else list(gt.keys)
    )
    for key in covered:
        collected.paths.setdefault(key, path)
    return _annotations(path, collected, [k for k in covered if k in gt.sizes])


# YOLO -----------------------------------------------------------------------------------


def _coco_key(record: dict[str, Any], gt: _GroundTruth, image_names: dict[int | str, str]) -> str:
    """The image key of a COCO detection (its ``image_id``: a file stem, or a number the
    COCO ground truth names). Raises ValueError with the reason it has none."""
    image_id = record.get("image_id")
    if isinstance(image_id, str):
        return gt.key_of(image_id)
    if _is_number(image_id) and image_id in image_names:
        return gt.key_of(image_names[image_id])
    if _is_number(image_id):
        raise ValueError(
            Message(f"image_id {image_id!r} is not among the images of ", Option("coco_gt"))
        )
    raise ValueError("no image_id (an integer, or the image's file stem)")


def _coco_box(record: dict[str, Any], categories: dict[int | str, str], named: bool) -> Box:
    """A COCO detection's class, box and score, checked. Raises ValueError with the reason
    it cannot be read (``named``: the categories come from a COCO ground truth)."""
    category = record.get("category_id")
    if isinstance(category, str) and category.strip():
        name = category.strip()
    elif _is_number(category) and category in categories:
        name = categories[category]
    elif _is_number(category):
        raise ValueError(
            Message(
                f"category_id {category!r} is not among the categories of ",
                Option("coco_gt"),
            )
            if named
            else Message(
                f"category_id {category!r} is a number: give ",
                Option("coco_gt", placeholder="FILE"),
                " to name it",
            )
        )
    else:
        raise ValueError("no category_id (an integer, or the class name)")
    bbox = record.get("bbox")
    if not isinstance(bbox, list) or len(bbox) != 4 or not all(map(_is_number, bbox)):
        raise ValueError(f"bbox is not [x, y, width, height]: {bbox!r}"[:200])
    x, y, w, h = (float(v) for v in bbox)
    if not all(math.isfinite(v) for v in (x, y, w, h)):
        raise ValueError(f"bbox is not finite: {bbox!r}")
    if w < 0 or h < 0:
        raise ValueError(f"bbox has a negative width or height: {bbox!r}")
    if max(abs(x), abs(y), abs(x + w), abs(y + h)) > MAX_COORDINATE:
        raise ValueError("bbox is out of range (the limit is ±2^53)")
    score = record.get("score")
    if score is not None and (not _is_number(score) or not math.isfinite(score)):
        raise ValueError(f"score is not a finite number: {score!r}"[:200])
    return Box(name, x, y, x + w, y + h, score=None if score is None else float(score))


def _yolo_line(
    fields: list[str], names: Sequence[str], size: ImageSize
) -> tuple[str, float, float, float, float, float | None]:
    if len(fields) not in (5, 6):
        hint = " (a segmentation label?)" if len(fields) > 6 else ""
        raise ValueError(f"expected 'class cx cy w h [conf]', got {len(fields)} fields{hint}")
    index = _INTEGER.fullmatch(fields[0])
    if index is None:
        raise ValueError(f"class {fields[0]!r} is not a class index (0, 1, ...)")
    k = int(index[1])
    if k >= len(names):
        raise ValueError(
            Message(
                f"class {k} is not in ",
                Option("names"),
                f" ({len(names)} classes, 0 to {len(names) - 1})",
            )
        )
    cx, cy, w, h = (
        _number(text, what) for text, what in zip(fields[1:5], ("cx", "cy", "w", "h"), strict=True)
    )
    if w < 0 or h < 0:
        raise ValueError(f"{'w' if w < 0 else 'h'} {min(w, h):g} is negative")
    score = _number(fields[5], "conf") if len(fields) == 6 else None
    width, height = size.width, size.height
    # Rounded to a billionth of a pixel: the normalised form's float noise (36.00000000000001
    # for 36) would move an IoU that lies exactly on a threshold, and no annotation is
    # finer than that.
    return (
        names[k],
        round((cx - w / 2) * width, _YOLO_DIGITS),
        round((cy - h / 2) * height, _YOLO_DIGITS),
        round((cx + w / 2) * width, _YOLO_DIGITS),
        round((cy + h / 2) * height, _YOLO_DIGITS),
        score,
    )


#: One line of a text prediction file as a box (``number`` counts from 1), or ValueError.
LineReader = Callable[[str, int], Box | None]


def _read_line_files(
    root: str,
    gt: _GroundTruth,
    max_bytes: int,
    reader_of: Callable[[str, str], LineReader | SkippedFile],
    lines: Callable[[str], list[str]],
    leave_out: str | None = None,
) -> AnnotationSet:
    """The ``.txt`` files below ``root``, one an image, read line by line: YOLO's and
    ``txt``'s. ``reader_of(key, path)`` gives the reader of one file's lines (or why the
    file is skipped before it is read); a line it refuses skips the file at that line, since
    a broken line is not a missed object. ``leave_out`` is a file of the folder that is no
    prediction (YOLO's class names beside its labels)."""
    listing = list_directory(root, ".txt")
    collected = _Collected({}, {}, list(listing.skipped))
    unnamed = []
    for key, path in listing.files:
        if leave_out is not None and os.path.realpath(path) == leave_out:
            continue
        if key in gt.elsewhere:
            collected.elsewhere += 1
            continue  # another shard's image: not opened
        collected.paths[key] = path
        collected.boxes[key] = []
        if key not in gt.sizes:
            unnamed.append(key)
            continue  # no ground truth: an orphan, not read
        collected.landed += 1
        read_line = reader_of(key, path)
        if isinstance(read_line, SkippedFile):
            collected.skipped.append(read_line)
            continue
        try:
            text = _text(path, max_bytes)
        except AnnotationError as error:
            collected.skipped.append(SkippedFile(path, error.message, error.line, key=key))
            continue
        boxes: list[Box] = []
        for number, line in enumerate(lines(text), start=1):
            try:
                box = read_line(line, number)
            except ValueError as error:
                collected.skipped.append(SkippedFile(path, message_of(error), number, key=key))
                break
            if box is not None:
                boxes.append(box)
        else:
            collected.boxes[key] = boxes
    if not (collected.landed or collected.elsewhere):
        if not listing.files:
            raise InputError(
                f"no ground-truth image pairs with a prediction: {root} holds no .txt files"
            )
        raise _no_pairs(f"the .txt files of {root}", unnamed, gt)
    return _annotations(root, collected, ())


def _read_yolo(
    root: str, gt: _GroundTruth, names: Sequence[str], max_bytes: int, names_path: str | None
) -> AnnotationSet:
    def reader_of(key: str, path: str) -> LineReader | SkippedFile:
        size = gt.sizes[key]
        if size is None or size.width <= 0 or size.height <= 0:
            return SkippedFile(
                path,
                "normalised YOLO coordinates need the image size, and the ground truth "
                f"{gt.paths[key]} has no usable <size>",
                key=key,
            )

        def read_line(line: str, number: int) -> Box | None:
            fields = line.split()
            if not fields:
                return None
            name, x1, y1, x2, y2, score = _yolo_line(fields, names, size)
            return Box(name, x1, y1, x2, y2, score=score)

        return read_line

    # The names file often sits among the labels (LabelImg writes classes.txt there).
    names_real = os.path.realpath(names_path) if names_path is not None else None
    return _read_line_files(root, gt, max_bytes, reader_of, str.splitlines, names_real)


# VOC devkit result files ----------------------------------------------------------------


def _read_voc_results(root: str, gt: _GroundTruth, max_bytes: int) -> AnnotationSet:
    if not os.path.isdir(root):
        raise InputError(f"{root}: not a directory")
    collected = _Collected({}, {}, [])
    unnamed: list[str] = []
    files = sorted(entry.name for entry in os.scandir(root) if entry.name.lower().endswith(".txt"))
    results = [(name, _VOC_RESULT_NAME.fullmatch(name)) for name in files]
    if not any(match for _, match in results):
        raise InputError(
            f"no ground-truth image pairs with a prediction: {root} holds no VOC result files "
            "(comp4_det_<set>_<class>.txt)"
        )
    runs = sorted({_VOC_RESULT_RUN.match(name)[0] for name, match in results if match})  # type: ignore[index]
    if len(runs) > 1:
        # Two runs' files (test and val, comp3 and comp4) in one folder would be read as one
        # run: every image's predictions counted twice or more.
        raise InputError(
            f"{root} holds the result files of {len(runs)} runs ("
            + ", ".join(f"{run}_*.txt" for run in runs)
            + "): keep one run's files in the folder"
        )
    for name, match in results:
        path = os.path.join(root, name)
        if match is None:
            collected.skipped.append(
                SkippedFile(path, "not a VOC result file name (comp4_det_<set>_<class>.txt)")
            )
            continue
        cls = match[2]
        try:
            text = _text(path, max_bytes)
        except AnnotationError as error:
            # The whole class is unknown: every image is affected; the file is named.
            collected.skipped.append(SkippedFile(path, error.message, error.line))
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            fields = line.split()
            if not fields:
                continue
            key = gt.key_of(fields[0])
            if key in gt.elsewhere:
                collected.elsewhere += 1
                continue  # another shard's image
            try:
                if len(fields) != 6:
                    raise ValueError(
                        f"expected 'image_id score x1 y1 x2 y2', got {len(fields)} fields"
                    )
                score = _number(fields[1], "score")
                x1, y1, x2, y2 = (
                    _number(text, what)
                    for text, what in zip(fields[2:], ("x1", "y1", "x2", "y2"), strict=True)
                )
                if x2 < x1 or y2 < y1:
                    raise ValueError(f"x2 < x1 or y2 < y1: {' '.join(fields[2:])}")
            except ValueError as error:
                collected.skipped.append(SkippedFile(path, str(error), number, key=key))
                continue
            if key in gt.sizes:
                collected.landed += 1
                collected.paths.setdefault(key, root)
            else:
                unnamed.append(key)
                collected.paths.setdefault(key, f"{root} (image {fields[0]!r})")
            collected.boxes.setdefault(key, []).append(Box(cls, x1, y1, x2, y2, score=score))
    if not (collected.landed or collected.elsewhere) and not any(
        s.key in gt.sizes for s in collected.skipped
    ):
        raise _no_pairs(f"the image ids of {root}", unnamed or ["(none)"], gt)
    for key in gt.keys:
        collected.paths.setdefault(key, root)
    return _annotations(root, collected, gt.keys)


# Class-named boxes in pixels, one txt file per image ------------------------------------

#: The fields of a txt line after its class, as each box form names them.
_TXT_FIELDS: dict[BoxFormat, tuple[str, str, str, str]] = {
    "xyxy": ("x1", "y1", "x2", "y2"),
    "xywh": ("x", "y", "w", "h"),
}


def _txt_line(line: str, box_format: BoxFormat) -> Box:
    """A line ``class score x1 y1 x2 y2`` (or ``class score x y w h``) as a box; ValueError
    with the reason it cannot be read."""
    names = _TXT_FIELDS[box_format]
    layout = f"'class score {' '.join(names)}'"
    fields = line.split()
    if len(fields) < 6:
        missing = " (a score is required)" if len(fields) == 5 else ""
        raise ValueError(f"expected {layout}, got {len(fields)} fields{missing}")
    name, *numbers = line.rsplit(None, 5)
    name = name.strip()
    problem = class_name_problem(name)
    if problem is not None:
        raise ValueError(f"class name {problem}")
    if len(fields) > 6 and number_problem(name.split()[-1])[0] is not None:
        # A class name of several words ending in a number is a line with too many fields
        # (an extra column), not a class: it would count as a false positive of its own.
        raise ValueError(f"expected {layout}, got {len(fields)} fields")
    values = []
    for text, what in zip(numbers, ("score", *names), strict=True):
        value, problem = number_problem(text)
        if value is None:
            raise ValueError(f"{what} {problem}: {text!r}")
        values.append(value)
    score, a, b, c, d = values
    if box_format == "xywh":
        if c < 0 or d < 0:
            raise ValueError(f"{'w' if c < 0 else 'h'} {min(c, d):g} is negative")
        c, d = a + c, b + d
    for value, what in zip((a, b, c, d), ("x1", "y1", "x2", "y2"), strict=True):
        problem = coordinate_problem(value)
        if problem is not None:
            raise ValueError(f"{what} {value:g} {problem}")
    problem = corner_problem(a, b, c, d, ("x1", "y1", "x2", "y2"))
    if problem is not None:
        raise ValueError(problem)
    return Box(name, a, b, c, d, score=score)


def _read_txt(root: str, gt: _GroundTruth, box_format: BoxFormat, max_bytes: int) -> AnnotationSet:
    def read_line(line: str, number: int) -> Box | None:
        if not line.strip():
            return None
        return replace(_txt_line(line, box_format), line=number)

    def reader_of(key: str, path: str) -> LineReader:
        return read_line

    # Lines as an editor counts them: LF or CRLF ends one, nothing else does.
    return _read_line_files(root, gt, max_bytes, reader_of, lambda text: text.split("\n"))


# The entry point ------------------------------------------------------------------------


def read_detections(
    pred_format: PredFormat,
    path: str | os.PathLike[str],
    gt: ColumnSet,
    *,
    coco_gt: str | os.PathLike[str] | None = None,
    names: Sequence[str] | None = None,
    names_path: str | os.PathLike[str] | None = None,
    box_format: BoxFormat = "xyxy",
    max_bytes: int = DEFAULT_MAX_BYTES,
    images: Iterable[str] | None = None,
) -> ColumnSet:
    """Read predictions written by a detector into columns paired with ``gt``'s images.

    Args:
        pred_format: ``coco``, ``yolo`` or ``voc-results`` (XML is read by
            :func:`vocmatch.readers.scan.read_columns`).
        path: The results JSON file (``coco``) or the folder of txt files.
        gt: The ground truth: its keys name the images, its ``<size>`` scales YOLO's
            normalised coordinates.
        coco_gt: A COCO ground-truth file naming image and category ids (``coco``).
        names: Class names in index order (``yolo``; see :func:`read_class_list`).
        names_path: The file ``names`` were read from: not a label file if it lies among
            them (LabelImg writes ``classes.txt`` beside the labels).
        box_format: How a ``txt`` line gives its box: ``xyxy`` (corners) or ``xywh``
            (top-left corner, width, height).
        max_bytes: Per-file size limit of txt files.
        images: Every ground-truth key of the run, when ``gt`` holds one shard of them: the
            predictions of the other images are left out (neither read where they have
            files of their own, nor reported), names are paired as in the whole run.

    Returns:
        The predictions, one image per key; lines or records that cannot be read are in
        ``skipped`` with their line, their image left out of the evaluation.

    Raises:
        InputError: The input cannot be used at all (a missing file or folder, a results
            file that names no ground-truth image, numeric ids without ``coco_gt``).
        AnnotationError: A file is not valid JSON, or a COCO ground-truth file is malformed.
    """
    record = prediction_format(pred_format)
    if record.reader is None:
        raise InputError(f"{pred_format!r} is not a format read here")
    max_bytes = checked_max_bytes(max_bytes)
    request = DetectionRequest(
        index=_GroundTruth.of(gt, images),
        coco_gt=os.fspath(coco_gt) if coco_gt else None,
        names=names,
        names_path=os.fspath(names_path) if names_path is not None else None,
        max_bytes=max_bytes,
        box_format=box_format,
    )
    annotations: AnnotationSet = record.read(os.fspath(path), request)
    return columns_from_annotations(annotations)


@dataclass(frozen=True, slots=True)
class DetectionRequest:
    """What a format's reader is given besides the path (see :func:`read_detections`).

    Attributes:
        index: The ground truth's images, by key and by name.
        coco_gt: A COCO ground-truth file naming image and category ids.
        names: Class names in index order.
        names_path: The file ``names`` were read from.
        max_bytes: Per-file size limit of txt files.
        box_format: How a ``txt`` line gives its box.
    """

    index: _GroundTruth
    coco_gt: str | None
    names: Sequence[str] | None
    names_path: str | None
    max_bytes: int
    box_format: BoxFormat = "xyxy"


def read_coco_detections(where: str, request: DetectionRequest) -> AnnotationSet:
    """A COCO results JSON file's detections (``pred_format="coco"``)."""
    if os.path.isdir(where):
        raise InputError(
            Message(
                f"{where}: a directory; ",
                Option("pred_format", "coco"),
                " reads a results JSON file",
            )
        )
    return _read_coco(where, request.index, request.coco_gt)


def read_yolo_detections(where: str, request: DetectionRequest) -> AnnotationSet:
    """A folder of YOLO txt files' detections (``pred_format="yolo"``)."""
    if request.names is None:
        raise RequestError("names", prediction_format("yolo").missing)
    return _read_yolo(where, request.index, request.names, request.max_bytes, request.names_path)


def read_voc_result_detections(where: str, request: DetectionRequest) -> AnnotationSet:
    """A folder of the VOC devkit's result files' detections (``pred_format="voc-results"``)."""
    return _read_voc_results(where, request.index, request.max_bytes)


def read_txt_detections(where: str, request: DetectionRequest) -> AnnotationSet:
    """A folder of txt files' class-named boxes in pixels, one file per image
    (``pred_format="txt"``)."""
    return _read_txt(where, request.index, request.box_format, request.max_bytes)

"""Which classes are evaluated, and under which names: a map from the predictions' class names
to the ground truth's (a detector trained on COCO says ``tv`` where VOC says ``tvmonitor``),
a selection of classes, and class-agnostic matching.

Everything here works on the columns before evaluation, so the evaluator sees ordinary
columns, and each change leaves a note (with counts) that the reports carry.

A class map file is CSV, one ``pred,gt`` pair a line: the prediction class ``pred`` is
evaluated as the ground-truth class ``gt``; ``pred,`` (nothing after the comma) drops the
prediction class. Blank lines and lines starting with ``#`` are skipped; a name with a comma
is quoted (``"a, b",c``). A prediction class the map does not name is kept as it is.

When class names are folded to lower case (box evaluation's ``fold_case``, and always for
label sets), the map's prediction names are folded too: ``Dog,animal`` maps ``dog`` and
``DOG``. Two names that fold to one (``Dog`` and ``dog``) must then map to one class.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from vocmatch.errors import AnnotationError, InputError
from vocmatch.limits import MAX_MAP_BYTES
from vocmatch.readers.regular_files import read_bytes
from vocmatch.readers.scan import ColumnSet

if TYPE_CHECKING:
    from vocmatch.evaluation.map_hints import MapHint

__all__ = [
    "AGNOSTIC_CLASS",
    "BUILTIN_MAPS",
    "COCO_TO_VOC",
    "SHOWN_NAMES",
    "ClassChoice",
    "ClassMap",
    "builtin_map_hint",
    "choice_notes",
    "choose_classes",
    "class_counts",
    "class_map",
    "no_shared_class",
    "no_shared_name",
    "read_class_map",
]


#: The one class of class-agnostic matching.
AGNOSTIC_CLASS = "object"

#: The 80 COCO detection classes (pycocotools' ``categories[].name``, instances_val2017.json).
COCO_CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat",
    "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack",
    "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball",
    "kite", "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket",
    "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair",
    "couch", "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse",
    "remote", "keyboard", "cell phone", "microwave", "oven", "toaster", "sink",
    "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier",
    "toothbrush",
)  # fmt: skip

#: The 20 PASCAL VOC classes by their COCO names (the VOC devkit's names where they differ).
_VOC_BY_COCO = {
    "airplane": "aeroplane",
    "bicycle": "bicycle",
    "bird": "bird",
    "boat": "boat",
    "bottle": "bottle",
    "bus": "bus",
    "car": "car",
    "cat": "cat",
    "chair": "chair",
    "cow": "cow",
    "dining table": "diningtable",
    "dog": "dog",
    "horse": "horse",
    "motorcycle": "motorbike",
    "person": "person",
    "potted plant": "pottedplant",
    "sheep": "sheep",
    "couch": "sofa",
    "train": "train",
    "tv": "tvmonitor",
}

#: COCO names to VOC names; the 60 COCO classes with no VOC counterpart are dropped.
COCO_TO_VOC: tuple[tuple[str, str | None], ...] = tuple(
    (name, _VOC_BY_COCO.get(name)) for name in COCO_CLASSES
)


@dataclass(frozen=True, slots=True)
class ClassMap:
    """Prediction class names and the ground-truth name each is evaluated as.

    Attributes:
        source: Where the map comes from: a file's path or a built-in map's name.
        entries: ``(pred, gt)`` pairs in file order; ``gt`` None drops the prediction class.
        lines: The file line of each entry (empty for a built-in map).
    """

    source: str
    entries: tuple[tuple[str, str | None], ...]
    lines: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, str | None]:
        """The entries by prediction name."""
        return dict(self.entries)

    def folded(self) -> dict[str, str | None]:
        """The entries by lower-cased prediction name, for names folded to lower case.

        Entries whose names fold to one are one entry when their ground-truth names fold to
        one too (or both drop the class); the first spelling is kept.

        Raises:
            AnnotationError: ``source:line``: two prediction names fold to one and map to
                different classes (which one was meant cannot be told).

        >>> ClassMap("m.csv", (("Dog", "Animal"), ("dog", "animal"), ("cat", None))).folded()
        {'dog': 'Animal', 'cat': None}
        """
        targets: dict[str, str | None] = {}
        first: dict[str, int] = {}
        for index, (pred, gt) in enumerate(self.entries):
            key = pred.lower()
            if key not in first:
                first[key] = index
                targets[key] = gt
                continue
            earlier, other = self.entries[first[key]]
            if _folded(other) != _folded(gt):
                raise AnnotationError(
                    self.source,
                    f"classes {pred!r} and {earlier!r}{self._line_of(first[key])} are one class "
                    f"when names are folded to lower case, but are mapped to {_target(gt)} and "
                    f"{_target(other)}: map the class once",
                    self.lines[index] if self.lines else None,
                )
        return targets

    def _line_of(self, index: int) -> str:
        return f" (line {self.lines[index]})" if self.lines else ""


def _folded(name: str | None) -> str | None:
    return None if name is None else name.lower()


def _target(name: str | None) -> str:
    """A ground-truth name of a map as a message shows it."""
    return repr(name) if name is not None else "nothing (dropped)"


#: The maps a name gives without a file.
BUILTIN_MAPS: Mapping[str, ClassMap] = {"coco-to-voc": ClassMap("coco-to-voc", COCO_TO_VOC)}


def class_map(spec: str | os.PathLike[str]) -> ClassMap:
    """A built-in map by name (``coco-to-voc``), else the map file at ``spec``."""
    text = os.fspath(spec)
    if text in BUILTIN_MAPS:
        return BUILTIN_MAPS[text]
    return read_class_map(text)


def read_class_map(path: str | os.PathLike[str]) -> ClassMap:
    """Read a class map file: ``pred,gt`` CSV lines (``pred,`` drops ``pred``).

    Raises:
        AnnotationError: ``path:line``: a line without exactly two fields, an empty
            prediction name, or a prediction name given twice.
        InputError: The file cannot be read, or maps no class.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    ...     _ = f.write("# coco name, voc name\\ntv,tvmonitor\\nbench,\\n")
    >>> read_class_map(f.name).entries
    (('tv', 'tvmonitor'), ('bench', None))
    """
    name = os.fspath(path)
    try:
        raw = read_bytes(name, MAX_MAP_BYTES)
    except AnnotationError as error:
        if error.line is None:
            known = ", ".join(sorted(BUILTIN_MAPS))
            raise InputError(
                f"{error} (a class map is a file of pred,gt lines or a built-in map: {known})"
            ) from None
        raise
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        at = raw[: error.start].count(b"\n") + 1
        raise AnnotationError(name, "not UTF-8 text: not a class map", at) from None
    import csv

    entries: list[tuple[str, str | None]] = []
    lines: list[int] = []
    first: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = next(csv.reader([line]))
        if len(fields) != 2:
            raise AnnotationError(
                name,
                f"expected pred,gt (two fields; pred, drops the class), got {len(fields)}: "
                f"{line.strip()!r}",
                number,
            )
        pred, gt = fields[0].strip(), fields[1].strip()
        if not pred:
            raise AnnotationError(name, "the prediction class name is empty", number)
        if pred in first:
            raise AnnotationError(
                name, f"class {pred!r} mapped twice (first on line {first[pred]})", number
            )
        first[pred] = number
        entries.append((pred, gt or None))
        lines.append(number)
    if not entries:
        raise InputError(f"{name}: maps no class (one pred,gt pair a line)")
    return ClassMap(name, tuple(entries), tuple(lines))


@dataclass(frozen=True, slots=True)
class ClassChoice:
    """The classes a run evaluates and their names.

    Attributes:
        class_map: Prediction names to ground-truth names (applied first).
        classes: Evaluate only these classes (after the map); empty: every class.
        agnostic: Evaluate every class as one, :data:`AGNOSTIC_CLASS`.
    """

    class_map: ClassMap | None = None
    classes: tuple[str, ...] = ()
    agnostic: bool = False

    def __bool__(self) -> bool:
        return self.class_map is not None or bool(self.classes) or self.agnostic


def choose_classes(
    gt: ColumnSet,
    pred: ColumnSet,
    choice: ClassChoice,
    fold_case: bool = False,
    *,
    whole: bool = True,
) -> tuple[ColumnSet, ColumnSet]:
    """The columns renamed, selected and merged as ``choice`` says, each step noted.

    Args:
        gt: The ground truth.
        pred: The predictions.
        choice: What to change.
        fold_case: Compare class names lower-cased, as matching will: the map's prediction
            names and the names of ``choice.classes``.
        whole: The columns hold every image; False for a shard of them, where a class
            of ``choice.classes`` may be in other shards only (it is then not refused).

    Raises:
        AnnotationError: With ``fold_case``, two prediction names of the map fold to one
            and map to different classes (see :meth:`ClassMap.folded`).
        InputError: A class of ``choice.classes`` is in neither set (with ``whole``).
    """
    gt_notes, pred_notes = choice_notes(
        class_counts(gt), class_counts(pred), choice, fold_case, whole=whole
    )
    if choice.class_map is not None:
        pred = _relabel(pred, _mapped_names(pred.label_names, choice.class_map, fold_case))
    if choice.classes:
        wanted = {_key(n, fold_case) for n in choice.classes}
        gt = _relabel(gt, [n if _key(n, fold_case) in wanted else None for n in gt.label_names])
        pred = _relabel(
            pred, [n if _key(n, fold_case) in wanted else None for n in pred.label_names]
        )
    if choice.agnostic:
        gt = _relabel(gt, [AGNOSTIC_CLASS] * len(gt.label_names))
        pred = _relabel(pred, [AGNOSTIC_CLASS] * len(pred.label_names))
    return replace(gt, notes=(*gt.notes, *gt_notes)), replace(
        pred, notes=(*pred.notes, *pred_notes)
    )


def class_counts(columns: ColumnSet) -> dict[str, int]:
    """Each class name of ``columns`` and its count of objects (0 for a name no row uses):
    what :func:`choice_notes` reads, added up over the parts of a run read apart."""
    counts = np.bincount(columns.labels, minlength=len(columns.label_names)).tolist()
    return dict(zip(columns.label_names, counts, strict=True))


def choice_notes(
    gt: Mapping[str, int],
    pred: Mapping[str, int],
    choice: ClassChoice,
    fold_case: bool = False,
    *,
    whole: bool = True,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The notes :func:`choose_classes` adds to the ground truth and to the predictions, from
    each side's :func:`class_counts` (of every image: counts of parts read apart add up).

    Raises:
        AnnotationError: With ``fold_case``, two prediction names of the map fold to one
            and map to different classes.
        InputError: A class of ``choice.classes`` is in neither set (with ``whole``).
    """
    gt_notes: list[str] = []
    pred_notes: list[str] = []
    if choice.class_map is not None:
        names = sorted(pred)
        new_names = _mapped_names(names, choice.class_map, fold_case)
        pred_notes.append(_map_note(pred, names, new_names, choice.class_map, fold_case))
        mapped: dict[str, int] = {}
        for name, new in zip(names, new_names, strict=True):
            if new is not None:
                mapped[new] = mapped.get(new, 0) + pred[name]
        pred = mapped
    if choice.classes:
        gt_notes.append(_selected_note(gt, pred, choice.classes, fold_case, whole))
        wanted = {_key(n, fold_case) for n in choice.classes}
        gt = {n: c for n, c in gt.items() if _key(n, fold_case) in wanted}
        pred = {n: c for n, c in pred.items() if _key(n, fold_case) in wanted}
    if choice.agnostic:
        gt_classes = sum(1 for c in gt.values() if c)
        pred_classes = sum(1 for c in pred.values() if c)
        gt_notes.append(
            f"class-agnostic: {_plural(gt_classes, 'ground-truth class')} and "
            f"{_plural(pred_classes, 'prediction class')} evaluated as one class "
            f"{AGNOSTIC_CLASS!r}"
        )
    return tuple(gt_notes), tuple(pred_notes)


def _counts(columns: ColumnSet) -> Counter[str]:
    counts = np.bincount(columns.labels, minlength=len(columns.label_names)).tolist()
    return Counter({n: c for n, c in zip(columns.label_names, counts, strict=True) if c})


def _key(name: str, fold_case: bool) -> str:
    return name.lower() if fold_case else name


def _plural(count: int, word: str) -> str:
    """``1 class``, ``2 classes``, ``3 predictions``."""
    if count == 1:
        return f"{count:,} {word}"
    return f"{count:,} {word}es" if word.endswith("s") else f"{count:,} {word}s"


def _relabel(columns: ColumnSet, new_names: Sequence[str | None]) -> ColumnSet:
    """``columns`` with class ``k`` renamed ``new_names[k]``; rows of a None name dropped."""
    kept_names = sorted({n for n in new_names if n is not None})
    index = {n: i for i, n in enumerate(kept_names)}
    remap = np.array([index.get(n, -1) if n is not None else -1 for n in new_names], np.int32)
    labels = remap[columns.labels] if columns.labels.size else columns.labels
    keep = labels >= 0
    renamed = replace(columns, labels=labels.astype(np.int32), label_names=tuple(kept_names))
    if bool(keep.all()):
        return renamed
    return _rows(renamed, keep)


def _rows(columns: ColumnSet, keep: npt.NDArray[np.bool_]) -> ColumnSet:
    """The rows of ``columns`` where ``keep`` holds; every image stays (maybe empty)."""
    rows = np.flatnonzero(keep)
    place = np.full(keep.size, -1, dtype=np.int64)
    place[rows] = np.arange(rows.size)
    return replace(
        columns,
        image=columns.image[rows],
        labels=columns.labels[rows],
        boxes=columns.boxes[rows],
        difficult=columns.difficult[rows],
        truncated=columns.truncated[rows],
        occluded=columns.occluded[rows],
        pose=columns.pose[rows],
        scores=columns.scores[rows],
        shapes=tuple((int(place[r]), s) for r, s in columns.shapes if keep[r]),
        bndboxes=tuple((int(place[r]), b) for r, b in columns.bndboxes if keep[r]),
    )


#: Classes a note names before counting the rest.
_NOTE_NAMES = 8


def _listed(pairs: Sequence[tuple[str, int]]) -> str:
    shown = ", ".join(f"{name} {count:,}" for name, count in pairs[:_NOTE_NAMES])
    more = len(pairs) - _NOTE_NAMES
    return shown + (f" and {more:,} more" if more > 0 else "")


def _changed(verb: str, pairs: Sequence[tuple[str, int]]) -> str:
    """``renamed 15 predictions of 2 classes (tv -> tvmonitor 12, couch -> sofa 3)``."""
    total = sum(count for _, count in pairs)
    return (
        f"{verb} {_plural(total, 'prediction')} of {_plural(len(pairs), 'class')} "
        f"({_listed(pairs)})"
    )


def _mapped_names(names: Sequence[str], chosen: ClassMap, fold_case: bool) -> list[str | None]:
    """Each prediction class's name under the map (None: dropped); with ``fold_case`` the
    names are looked up lower-cased."""
    targets = chosen.folded() if fold_case else chosen.as_dict()
    return [targets.get(_key(n, fold_case), n) for n in names]


def _map_note(
    counts: Mapping[str, int],
    names: Sequence[str],
    new_names: Sequence[str | None],
    chosen: ClassMap,
    fold_case: bool,
) -> str:
    """What the map changed; a class whose new name differs from its own in case only is
    not counted as renamed under ``fold_case`` (matching folds both)."""
    targets = chosen.folded() if fold_case else chosen.as_dict()
    found = {
        n: new for n, new in zip(names, new_names, strict=True) if _key(n, fold_case) in targets
    }
    renamed = sorted(
        (
            (f"{n} -> {gt}", counts[n])
            for n, gt in found.items()
            if gt is not None and _key(gt, fold_case) != _key(n, fold_case) and counts[n]
        ),
        key=lambda entry: (-entry[1], entry[0]),
    )
    dropped = sorted(
        ((n, counts[n]) for n, gt in found.items() if gt is None and counts[n]),
        key=lambda entry: (-entry[1], entry[0]),
    )
    parts = []
    if renamed:
        parts.append(_changed("renamed", renamed))
    if dropped:
        parts.append(_changed("dropped", dropped))
    return f"class map {chosen.source}: " + ("; ".join(parts) if parts else "no class changed")


def _selected_note(
    gt: Mapping[str, int],
    pred: Mapping[str, int],
    classes: Sequence[str],
    fold_case: bool,
    whole: bool,
) -> str:
    """What keeping only ``classes`` leaves out.

    Raises:
        InputError: A class of ``classes`` is in neither set (with ``whole``).
    """
    known = sorted({*gt, *pred})
    known_keys = {_key(n, fold_case) for n in known}
    for name in classes if whole else ():
        if _key(name, fold_case) not in known_keys:
            import difflib  # only for the hint

            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InputError(
                f"class {name!r} is in neither the ground truth nor the predictions{hint}"
            )
    wanted = {_key(n, fold_case) for n in classes}
    others = sorted(
        {n for n, c in [*gt.items(), *pred.items()] if c and _key(n, fold_case) not in wanted}
    )
    gt_out = sum(gt.get(n, 0) for n in others)
    pred_out = sum(pred.get(n, 0) for n in others)
    note = f"classes: evaluating only {', '.join(classes)}"
    if others:
        note += (
            f"; left out {_plural(gt_out, 'ground-truth object')} and "
            f"{_plural(pred_out, 'prediction')} of {_plural(len(others), 'other class')}"
        )
    return note


#: The class names a message names before it says how many more.
SHOWN_NAMES = 3


def builtin_map_hint(gt_names: Sequence[str], pred_only: Sequence[str]) -> MapHint | None:
    """The first built-in map that renames a prediction-only class to a ground-truth class,
    or None.

    Args:
        gt_names: The classes with ground truth.
        pred_only: The classes found only in the predictions, in the order to name them.

    >>> builtin_map_hint(["motorbike", "person"], ["motorcycle", "hair drier"])
    MapHint(name='coco-to-voc', renamed=(('motorcycle', 'motorbike'),))
    >>> builtin_map_hint(["person"], ["truck"]) is None
    True
    """
    known = set(gt_names)
    for name, chosen in BUILTIN_MAPS.items():
        entries = chosen.as_dict()
        renamed = tuple(
            (pred, gt)
            for pred in pred_only
            if (gt := entries.get(pred)) is not None and gt != pred and gt in known
        )
        if renamed:
            from vocmatch.evaluation.map_hints import MapHint

            return MapHint(name, renamed)
    return None


def no_shared_class(gt: ColumnSet, pred: ColumnSet, fold_case: bool = False) -> str | None:
    """Why no prediction can match, when the predictions name classes and not one of them is
    a ground-truth class (a names file or a class map of another data set); else None.

    Predictions of none of the ground truth's classes would score mAP 0 with every
    prediction a false positive: nearly always names from another tool, not a model.

    Returns:
        One sentence naming a few classes of each side, or None.
    """
    return no_shared_name(list(_counts(gt)), list(_counts(pred)), fold_case)


def no_shared_name(
    gt_names: Sequence[str], pred_names: Sequence[str], fold_case: bool = False
) -> str | None:
    """:func:`no_shared_class` of the class names each side holds a box of, in the
    columns' order (sorted)."""
    if not gt_names or not pred_names:
        return None

    def key(name: str) -> str:
        return name.lower() if fold_case else name

    if {key(n) for n in gt_names} & {key(n) for n in pred_names}:
        return None

    def some(names: Sequence[str]) -> str:
        shown = ", ".join(repr(n) for n in names[:SHOWN_NAMES])
        more = len(names) - SHOWN_NAMES
        return shown + (f" and {more:,} more" if more > 0 else "")

    folded = {n.lower() for n in gt_names} & {n.lower() for n in pred_names}
    case = "; some are equal but for letter case" if folded else ""
    return (
        f"no prediction class is a ground-truth class: the predictions name {some(pred_names)}, "
        f"the ground truth {some(gt_names)}{case}"
    )

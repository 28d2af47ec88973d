"""What the notes of a run's reading are worded from: counts of the files as read, which add
up over the parts or shards of a run read apart, so that the notes of the whole are those
one process reading every file gives.

A saved shard keeps them (:class:`ReadingNotes`, in its header's ``shard`` object), and the
merge of a run's shards words the notes from their sum: the class choice's (and its refusal
of a class no shard found), the geometry's, the split's and the folder walk's, as one run
says them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vocmatch.errors import StateError
from vocmatch.evaluation.class_map import ClassChoice, ClassMap, choice_notes, class_counts
from vocmatch.evaluation.score_counts import ScoreCounts  # its own module; named here too
from vocmatch.readers.scan import ColumnSet
from vocmatch.readers.shapes import GEOMETRIES, Geometry, geometry_note, shape_counts
from vocmatch.words import plural

__all__ = [
    "ReadCounts",
    "ReadingNotes",
    "ScoreCounts",
    "SplitCount",
    "count_pair_of",
    "name_counts_of",
]


@dataclass(frozen=True, slots=True)
class ReadCounts:
    """What the notes of the class choice and of the geometry are worded from, of the files
    as read: counts that add up over the parts of a run.

    Attributes:
        gt_classes: Each ground-truth class name and its count of objects, sorted by name.
        pred_classes: The same of the predictions.
        gt_shapes: Ground-truth objects that are a shape with a ``<bndbox>``, and alone.
        pred_shapes: The same of the predictions.
    """

    gt_classes: tuple[tuple[str, int], ...] = ()
    pred_classes: tuple[tuple[str, int], ...] = ()
    gt_shapes: tuple[int, int] = (0, 0)
    pred_shapes: tuple[int, int] = (0, 0)

    @classmethod
    def of(cls, gt: ColumnSet, pred: ColumnSet) -> ReadCounts:
        """The counts of columns as read."""
        return cls(
            tuple(sorted(class_counts(gt).items())),
            tuple(sorted(class_counts(pred).items())),
            shape_counts(gt),
            shape_counts(pred),
        )

    def plus(self, other: ReadCounts) -> ReadCounts:
        """The counts of both parts."""

        def added(
            a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]
        ) -> tuple[tuple[str, int], ...]:
            total = dict(a)
            for name, count in b:
                total[name] = total.get(name, 0) + count
            return tuple(sorted(total.items()))

        return ReadCounts(
            added(self.gt_classes, other.gt_classes),
            added(self.pred_classes, other.pred_classes),
            _pair_sum(self.gt_shapes, other.gt_shapes),
            _pair_sum(self.pred_shapes, other.pred_shapes),
        )

    def notes(
        self,
        class_choice: ClassChoice | None,
        fold_case: bool,
        geometry: Geometry,
        *,
        whole: bool = True,
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The notes one process adds to the ground truth and to the predictions it read
        (the class choice's, then the geometry's), under a run's class choice, case folding
        and geometry.

        Args:
            class_choice: The run's class choice, or None.
            fold_case: Class names are compared lower-cased.
            geometry: ``shape`` or ``box``.
            whole: The counts are of every image of the run (not of some of its shards),
                so a class chosen that they do not hold is in neither set.

        Raises:
            InputError: A class chosen is in neither set (with ``whole``).
            AnnotationError: With ``fold_case``, two names of the class map fold to one
                and map to different classes.
        """
        gt_notes: tuple[str, ...] = ()
        pred_notes: tuple[str, ...] = ()
        if class_choice:
            gt_notes, pred_notes = choice_notes(
                dict(self.gt_classes), dict(self.pred_classes), class_choice, fold_case,
                whole=whole,
            )  # fmt: skip
        sides = (("ground truth", self.gt_shapes), ("predictions", self.pred_shapes))
        found = [geometry_note(geometry, side, *counts) for side, counts in sides]
        return (
            (*gt_notes, *([found[0]] if found[0] is not None else [])),
            (*pred_notes, *([found[1]] if found[1] is not None else [])),
        )


def _pair_sum(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] + b[0], a[1] + b[1]


@dataclass(frozen=True, slots=True)
class SplitCount:
    """What the note of a split is worded from.

    Attributes:
        path: The split's file.
        listed: The images it lists (of those read: a shard's own).
        left_out: Prediction files of images of other splits, not evaluated.
    """

    path: str
    listed: int
    left_out: int = 0

    def note(self) -> str:
        """The note of the split, as a run says it."""
        note = f"split {self.path}: {plural(self.listed, 'image')} listed"
        if self.left_out:
            note += (
                f"; {plural(self.left_out, 'image')} of other splits in the predictions, "
                "not evaluated"
            )
        return note


@dataclass(frozen=True, slots=True)
class ReadingNotes:
    """What the notes of a run's reading are worded from, of the files one shard read: its
    counts add up over the shards of the run; the rest is the run's and the same in each.

    Attributes:
        counts: The class and shape counts of the files as read (before the class choice).
        class_choice: The run's class choice, or None.
        fold_case: Class names are compared lower-cased.
        geometry: ``shape`` or ``box``.
        gt_listing: The notes of the listing of the ground-truth folder (its walk).
        pred_listing: The same of the predictions.
        split: The split's counts, when a split is read.
    """

    counts: ReadCounts = ReadCounts()
    class_choice: ClassChoice | None = None
    fold_case: bool = False
    geometry: Geometry = "shape"
    gt_listing: tuple[str, ...] = ()
    pred_listing: tuple[str, ...] = ()
    split: SplitCount | None = None

    @classmethod
    def total(cls, shards: Sequence[ReadingNotes | None]) -> ReadingNotes | None:
        """The ingredients of shards merged, added up; None unless every shard has them and
        all were read under the same choices."""
        if not shards or any(shard is None for shard in shards):
            return None
        first, *rest = (shard for shard in shards if shard is not None)
        total = first
        for shard in rest:
            if not first.same_run(shard):
                return None
            total = total.plus(shard)
        return total

    def same_run(self, other: ReadingNotes) -> bool:
        """Both were read under the same choices (their notes can be added up)."""
        return (
            self.class_choice == other.class_choice
            and self.fold_case == other.fold_case
            and self.geometry == other.geometry
            and (self.split is None) == (other.split is None)
            and (self.split is None or other.split is None or self.split.path == other.split.path)
        )

    def plus(self, other: ReadingNotes) -> ReadingNotes:
        """The notes' ingredients of both shards (of one run: :meth:`same_run`)."""
        split = self.split
        if split is not None and other.split is not None:
            split = SplitCount(
                split.path, split.listed + other.split.listed, split.left_out + other.split.left_out
            )
        return ReadingNotes(
            self.counts.plus(other.counts), self.class_choice, self.fold_case, self.geometry,
            _once(self.gt_listing, other.gt_listing), _once(self.pred_listing, other.pred_listing),
            split,
        )  # fmt: skip

    def notes(self, *, whole: bool = True) -> tuple[str, ...]:
        """The reading's notes, in the order one run gives them: the ground truth's (its
        folder walk, the split, the class choice, the geometry), then the predictions'.

        Raises:
            InputError: A class chosen is in neither set (with ``whole``: the shards are
                every shard of the run).
            AnnotationError: With ``fold_case``, two names of the class map fold to one
                and map to different classes.
        """
        gt_notes, pred_notes = self.counts.notes(
            self.class_choice, self.fold_case, self.geometry, whole=whole
        )
        split = (self.split.note(),) if self.split is not None else ()
        return (*self.gt_listing, *split, *gt_notes, *self.pred_listing, *pred_notes)

    def to_header(self) -> dict[str, Any]:
        """The JSON object a state's header keeps them in."""
        choice = self.class_choice
        counts = self.counts
        return {
            "gt_classes": [list(pair) for pair in counts.gt_classes],
            "pred_classes": [list(pair) for pair in counts.pred_classes],
            "gt_shapes": list(counts.gt_shapes),
            "pred_shapes": list(counts.pred_shapes),
            "class_choice": None if choice is None else _choice_to_header(choice),
            "fold_case": self.fold_case,
            "geometry": self.geometry,
            "gt_listing": list(self.gt_listing),
            "pred_listing": list(self.pred_listing),
            "split": None
            if self.split is None
            else [self.split.path, self.split.listed, self.split.left_out],
        }

    @classmethod
    def of_header(cls, value: object, source: str) -> ReadingNotes:
        """What :meth:`to_header` wrote.

        Raises:
            StateError: Anything else (one line naming ``source``).
        """
        bad = StateError(f"{source}: corrupted header (shard reading)")
        if not isinstance(value, Mapping):
            raise bad
        fold_case, geometry = value.get("fold_case"), value.get("geometry")
        if type(fold_case) is not bool or geometry not in GEOMETRIES:
            raise bad
        counts = ReadCounts(
            name_counts_of(value.get("gt_classes"), bad),
            name_counts_of(value.get("pred_classes"), bad),
            count_pair_of(value.get("gt_shapes"), bad),
            count_pair_of(value.get("pred_shapes"), bad),
        )
        split = value.get("split")
        if split is not None:
            if not (
                isinstance(split, list)
                and len(split) == 3
                and isinstance(split[0], str)
                and all(_count(n) for n in split[1:])
            ):
                raise bad
            split = SplitCount(split[0], split[1], split[2])
        return cls(
            counts, _choice_of_header(value.get("class_choice"), bad), fold_case, geometry,
            _strings(value.get("gt_listing"), bad), _strings(value.get("pred_listing"), bad),
            split,
        )  # fmt: skip


def _once(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    """The notes of ``a``, then those of ``b`` not among them (every shard lists the same
    folders: their notes are said once)."""
    return (*a, *(note for note in b if note not in a))


def _choice_to_header(choice: ClassChoice) -> dict[str, Any]:
    mapped = choice.class_map
    return {
        "class_map": None
        if mapped is None
        else {
            "source": mapped.source,
            "entries": [list(entry) for entry in mapped.entries],
            "lines": list(mapped.lines),
        },
        "classes": list(choice.classes),
        "agnostic": choice.agnostic,
    }


def _choice_of_header(value: object, bad: StateError) -> ClassChoice | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or type(value.get("agnostic")) is not bool:
        raise bad
    mapped = value.get("class_map")
    class_map = None
    if mapped is not None:
        if not isinstance(mapped, Mapping) or not isinstance(mapped.get("source"), str):
            raise bad
        entries = mapped.get("entries")
        lines = mapped.get("lines")
        if not (
            isinstance(entries, list)
            and all(
                isinstance(e, list)
                and len(e) == 2
                and isinstance(e[0], str)
                and (e[1] is None or isinstance(e[1], str))
                for e in entries
            )
            and isinstance(lines, list)
            and all(_count(n) for n in lines)
        ):
            raise bad
        class_map = ClassMap(mapped["source"], tuple((e[0], e[1]) for e in entries), tuple(lines))
    return ClassChoice(class_map, _strings(value.get("classes"), bad), value["agnostic"])


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def _strings(value: object, bad: StateError) -> tuple[str, ...]:
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise bad
    return tuple(value)


def count_pair_of(value: object, bad: StateError) -> tuple[int, int]:
    """Two counts as a header lists them (``[n, m]``), each a whole number >= 0.

    Raises:
        StateError: ``bad``, for anything else.
    """
    if not (isinstance(value, list) and len(value) == 2 and all(_count(n) for n in value)):
        raise bad
    return value[0], value[1]


def name_counts_of(value: object, bad: StateError) -> tuple[tuple[str, int], ...]:
    """Class names and their counts as a header lists them (``[[name, count], ...]``): each
    name once, each count a whole number >= 0; sorted by name.

    Raises:
        StateError: ``bad``, for anything else.
    """
    if not (
        isinstance(value, list)
        and all(
            isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) and _count(e[1])
            for e in value
        )
    ):
        raise bad
    pairs = tuple((e[0], e[1]) for e in value)
    if len({name for name, _ in pairs}) != len(pairs):
        raise bad
    return tuple(sorted(pairs))

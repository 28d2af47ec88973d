"""The joined layout of a run's cache: every chunk's match records joined once, in key
order, with the classes' rankings, and beside them what each chunk adds up to
(:mod:`vocmatch.evaluation.shards.cache_file` reads and writes it).

A chunk is a run of consecutive image keys, so its images, and their predictions, are one
run of the joined records' rows: a run whose files changed in a few chunks takes the rows
of the others from the joined records as they are and puts the changed chunks' new
records in their place (:func:`spliced`), instead of decoding and joining every chunk's
records. What does not break down by images (each class's counts, the notes'
ingredients, whether a box lies beyond COCO's area "all") is kept per chunk
(:class:`ChunkEntry`) and added up again. The rankings are merged: the joined ranking of
each class without the changed chunks' predictions is one sorted run, each changed
chunk's ranking another.

Records that hold more than this layout keeps (slices, calibration inputs, what a
preparation removed, per-box detail, the unscored reading of images without a scored
prediction) are kept chunk by chunk instead (:func:`spliceable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.errors import StateError
from vocmatch.evaluation.accumulate import ClassCounts
from vocmatch.evaluation.from_records import class_rankings, ranking_score
from vocmatch.evaluation.records import (
    GtCells,
    ImageCounts,
    MatchRecords,
    NoteCounts,
    PredRecords,
    Ranked,
    join_notes,
    odd_counts_valid,
)
from vocmatch.evaluation.score_counts import ScoreCounts
from vocmatch.evaluation.shards.parts import (
    GatheredParts,
    PartListing,
    PartOptions,
    PartRecords,
    PartResult,
    gathered,
)

try:  # the compiled reader, built with the package where a C compiler was found
    from vocmatch.readers import fastxml as _compiled
except ImportError:  # pragma: no cover - a build without a compiler
    _compiled = None  # type: ignore[assignment]

__all__ = [
    "ChunkEntry",
    "JoinedChunks",
    "Segment",
    "check_entries",
    "gathered_joined",
    "merged_ranking",
    "notes_of_header",
    "notes_to_header",
    "ranked_of",
    "spliceable",
    "spliced",
]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class ChunkEntry:
    """What the joined layout keeps of one chunk besides its rows of the joined records.

    Attributes:
        key: The chunk's key (the digest of its files and of the run's options); empty
            when a file of it could not be read (it is read again by the next run).
        images: Its images (rows of the joined records' images).
        preds: Its kept predictions (rows of the joined records' predictions).
        class_names: Its classes, sorted.
        class_counts: ``(K, 7)`` each of its classes' counts
            (:meth:`~vocmatch.evaluation.accumulate.ClassCounts.stacked`).
        coco_gt: ``(K, A)`` each class's ground truth that counts in each COCO area range.
        beyond: Some box's area lies beyond COCO's area "all".
        notes: The notes' ingredients of its images.
        found: What its reading found (skipped files, orphans, counts; no state).
        scores: How many boxes of each side have a score.
        scored: Some prediction of it has a score (else its records hold an unscored
            reading too, which a run with a scored prediction does not read).
    """

    key: str
    images: int
    preds: int
    class_names: tuple[str, ...]
    class_counts: IntArray
    coco_gt: IntArray
    beyond: bool
    notes: NoteCounts
    found: PartResult
    scores: ScoreCounts
    scored: bool = True

    @classmethod
    def of(cls, key: str, part: PartRecords) -> ChunkEntry:
        """The entry of a chunk read and matched (whose records are :func:`spliceable`)."""
        records = part.records
        return cls(
            key,
            len(records.keys),
            int(records.preds.label.size),
            records.class_names,
            records.counts.classes.stacked().astype(np.int64),
            np.asarray(records.coco_gt, dtype=np.int64),
            records.beyond,
            records.notes,
            PartResult(b"", part.gt_skipped, part.pred_skipped, part.orphans, part.counts),
            part.scores,
            records.unscored is None,
        )


@dataclass(frozen=True, slots=True)
class JoinedChunks:
    """The joined layout: the records of every chunk, joined in key order with their
    rankings, and each chunk's entry, in the same order.

    Attributes:
        records: The joined records (``ranked`` set).
        entries: Each chunk's entry, in key order: chunk ``n``'s images follow chunk
            ``n - 1``'s.
    """

    records: MatchRecords
    entries: tuple[ChunkEntry, ...]

    def positions(self) -> dict[str, int]:
        """Each chunk key's place among the entries."""
        return {entry.key: n for n, entry in enumerate(self.entries) if entry.key}

    def starts(self) -> tuple[IntArray, IntArray]:
        """Where each chunk's images and predictions start, and where the last one's end
        (``len(entries) + 1`` each)."""
        images = np.cumsum([0, *(e.images for e in self.entries)], dtype=np.int64)
        preds = np.cumsum([0, *(e.preds for e in self.entries)], dtype=np.int64)
        return images, preds


def spliceable(records: MatchRecords) -> bool:
    """Whether the joined layout holds what a run with a scored prediction reads of
    ``records`` (see the module doc; their unscored reading, when they hold one, is not
    read by such a run)."""
    return (
        records.slices is None
        and records.calibration is None
        and records.removed is None
        and records.detail is None
        and records.gt_cells is not None
    )


def check_entries(joined: JoinedChunks, source: str) -> None:
    """Refuse entries that do not cut the joined records into chunks.

    Raises:
        StateError: The entries' images or predictions do not add up to the records', a
            chunk's predictions are not those of its images, or its classes are not the
            records' (one line naming ``source``).
    """
    records = joined.records
    images, preds = joined.starts()
    if int(images[-1]) != len(records.keys) or int(preds[-1]) != records.preds.label.size:
        raise StateError(f"{source}: corrupted header (chunks do not add up to the records)")
    ends = np.concatenate([[0], np.cumsum(records.preds.count, dtype=np.int64)])
    if not np.array_equal(ends[images], preds):
        raise StateError(f"{source}: corrupted header (a chunk's predictions)")
    names = {name for entry in joined.entries for name in entry.class_names}
    if names != set(records.class_names):
        raise StateError(f"{source}: corrupted header (the chunks' classes)")
    keys = [entry.key for entry in joined.entries if entry.key]
    if len(set(keys)) != len(keys):
        raise StateError(f"{source}: corrupted header (a chunk repeats)")


#: A chunk of a spliced run: its place among the cache's entries (its rows taken from the
#: joined records), or its entry and records as read and matched in this run.
Segment = int | tuple[ChunkEntry, MatchRecords]


def spliced(joined: JoinedChunks, segments: Sequence[Segment]) -> MatchRecords:
    """The records of ``segments`` joined in their order (key order), with the classes'
    rankings: what joining every chunk's records gives, bit for bit.

    Raises:
        StateError: The cache's records label a chunk's prediction or ground truth with a
            class its entry does not name.
    """
    old = joined.records
    entries = [s if isinstance(s, tuple) else (joined.entries[s], None) for s in segments]
    names = tuple(sorted({n for entry, _ in entries for n in entry.class_names}))
    index = {name: k for k, name in enumerate(names)}
    old_remap = np.array([index.get(n, -1) for n in old.class_names], dtype=np.int64)
    image_start, pred_start = joined.starts()
    pieces = _pieces(segments, image_start, pred_start)
    out_preds = np.cumsum([0, *(p.preds for p in pieces)], dtype=np.int64)
    out_images = np.cumsum([0, *(p.images for p in pieces)], dtype=np.int64)
    columns: list[list[npt.NDArray[Any]]] = [[] for _ in range(8)]
    cells: list[tuple[IntArray, IntArray, IntArray, IntArray]] = []
    per_image: list[tuple[tuple[str, ...], tuple[str, ...], tuple[str | None, ...]]] = []
    values: list[npt.NDArray[Any]] = []
    mean_iou: list[npt.NDArray[Any]] = []
    # Each class's ranked members, per piece, in the output's rows.
    ranked: list[list[IntArray]] = [[] for _ in names]
    ranks: list[npt.NDArray[Any]] = []
    if old.ranked is None:
        raise StateError("corrupted chunk entries (records without their rankings)")
    # The cache's rows kept, in this run's rows: each class's ranking of them is one run.
    moved = _moved_rows(pieces, out_preds, old.preds.label.size)
    # Where every kept row keeps its place (the chunks read again hold as many predictions
    # as before), a class's kept rows are its members not read again: no row map gathered.
    kept = moved >= 0
    in_place = all(
        int(out_preds[n]) == piece.at for n, piece in enumerate(pieces) if piece.records is None
    )
    for k, members in enumerate(old.ranked.classes):
        if in_place:
            kept_rows = members[kept[members]].astype(np.int64, copy=False)
        else:
            kept_rows = moved[members]
            kept_rows = kept_rows[kept_rows >= 0]
        if kept_rows.size:
            ranked[int(old_remap[k])].append(kept_rows)
    for n, piece in enumerate(pieces):
        records = ranked_of(piece.records) if piece.records is not None else old
        i0, i1, p0, p1 = (
            piece.images_at,
            piece.images_at + piece.images,
            piece.at,
            piece.at + piece.preds,
        )
        remap = old_remap if piece.records is None else np.array(
            [index[c] for c in records.class_names], dtype=np.int64
        )  # fmt: skip
        p = records.preds
        label = p.label[p0:p1] if _is_identity(remap) else remap[p.label[p0:p1]]
        if label.size and int(label.min()) < 0:
            raise StateError("corrupted chunk entries (a prediction of a class no chunk names)")
        source = (p.count[i0:i1], label, p.score[p0:p1], p.matched[p0:p1], p.ignored[p0:p1],
                  p.area[p0:p1], p.coco_matched[p0:p1], p.coco_ignored[p0:p1])  # fmt: skip
        for out, column in zip(columns, source, strict=True):
            out.append(column)
        per_image.append((records.keys[i0:i1], records.gt_paths[i0:i1], records.pred_paths[i0:i1]))
        values.append(records.counts.values[i0:i1])
        mean_iou.append(records.counts.mean_iou[i0:i1])
        cells.append(_cells(records.gt_cells, i0, i1, remap, int(out_images[n])))
        rank = records.ranked.rank if records.ranked is not None else None
        if rank is None or records.ranked is None:
            raise StateError("corrupted chunk entries (records without their rankings)")
        ranks.append(rank[p0:p1])
        if piece.records is None:
            continue
        shift = int(out_preds[n]) - p0
        for k, rows in enumerate(records.ranked.classes):
            if rows.size:
                ranked[int(remap[k])].append(rows.astype(np.int64) + shift)
    preds = PredRecords(
        np.concatenate(columns[0]).astype(np.int64, copy=False),
        *(np.concatenate(c) for c in columns[1:]),
    )
    classes, coco_gt = _class_sums(entries, index, old.coco_gt.shape[1])
    counts = ImageCounts(
        np.concatenate(values), np.concatenate(mean_iou), ClassCounts.of_stacked(classes)
    )
    rankings = Ranked(
        tuple(merged_ranking(runs, preds) for runs in ranked),
        np.concatenate(ranks).astype(np.int64, copy=False),
    )
    return MatchRecords(
        keys=tuple(chain.from_iterable(keys for keys, _, _ in per_image)),
        gt_paths=tuple(chain.from_iterable(gt for _, gt, _ in per_image)),
        pred_paths=tuple(chain.from_iterable(pred for _, _, pred in per_image)),
        class_names=names,
        preds=preds,
        counts=counts,
        unscored=None,
        coco_gt=coco_gt,
        beyond=any(entry.beyond for entry, _ in entries),
        notes=join_notes([entry.notes for entry, _ in entries]),
        gt_cells=GtCells(*(np.concatenate([c[j] for c in cells]) for j in range(4))),
        ranked=rankings,
    )


def _is_identity(remap: IntArray) -> bool:
    """Whether the classes' remap keeps every class's index (its labels need no copy)."""
    return bool(np.array_equal(remap, np.arange(remap.size)))


def _moved_rows(pieces: Sequence[_Piece], out_preds: IntArray, n_old: int) -> IntArray:
    """Per prediction row of the cache's joined records, its row in the spliced records
    (-1 for those of the chunks read again): the kept rows keep their order."""
    moved = np.full(n_old, -1, dtype=np.int64)
    for n, piece in enumerate(pieces):
        if piece.records is None:
            start = int(out_preds[n])
            moved[piece.at : piece.at + piece.preds] = np.arange(start, start + piece.preds)
    return moved


@dataclass(frozen=True, slots=True)
class _Piece:
    """Consecutive chunks taken from one set of records: the cache's joined records
    (``records`` None) or a chunk's records read in this run."""

    records: MatchRecords | None
    images_at: int
    images: int
    at: int
    preds: int


def _pieces(
    segments: Sequence[Segment], image_start: IntArray, pred_start: IntArray
) -> list[_Piece]:
    """The segments as pieces: consecutive chunks of the cache taken as one run of rows."""
    pieces: list[_Piece] = []
    for segment in segments:
        if isinstance(segment, tuple):
            entry, records = segment
            pieces.append(_Piece(records, 0, entry.images, 0, entry.preds))
            continue
        i0, i1 = int(image_start[segment]), int(image_start[segment + 1])
        p0, p1 = int(pred_start[segment]), int(pred_start[segment + 1])
        last = pieces[-1] if pieces else None
        if last is not None and last.records is None and last.images_at + last.images == i0:
            pieces[-1] = replace(last, images=last.images + i1 - i0, preds=last.preds + p1 - p0)
        else:
            pieces.append(_Piece(None, i0, i1 - i0, p0, p1 - p0))
    return pieces


def _cells(
    cells: GtCells | None, i0: int, i1: int, remap: IntArray, at: int
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """The ground-truth cells of images ``i0`` to ``i1``, moved to start at image ``at``,
    classes remapped (in the same order: the remap keeps the classes' order)."""
    if cells is None:
        raise StateError("corrupted chunk entries (records without their ground-truth cells)")
    a, b = np.searchsorted(cells.image, [i0, i1], side="left").tolist()
    label = remap[cells.label[a:b]]
    if label.size and int(label.min()) < 0:
        raise StateError("corrupted chunk entries (ground truth of a class no chunk names)")
    image = cells.image[a:b].astype(np.int64) + (at - i0)
    return image, label, cells.counting[a:b], cells.counting_all[a:b]


def _class_sums(
    entries: Sequence[tuple[ChunkEntry, MatchRecords | None]], index: Mapping[str, int], width: int
) -> tuple[IntArray, IntArray]:
    """Each class's counts and COCO ground truth, added up over the chunks."""
    n = len(index)
    classes = np.zeros((n, 7), dtype=np.int64)
    coco_gt = np.zeros((n, width), dtype=np.int64)
    for entry, _ in entries:
        rows = np.array([index[c] for c in entry.class_names], dtype=np.int64)
        classes[rows] += entry.class_counts
        if width:
            coco_gt[rows] += entry.coco_gt
    return classes, coco_gt


def merged_ranking(runs: Sequence[IntArray], preds: PredRecords) -> IntArray:
    """One class's ranking from sorted runs of it (each by descending score, ties in row
    order): stable by descending score, ties in row order. The first run is the cache's
    (most rows): the others' rows are put in their places in it, not sorted with it."""
    if not runs:
        return np.zeros(0, dtype=np.int64)
    if len(runs) == 1:
        return runs[0]
    big, small = runs[0], np.concatenate(runs[1:])
    if small.size * _MERGE_SHARE > big.size:
        return _sorted(np.concatenate(runs), preds)
    small_key = -ranking_score(preds, small)
    order = np.lexsort((small, small_key))
    small, small_key = small[order], small_key[order]
    kernel = getattr(_compiled, "merge_runs", None)
    if kernel is not None:
        # One pass of the compiled reader's merge, Python's lock released.
        big = np.ascontiguousarray(big, dtype=np.int64)
        out = np.empty(big.size + small.size, dtype=np.int64)
        small_score = np.ascontiguousarray(-small_key)
        if kernel(big, ranking_score(preds, big), small.astype(np.int64), small_score, out):
            return out
    return _inserted(big, small, small_key, preds)


def _inserted(
    big: IntArray, small: IntArray, small_key: npt.NDArray[np.float64], preds: PredRecords
) -> IntArray:
    """:func:`merged_ranking` by numpy: ``small`` (sorted, ``small_key`` its negated scores)
    inserted at its places in ``big``."""
    # Each row's place as one integer: its score's among the run's distinct scores (in
    # ascending order of the keys), then its row; a score the run does not hold goes
    # before every row of the next one.
    key = -ranking_score(preds, big)  # ascending: the run is by descending score
    step = int(max(big.max(), small.max())) + 2
    starts = np.empty(key.size, dtype=bool)
    starts[:1] = True
    np.not_equal(key[1:], key[:-1], out=starts[1:])
    distinct = key[starts]
    place = np.searchsorted(distinct, small_key, side="left")
    held = distinct[np.minimum(place, distinct.size - 1)] == small_key
    big_at = (np.cumsum(starts) - 1) * step + big
    small_at = np.where(held, place * step + small, place * step - 1)
    merged: IntArray = np.insert(big, np.searchsorted(big_at, small_at), small)
    return merged


#: The cache's run of a class is merged with the others' rows when it holds this many
#: times as many; else all are sorted together.
_MERGE_SHARE = 8


def _sorted(members: IntArray, preds: PredRecords) -> IntArray:
    """``members`` by descending score, ties in row order."""
    by_score: IntArray = members[np.lexsort((members, -ranking_score(preds, members)))]
    return by_score


def notes_to_header(notes: NoteCounts) -> dict[str, Any]:
    """A chunk's notes' ingredients as JSON values."""
    return {
        "names": list(notes.names),
        "scored": notes.scored,
        "counts": [notes.preds, notes.unscored, notes.unscored_files, notes.shapes],
        "odd": [[[path, count] for path, count in kind] for kind in notes.odd],
    }


def notes_of_header(value: object, source: str) -> NoteCounts:
    """A chunk's notes' ingredients, every field checked.

    Raises:
        StateError: A field is missing or not of its kind.
    """
    bad = StateError(f"{source}: corrupted header (notes)")
    if not isinstance(value, dict):
        raise bad
    names, scored, counts, odd = (value.get(n) for n in ("names", "scored", "counts", "odd"))
    if not (
        isinstance(names, list)
        and all(isinstance(n, str) for n in names)
        and isinstance(scored, bool)
        and isinstance(counts, list)
        and len(counts) == 4
        and all(type(c) is int and c >= 0 for c in counts)
        and odd_counts_valid(odd)
    ):
        raise bad
    preds, unscored, unscored_files, shapes = (int(c) for c in counts)
    return NoteCounts(
        tuple(names), scored, preds, unscored, unscored_files,
        tuple(tuple((str(p), int(c)) for p, c in kind) for kind in odd), shapes,
    )  # fmt: skip


def ranked_of(records: MatchRecords) -> MatchRecords:
    """``records`` with their classes' rankings (made when they hold none)."""
    if records.ranked is not None:
        return records
    rank = np.zeros(records.preds.label.size, dtype=np.int64)
    classes = []
    for members, place in class_rankings(records):
        rank[members] = place
        classes.append(np.asarray(members, dtype=np.int64))
    return replace(records, ranked=Ranked(tuple(classes), rank))


def gathered_joined(
    listing: PartListing,
    entries: Sequence[ChunkEntry],
    records: MatchRecords,
    options: PartOptions,
) -> GatheredParts:
    """The chunks put together as :func:`~vocmatch.evaluation.shards.parts.gathered_parts`
    puts them, their records joined already (``records``), what their reading found in
    ``entries``.

    Raises:
        DistributedError: The joined images are not the listed ones.
    """
    scores = ScoreCounts()
    for entry in entries:
        scores = scores + entry.scores
    return gathered(listing, [entry.found for entry in entries], records, scores, options)

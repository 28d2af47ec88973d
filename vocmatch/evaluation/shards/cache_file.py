"""The file of a run's cache: each chunk's match records and what its reading found, and
the stat index of the files they were read from (:mod:`vocmatch.run.cached` keeps it).

The file is a state file (:mod:`vocmatch.evaluation.shards.state`: a header of JSON, raw
little-endian arrays, a CRC-32 over everything) under its own signature ``VMCACHE`` and
format version :data:`CACHE_VERSION`, so it is read with the same checks as a state: a
truncated, corrupted or crafted file is refused with one
:class:`~vocmatch.errors.StateError`, and reading never runs code. Its header holds:

* ``vocmatch``: the version that wrote it (a file of another is not read further);
* ``run``: the key of everything besides the files that the records depend on (the
  vocmatch version, the state format, the options of the matching): a file made under
  another key is not read further;
* ``files``: how many files the stat index holds: their paths (in the order of the run's
  chunks) are the ``file_paths`` array, UTF-8 (any code point kept: ``surrogatepass``)
  joined by NUL bytes, which no path holds (bytes read by one decoding and one split, not as
  a JSON list); the ``file_stat`` array holds each one's size, mtime and ctime in
  nanoseconds and inode, and ``file_hash`` its content's BLAKE2b digest (16 bytes);
* ``chunks``: per chunk, its key (the digest of its files' keys, paths and contents), the
  header of its match records (:func:`~vocmatch.evaluation.shards.state_records.state_of_records`),
  the files its reading skipped, its prediction files without ground truth and the counts
  the notes are worded from; its arrays are named ``<n>.<name>``, with its classes'
  rankings (``<n>.ranked_*``) so that joining the chunks does not sort them again;
* ``layout``: ``chunks`` (the above), or ``joined``
  (:mod:`vocmatch.evaluation.shards.cache_joined`): the ``records`` of every chunk joined
  in key order (arrays ``joined.<name>``, with the classes' rankings), and per chunk, in
  key order, its key, its images and predictions (its rows of the joined records), its
  classes and what they add up to (the rows of arrays ``chunks.class_counts`` and
  ``chunks.coco_gt``, one a class of each chunk in turn), its
  notes' ingredients and what its reading found. A run keeps its records joined unless
  they hold what that layout does not (:func:`~vocmatch.evaluation.shards.cache_joined.spliceable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.model import SkippedFile
from vocmatch.core.preparation import Preparation
from vocmatch.core.protocol import Conventions
from vocmatch.errors import StateError
from vocmatch.evaluation.records import MatchRecords, PredRecords, Ranked
from vocmatch.evaluation.score_counts import ScoreCounts
from vocmatch.evaluation.shards.cache_joined import (
    ChunkEntry,
    JoinedChunks,
    check_entries,
    notes_of_header,
    notes_to_header,
)
from vocmatch.evaluation.shards.cache_strings import (
    FILE_PATHS,
    GT_PATHS,
    IMAGE_KEYS,
    NO_PRED,
    PRED_PATHS,
    StoredStrings,
    string_bytes,
)
from vocmatch.evaluation.shards.parts import PartRecords, PartResult
from vocmatch.evaluation.shards.ranking_check import rankings_hold, rows_fit
from vocmatch.evaluation.shards.reading_notes import (
    ReadCounts,
    count_pair_of,
    name_counts_of,
)
from vocmatch.evaluation.shards.state import RawState, read_state, state_pieces
from vocmatch.evaluation.shards.state_preparation import records_with_removed, removed_to_header
from vocmatch.evaluation.shards.state_records import (
    narrowest_int,
    orphans_of_header,
    records_of_state,
    skipped_of_header,
    skipped_to_header,
    state_of_records,
)
from vocmatch.evaluation.slice_records import SliceSpec
from vocmatch.version import __version__

__all__ = [
    "CACHE_MAGIC",
    "CACHE_VERSION",
    "HASH_BYTES",
    "CacheContent",
    "FileStat",
    "StatIndex",
    "cache_bytes",
    "cache_pieces",
    "check_rankings",
    "read_cache",
]

CACHE_MAGIC = b"VMCACHE\0"
#: The cache's format version; a file of another is read as no cache. Version 2 holds the
#: stat index's paths as the ``file_paths`` array rather than a JSON list; version 3 the
#: records of every chunk joined (the ``joined`` layout) when they can be.
CACHE_VERSION = 3
#: Bytes of each file's BLAKE2b digest.
HASH_BYTES = 16

#: ``(size, mtime_ns, ctime_ns, inode)`` of a file, as :func:`os.stat` gives them.
FileStat = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True, eq=False)
class StatIndex:
    """The stat index: each file's stat when it was hashed, and its digest, as arrays (a
    run compares a whole set's stats at once, and a cache file holds them as they are).

    Attributes:
        paths: The files, in the order of the chunks of the run that wrote the index (as
            the next run lists them, unless files were added or removed).
        stat: ``(N, 4)`` ``size, mtime_ns, ctime_ns, inode`` of each (int64).
        digest: ``(N, HASH_BYTES)`` each one's content's BLAKE2b digest (uint8).
    """

    paths: tuple[str, ...] = ()
    stat: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 4), np.int64))
    digest: npt.NDArray[np.uint8] = field(
        default_factory=lambda: np.zeros((0, HASH_BYTES), np.uint8)
    )

    def rows(self) -> dict[str, int]:
        """Each path's row."""
        return {path: row for row, path in enumerate(self.paths)}

    def same(self, other: StatIndex) -> bool:
        """Both hold the same files, stats and digests."""
        return (
            self.paths == other.paths
            and np.array_equal(self.stat, other.stat)
            and np.array_equal(self.digest, other.digest)
        )


@dataclass(frozen=True, slots=True)
class CacheContent:
    """What a cache holds.

    Attributes:
        run: The key of the run's options (see the module doc).
        stats: The stat index.
        chunks: Per chunk key, the chunk's records and findings.
        stored: Per chunk key, its header entry and arrays as a cache file held them (read
            and checked): written again as they are.
        joined: The chunks' records joined (the ``joined`` layout; ``chunks`` is then
            empty).
        strings: The paths, keys and image paths of a cache file as read: written again
            as read where this content holds the same ones
            (:mod:`~vocmatch.evaluation.shards.cache_strings`).
    """

    run: str
    stats: StatIndex
    chunks: Mapping[str, PartRecords]
    stored: Mapping[str, tuple[Mapping[str, Any], Mapping[str, npt.NDArray[Any]]]] = field(
        default_factory=dict
    )
    joined: JoinedChunks | None = None
    strings: StoredStrings | None = None

    def held(self) -> Mapping[str, PartRecords | int]:
        """Per chunk key, the chunk's records, or its place among the joined entries."""
        return self.joined.positions() if self.joined is not None else self.chunks

    def same_chunks(self, other: CacheContent) -> bool:
        """Both hold the same chunks (by key) and the same stat index."""
        return set(self.held()) == set(other.held()) and self.stats.same(other.stats)

    def gt_skipped(self) -> tuple[SkippedFile, ...]:
        """The ground-truth files no chunk could read."""
        if self.joined is not None:
            return tuple(s for e in self.joined.entries for s in e.found.gt_skipped)
        return tuple(s for chunk in self.chunks.values() for s in chunk.gt_skipped)


def cache_bytes(
    content: CacheContent,
    conv: Conventions,
    slices: Sequence[SliceSpec],
    preparation: Preparation | None = None,
) -> bytes:
    """The bytes of a cache file holding ``content`` (records matched under ``conv``, with
    ``slices``, of predictions prepared by ``preparation``: each chunk keeps what it
    removed)."""
    return b"".join(cache_pieces(content, conv, slices, preparation))


def cache_pieces(
    content: CacheContent,
    conv: Conventions,
    slices: Sequence[SliceSpec],
    preparation: Preparation | None = None,
) -> list[bytes | memoryview]:
    """:func:`cache_bytes` as consecutive pieces, not joined
    (:func:`~vocmatch.evaluation.shards.state.state_pieces`)."""
    index = content.stats
    arrays: dict[str, npt.NDArray[Any]] = {
        FILE_PATHS: string_bytes(content.strings, FILE_PATHS, index.paths),
        "file_stat": np.ascontiguousarray(index.stat, dtype=np.int64).reshape(-1, 4),
        "file_hash": np.ascontiguousarray(index.digest, dtype=np.uint8).reshape(-1, HASH_BYTES),
    }
    chunks: list[Mapping[str, Any]] = []
    layout: dict[str, Any] = {"layout": "chunks"}
    if content.joined is not None:
        layout = _joined_to_state(content.joined, conv, arrays, chunks, content.strings)
    for n, (key, part) in enumerate(sorted(content.chunks.items())):
        stored = content.stored.get(key)
        if stored is not None:
            chunks.append(stored[0])
            arrays.update({f"{n}.{name}": array for name, array in stored[1].items()})
            continue
        header, chunk_arrays = state_of_records(part.records, conv, slices)
        arrays.update({f"{n}.{name}": array for name, array in chunk_arrays.items()})
        ranked = part.records.ranked
        if ranked is not None:
            arrays.update(_ranked_arrays(ranked, f"{n}."))
        removed_to_header(header, preparation, part.records)
        chunks.append({
            "key": key,
            "records": header,
            "ranked": ranked is not None,
            **_findings_to_header(part.gt_skipped, part.pred_skipped, part.orphans,
                                  part.counts, part.scores),
        })  # fmt: skip
    header = {
        "vocmatch": __version__, "run": content.run, "files": len(index.paths), **layout,
        "chunks": chunks,
    }  # fmt: skip
    return state_pieces(RawState(header, arrays), CACHE_MAGIC, CACHE_VERSION)


def _ranked_arrays(ranked: Ranked, prefix: str) -> dict[str, npt.NDArray[Any]]:
    """The arrays of a ranking, named ``<prefix>ranked_*``."""
    return {
        f"{prefix}ranked_rows": narrowest_int(
            np.concatenate(
                [np.asarray(c, dtype=np.int64) for c in ranked.classes] or [np.zeros(0, np.int64)]
            )
        ),
        f"{prefix}ranked_sizes": np.array([c.size for c in ranked.classes], np.int64),
        f"{prefix}ranked_rank": narrowest_int(np.asarray(ranked.rank, dtype=np.int64)),
    }


def _findings_to_header(
    gt_skipped: Sequence[SkippedFile],
    pred_skipped: Sequence[SkippedFile],
    orphans: Sequence[tuple[str, str]],
    counts: ReadCounts,
    scores: ScoreCounts,
) -> dict[str, Any]:
    """What a chunk's reading found, as header fields."""
    return {
        "gt_skipped": skipped_to_header(gt_skipped),
        "pred_skipped": skipped_to_header(pred_skipped),
        "orphans": [list(o) for o in orphans],
        "gt_classes": [list(c) for c in counts.gt_classes],
        "pred_classes": [list(c) for c in counts.pred_classes],
        "shapes": [*counts.gt_shapes, *counts.pred_shapes],
        "scores": [scores.gt, scores.gt_scored, scores.pred, scores.pred_scored],
    }


def _joined_to_state(
    joined: JoinedChunks,
    conv: Conventions,
    arrays: dict[str, npt.NDArray[Any]],
    chunks: list[Mapping[str, Any]],
    strings: StoredStrings | None = None,
) -> dict[str, Any]:
    """The header fields of the ``joined`` layout; its arrays added to ``arrays`` and its
    chunks' entries to ``chunks`` (the images' keys and paths as ``strings`` holds them,
    when it holds the same)."""
    records = joined.records
    assert records.ranked is not None
    header, joined_arrays = state_of_records(records, conv, ())
    arrays.update({f"joined.{name}": array for name, array in joined_arrays.items()})
    # The images' keys and paths as arrays: one encoding and one decoding, not JSON lists.
    for name in _IMAGE_STRINGS:
        del header[name]
    arrays[IMAGE_KEYS] = string_bytes(strings, IMAGE_KEYS, records.keys)
    arrays[GT_PATHS] = string_bytes(strings, GT_PATHS, records.gt_paths)
    arrays[PRED_PATHS] = string_bytes(strings, PRED_PATHS, records.pred_paths)
    arrays[NO_PRED] = string_bytes(strings, NO_PRED, records.pred_paths)
    arrays.update(_ranked_arrays(records.ranked, "joined."))
    width = records.coco_gt.shape[1]
    arrays["chunks.class_counts"] = narrowest_int(
        np.concatenate([np.zeros((0, 7), np.int64), *(e.class_counts for e in joined.entries)])
    )
    arrays["chunks.coco_gt"] = narrowest_int(
        np.concatenate([np.zeros((0, width), np.int64), *(e.coco_gt for e in joined.entries)])
    )
    for entry in joined.entries:
        found = entry.found
        chunks.append({
            "key": entry.key,
            "images": entry.images,
            "preds": entry.preds,
            "class_names": list(entry.class_names),
            "beyond": entry.beyond,
            "scored": entry.scored,
            "notes": notes_to_header(entry.notes),
            **_findings_to_header(found.gt_skipped, found.pred_skipped, found.orphans,
                                  found.counts, entry.scores),
        })  # fmt: skip
    return {"layout": "joined", "records": header}


def read_cache(
    data: bytes,
    source: str,
    run: str,
    conv: Conventions,
    slices: tuple[SliceSpec, ...],
    preparation: Preparation | None = None,
    rankings: bool = True,
) -> CacheContent | None:
    """The content of a cache file's bytes; None when it was made under another run key
    (other options, other folders).

    With ``rankings`` False, the joined layout's stored rankings are checked for their
    shapes and bounds only: the caller checks their order with :func:`check_rankings`
    before it reads them (a run matches its changed files meanwhile).

    Raises:
        StateError: The bytes are not a cache file of this format, were made by another
            vocmatch version, or are damaged.
    """
    raw = read_state(data, source, CACHE_MAGIC, CACHE_VERSION)
    made_by = raw.header.get("vocmatch")
    if made_by != __version__:
        shown = repr(made_by) if not isinstance(made_by, str) else made_by
        raise StateError(f"{source}: made by vocmatch {shown}, not this {__version__}")
    if raw.header.get("run") != run:
        return None
    count, chunks = raw.header.get("files"), raw.header.get("chunks")
    stat, digest = raw.arrays.get("file_stat"), raw.arrays.get("file_hash")
    if type(count) is not int or not isinstance(chunks, list) or stat is None or digest is None:
        raise StateError(f"{source}: corrupted header (files or chunks)")
    paths = _paths(raw.arrays.get("file_paths"), count, source)
    if (
        stat.shape != (len(paths), 4)
        or digest.shape != (len(paths), HASH_BYTES)
        or stat.dtype.kind != "i"
        or digest.dtype != np.uint8
        or not _one_row_a_path(paths, stat, digest)
    ):
        raise StateError(f"{source}: corrupted stat index")
    stats = StatIndex(tuple(paths), stat.astype(np.int64), digest)
    strings = StoredStrings({FILE_PATHS: (stats.paths, raw.arrays[FILE_PATHS])})
    by_chunk: dict[str, dict[str, npt.NDArray[Any]]] = {}
    for name, array in raw.arrays.items():
        number, dot, rest = name.partition(".")
        if dot:
            by_chunk.setdefault(number, {})[rest] = array
    layout = raw.header.get("layout")
    if layout == "joined":
        image_arrays = dict(by_chunk.get("joined", {}))  # before they are taken out
        joined = _joined(raw.header, by_chunk, conv, source, rankings)
        records = joined.records
        strings = strings.with_images(
            records.keys, records.gt_paths, records.pred_paths, image_arrays
        )
        return CacheContent(run, stats, {}, joined=joined, strings=strings)
    if layout != "chunks":
        raise StateError(f"{source}: corrupted header (layout)")
    found: dict[str, PartRecords] = {}
    stored: dict[str, tuple[Mapping[str, Any], Mapping[str, npt.NDArray[Any]]]] = {}
    for n, chunk in enumerate(chunks):
        if not isinstance(chunk, dict) or not isinstance(chunk.get("key"), str):
            raise StateError(f"{source}: corrupted header (chunk {n})")
        arrays = by_chunk.pop(str(n), {})
        stored[chunk["key"]] = (chunk, dict(arrays))
        found[chunk["key"]] = _chunk(
            chunk, arrays, conv, slices, preparation, f"{source} (chunk {n})"
        )
    if by_chunk:
        raise StateError(f"{source}: corrupted header (arrays of no chunk)")
    return CacheContent(run, stats, found, stored, strings=strings)


def _one_row_a_path(paths: Sequence[str], stat: npt.NDArray[Any], digest: npt.NDArray[Any]) -> bool:
    """Whether each path has one stat and digest in the index: a path listed twice (the
    ground truth's folder also the predictions') has the same ones in each of its rows."""
    if len(set(paths)) == len(paths):
        return True
    first: dict[str, int] = {}
    at = np.array([first.setdefault(path, row) for row, path in enumerate(paths)], np.int64)
    return bool((stat[at] == stat).all() and (digest[at] == digest).all())


#: The header fields of the images' keys and paths, kept as arrays by the joined layout.
_IMAGE_STRINGS = ("keys", "gt_paths", "pred_paths")


def _paths(joined: npt.NDArray[Any] | None, count: int, source: str) -> list[str]:
    """The stat index's ``count`` paths, from the bytes that join them.

    Raises:
        StateError: The bytes are missing, not UTF-8, or hold another number of paths.
    """
    return _strings(joined, count, StateError(f"{source}: corrupted stat index"))


def _strings(joined: npt.NDArray[Any] | None, count: int, bad: StateError) -> list[str]:
    """``count`` strings, from the bytes that join them
    (:func:`~vocmatch.evaluation.shards.cache_strings.joined_strings`).

    Raises:
        StateError: ``bad``: the bytes are missing, not UTF-8, or hold another number of
            strings.
    """
    if joined is None or joined.dtype != np.uint8 or joined.ndim != 1:
        raise bad
    try:
        found = joined.tobytes().decode("utf-8", "surrogatepass").split("\0") if count else []
    except UnicodeDecodeError:
        raise bad from None
    if len(found) != count or (not count and joined.size):
        raise bad
    return found


def _chunk(
    chunk: Mapping[str, Any],
    arrays: dict[str, npt.NDArray[Any]],
    conv: Conventions,
    slices: tuple[SliceSpec, ...],
    preparation: Preparation | None,
    source: str,
) -> PartRecords:
    """A chunk's records and findings, every field checked."""
    header = chunk.get("records")
    if not isinstance(header, dict):
        raise StateError(f"{source}: corrupted header (records)")
    ranked_arrays = {
        name: arrays.pop(name, None) for name in ("ranked_rows", "ranked_sizes", "ranked_rank")
    }
    records = records_of_state(header, arrays, conv, source, slices)
    records = records_with_removed(records, header, preparation, source)
    # Scores as a run makes them (a state may hold them as float32, the same values).
    records = _float_scores(records)
    if chunk.get("ranked") is True:
        ranked = _ranked(ranked_arrays, records.preds, len(records.class_names), source)
        records = replace(records, ranked=ranked)
    found, scores = _findings(chunk, source)
    return PartRecords(
        records, found.gt_skipped, found.pred_skipped, found.orphans, found.counts, scores
    )


def _float_scores(records: MatchRecords) -> MatchRecords:
    """Scores as a run makes them (a state may hold them as float32, the same values)."""
    return replace(records, preds=replace(records.preds, score=records.preds.score.astype(
        np.float64)))  # fmt: skip


def _findings(chunk: Mapping[str, Any], source: str) -> tuple[PartResult, ScoreCounts]:
    """What a chunk's reading found, every field checked."""
    counts = ReadCounts(
        _named_counts(chunk.get("gt_classes"), source),
        _named_counts(chunk.get("pred_classes"), source),
        *_shape_counts(chunk.get("shapes"), source),
    )
    scores = chunk.get("scores")
    if not (isinstance(scores, list) and len(scores) == 4 and all(type(s) is int for s in scores)):
        raise StateError(f"{source}: corrupted header (scores)")
    found = PartResult(
        b"",
        skipped_of_header(chunk.get("gt_skipped"), source),
        skipped_of_header(chunk.get("pred_skipped"), source),
        tuple(sorted(orphans_of_header(chunk.get("orphans"), source))),
        counts,
    )
    return found, ScoreCounts(*scores)


def _joined(
    header: Mapping[str, Any],
    by_chunk: dict[str, dict[str, npt.NDArray[Any]]],
    conv: Conventions,
    source: str,
    rankings: bool = True,
) -> JoinedChunks:
    """The ``joined`` layout's records and entries, every field checked (the rankings'
    order unless ``rankings`` is False).

    Raises:
        StateError: A field or an array is missing, of another kind, or does not fit the
            others.
    """
    chunks, records_header = header.get("chunks"), header.get("records")
    arrays = by_chunk.pop("joined", {})
    if not isinstance(chunks, list) or not isinstance(records_header, dict):
        raise StateError(f"{source}: corrupted header (joined records)")
    ranked_arrays = {
        name: arrays.pop(name, None) for name in ("ranked_rows", "ranked_sizes", "ranked_rank")
    }
    records_header = {**records_header, **_image_strings(arrays, source)}
    records = _float_scores(records_of_state(records_header, arrays, conv, source))
    if records.gt_cells is None or records.unscored is not None or records.detail is not None:
        raise StateError(f"{source}: corrupted header (joined records)")
    ranked = _ranked(ranked_arrays, records.preds, len(records.class_names), source, rankings)
    counts, coco_gt = _class_counts(by_chunk.pop("chunks", {}), records.coco_gt.shape[1], source)
    entries = []
    start = 0
    for n, chunk in enumerate(chunks):
        entry = _entry(chunk, counts[start:], coco_gt[start:], f"{source} (chunk {n})")
        entries.append(entry)
        start += len(entry.class_names)
    if by_chunk or start != len(counts):
        raise StateError(f"{source}: corrupted header (arrays of no chunk)")
    joined = JoinedChunks(replace(records, ranked=ranked), tuple(entries))
    check_entries(joined, source)
    return joined


def _image_strings(arrays: dict[str, npt.NDArray[Any]], source: str) -> dict[str, list[Any]]:
    """The joined records' image keys and paths (header fields of a state), taken out of
    ``arrays``.

    Raises:
        StateError: An array is missing, not UTF-8, or holds another number of images.
    """
    bad = StateError(f"{source}: corrupted header (image keys or paths)")
    no_pred = arrays.pop("no_pred", None)
    if no_pred is None or no_pred.dtype != np.uint8 or no_pred.ndim != 1 or (no_pred > 1).any():
        raise bad
    count = int(no_pred.size)
    found: dict[str, list[Any]] = {
        name: _strings(arrays.pop(name, None), count, bad) for name in _IMAGE_STRINGS
    }
    found["pred_paths"] = [
        None if missing else path
        for path, missing in zip(found["pred_paths"], no_pred.tolist(), strict=True)
    ]
    return found


def _class_counts(
    arrays: Mapping[str, npt.NDArray[Any]], width: int, source: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The chunks' classes' counts and COCO ground truth, one row a class of each chunk in
    turn, checked: integers, none negative, as many rows each.

    Raises:
        StateError: An array is missing, of another kind or shape, or holds a negative.
    """
    counts, coco_gt = arrays.get("class_counts"), arrays.get("coco_gt")
    if (
        counts is None
        or coco_gt is None
        or len(arrays) != 2
        or counts.ndim != 2
        or counts.shape[1] != 7
        or coco_gt.shape != (counts.shape[0], width)
        or counts.dtype.kind not in "iu"
        or coco_gt.dtype.kind not in "iu"
        or bool((counts < 0).any())
        or bool((coco_gt < 0).any())
    ):
        raise StateError(f"{source}: corrupted class counts")
    return counts.astype(np.int64), coco_gt.astype(np.int64)


def _entry(
    chunk: object, counts: npt.NDArray[np.int64], coco_gt: npt.NDArray[np.int64], source: str
) -> ChunkEntry:
    """A chunk's entry of the ``joined`` layout, every field checked; its classes' counts
    and COCO ground truth the first rows of ``counts`` and ``coco_gt``."""
    if not isinstance(chunk, dict):
        raise StateError(f"{source}: corrupted header (chunk)")
    key, images, preds = chunk.get("key"), chunk.get("images"), chunk.get("preds")
    names, beyond, scored = chunk.get("class_names"), chunk.get("beyond"), chunk.get("scored")
    if not (
        isinstance(key, str)
        and type(images) is int
        and type(preds) is int
        and images >= 0
        and preds >= 0
        and isinstance(names, list)
        and all(isinstance(name, str) for name in names)
        and names == sorted(set(names))
        and isinstance(beyond, bool)
        and isinstance(scored, bool)
    ):
        raise StateError(f"{source}: corrupted header (chunk)")
    if len(counts) < len(names):
        raise StateError(f"{source}: corrupted class counts")
    found, scores = _findings(chunk, source)
    notes = notes_of_header(chunk.get("notes"), source)
    return ChunkEntry(
        key, images, preds, tuple(names), counts[: len(names)], coco_gt[: len(names)],
        beyond, notes, found, scores, scored,
    )  # fmt: skip


def _ranked(
    arrays: Mapping[str, npt.NDArray[Any] | None],
    preds: PredRecords,
    n_classes: int,
    source: str,
    ordered: bool = True,
) -> Ranked:
    """A chunk's rankings, checked: every prediction once, in its own class's ranking, by
    descending score (ties in row order), with its place in its image-class (the order and
    the places unless ``ordered`` is False: :func:`check_rankings` checks them)."""
    label = preds.label
    rows, sizes, rank = (arrays[n] for n in ("ranked_rows", "ranked_sizes", "ranked_rank"))
    n_pred = label.size
    if (
        rows is None
        or sizes is None
        or rank is None
        or rows.shape != (n_pred,)
        or sizes.shape != (n_classes,)
        or rank.shape != (n_pred,)
        or rows.dtype.kind not in "iu"
        or sizes.dtype.kind not in "iu"
        or rank.dtype.kind not in "iu"
    ):
        raise StateError(f"{source}: corrupted rankings")
    rows, sizes, rank = rows.astype(np.int64), sizes.astype(np.int64), rank.astype(np.int64)
    if (
        int(sizes.sum()) != n_pred
        or bool((sizes < 0).any())
        or bool((rank < 0).any())
        or bool((rank >= max(n_pred, 1)).any())
        # Within range and none twice, each in its own class's ranking.
        or not rows_fit(rows, sizes, label)
        or (ordered and not rankings_hold(rows, sizes, rank, preds))
    ):
        raise StateError(f"{source}: corrupted rankings")
    ends = np.cumsum(sizes)
    classes = tuple(rows[end - size : end] for end, size in zip(ends, sizes, strict=True))
    return Ranked(classes, rank)


def check_rankings(joined: JoinedChunks, source: str) -> None:
    """Check the order of joined records' rankings read with ``rankings`` False
    (:func:`read_cache`): each class's by descending score, ties in row order, and each
    prediction's place in its image-class.

    Raises:
        StateError: They are not the rankings the predictions give (naming ``source``).
    """
    records = joined.records
    if records.ranked is None:
        raise StateError(f"{source}: corrupted rankings")
    classes, rank = records.ranked.classes, records.ranked.rank
    rows = np.concatenate([np.zeros(0, np.int64), *classes]).astype(np.int64, copy=False)
    sizes = np.array([c.size for c in classes], dtype=np.int64)
    if not rankings_hold(rows, sizes, rank.astype(np.int64, copy=False), records.preds):
        raise StateError(f"{source}: corrupted rankings")


def _named_counts(value: object, source: str) -> tuple[tuple[str, int], ...]:
    return name_counts_of(value, StateError(f"{source}: corrupted header (class counts)"))


def _shape_counts(value: object, source: str) -> tuple[tuple[int, int], tuple[int, int]]:
    bad = StateError(f"{source}: corrupted header (shapes)")
    if not (isinstance(value, list) and len(value) == 4):
        raise bad
    return count_pair_of(value[:2], bad), count_pair_of(value[2:], bad)

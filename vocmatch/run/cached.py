"""A run with a cache: only the images whose files changed are read and matched again.

A request's ``cache`` names a folder (the caller's choice) where the run keeps, in one file
(:data:`CACHE_NAME`, :mod:`vocmatch.evaluation.shards.cache_file`), the match records of its
images by chunks, and a stat index of its files. The images are the keys of both sides,
sorted; a chunk starts at each key whose CRC-32 is 0 modulo :data:`CHUNK_SPREAD` (or a
:data:`JOINED_SHARE`-th of it when the records are kept joined: so about that many images
a chunk, and a file added or removed changes the chunk of its key alone). A chunk's key is
the digest of the run's key (the vocmatch version, the state format and every option of
the matching: protocol and its overrides, case folding, score thresholds, file size limit,
slices, class choice, geometry, calibration, the folders as given and, for relative ones,
the working folder) and of its files' keys, paths and contents.

A file is hashed again only when its size, mtime, ctime or inode differ from the stat
index's (``verify`` hashes every file: an edit within one mtime tick, or times restored by
``git checkout`` or ``rsync -t``). A chunk whose key the cache holds is taken from it; the
others are read and matched (by worker processes when they are many, as a run in parts:
:mod:`vocmatch.run.in_parts`). The cache keeps every chunk's records joined in key order
(:mod:`vocmatch.evaluation.shards.cache_joined`): the changed chunks' records are put in
place of theirs. Records that layout does not hold are kept chunk by chunk, and every
chunk's records joined in key order, as a run in parts does. Either way the records are
accumulated once: the report is that of a run without a cache, bit for bit.

The file is read, and its arrays checked, by a thread while the files are listed. It is
rewritten (through :mod:`vocmatch.files`: whole or not at all) when anything changed,
holding the present files and chunks only: written beside the old one while the run is
accumulated and put in its place once the run is evaluated
(:mod:`vocmatch.run.cached_write`). A cache that cannot be
read (damaged, of another format or vocmatch version) or written (a read-only folder) gives
one :class:`~vocmatch.errors.CacheWarning` and the run goes on without it. Two runs writing
the same cache each replace the file whole; the last one's is kept.

A cache covers XML predictions read from folders here and COCO results files (without a
class choice), the whole set, with a report that lists or draws no box; any other run with
a cache is refused in one line (field ``cache``). A COCO results file is read whole on
every run, and each chunk's key holds its images' predictions' digests in place of
prediction files' (:mod:`vocmatch.run.cached_coco`).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from vocmatch.errors import (
    CacheWarning,
    RequestError,
    StateError,
    no_annotation_files,
)
from vocmatch.evaluation.shards.cache_joined import ranked_of, spliceable
from vocmatch.evaluation.shards.parts import Part, PartOptions, PartRecords, part_records
from vocmatch.readers.hashed_reads import HashingReader, KeptFiles, KnownDigests
from vocmatch.run.cached_digests import file_digest as _digest
from vocmatch.run.cached_digests import known_digests
from vocmatch.run.cached_listing import chunk_stats, listed_sides
from vocmatch.run.cached_write import CacheEncoding, write_cache
from vocmatch.version import __version__

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from vocmatch.core.protocol import Conventions
    from vocmatch.evaluation.part_images import PartImages
    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.evaluation.result import ImageResult
    from vocmatch.evaluation.shards.cache_file import CacheContent, StatIndex
    from vocmatch.evaluation.shards.cache_joined import JoinedChunks
    from vocmatch.evaluation.shards.parts import GatheredParts, PartListing
    from vocmatch.readers.listed_stats import ListedStats
    from vocmatch.readers.scan import ColumnSet
    from vocmatch.run.cached_coco import CocoPredictions
    from vocmatch.run.evaluate import EvalRequest
    from vocmatch.run.in_parts_found import EvaluatedInParts

__all__ = [
    "CACHE_NAME",
    "CHUNK_SPREAD",
    "CachedRun",
    "check_cached",
    "chunks_of",
    "evaluated_with_cache",
]

#: The cache's file in the folder given.
CACHE_NAME = "vocmatch-cache.vmc"
#: About this many images a chunk whose records are kept chunk by chunk.
CHUNK_SPREAD = 256
#: Chunks of records kept joined are this many times smaller. Each chunk matched costs some
#: 2.5 ms of processor time besides its files' (set-up, records sent back, entry): 80,000
#: images, 10 edited, processor time at 1, 2, 4: cold 6.3, 7.0, 8.3 s, warm 1.43, 1.52,
#: 1.64 s, edited 2.07, 1.96, 2.08 s (within the noise), so they are the same size.
JOINED_SHARE = 1
#: Fewer changed files than this are read and matched in this process: starting worker
#: processes and sending them the chunks costs more wall time than the compiled reader
#: takes for that many files here (about 40 microseconds of processor time a file).
FEW_CHANGED = 16384


@dataclass(frozen=True, slots=True)
class CachedRun:
    """A run evaluated with a cache, and what the cache did.

    Attributes:
        found: The evaluation, as a run in parts gives it.
        warnings: The cache's warnings (it could not be read or written).
        matched: Images read and matched in this run.
        reused: Images taken from the cache.
    """

    found: EvaluatedInParts
    warnings: tuple[CacheWarning, ...]
    matched: int
    reused: int


def check_cached(request: EvalRequest) -> None:
    """Refuse a cache with a run it does not cover (see the module doc).

    Raises:
        RequestError: The request asks for a cache and something it does not cover (field
            ``cache``), or for ``cache_verify`` without a cache.
    """
    if request.cache is None:
        if request.cache_verify:
            raise RequestError("cache_verify", "verifies a cache: give a cache folder too")
        return
    from vocmatch.run.remote_inputs import reads_elsewhere

    reason = None
    if request.dask is not None:
        reason = "a Dask cluster's workers keep no cache; the cache is kept by a run here"
    elif reads_elsewhere(request):
        reason = "a cache is kept for folders read here, not URLs"
    elif request.pred_format not in ("voc", "coco"):
        reason = f"a cache is kept for XML predictions or COCO results, not {request.pred_format}"
    elif request.pred_format == "coco" and request.class_selection() is not None:
        reason = "a cache of COCO results is kept for their classes as named, not a class choice"
    elif request.split is not None:
        reason = "a cache is kept for every image of the folders, not a split"
    elif request.keeps_boxes():
        reason = "a cache keeps match records, not the boxes a report that lists them reads"
    if reason is not None:
        raise RequestError("cache", reason, os.fspath(request.cache))


def chunks_of(listing: PartListing, spread: int | None = None) -> tuple[Part, ...]:
    """The chunks of the listed files: the sorted keys of both sides cut before each key
    whose CRC-32 is 0 modulo ``spread`` (:data:`CHUNK_SPREAD` unless given).

    >>> from vocmatch.evaluation.shards.parts import PartListing
    >>> from vocmatch.readers.parse import DirectoryListing
    >>> files = tuple((f"{n:05}", f"g/{n:05}.xml") for n in range(2000))
    >>> listing = PartListing(DirectoryListing("g", files, ()), DirectoryListing("p", (), ()))
    >>> chunks = chunks_of(listing)
    >>> sum(len(c.gt_files) for c in chunks), 2 < len(chunks) < 30
    (2000, True)
    """
    # Each side's files sorted by key (as listed: sorting them again costs a pass).
    gt, pred = sorted(listing.gt.files), sorted(listing.pred.files)
    gt_keys, pred_keys = [k for k, _ in gt], [k for k, _ in pred]
    keys = gt_keys if gt_keys == pred_keys else sorted({*gt_keys, *pred_keys})
    # The first key of each chunk but the first one's.
    every = spread or CHUNK_SPREAD
    crc = zlib.crc32  # called once a key: a function of its own costs as much again
    starts = [key for key in keys[1:] if crc(key.encode("utf-8", "surrogateescape")) % every == 0]
    gt_cuts = [0, *(bisect.bisect_left(gt_keys, key) for key in starts), len(gt)]
    pred_cuts = [0, *(bisect.bisect_left(pred_keys, key) for key in starts), len(pred)]
    n = len(starts) + 1 if keys else 0
    return tuple(
        Part(k + 1, n, tuple(gt[gt_cuts[k] : gt_cuts[k + 1]]),
             tuple(pred[pred_cuts[k] : pred_cuts[k + 1]]))
        for k in range(n)
    )  # fmt: skip


def _spread(options: PartOptions) -> int:
    """About how many images a chunk of this run holds: :data:`CHUNK_SPREAD` when its
    records are kept chunk by chunk (they hold slices, calibration inputs or what a
    preparation removed), a :data:`JOINED_SHARE`-th of it when they are kept joined."""
    preparation = options.preparation
    if options.slices or options.calibration or (preparation is not None and preparation.active):
        return CHUNK_SPREAD
    return max(1, CHUNK_SPREAD // JOINED_SHARE)


def _run_key(request: EvalRequest, options: PartOptions) -> str:
    """The key of everything but the files that a chunk's records depend on."""
    from vocmatch.evaluation.shards.cache_file import CACHE_VERSION
    from vocmatch.evaluation.shards.state import FORMAT_VERSION

    gt, pred = os.fspath(request.gt), os.fspath(request.pred)
    # Relative paths name other files from another folder (the records hold the paths).
    here = "" if os.path.isabs(gt) and os.path.isabs(pred) else os.getcwd()
    given = [__version__, FORMAT_VERSION, CACHE_VERSION, repr(options), gt, pred, here]
    if request.pred_format != "voc":
        given.append(request.pred_format)
    return hashlib.blake2b(json.dumps(given).encode(), digest_size=16).hexdigest()


def _chunk_key(run: str, part: Part, digests: bytes, extra: bytes = b"") -> str:
    """The key of a chunk whose files' digests, in its files' order, are ``digests``."""
    # No key or path holds a NUL: the fields cannot run into each other.
    names = "\0".join(
        f"{side}\0{key}\0{path}" for side, files in (("g", part.gt_files), ("p", part.pred_files))
        for key, path in files
    )  # fmt: skip
    hasher = hashlib.blake2b(run.encode(), digest_size=16)
    hasher.update(names.encode("utf-8", "surrogateescape"))
    hasher.update(b"\0" + digests)
    if extra:
        # What the chunk's key holds of predictions read already (a COCO results file's).
        hasher.update(b"\0given\0" + extra)
    return hasher.hexdigest()


@dataclass(frozen=True, slots=True)
class _Hashed:
    """A changed chunk read and matched, with its files' stats (taken before each was
    read) and the digests of the bytes read, in the order of its files; None when a file
    could not be read (the chunk is then read again next time)."""

    kept: KeptFiles | None
    records: PartRecords


def hashed_part_records(
    part: Part,
    options: PartOptions,
    given_pred: ColumnSet | None = None,
    known: KnownDigests | None = None,
) -> _Hashed:
    """Read and match a changed chunk, hashing the bytes its reader reads (its predictions
    ``given`` when they are read already; a file's digest ``known`` under its stat not)."""
    reader = HashingReader(known)
    records = part_records(part, options, reader, given_pred)
    paths = [path for _, path in (*part.gt_files, *part.pred_files)]
    return _Hashed(reader.kept(paths), records)


def hashed_chunks(parts: Sequence[Part], options: PartOptions) -> list[_Hashed]:
    """:func:`hashed_part_records` of each chunk (one task of worker processes)."""
    return [hashed_part_records(part, options) for part in parts]


def _cache_path(request: EvalRequest) -> str:
    assert request.cache is not None
    return os.path.join(os.fspath(request.cache), CACHE_NAME)


def _cache_file_bytes(path: str) -> bytes | None:
    """The cache file's bytes, None when there is none.

    Raises:
        StateError: It cannot be read, or does not start as a cache of this format does.
    """
    from vocmatch.evaluation.shards.cache_file import CACHE_MAGIC, CACHE_VERSION
    from vocmatch.evaluation.shards.state import read_state_file

    if not os.path.lexists(path):
        return None
    return read_state_file(path, CACHE_MAGIC, CACHE_VERSION)


def _loaded(
    request: EvalRequest,
    run: str,
    options: PartOptions,
    warned: list[CacheWarning],
    data: Future[CacheContent | StateError | None] | None = None,
) -> CacheContent | None:
    """The cache's content, or None (no cache file, another run's, or one that cannot be
    read: then with a warning); ``data``: its content as being read by a thread."""
    found = data.result() if data is not None else _decoded(_cache_path(request), run, options)
    if isinstance(found, StateError):
        warned.append(CacheWarning(f"cache {found}; every image was matched again"))
        return None
    return found


def _decoded(
    path: str, run: str, options: PartOptions, rankings: bool = True
) -> CacheContent | StateError | None:
    """The content of the cache file ``path`` (None: no file, or another run's), or the
    error that refuses it (``rankings`` False: the order of its joined rankings is left to
    :func:`_decoded_then_ranked`)."""
    from vocmatch.evaluation.shards.cache_file import read_cache

    try:
        found = _cache_file_bytes(path)
        if found is None:
            return None
        return read_cache(
            found, path, run, options.conventions, options.slices, options.preparation, rankings
        )
    except StateError as error:
        return error


def _decoded_then_ranked(
    path: str, run: str, options: PartOptions, content: Future[CacheContent | StateError | None]
) -> StateError | None:
    """:func:`_decoded` without the order of its joined rankings, set as ``content``'s
    result, then that order checked: the error that refuses the cache, or None.

    The run takes the content as soon as it is set, and compares its files' stats and
    matches the changed ones while the order is checked (they do not depend on it); it
    reads no ranking before this returns."""
    from vocmatch.evaluation.shards.cache_file import check_rankings

    try:
        found = _decoded(path, run, options, rankings=False)
    except BaseException as error:
        content.set_exception(error)
        raise
    content.set_result(found)
    if found is None or isinstance(found, StateError) or found.joined is None:
        return None
    try:
        check_rankings(found.joined, path)
    except StateError as error:
        return error
    return None


@dataclass(frozen=True, slots=True)
class _Decoding:
    """The cache read by a thread while the files are listed, keyed by the folders as
    given (the listing's roots, unless it finds them otherwise: it is then read again)."""

    roots: tuple[str, str]
    options: PartOptions
    run: str
    content: Future[CacheContent | StateError | None]
    ranked: Future[StateError | None]
    images: Future[PartImages | None]


def _cached_images(
    content: Future[CacheContent | StateError | None],
    ranked: Future[StateError | None],
    options: PartOptions,
) -> PartImages | None:
    """The results of the images of the cache's joined records (under the scored reading of
    their counts, as :func:`~vocmatch.evaluation.part_images.part_image_results` makes a
    part's), made on the thread that read the cache once their rankings are checked, while
    the run compares its files and matches the changed ones; None when the cache holds no
    joined records."""
    from vocmatch.evaluation.part_images import part_image_results

    found = content.result()
    if found is None or isinstance(found, StateError) or found.joined is None:
        return None
    if ranked.result() is not None:
        return None  # the cache is read as none
    return part_image_results(found.joined.records, options.conventions)


def _decoding(request: EvalRequest, gt: str, pool: ThreadPoolExecutor) -> _Decoding | None:
    """The cache's reading started on ``pool``'s thread (its bytes on the disk only, its
    arrays checked without Python's lock, while the files are listed); None when the
    request's options or the thread cannot be had (the run then finds why, or reads the
    cache itself)."""
    from concurrent.futures import Future

    from vocmatch.errors import VocmatchError
    from vocmatch.run.remote_inputs import part_options

    roots = (gt, os.fspath(request.pred))
    try:
        options = part_options(request, roots)
        run = _run_key(request, options)
        content: Future[CacheContent | StateError | None] = Future()
        ranked = pool.submit(_decoded_then_ranked, _cache_path(request), run, options, content)
        # The pool's one thread makes them once the rankings are checked.
        images = pool.submit(_cached_images, content, ranked, options)
        return _Decoding(roots, options, run, content, ranked, images)
    except (VocmatchError, OSError, RuntimeError):
        return None


@dataclass(frozen=True, slots=True)
class _Opened:
    """A run's cache as read before the run, and what the run is keyed by; the chunks of
    its files as listed and their stats, when they were taken while it was read; the
    check of its rankings' order, when it is made by the thread that read it."""

    options: PartOptions
    run: str
    cached: CacheContent | None
    warned: list[CacheWarning]
    chunks: tuple[Part, ...] | None = None
    stats: npt.NDArray[np.int64] | None = None
    spread: int = CHUNK_SPREAD
    ranked: Future[StateError | None] | None = None
    images: Future[PartImages | None] | None = None


def _opened(
    request: EvalRequest,
    roots: tuple[str, str],
    listing: PartListing | None = None,
    decoding: _Decoding | None = None,
    listed: tuple[ListedStats, ListedStats] | None = None,
) -> _Opened:
    """The run's cache read (``decoding``: as being read by a thread, when it was started
    for these roots); the stats of the ``listing``'s chunks' files: as ``listed``, else
    taken meanwhile when there is a cache and more than one thread may run."""
    from vocmatch.run.remote_inputs import part_options

    data = ranked = images = None
    if decoding is not None and decoding.roots == roots:
        options, run, data = decoding.options, decoding.run, decoding.content
        ranked, images = decoding.ranked, decoding.images
    else:
        options = part_options(request, roots)
        run = _run_key(request, options)
    warned: list[CacheWarning] = []
    spread = _spread(options)
    chunks = chunks_of(listing, spread) if listing is not None else None
    stats = chunk_stats(chunks, listed) if chunks is not None and listed else None
    alone = request.jobs == 1 or not os.path.lexists(_cache_path(request))
    if chunks is None or stats is not None or alone:
        cached = _loaded(request, run, options, warned, data)
        return _Opened(options, run, cached, warned, chunks, stats, spread, ranked, images)
    paths = [path for part in chunks for _, path in (*part.gt_files, *part.pred_files)]
    if data is not None:
        from vocmatch.readers.file_stats import file_stats

        # The thread reads the cache: the stats are taken here, by threads of their own.
        taken = file_stats(paths, request.jobs)
        return _Opened(options, run, _loaded(request, run, options, warned, data), warned,
                       chunks, taken, spread, ranked, images)  # fmt: skip
    cached, stats = _loaded_and_stats(_Loading(request, run, options, warned), paths)
    return _Opened(options, run, cached, warned, chunks, stats, spread)


@dataclass(frozen=True, slots=True)
class _Loading:
    """What :func:`_loaded` reads the cache with."""

    request: EvalRequest
    run: str
    options: PartOptions
    warned: list[CacheWarning]

    def content(self) -> CacheContent | None:
        """:func:`_loaded`'s."""
        return _loaded(self.request, self.run, self.options, self.warned)


def _loaded_and_stats(
    loading: _Loading, paths: list[str]
) -> tuple[CacheContent | None, npt.NDArray[np.int64] | None]:
    """:func:`_loaded`, and the files' stats taken meanwhile by a thread, a share of them at
    a time (a run stopped waits for one share at most); None for the stats when the system
    refuses the thread."""
    from concurrent.futures import ThreadPoolExecutor

    from vocmatch.readers.file_stats import PATHS_PER_TASK, file_stats

    pool = ThreadPoolExecutor(1, thread_name_prefix="vocmatch-stat")
    try:
        shares: list[Future[npt.NDArray[np.int64]]] = []
        try:
            for k in range(0, len(paths), PATHS_PER_TASK):
                shares.append(pool.submit(file_stats, paths[k : k + PATHS_PER_TASK]))
        except RuntimeError:  # no thread: the stats are taken after the cache is read
            return loading.content(), None
        cached = loading.content()
        found = [np.zeros((0, 4), np.int64), *(share.result() for share in shares)]
        return cached, np.concatenate(found)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def evaluated_with_cache(
    request: EvalRequest, progress: Callable[[int, int], None] | None = None
) -> CachedRun:
    """The request's files evaluated with its cache (see the module doc).

    Raises:
        InputError: No annotation file, none that could be read, or not a single
            ground-truth image pairs with a prediction; a class chosen is in neither set.
        AnnotationError: With ``fold_case``, two names of the class map fold to one and
            map to different classes.
        RequestError: COCO results name no ground-truth class (field ``classes``).
    """
    from vocmatch.evaluation.shards.parts import PartListing
    from vocmatch.readers.voc_layout import annotation_folder

    annotations, _ = annotation_folder(request.gt)
    if request.pred_format != "coco":
        from concurrent.futures import ThreadPoolExecutor

        # The cache file is read by a thread while the files are listed (its bytes may be
        # on the disk only, and reading them and checking its arrays run without Python's
        # lock, as listing does).
        with ThreadPoolExecutor(1, thread_name_prefix="vocmatch-cache") as pool:
            decoding = _decoding(request, annotations, pool)
            listing, listed = listed_sides(request, annotations)
            roots = (listing.gt.root, listing.pred.root)
            opened = _opened(request, roots, listing, decoding, listed)
            # In the thread's scope: it checks the rankings' order while this one matches.
            found, _, encoding = _cached_run(request, listing, annotations, None, opened,
                                             progress)  # fmt: skip
        return _written(request, found, encoding, opened)
    from vocmatch.readers.remote import list_location

    gt_listing = list_location(annotations)
    if not gt_listing.files:
        raise no_annotation_files(annotations, gt_listing.skipped)
    opened = _opened(request, (gt_listing.root, os.fspath(request.pred)))
    # The results name images by the ground-truth files read: they are read against those
    # the cache found readable, and again if the guess was wrong.
    unreadable = {s.key for s in (opened.cached.gt_skipped() if opened.cached else ())}
    readable = tuple(f for f in gt_listing.files if f[0] not in unreadable)
    for _ in range(2):
        coco = _coco_predictions(request, gt_listing.root, readable)
        listing = PartListing(gt_listing, coco.listing())
        found, read_keys, encoding = _cached_run(
            request, listing, annotations, coco, opened, progress
        )
        if set(read_keys) == {k for k, _ in readable}:
            break
        if encoding is not None:
            encoding.discard()  # read again against the files read
        keys = set(read_keys)
        readable = tuple(f for f in gt_listing.files if f[0] in keys)
    return _written(request, found, encoding, opened)


def _coco_predictions(
    request: EvalRequest, gt_root: str, gt_files: Sequence[tuple[str, str]]
) -> CocoPredictions:
    from vocmatch.run.cached_coco import read_coco_predictions

    coco_gt = os.fspath(request.coco_gt) if request.coco_gt is not None else None
    pred = os.fspath(request.pred)
    return read_coco_predictions(pred, gt_root, gt_files, coco_gt, request.max_file_size)


def _written(
    request: EvalRequest, found: CachedRun, encoding: CacheEncoding | None, opened: _Opened
) -> CachedRun:
    """The run, its cache written (when ``encoding`` is not None: something changed)."""
    if encoding is not None:
        write_cache(os.fspath(request.cache or ""), _cache_path(request), encoding, opened.warned)
    return replace(found, warnings=tuple(opened.warned))


def _cached_run(
    request: EvalRequest,
    listing: PartListing,
    annotations: str,
    coco: CocoPredictions | None,
    opened: _Opened,
    progress: Callable[[int, int], None] | None,
) -> tuple[CachedRun, tuple[str, ...], CacheEncoding | None]:
    """The run evaluated with its cache, the keys of the ground-truth files read, and the
    cache's new bytes being made (None when nothing changed)."""
    from vocmatch.run.in_parts_found import EvaluatedInParts

    options, run, cached = opened.options, opened.run, opened.cached
    chunks, pred_keys, extra = _keyed_chunks(
        opened.chunks if opened.chunks is not None else chunks_of(listing, opened.spread), coco
    )
    compared = _Compared(request.cache_verify, extra, request.jobs, opened.stats)
    kept, changed, index, known = _reused(chunks, run, cached, compared)
    given = _given_pred(changed, coco, pred_keys)
    fresh = _matched(changed, options, request.jobs, progress, listing.file_count(), given, known)
    failed = opened.ranked.result() if cached is not None and opened.ranked is not None else None
    if failed is not None:
        # Rankings that are not those of the cache's predictions: read as no cache.
        opened.warned.append(CacheWarning(f"cache {failed}; every image was matched again"))
        again = [p for p in chunks if p.index in kept]
        fresh.update(_matched(again, options, request.jobs, None, listing.file_count(),
                              _given_pred(again, coco, pred_keys)))  # fmt: skip
        changed, kept, index, cached = list(chunks), {}, _NewIndex(), None
    joined = cached.joined if cached is not None else None
    if joined is not None and kept and not spliced_whole(joined, kept, fresh):
        # Records the joined layout does not hold: every chunk is read and matched again.
        again = [p for p in chunks if p.index in kept]
        fresh.update(_matched(again, options, request.jobs, None, listing.file_count(),
                              _given_pred(again, coco, pred_keys)))  # fmt: skip
        changed, kept, index = list(chunks), {}, _NewIndex()
    if progress is not None:
        progress(listing.file_count(), listing.file_count())
    matched = len({k for p in changed for k in (*(k for k, _ in p.gt_files), *pred_keys[p.index])})
    total = len({k for k, _ in (*listing.gt.files, *listing.pred.files)})
    made = _Made(run, chunks, kept, fresh, index, extra)
    if joined is not None and kept:
        gathered, content = made.spliced(listing, options, joined)
    else:
        gathered, content = made.gathered(listing, options)
    if cached is not None:  # the strings it holds again are written as read
        content = replace(content, strings=cached.strings)
    gathered.refuse_no_ground_truth(annotations)
    if coco is None:
        from vocmatch.run.read_stage import refuse_unpaired_keys

        refuse_unpaired_keys(gathered.gt_keys, gathered.pred_keys, request.pred)
    else:
        gathered = _with_coco_findings(gathered, coco, request.fold_case)
    # Made while the run is accumulated, written once it is evaluated: a refused run leaves
    # the cache as it was.
    unchanged = cached is not None and not fresh and content.same_chunks(cached)
    encoding = None if unchanged else CacheEncoding(content, options, _cache_path(request))
    try:
        images = None
        if joined is not None and kept and opened.images is not None:
            images = made.image_results(
                joined, opened.images.result(), gathered.records, options.conventions
            )
        found = EvaluatedInParts(gathered.evaluation(images), gathered.records, gathered.scores)
    except BaseException:
        if encoding is not None:
            encoding.discard()
        raise
    done = CachedRun(found, (), matched, total - matched)
    return done, gathered.gt_keys, encoding


@dataclass(frozen=True, slots=True)
class _Made:
    """A run's chunks: those taken from the cache (by index: their key and records, or
    their place among the cache's joined entries), those read and matched, and the stat
    index of the files of the first."""

    run: str
    chunks: Sequence[Part]
    kept: Mapping[int, tuple[str, PartRecords | int]]
    fresh: Mapping[int, _Hashed]
    index: _NewIndex
    extra: Mapping[int, bytes]

    def key_of(self, part: Part) -> str:
        """The key of a chunk read and matched ("" when a file of it could not be read: it
        is read again next time), its files added to the stat index."""
        kept = self.fresh[part.index].kept
        if kept is None:
            return ""
        paths = [path for _, path in (*part.gt_files, *part.pred_files)]
        self.index.take(part.index, paths, kept.stats, kept.digests)
        return _chunk_key(self.run, part, kept.digests.tobytes(), self.extra[part.index])

    def gathered(
        self, listing: PartListing, options: PartOptions
    ) -> tuple[GatheredParts, CacheContent]:
        """Every chunk's records joined, and the cache's new content: joined when every
        chunk's records can be, else chunk by chunk."""
        from vocmatch.evaluation.shards.cache_file import CacheContent
        from vocmatch.evaluation.shards.cache_joined import ChunkEntry, JoinedChunks
        from vocmatch.evaluation.shards.parts import gathered_parts

        every: dict[str, PartRecords] = {}
        results: list[PartRecords] = []
        keys: list[str] = []
        for part in self.chunks:
            if part.index in self.kept:
                key, held = self.kept[part.index]
                assert not isinstance(held, int)
                records = held
            else:
                records = self.fresh[part.index].records
                key = self.key_of(part)
            if key:
                every[key] = records
            keys.append(key)
            results.append(records)
        entries = None
        if all(spliceable(r.records) for r in results) and any(
            r.records.unscored is None for r in results
        ):
            entries = tuple(ChunkEntry.of(k, r) for k, r in zip(keys, results, strict=True))
        gathered = gathered_parts(listing, results, options)  # results emptied
        stats = self.index.done()
        if entries is not None and sum(e.images for e in entries) == len(gathered.records.keys):
            joined = JoinedChunks(ranked_of(gathered.records), entries)
            return gathered, CacheContent(self.run, stats, {}, joined=joined)
        return gathered, CacheContent(self.run, stats, every)

    def image_results(
        self,
        joined: JoinedChunks,
        cached: PartImages | None,
        records: MatchRecords,
        conv: Conventions,
    ) -> list[ImageResult] | None:
        """Each image's result of the records :meth:`spliced` gives (``records``): those of
        the chunks taken from the cache from ``cached`` (the results of the cache's joined
        records' images), the others' made here; None where they do not serve (then the
        evaluation makes them all)."""
        from vocmatch.evaluation.part_images import (
            PartImages,
            joined_image_results,
            part_image_results,
        )

        if cached is None or len(cached.keys) != sum(e.images for e in joined.entries):
            return None
        starts = np.cumsum([0, *(e.images for e in joined.entries)]).tolist()
        parts: list[PartImages] = []
        for part in self.chunks:
            if part.index in self.kept:
                held = self.kept[part.index][1]
                assert isinstance(held, int)
                start, end = starts[held], starts[held + 1]
                parts.append(PartImages(cached.keys[start:end], cached.images[start:end]))
            else:
                chunk = self.fresh[part.index].records.records
                parts.append(part_image_results(chunk, conv))
        return joined_image_results(parts, records)

    def spliced(
        self, listing: PartListing, options: PartOptions, joined: JoinedChunks
    ) -> tuple[GatheredParts, CacheContent]:
        """The chunks read and matched put in place of theirs in the cache's joined records,
        and the cache's new content."""
        from vocmatch.evaluation.shards.cache_file import CacheContent
        from vocmatch.evaluation.shards.cache_joined import (
            ChunkEntry,
            JoinedChunks,
            Segment,
            gathered_joined,
            spliced,
        )

        segments: list[Segment] = []
        entries: list[ChunkEntry] = []
        for part in self.chunks:
            if part.index in self.kept:
                held = self.kept[part.index][1]
                assert isinstance(held, int)
                segments.append(held)
                entries.append(joined.entries[held])
            else:
                part_records = self.fresh[part.index].records
                entry = ChunkEntry.of(self.key_of(part), part_records)
                segments.append((entry, part_records.records))
                entries.append(entry)
        if segments == list(range(len(joined.entries))):
            records = joined.records  # every chunk as the cache holds it
        else:
            records = spliced(joined, segments)
        gathered = gathered_joined(listing, entries, records, options)
        content = CacheContent(
            self.run, self.index.done(), {}, joined=JoinedChunks(records, tuple(entries))
        )
        return gathered, content


def spliced_whole(
    joined: JoinedChunks,
    kept: Mapping[int, tuple[str, PartRecords | int]],
    fresh: Mapping[int, _Hashed],
) -> bool:
    """Whether the chunks read and matched can be put in place of theirs in the cache's
    joined records: each one's records :func:`spliceable`, and some chunk of the run with
    a scored prediction (a run with none keeps its unscored reading, chunk by chunk)."""
    if not all(spliceable(h.records.records) for h in fresh.values()):
        return False
    if any(h.records.records.unscored is None for h in fresh.values()):
        return True
    return any(joined.entries[held].scored for _, held in kept.values() if isinstance(held, int))


def _keyed_chunks(
    chunks: tuple[Part, ...], coco: CocoPredictions | None
) -> tuple[tuple[Part, ...], dict[int, tuple[str, ...]], dict[int, bytes]]:
    """The chunks as keyed (without prediction files when the predictions are a COCO
    results file's), each one's prediction keys, and what its key holds besides its files
    (the digests of its predictions read already)."""
    pred_keys = {p.index: tuple(k for k, _ in p.pred_files) for p in chunks}
    if coco is not None:
        # The predictions are read already: a chunk's key holds their digests, not a file's.
        chunks = tuple(replace(p, pred_files=()) for p in chunks)
    extra = {p.index: coco.key_bytes(pred_keys[p.index]) if coco else b"" for p in chunks}
    return chunks, pred_keys, extra


def _given_pred(
    changed: Sequence[Part], coco: CocoPredictions | None, pred_keys: Mapping[int, Sequence[str]]
) -> dict[int, ColumnSet]:
    """Per changed chunk, its predictions read already (from a COCO results file)."""
    if coco is None:
        return {}
    return {
        p.index: coco.of_keys([*(k for k, _ in p.gt_files), *pred_keys[p.index]]) for p in changed
    }


def _with_coco_findings(
    gathered: GatheredParts, coco: CocoPredictions, fold_case: bool
) -> GatheredParts:
    """The joined chunks of COCO results with the records that could not be read in the
    order a run without a cache reports them (by path and line, not by chunk), refused as
    that run refuses results that name no ground-truth class.

    Raises:
        RequestError: No prediction class is a ground-truth class (field ``classes``).
    """
    from vocmatch.evaluation.class_map import no_shared_name

    counts = gathered.counts
    reason = no_shared_name(
        [name for name, count in counts.gt_classes if count],
        [name for name, count in counts.pred_classes if count],
        fold_case,
    )
    if reason is not None:
        raise RequestError("classes", reason)
    skipped = (*gathered.gt_skipped, *gathered.listing.pred.skipped, *coco.pred.skipped)
    by_line = tuple(sorted(skipped, key=lambda s: (s.path, s.line or 0)))
    return replace(gathered, gt_skipped=(), pred_skipped=by_line)


class _NewIndex:
    """The stat index a run writes: the rows of the files of the chunks it took from the
    cache, and those of the chunks it read, in the order of the chunks (as the next run
    lists them, unless files were added or removed: it then finds their rows by path)."""

    def __init__(self) -> None:
        self.chunks: dict[int, tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.uint8]]]
        self.chunks = {}

    def take(
        self,
        index: int,
        paths: list[str],
        stat: npt.NDArray[np.int64],
        digest: npt.NDArray[np.uint8],
    ) -> None:
        """Add the files of chunk ``index`` (taken from the cache, or read): paths, stats,
        digests."""
        self.chunks[index] = (paths, stat, digest)

    def done(self) -> StatIndex:
        """The index, in the order of the chunks."""
        from vocmatch.evaluation.shards.cache_file import HASH_BYTES, StatIndex

        rows = [self.chunks[k] for k in sorted(self.chunks)]
        return StatIndex(
            tuple(p for paths, _, _ in rows for p in paths),
            np.concatenate([np.zeros((0, 4), np.int64), *(s for _, s, _ in rows)]),
            np.concatenate([np.zeros((0, HASH_BYTES), np.uint8), *(d for _, _, d in rows)]),
        )


@dataclass(frozen=True, slots=True)
class _Compared:
    """How a run compares its files with its cache's.

    Attributes:
        verify: Hash every file.
        extra: Per chunk, what its key holds besides its files (predictions read already).
        jobs: Threads for the stats.
        stats: The files' stats, in the order of the chunks, when taken already.
    """

    verify: bool
    extra: Mapping[int, bytes]
    jobs: int = 1
    stats: npt.NDArray[np.int64] | None = None


def _reused(
    chunks: Sequence[Part], run: str, cached: CacheContent | None, compared: _Compared
) -> tuple[dict[int, tuple[str, PartRecords | int]], list[Part], _NewIndex, KnownDigests]:
    """The chunks the cache holds (by index: their key and records), the others, the stat
    index of the files of those held, and the others' files' digests known by their stats.

    Every file is stat'ed (unless ``compared`` holds the stats), and the stats compared
    with the index's at once; a file whose stat differs (or every file, with ``verify``)
    is hashed."""
    from vocmatch.evaluation.shards.cache_file import HASH_BYTES
    from vocmatch.readers.file_stats import file_stats

    kept: dict[int, tuple[str, PartRecords | int]] = {}
    index = _NewIndex()
    if cached is None:
        return kept, list(chunks), index, {}
    paths = [path for part in chunks for _, path in (*part.gt_files, *part.pred_files)]
    ends = np.cumsum([part.file_count() for part in chunks]).tolist()
    now = compared.stats
    if now is None or now.shape != (len(paths), 4):
        now = file_stats(paths, compared.jobs)
    missing = now[:, 0] < 0
    in_place = cached.stats.paths == tuple(paths)
    if in_place:
        row = np.arange(len(paths), dtype=np.int64)  # as the last run listed them
    else:
        known = cached.stats.rows()
        row = np.array([known.get(path, -1) for path in paths], dtype=np.int64)
    digest = np.zeros((len(paths), HASH_BYTES), dtype=np.uint8)
    same = (row >= 0) & ~missing
    if len(cached.stats.paths):
        same &= (cached.stats.stat[np.maximum(row, 0)] == now).all(axis=1)
        digest[same] = cached.stats.digest[row[same]]
    else:
        same[:] = False
    if compared.verify:
        same[:] = False
    for i in np.flatnonzero(~same & ~missing).tolist():
        hashed = _digest(paths[i])
        if hashed is None:
            missing[i] = True
        else:
            digest[i] = np.frombuffer(hashed, dtype=np.uint8)
    changed: list[Part] = []
    spans: list[tuple[int, int]] = []
    start = 0
    held = cached.held()
    placed = _placed_keys(cached, len(chunks), compared) if in_place else None
    for n, (part, end) in enumerate(zip(chunks, ends, strict=True)):
        if not missing[start:end].any():
            if placed is not None and placed[n] and same[start:end].all():
                key = placed[n]  # the same files, stats and digests as the last run's
            else:
                digests = digest[start:end].tobytes()
                key = _chunk_key(run, part, digests, compared.extra[part.index])
            records = held.get(key)
            if records is not None:
                kept[part.index] = (key, records)
                index.take(part.index, paths[start:end], now[start:end], digest[start:end])
                start = end
                continue
        changed.append(part)
        spans.append((start, end))
        start = end
    return kept, changed, index, known_digests(paths, spans, same & ~missing, now, digest)


def _placed_keys(cached: CacheContent, chunks: int, compared: _Compared) -> list[str] | None:
    """The keys of the cache's joined chunks, in their order, when they are this run's
    chunks' in theirs; None when they may not be (then each chunk's key is computed).

    The cache's stat index lists this run's files in this run's order (the caller checks):
    the last run listed the same files, so it cut the same chunks, and keyed each (a chunk
    with a file it could not read has no rows in the index). Under the same run key, a
    chunk whose files' stats are the index's has the key the last run gave it, unless its
    key holds more than its files (predictions read already) or every file is hashed.
    """
    joined = cached.joined
    if joined is None or compared.verify or len(joined.entries) != chunks:
        return None
    if any(compared.extra.values()):
        return None
    return [entry.key for entry in joined.entries]


def _matched(
    changed: Sequence[Part],
    options: PartOptions,
    jobs: int,
    progress: Callable[[int, int], None] | None,
    total: int,
    given: Mapping[int, ColumnSet],
    known: KnownDigests | None = None,
) -> dict[int, _Hashed]:
    """The changed chunks read and matched: by worker processes when they hold many files
    and more than one may run (a few batches of chunks a worker), else here (as are those
    whose predictions are ``given``, read already; the digests ``known`` taken here)."""
    from vocmatch.evaluation.shards.parts import PARTS_PER_WORKER, LocalParts
    from vocmatch.readers.workers import worker_results

    files = sum(p.file_count() for p in changed)
    workers = LocalParts(jobs).workers()
    done: dict[int, _Hashed] = {}
    if files < FEW_CHANGED or workers <= 1 or given:
        for part in changed:
            done[part.index] = hashed_part_records(part, options, given.get(part.index), known)
        return done
    count = min(len(changed), PARTS_PER_WORKER * workers)
    batches = [tuple(changed[k::count]) for k in range(count)]
    read = 0
    with worker_results(hashed_chunks, [(b, options) for b in batches], jobs) as results:
        for batch, hashed in zip(batches, results, strict=True):
            done.update((part.index, h) for part, h in zip(batch, hashed, strict=True))
            read += sum(p.file_count() for p in batch)
            if progress is not None:
                progress(read, total)
    return done

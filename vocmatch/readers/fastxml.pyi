"""The compiled fast reader (``fastxml.c``), used by :mod:`vocmatch.readers.scan`."""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Size = tuple[bytes, bytes, bytes | None]
Read = tuple[
    bytes | None,  # <filename> text as written, None where absent
    Size | None,  # <width>, <height>, <depth> texts as written, None without <size>
    list[bytes],  # each object's <name> text as written
    bytes,  # (B, 4) float64 x1, y1, x2, y2
    bytes,  # (B,) float64 scores, NaN where absent
    bytes,  # (B,) bool difficult
    bytes,  # (B,) bool truncated
    bytes,  # (B,) bool occluded
    list[bytes | None],  # each object's <pose> text as written, None where absent
]

def scan(data: bytes, max_coordinate: float, /) -> Read | None: ...
def read_number(text: bytes, /) -> float | None: ...

ChunkRead = tuple[
    bytes,  # (B, 4) float64 x1, y1, x2, y2 of the objects of the files read, in file order
    bytes,  # (B,) float64 scores, NaN where absent
    bytes,  # (B,) bool difficult
    bytes,  # (B,) bool truncated
    bytes,  # (B,) bool occluded
    bytes,  # (B,) int32 index of each object's name in the name texts
    bytes,  # (B,) int32 index of each object's pose in the pose texts, -1 where absent
    bytes,  # (F,) int64 objects of each file read
    bytes,  # (F,) int32 index of each file read's <size> in the sizes, -1 where absent
    bytes,  # (S, 3) int64 the distinct <size> values: width, height, depth (-1 absent)
    list[tuple[bytes, str]],  # name texts: as written, as the parser reads them
    list[tuple[bytes, str]],  # pose texts, likewise
    list[str | None],  # <filename> of each file read, as the parser reads it
    list[int],  # indices of the files left to the caller
]

def read_chunk(
    files: Sequence[tuple[str, str]],
    max_bytes: int,
    max_coordinate: float,
    text_limit: int,
    /,
) -> ChunkRead: ...

Kept = tuple[
    bytes,  # (F, 4) int64 size, mtime_ns, ctime_ns, inode of each file read (as opened)
    bytes,  # the bytes scanned of each file read, one after the other
    bytes,  # (F,) int64 where each file read's bytes end
]

def read_chunk_kept(
    files: Sequence[tuple[str, str]],
    max_bytes: int,
    max_coordinate: float,
    text_limit: int,
    /,
) -> tuple[ChunkRead, Kept]: ...
def stat_files(paths: list[str], /) -> bytes | None: ...
def list_folder(
    directory: str, path_prefix: str, key_prefix: str, suffix: str, /
) -> (
    tuple[
        list[tuple[str, str]],  # (key, path) of the plain files with the suffix, sorted
        list[tuple[str, int]],  # (name, kind) of every other entry, for the caller
    ]
    | None
): ...
def list_folder_stats(
    directory: str, path_prefix: str, key_prefix: str, suffix: str, /
) -> (
    tuple[
        list[tuple[str, str]],  # (key, path) of the plain files with the suffix, sorted
        list[tuple[str, int]],  # (name, kind) of every other entry, for the caller
        bytes,  # (F, 4) int64 size, mtime_ns, ctime_ns, inode of each of the files, -1 refused
    ]
    | None
): ...
def places_hold(
    label: npt.NDArray[np.int32],
    count: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    n_classes: int,
    /,
) -> bool: ...
def rows_fit(
    rows: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64], label: npt.NDArray[np.int32], /
) -> bool: ...
def merge_runs(
    big: npt.NDArray[np.int64],
    big_score: npt.NDArray[np.float64],
    small: npt.NDArray[np.int64],
    small_score: npt.NDArray[np.float64],
    out: npt.NDArray[np.int64],
    /,
) -> bool: ...

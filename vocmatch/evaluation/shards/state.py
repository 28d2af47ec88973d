"""The serialised state of an incremental evaluator: a small versioned file format.

A state file is, in order:

* the magic ``b"VMSTATE\\0"`` (8 bytes) and the format version (``<u4``);
* the header's length (``<u4``) and the header, UTF-8 JSON: the options the state was made
  with, the image keys, the class names, and each array's name, dtype and shape;
* each array's raw little-endian bytes, in the header's order, nothing between them;
* a CRC-32 (``<u4``, :func:`zlib.crc32`) of everything before it.

Reading checks the magic, the version, the checksum, then that every declared dtype is one
of a few plain numeric ones and that the declared sizes add up to the file's size exactly,
before any array is made: a truncated, corrupted or crafted file is refused with one
:class:`~vocmatch.errors.StateError`, and reading never runs code (JSON and raw numbers
only, no pickle) nor allocates more than the file's size justifies. A file is read by
:func:`read_state_file`: a regular file only (never a pipe or a device, never blocking), of
at most :data:`~vocmatch.limits.MAX_STATE_BYTES`, its first 16 bytes checked before the rest
is read. The header's options are checked field by field by
:mod:`vocmatch.evaluation.shards.state_options`.

Version 2 holds the match records of every image (:mod:`vocmatch.evaluation.records`, laid
out by :mod:`vocmatch.evaluation.shards.state_records`): per kept prediction its class, score and
match flags, per image and per class counts, and no boxes. Version 3 adds the files a shard
could not read and the prediction files without ground truth; version 4 which shard of
which run the state holds; version 5 each image-class's ground truth that counts; version 6
each slice value's match records, what the detection calibration errors read, and, when the
state was asked to keep them, each image's per-box records and its boxes; version 7 the
preparation of the predictions and what it removed (:data:`FORMAT_VERSION`).
Version 1, which held each image's boxes, is refused with one line naming its version.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.errors import AnnotationError, StateError
from vocmatch.limits import MAX_STATE_BYTES

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "MAX_STATE_BYTES",
    "READ_VERSIONS",
    "RawState",
    "read_state",
    "read_state_file",
    "state_pieces",
    "write_state",
]

MAGIC = b"VMSTATE\0"
#: The newest format version. Version 3 is version 2 with the header's ``skipped`` list (the
#: files a shard could not read) or its ``orphan_pred`` list (the prediction files without
#: ground truth): a state with neither is written as version 2, which earlier vocmatch reads
#: too; a state with either as version 3, which earlier vocmatch refuses instead of merging
#: it as if there were none. Version 4 adds the header's ``shard`` object (which shard of
#: which run the state holds: :class:`~vocmatch.evaluation.shards.shard_origin.ShardOrigin`), so
#: that a merge can check it has every shard of one run; earlier vocmatch refuses it.
#: Version 5 adds the ``gt_cells`` array (each image-class's ground truth that counts, which
#: a resample of images weighs: the bootstrap after a merge); earlier vocmatch refuses it.
#: Version 6 adds the slices (the options' ``slices``, the header's ``slice_values`` and the
#: ``slice_*`` arrays: each slice value matched in the shard), the optional
#: ``calibration_*`` arrays (what OCE and D-ECE read: each object's OCE terms, each
#: prediction's place and size in its image, written only by an evaluator asked for them)
#: and, to a state asked to keep them, each image's per-box records (the ``detail_*``
#: arrays) and the boxes of its images (the ``boxes`` header object and the ``boxes_gt_*``
#: and ``boxes_pred_*`` arrays): what a report that lists or draws boxes reads. A state
#: with none of these is written in the version its other fields need (5 or earlier), which
#: earlier vocmatch reads. Version 7 adds the preparation of the predictions (the options'
#: ``preparation`` and the header's ``removed`` list:
#: :mod:`vocmatch.evaluation.shards.state_preparation`), written only by an evaluator that
#: prepares them; earlier vocmatch refuses it rather than merge it with unprepared states.
FORMAT_VERSION = 7
#: The format versions this vocmatch reads.
READ_VERSIONS = (2, 3, 4, 5, 6, 7)
_PREFIX = struct.Struct("<8sII")  # magic, version, header length
_CRC = struct.Struct("<I")
#: The dtypes an array may be declared with: plain little-endian numbers, never objects.
_DTYPES = frozenset({"|u1", "<u2", "<u4", "<u8", "<i4", "<i8", "<f4", "<f8"})
#: Above any real count; keeps a crafted shape's product a small Python integer.
_MAX_DIMENSION = 1 << 48


@dataclass(frozen=True, slots=True)
class RawState:
    """A state as stored: the header's fields and the arrays, by name.

    Attributes:
        header: The header's JSON object, without the array table.
        arrays: Each array, by name, in file order.
    """

    header: Mapping[str, Any]
    arrays: Mapping[str, npt.NDArray[Any]]


def write_state(state: RawState, magic: bytes = MAGIC, version: int = FORMAT_VERSION) -> bytes:
    """The bytes of a state file.

    Args:
        state: The header fields (JSON values) and the arrays (numeric dtypes of
            :data:`_DTYPES` once made little-endian).
        magic: The file's 8-byte signature (another kind of file in the same container).
        version: Its format version.

    Returns:
        The file's bytes.
    """
    return b"".join(state_pieces(state, magic, version))


def state_pieces(
    state: RawState, magic: bytes = MAGIC, version: int = FORMAT_VERSION
) -> list[bytes | memoryview]:
    """The bytes of :func:`write_state` as consecutive pieces, the arrays' not copied (for
    :func:`vocmatch.files.save_chunks`, which writes them without joining them)."""
    table = []
    parts: list[memoryview] = []
    for name, array in state.arrays.items():
        stored = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        if stored.dtype.str not in _DTYPES:
            raise ValueError(f"array {name!r} has dtype {stored.dtype.str}, not a stored one")
        table.append({"name": name, "dtype": stored.dtype.str, "shape": list(stored.shape)})
        parts.append(stored.reshape(-1).view(np.uint8).data)  # its bytes, not copied
    header = json.dumps({**state.header, "arrays": table}, separators=(",", ":")).encode()
    # The checksum taken part by part: the pieces are not joined.
    pieces: list[bytes | memoryview] = [_PREFIX.pack(magic, version, len(header)), header, *parts]
    crc = 0
    for piece in pieces:
        crc = zlib.crc32(piece, crc)
    return [*pieces, _CRC.pack(crc)]


def _versions_read(versions: tuple[int, ...]) -> str:
    """``version 2``, ``versions 2 and 3``."""
    if len(versions) == 1:
        return f"version {versions[0]}"
    return f"versions {', '.join(map(str, versions[:-1]))} and {versions[-1]}"


def read_state(
    data: bytes,
    source: str = "state",
    magic: bytes = MAGIC,
    version: int | tuple[int, ...] = READ_VERSIONS,
) -> RawState:
    """A state from the bytes of a state file, every declaration checked.

    Args:
        data: The file's bytes.
        source: What to call the file in errors (its path).
        magic: The signature expected.
        version: The format version expected, or the versions.

    Returns:
        The header fields and the arrays (read-only views of ``data``).

    Raises:
        StateError: The bytes are not a state file of this version, or are truncated,
            corrupted or inconsistent.
    """
    header_size = _header_size(data, len(data), source, magic, version)
    end = len(data) - _CRC.size
    (stored_crc,) = _CRC.unpack_from(data, end)
    if zlib.crc32(memoryview(data)[:end]) != stored_crc:
        raise StateError(f"{source}: truncated or corrupted (checksum does not match)")
    body = _PREFIX.size + header_size
    try:
        header = json.loads(bytes(data[_PREFIX.size : body]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        if "integer string conversion" in str(error):  # Python's 4,300-digit limit
            raise StateError(f"{source}: corrupted header (a number too long to read)") from None
        raise StateError(f"{source}: corrupted header ({error})") from None
    except RecursionError:
        raise StateError(f"{source}: corrupted header (nested too deeply)") from None
    if not isinstance(header, dict):
        raise StateError(f"{source}: corrupted header (not a JSON object)")
    table = _array_table(header.pop("arrays", None), source)
    declared = sum(_nbytes(dtype, shape) for _, dtype, shape in table)
    if declared != end - body:
        raise StateError(
            f"{source}: arrays declare {declared} bytes but the file holds {end - body}"
        )
    arrays: dict[str, npt.NDArray[Any]] = {}
    offset = body
    for name, dtype, shape in table:
        size = _nbytes(dtype, shape)
        count = size // np.dtype(dtype).itemsize
        flat = np.frombuffer(data, dtype=np.dtype(dtype), count=count, offset=offset)
        arrays[name] = flat.reshape(shape)
        offset += size
    return RawState(header, arrays)


def _read_from_start(descriptor: int, limit: int) -> bytes:
    """At most ``limit`` bytes of the file from its start, fewer at its end: read straight
    into the bytes returned (one copy, not a buffer's two), without Python's lock."""
    os.lseek(descriptor, 0, os.SEEK_SET)
    pieces: list[bytes] = []
    got = 0
    while got < limit:
        more = os.read(descriptor, limit - got)
        if not more:
            break
        pieces.append(more)
        got += len(more)
    return b"".join(pieces)  # one piece is returned as it is


def _header_size(
    head: bytes, size: int, source: str, magic: bytes, version: int | tuple[int, ...]
) -> int:
    """The header's length, from the first bytes of a state file of ``size`` bytes, once
    its signature and version are checked.

    Raises:
        StateError: The file is too short to be a state, has another signature or format
            version, or declares a header longer than itself.
    """
    if size < _PREFIX.size + _CRC.size or len(head) < _PREFIX.size:
        raise StateError(f"{source}: not a vocmatch state (only {size} bytes)")
    found_magic, found_version, header_size = _PREFIX.unpack_from(head)
    if found_magic != magic:
        signature = magic.rstrip(b"\0").decode()
        raise StateError(f"{source}: not a vocmatch state (no {signature} signature)")
    versions = (version,) if isinstance(version, int) else version
    if found_version not in versions:
        raise StateError(
            f"{source}: state format version {found_version}; this vocmatch reads "
            + _versions_read(versions)
        )
    if _PREFIX.size + header_size > size - _CRC.size:
        raise StateError(f"{source}: truncated (header of {header_size} bytes runs past the end)")
    return int(header_size)


def read_state_file(
    path: str | os.PathLike[str],
    magic: bytes = MAGIC,
    version: int | tuple[int, ...] = READ_VERSIONS,
    max_bytes: int = MAX_STATE_BYTES,
) -> bytes:
    """The bytes of a state file, read only once they can be a state's.

    Only a regular file is read (also behind a symbolic link): a named pipe, socket or
    device (``/dev/zero``) is refused without blocking and without a byte read. A file
    larger than ``max_bytes`` is refused from its size, and the signature, the format
    version and the header's length are checked on the first 16 bytes before the rest is
    read; at most ``max_bytes + 1`` bytes are ever read, even from a file that grows.
    :func:`read_state` checks the rest.

    Args:
        path: The file.
        magic: The signature expected.
        version: The format version expected, or the versions.
        max_bytes: Larger files are refused unread.

    Raises:
        StateError: The file cannot be read (the system's reason), is not a regular file,
            is larger than ``max_bytes``, or does not start as a state of this version
            does (one line naming the path).
    """
    from vocmatch.readers.regular_files import open_regular

    name = os.fspath(path)
    try:
        with open_regular(name, "state") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size > max_bytes:
                raise StateError(
                    f"{name}: larger than the {max_bytes:,}-byte limit of a state ({size:,} bytes)"
                )
            _header_size(stream.read(_PREFIX.size), size, name, magic, version)
            data = _read_from_start(stream.fileno(), min(size, max_bytes) + 1)
    except AnnotationError as error:  # not a regular file, or cannot be opened
        raise StateError(str(error)) from None
    except OSError as error:
        raise StateError(f"{name}: cannot read state: {error.strerror or error}") from None
    if len(data) > max_bytes:
        raise StateError(f"{name}: larger than the {max_bytes:,}-byte limit of a state")
    return data


def _array_table(table: object, source: str) -> list[tuple[str, str, tuple[int, ...]]]:
    """The header's array declarations, each checked: a name, an allowed dtype, a shape of
    a few non-negative integers."""
    if not isinstance(table, list):
        raise StateError(f"{source}: corrupted header (no array table)")
    found: list[tuple[str, str, tuple[int, ...]]] = []
    names: set[str] = set()
    for entry in table:
        if not isinstance(entry, dict):
            raise StateError(f"{source}: corrupted header (an array entry is not an object)")
        name, dtype, shape = entry.get("name"), entry.get("dtype"), entry.get("shape")
        if not isinstance(name, str) or name in names:
            raise StateError(f"{source}: corrupted header (array name {name!r})")
        if not isinstance(dtype, str) or dtype not in _DTYPES:
            raise StateError(f"{source}: array {name!r} declares dtype {dtype!r}")
        if (
            not isinstance(shape, list)
            or len(shape) > 2
            or not all(type(n) is int and 0 <= n < _MAX_DIMENSION for n in shape)
        ):
            raise StateError(f"{source}: array {name!r} declares shape {shape!r}")
        names.add(name)
        found.append((name, dtype, tuple(shape)))
    return found


def _nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    count = 1
    for n in shape:
        count *= n
    return count * np.dtype(dtype).itemsize

"""Files read as the readers read them: regular files only, opened without blocking (a
named pipe, socket or device is refused before anything waits on it), of bounded size, with
the system's reason when they cannot be read."""

from __future__ import annotations

import errno
import io
import os
import stat
from typing import TYPE_CHECKING, BinaryIO

from vocmatch.checks import checked_max_bytes
from vocmatch.errors import AnnotationError
from vocmatch.limits import DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

__all__ = ["NUL_IN_PATH", "open_regular", "read_bytes", "system_reason"]


def system_reason(error: OSError) -> str:
    """The system's words for why a call failed (``No such file or directory``)."""
    return error.strerror or str(error)


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _read_to_end(descriptor: int, expected: int, max_bytes: int) -> bytes:
    """Read until the end of the file or past ``max_bytes``, whichever comes first.

    The first read asks for the size the file had (plus one byte, to see the end): a
    buffer of ``max_bytes`` for every small file would cost more than the reading itself.
    """
    parts: list[bytes] = []
    total = 0
    want = min(expected, max_bytes) + 1
    while total <= max_bytes:
        part = os.read(descriptor, want)
        if not part:
            break
        parts.append(part)
        total += len(part)
        want = min(1 << 16, max_bytes + 1 - total)
    return b"".join(parts)


def _kind_of(name: str) -> str | None:
    """What a path that is not a regular file is (a socket, a device), if it can be told."""
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return None
    return next((kind for test, kind in _KINDS if test(mode)), None)


#: Why a path holding a NUL byte (which no system call takes) cannot be read.
NUL_IN_PATH = "the path holds a NUL byte"


def _open_regular(name: str, what: str = "file") -> tuple[int, os.stat_result]:
    """Open a regular file for reading without blocking: a named pipe, socket or device
    (also behind a symbolic link) is refused before anything waits on it."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(name, flags)
    except ValueError:  # a path no system call can take (a library caller's)
        raise AnnotationError(name, f"cannot read {what}: {NUL_IN_PATH}") from None
    except OSError as error:
        # A socket cannot be opened at all (ENXIO): say what it is, as for a pipe.
        kind = _kind_of(name) if error.errno == errno.ENXIO else None
        if kind is not None:
            raise AnnotationError(name, f"not a regular file: {kind}") from None
        raise AnnotationError(name, f"cannot read {what}: {system_reason(error)}") from None
    try:
        mode = os.fstat(descriptor)
        if not stat.S_ISREG(mode.st_mode):
            kind = next((k for test, k in _KINDS if test(mode.st_mode)), "a special file")
            raise AnnotationError(name, f"not a regular file: {kind}")
    except OSError as error:
        os.close(descriptor)
        raise AnnotationError(name, f"cannot read {what}: {system_reason(error)}") from None
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, mode


class _NonBlockingReader(io.RawIOBase):
    """A descriptor opened without blocking, read as it is: a read that would wait raises
    :class:`BlockingIOError` (``io.FileIO`` returns None, which Pillow takes for data)."""

    def __init__(self, descriptor: int) -> None:
        self._descriptor = descriptor

    def fileno(self) -> int:
        return self._descriptor

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        try:
            os.lseek(self._descriptor, 0, os.SEEK_CUR)
        except OSError:
            return False
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return os.lseek(self._descriptor, offset, whence)

    def tell(self) -> int:
        return os.lseek(self._descriptor, 0, os.SEEK_CUR)

    def readinto(self, buffer: WriteableBuffer) -> int:
        target = memoryview(buffer).cast("B")
        data = os.read(self._descriptor, len(target))
        target[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            os.close(self._descriptor)
        super().close()


def open_regular(path: str | os.PathLike[str], what: str = "file") -> BinaryIO:
    """Open a regular file for reading (binary), refusing anything else without blocking.

    For readers that take a file object (Pillow); :func:`read_bytes` reads a whole file.
    Reads never wait either: a file the system calls regular whose read would block (such
    as ``/proc/kmsg``) raises :class:`BlockingIOError` (``Resource temporarily
    unavailable``), as :func:`read_bytes` refuses it.

    Args:
        path: The file.
        what: The file's kind in messages (``cannot read mask: ...``).

    Raises:
        AnnotationError: The file cannot be opened (with the system's reason) or is a
            directory, named pipe, socket or device.
    """
    descriptor, _ = _open_regular(os.fspath(path), what)
    return io.BufferedReader(_NonBlockingReader(descriptor))


def read_bytes(path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Read a whole annotation file, refusing what is not a regular file of bounded size.

    The file is opened without blocking, so a named pipe cannot hang the read; its size is
    checked before reading, and at most ``max_bytes + 1`` bytes are read even if the file
    grows meanwhile.

    Args:
        path: The file.
        max_bytes: Files larger than this are refused without being read.

    Returns:
        The file's content.

    Raises:
        AnnotationError: The file cannot be opened or read (with the system's reason), is
            not a regular file, or is larger than ``max_bytes``.
    """
    name = os.fspath(path)
    max_bytes = checked_max_bytes(max_bytes)
    descriptor, mode = _open_regular(name)
    try:
        if mode.st_size > max_bytes:
            raise AnnotationError(
                name,
                f"file is larger than the {max_bytes:,}-byte limit ({mode.st_size:,} bytes)",
            )
        data = _read_to_end(descriptor, mode.st_size, max_bytes)
    except OSError as error:
        raise AnnotationError(name, f"cannot read file: {system_reason(error)}") from None
    finally:
        os.close(descriptor)
    if len(data) > max_bytes:
        raise AnnotationError(name, f"file is larger than the {max_bytes:,}-byte limit")
    return data

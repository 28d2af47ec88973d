"""The one writer of vocmatch: every file it writes is whole or not written at all.

Every file vocmatch writes goes through :func:`save_text`, :func:`save_bytes` or
:func:`save_chunks` (content given in consecutive pieces, written without joining them): reports
(``--output``, ``--html``, ``--classes-csv``, ``--write-thresholds``, the outputs of ``diff``,
``seg`` and ``suspects``), evaluator states (:meth:`vocmatch.Evaluator.save`, so
``--save-state``) and the annotation copies of ``suspects``. The content is written to a new
temporary file in the target's folder (a unique name, ``.vocmatch-*.tmp``, created with
``O_EXCL``, so a leftover file or link of that name is never written through), flushed to
disk, given the permissions the target has (or ``0666`` less the umask for a new file, as
``open(path, "w")`` would), and renamed over the target with :func:`os.replace`, which is
atomic. A full disk, a file size limit, a crash, Ctrl-C or a signal therefore leave the
earlier file as it was and no partial file; the temporary file is removed on every failure.
Two runs writing the same path each rename a complete file of their own, so the last one
wins and the file is never a mix of the two.

A content made while other work runs, to be kept only if that work succeeds (a run's cache
file), is written ahead with :func:`stage_chunks`: the temporary file is written and flushed
meanwhile, and renamed over the target (:meth:`StagedFile.commit`) or removed
(:meth:`StagedFile.discard`) once the work ends; until then the target is as it was.

A target that exists and is not a regular file -- ``/dev/stdout``, ``/dev/null``, a named
pipe such as a shell's ``>(gzip > r.gz)``, a terminal, ``/dev/full`` -- is never replaced: it
is written directly, and a named pipe nobody reads is refused at once instead of blocking. A
symbolic link keeps pointing where it did: the file it names is replaced (or created).

Every failure is one :class:`~vocmatch.errors.OutputError`, ``cannot write PATH: reason``.

Signals: the temporary files being written are listed (:func:`remove_temporary_files`
removes those of this process). The command line's signal handlers remove them, then end
the run. A library caller without such a handler gets the same from Python's own Ctrl-C
(:class:`KeyboardInterrupt` is raised inside the write, which removes its temporary file)
and from any handler that raises an exception; a signal that kills the process outright
(SIGTERM's default action, SIGKILL) or a power cut can leave one ``.vocmatch-*.tmp`` file
beside the target, never a damaged target. A program that handles such a signal without
raising calls :func:`remove_temporary_files` in its handler.

:func:`check_output` runs before any work, so that a path that cannot be written (empty, a
folder, a missing or read-only folder) or that is one of the run's inputs is refused in one
line before a long evaluation rather than after it.

A new output writes through :func:`save_text` or :func:`save_bytes` and is checked with
:func:`check_output` before the run; its text escapes names with :mod:`vocmatch.escapes`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from vocmatch.errors import OutputError

#: A content in consecutive pieces.
Pieces = Sequence[bytes | memoryview]

__all__ = [
    "InputFolder",
    "StagedFile",
    "check_output",
    "remove_temporary_files",
    "save_bytes",
    "save_chunks",
    "save_text",
    "stage_chunks",
    "temporary_files",
]

_TEMPORARY_PREFIX = ".vocmatch-"
_TEMPORARY_SUFFIX = ".tmp"

#: The temporary files being written, each with the process that creates it: a name is
#: listed before its file is created and dropped once the file is renamed or removed, so a
#: signal handler that removes the listed files misses none (a forked child inherits the
#: list, and removes only its own).
_LIVE: dict[str, int] = {}


def temporary_files() -> tuple[str, ...]:
    """The temporary files this process is writing now (see :func:`remove_temporary_files`)."""
    pid = os.getpid()
    return tuple(path for path, owner in list(_LIVE.items()) if owner == pid)


def remove_temporary_files() -> None:
    """Remove the temporary files this process is writing, for a signal handler that ends the
    process: the targets keep their earlier content, and nothing is left beside them.

    Safe to call at any moment: a name whose file was already renamed into place or not yet
    created is skipped.
    """
    for path in temporary_files():
        _remove(path)
        _LIVE.pop(path, None)


@dataclass(frozen=True, slots=True)
class InputFolder:
    """A folder a run reads, and the files in it that it reads.

    Attributes:
        path: The folder.
        suffixes: Lower-case suffixes of the files read from it (``(".xml",)``); a report
            with one of them inside the folder would be read as input by the next run.
    """

    path: str
    suffixes: tuple[str, ...]


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _error(shown: str, folder: str, error: OSError) -> OutputError:
    """The :class:`OutputError` for a system error met while writing into ``folder``."""
    if isinstance(error, FileNotFoundError) and not os.path.isdir(folder):
        return OutputError(shown, f"the folder {folder} does not exist")
    if isinstance(error, NotADirectoryError):
        return OutputError(shown, f"{folder} is not a folder")
    return OutputError(shown, _reason(error))


def _folder_of(path: str) -> str:
    return os.path.dirname(path) or os.curdir


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is below ``folder`` (both real paths)."""
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives
        return False


def check_output(
    path: str | os.PathLike[str],
    files: Sequence[str | os.PathLike[str]] = (),
    folders: Sequence[InputFolder] = (),
) -> None:
    """Refuse, before any work, a report path that cannot be written or is an input.

    Args:
        path: The report file to be written.
        files: Input files of the run; the report may not be one of them.
        folders: Input folders of the run; the report may not be a file that the folder's
            reading would take as input.

    Raises:
        OutputError: The path is empty, is a folder, its folder does not exist or cannot
            be written, or it is one of the inputs.
    """
    name = os.fspath(path)
    if not name:
        raise OutputError(name, "the path is empty")
    try:
        status: os.stat_result | None = os.stat(name)
    except FileNotFoundError:
        status = None  # a new file (or a link to one)
    except OSError as error:
        raise _error(name, _folder_of(name), error) from None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise OutputError(name, "it is a folder")
    for file in files:
        try:
            same = status is not None and os.path.samefile(name, file)
        except OSError:
            same = False
        if same:
            raise OutputError(name, f"it is the input file {os.fspath(file)}")
    real = os.path.realpath(name)
    for folder in folders:
        suffix = os.path.splitext(real)[1].lower()
        if suffix in folder.suffixes and _inside(real, os.path.realpath(folder.path)):
            raise OutputError(
                name,
                f"it is inside the input folder {folder.path} and would be read as input",
            )
    if status is not None and not stat.S_ISREG(status.st_mode):
        if not os.access(name, os.W_OK):
            raise OutputError(name, os.strerror(errno.EACCES))
        return  # written directly: see _write_special
    _probe(_folder_of(real), name)


def _probe(folder: str, shown: str) -> None:
    """Create and remove a temporary file in ``folder``: the one sure test that it can be
    written (permissions, a read-only file system, a path under a file)."""
    claimed: list[str] = []
    try:
        os.close(_create_temporary(folder, claimed))
    except OSError as error:
        raise _error(shown, folder, error) from None
    finally:
        # Also on KeyboardInterrupt, SystemExit and the command line's signal exceptions.
        _discard(claimed)


def _create_temporary(folder: str, claimed: list[str]) -> int:
    """A new, empty file of a unique name in ``folder``, open for writing; its name is
    appended to ``claimed`` (and listed in :data:`_LIVE`) before the file is created, so the
    caller can remove it however the creation ends.

    ``0666`` less the umask, as ``open(path, "w")`` gives a new file.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    while True:
        name = f"{_TEMPORARY_PREFIX}{os.urandom(6).hex()}{_TEMPORARY_SUFFIX}"
        temporary = os.path.join(folder, name)
        _LIVE[temporary] = os.getpid()
        claimed.append(temporary)
        try:
            return os.open(temporary, flags, 0o666)
        except FileExistsError:
            # Another run's file (48 random bits: all but never): not ours to remove.
            claimed.pop()
            _LIVE.pop(temporary, None)


def _discard(claimed: list[str]) -> None:
    """Remove the temporary files named in ``claimed`` and forget them."""
    for temporary in claimed:
        _remove(temporary)
        _LIVE.pop(temporary, None)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _pieces_a_call() -> int:
    """Pieces given to one ``os.writev`` call: the system's IOV_MAX (POSIX: at least 16)."""
    try:
        limit = os.sysconf("SC_IOV_MAX")
    except (AttributeError, ValueError, OSError):
        return 16
    return min(limit, 1024) if limit >= 16 else 16


_PIECES = _pieces_a_call()


def _write_all(descriptor: int, chunks: Pieces) -> None:
    """Write the pieces in order, each whole: a batch of them a call, so that neither a
    joined copy of the content nor a call a piece is made."""
    views = [memoryview(chunk) for chunk in chunks if len(chunk)]
    if not hasattr(os, "writev"):
        for view in views:
            while view:
                view = view[os.write(descriptor, view) :]
        return
    first = 0
    while first < len(views):
        written = os.writev(descriptor, views[first : first + _PIECES])
        # A short write ends inside a piece: the rest of it is written next.
        while written and written >= len(views[first]):
            written -= len(views[first])
            first += 1
        if written:
            views[first] = views[first][written:]


def _sync_folder(folder: str) -> None:
    """Make the rename itself durable (best effort: not every system opens folders)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _replace(target: str, data: Pieces, status: os.stat_result | None) -> None:
    _put_in_place(_written_beside(target, data, status), target)


def _written_beside(target: str, data: Pieces, status: os.stat_result | None) -> str:
    """A new temporary file in ``target``'s folder holding ``data``, flushed to disk, with
    the permissions of the file it replaces (``status``); removed if anything fails."""
    claimed: list[str] = []
    try:
        descriptor = _create_temporary(_folder_of(target), claimed)
        try:
            _write_all(descriptor, data)
            if status is not None:
                # The replaced file's permissions (and owner, where allowed) carry over.
                os.fchmod(descriptor, stat.S_IMODE(status.st_mode))
                with contextlib.suppress(OSError):
                    os.fchown(descriptor, status.st_uid, status.st_gid)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    except BaseException:
        # Also on KeyboardInterrupt, SystemExit and the command line's signal exceptions.
        _discard(claimed)
        raise
    return claimed[-1]


def _put_in_place(temporary: str, target: str) -> None:
    """Rename the temporary file over ``target`` (removed if that fails)."""
    try:
        os.replace(temporary, target)
    except BaseException:
        _discard([temporary])
        raise
    _LIVE.pop(temporary, None)  # renamed into place: nothing left to remove
    _sync_folder(_folder_of(target))


def _write_special(name: str, data: Pieces) -> None:
    """Write to a device, pipe or socket in place: it cannot be replaced."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(name, flags)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise OutputError(name, "no process is reading the named pipe") from None
        raise
    try:
        os.set_blocking(descriptor, True)
        _write_all(descriptor, data)
    finally:
        os.close(descriptor)


def save_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write a file atomically (see the module docstring).

    Args:
        path: The file to write; a symbolic link keeps its target, which is replaced.
        data: The whole content.

    Raises:
        OutputError: The file cannot be written (the earlier file, if any, is unchanged).
    """
    save_chunks(path, (data,))


def save_chunks(path: str | os.PathLike[str], data: Pieces) -> None:
    """Write a file atomically from its content in consecutive pieces, as :func:`save_bytes`
    writes their concatenation (see the module docstring), without joining them first.

    Args:
        path: The file to write; a symbolic link keeps its target, which is replaced.
        data: The content, piece after piece.

    Raises:
        OutputError: The file cannot be written (the earlier file, if any, is unchanged).
    """
    name = os.fspath(path)
    if not name:
        raise OutputError(name, "the path is empty")
    try:
        try:
            status: os.stat_result | None = os.stat(name)
        except FileNotFoundError:
            status = None
        if status is not None and stat.S_ISDIR(status.st_mode):
            raise OutputError(name, "it is a folder")
        if status is not None and not stat.S_ISREG(status.st_mode):
            _write_special(name, data)
            return
        _replace(os.path.realpath(name), data, status)
    except OSError as error:
        raise _error(name, _folder_of(name), error) from None


def save_text(path: str | os.PathLike[str], text: str) -> None:
    """Write a text file atomically as UTF-8 (see :func:`save_bytes`).

    Text that cannot be encoded (a lone surrogate that escaped :mod:`vocmatch.escapes`) is
    written as a backslash escape rather than failing the write.

    Raises:
        OutputError: The file cannot be written.
    """
    save_bytes(path, text.encode("utf-8", "backslashreplace"))


class StagedFile:
    """A file's new content written and flushed beside it, not yet in its place
    (:func:`stage_chunks`): :meth:`commit` renames it over the target, atomically, as
    :func:`save_chunks` does; :meth:`discard` removes it, the target left as it was.

    For a content made while other work runs, to be kept only if that work succeeds: the
    writing is done meanwhile, the rename after.
    """

    def __init__(self, shown: str, target: str, temporary: str) -> None:
        self._shown, self._target, self._temporary = shown, target, temporary

    def commit(self) -> None:
        """Put the content in place (once; a discarded file stays discarded).

        Raises:
            OutputError: It cannot be renamed over the target (which is unchanged).
        """
        temporary, self._temporary = self._temporary, ""
        if not temporary:
            return
        try:
            _put_in_place(temporary, self._target)
        except OSError as error:
            raise _error(self._shown, _folder_of(self._shown), error) from None

    def discard(self) -> None:
        """Remove the content written (the target keeps its earlier content)."""
        temporary, self._temporary = self._temporary, ""
        if temporary:
            _discard([temporary])


def stage_chunks(path: str | os.PathLike[str], data: Pieces) -> StagedFile | None:
    """Write ``data`` (pieces, as :func:`save_chunks` takes them) to a temporary file beside
    ``path``, to be put in its place later (:class:`StagedFile`); None when ``path`` is not
    a regular file or a new one in a folder that exists (it is then written with
    :func:`save_chunks`, whose checks say why it cannot be, if it cannot).

    Raises:
        OutputError: The temporary file cannot be written (none is left).
    """
    name = os.fspath(path)
    try:
        status: os.stat_result | None = os.stat(name)
    except FileNotFoundError:
        status = None
    except (OSError, ValueError):
        return None
    if (status is not None and not stat.S_ISREG(status.st_mode)) or not name:
        return None
    target = os.path.realpath(name)
    if not os.path.isdir(_folder_of(target)):
        return None
    try:
        return StagedFile(name, target, _written_beside(target, data, status))
    except OSError as error:
        raise _error(name, _folder_of(name), error) from None

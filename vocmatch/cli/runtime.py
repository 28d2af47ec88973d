"""Signals and standard streams: a run ends with one line and an exit code, never a traceback."""

from __future__ import annotations

import errno
import io
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

from vocmatch.files import remove_temporary_files

if TYPE_CHECKING:
    pass

__all__ = [
    "STOP_SIGNALS",
    "GuardedStream",
    "Interrupted",
    "Stopped",
    "guard_standard_streams",
    "ignore_further_signals",
    "install_signal_handlers",
    "interrupt",
    "stop",
]


class Interrupted(BaseException):
    """Ctrl-C, raised instead of KeyboardInterrupt so that it passes click's own handler
    (which prints a blank line and "Aborted!") and reaches :func:`run`."""


class Stopped(BaseException):
    """SIGTERM or SIGHUP, raised by the handler :func:`run` installs, so that every block
    on the way out (worker pools, report files being written) cleans up as for Ctrl-C.

    Args:
        signum: The signal's number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: The signals that stop a run, each with its exit code (128 + the signal number, as a
#: shell reports a process that a signal ended) and its line on stderr.
STOP_SIGNALS = {"SIGTERM": "terminated (SIGTERM)", "SIGHUP": "hung up (SIGHUP)"}


def ignore_further_signals() -> None:
    """While the run cleans up after the first signal, a second one must not cut the
    clean-up short (workers left running, a temporary file left behind); it is bounded."""
    for name in ("SIGINT", *STOP_SIGNALS):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) in (interrupt, stop):
            signal.signal(number, signal.SIG_IGN)


def interrupt(signum: int, frame: FrameType | None) -> None:
    """The SIGINT handler :func:`run` installs: the files being written are left as they
    were (their temporary files removed, :func:`vocmatch.files.remove_temporary_files`)."""
    ignore_further_signals()
    remove_temporary_files()
    raise Interrupted


def stop(signum: int, frame: FrameType | None) -> None:
    """The SIGTERM and SIGHUP handler :func:`run` installs; as :func:`interrupt`."""
    ignore_further_signals()
    remove_temporary_files()
    raise Stopped(signum)


class GuardedStream:
    """stdout or stderr, as a stream whose writes never raise ``OSError``.

    A write or flush that fails (a full disk, a file size limit, a closed descriptor, a
    terminal gone, a reader that went away) is recorded in :attr:`error`; the descriptor is
    then pointed at the null device, so what is still buffered, and Python's own flush at
    exit, go nowhere without a second error or a traceback, and the rest of the output is
    dropped. :func:`run` turns the record into the exit code. Every writer -- click, rich,
    ``print`` -- goes through it, so none needs its own handling.

    Args:
        stream: The stream (None when the descriptor was closed when the process started).
        descriptor: Its file descriptor.
    """

    def __init__(self, stream: IO[str] | None, descriptor: int) -> None:
        self._stream = stream
        self._descriptor = descriptor
        self.error: OSError | None = None

    @property
    def lost(self) -> bool:
        """Whether something written to the stream was lost for a reason other than its
        reader going away (EPIPE: ``vocmatch ... | head`` reads what it wants, then
        leaves)."""
        return self.error is not None and self.error.errno != errno.EPIPE

    def _fail(self, error: OSError) -> None:
        self.error = error
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._descriptor)
            os.close(null)
        except OSError:
            pass

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.error is None and self._stream is None and text:
            # Closed when the process started: lost only once there is something to write.
            self.error = OSError(errno.EBADF, "it is closed")
        if self.error is None and self._stream is not None:
            try:
                self._write(self._stream, text)
            except OSError as error:
                self._fail(error)
        return len(text)

    @staticmethod
    def _write(stream: IO[str], text: str) -> None:
        """Write all of ``text`` or raise. Under ``PYTHONUNBUFFERED`` (common in CI and
        containers) the text layer sits on the raw file, whose write may take only part of
        the bytes (a full disk, a file size limit), and the text layer drops the rest
        without a word; so the bytes go to the binary layer here, until all are written."""
        buffer = getattr(stream, "buffer", None)
        if not isinstance(stream, io.TextIOWrapper) or buffer is None:
            stream.write(text)
            return
        stream.flush()  # what the text layer holds goes first
        data = text.replace("\n", os.linesep) if os.linesep != "\n" else text
        _write_whole(buffer, data.encode(stream.encoding, stream.errors or "strict"))
        if stream.line_buffering and "\n" in text:
            buffer.flush()

    def write_bytes(self, chunks: Sequence[bytes]) -> None:
        """Write bytes as they are, after the text written before them, each piece whole;
        a failure is recorded as :meth:`write` records it. For text already encoded as the
        stream would encode it (UTF-8, ``"\\n"`` line ends): a large report is not decoded
        to be encoded again."""
        if self.error is None and self._stream is None and any(chunks):
            self.error = OSError(errno.EBADF, "it is closed")
        if self.error is None and self._stream is not None:
            try:
                buffer = getattr(self._stream, "buffer", None)
                if buffer is None:
                    self._stream.write(b"".join(chunks).decode("utf-8"))
                    return
                self._stream.flush()
                for chunk in chunks:
                    _write_whole(buffer, chunk)
                buffer.flush()
            except OSError as error:
                self._fail(error)

    def flush(self) -> None:
        if self.error is None and self._stream is not None:
            try:
                self._stream.flush()
            except OSError as error:
                self._fail(error)

    def isatty(self) -> bool:
        return self.error is None and self._stream is not None and self._stream.isatty()

    def fileno(self) -> int:
        return self._descriptor

    def writable(self) -> bool:
        return True

    @property
    def closed(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self._stream, "errors", None) or "backslashreplace"

    def __getattr__(self, name: str) -> Any:
        # No binary buffer: a writer that found one would write past the guard.
        if name == "buffer" or self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def _write_whole(buffer: IO[bytes], data: bytes) -> None:
    """Write all of ``data`` to a binary stream or raise (its write may take only part)."""
    view = memoryview(data)
    while view:
        written = buffer.write(view)
        if written is None:  # a non-blocking descriptor that is full
            raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        view = view[written:]


def _open_standard_descriptors() -> None:
    """Give a descriptor closed at start (``vocmatch ... >&-``) the null device, so that
    no file vocmatch opens later takes its number and receives what is meant for it."""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
                if null != descriptor:
                    os.dup2(null, descriptor)
                    os.close(null)
            except OSError:
                pass


def guard_standard_streams() -> tuple[GuardedStream, GuardedStream]:
    """Put :class:`GuardedStream` in place of ``sys.stdout`` and ``sys.stderr``."""
    # A file name that is not valid UTF-8 reaches the report as a lone surrogate; under a
    # strict stdout (PYTHONIOENCODING=utf-8, most UTF-8 locales) printing it would fail.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")
    _open_standard_descriptors()
    out = GuardedStream(sys.stdout, 1)
    err = GuardedStream(sys.stderr, 2)
    sys.stdout, sys.stderr = out, err
    return out, err


def install_signal_handlers(handle_interrupt: bool) -> None:
    """Ctrl-C, SIGTERM and SIGHUP raise exceptions that end the run cleanly. A signal the
    parent set to be ignored (``nohup``, a background job of a script) stays ignored."""
    if handle_interrupt:
        signal.signal(signal.SIGINT, interrupt)
    for name in STOP_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) not in (signal.SIG_IGN, None):
            signal.signal(number, stop)

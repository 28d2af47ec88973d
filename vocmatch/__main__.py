"""``python -m vocmatch`` and the ``vocmatch`` command.

Kept light: Ctrl-C, SIGTERM and SIGHUP are handled from the first moment, while the
command's modules (numpy, lxml, rich) are still being imported, before
:func:`vocmatch.cli.run` takes over. ``vocmatch --version`` alone is answered here, without
click: a pre-commit hook or a script asking for the version pays for the interpreter only.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from types import FrameType

#: What a signal during start-up prints, and the exit code (128 + the signal number).
_STARTING = {
    "SIGINT": "interrupted",
    "SIGTERM": "terminated (SIGTERM)",
    "SIGHUP": "hung up (SIGHUP)",
}


def _stopped_while_starting(signum: int, frame: FrameType | None) -> None:
    # Nothing has been read or written yet: say so in one line and leave at once.
    name = signal.Signals(signum).name
    start = "\n" if signum == signal.SIGINT and sys.stderr and sys.stderr.isatty() else ""
    # stderr closed or gone: the exit code still says it.
    with contextlib.suppress(OSError):
        os.write(2, f"{start}vocmatch: {_STARTING.get(name, name)}\n".encode())
    os._exit(128 + signum)


def _print_version() -> bool:
    """Write ``vocmatch, version X`` (click's ``--version`` line) straight to stdout.

    Returns:
        Whether the whole line was written; when stdout is closed or cannot take it, the
        command line runs as usual and says so as it does for any output.
    """
    from vocmatch.version import __version__

    if sys.stdout is None or sys.stdout is not sys.__stdout__:
        return False  # closed, or redirected inside this process: click's path says so
    line = f"vocmatch, version {__version__}\n".encode()
    try:
        # A line this short goes out in one write, to a terminal, a pipe or a file.
        return os.write(1, line) == len(line)
    except OSError:
        return False


def main() -> None:
    """Install the start-up signal handlers, then run the command line."""
    # Only where the default is in place: a SIGINT ignored by the parent (a background job
    # of a script), a SIGHUP ignored by nohup, stay ignored.
    handle = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if handle:
        signal.signal(signal.SIGINT, _stopped_while_starting)
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) == signal.SIG_DFL:
            signal.signal(number, _stopped_while_starting)
    if sys.argv[1:] == ["--version"] and _print_version():
        sys.exit(0)
    # The command line does its own parallel work (reading processes, the bootstrap's
    # threads): numpy's OpenBLAS would start a thread per core when imported, only to wait
    # (some 40 ms of processor time in a short run). A value set by the user is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # The command's imports (click, then numpy, rich and ours) build tens of thousands of
    # objects and free almost none: at the default threshold the cycle collector would walk
    # them a dozen times before the run starts. run() keeps the collector off for the run.
    gc.disable()
    from vocmatch.cli.app import run

    run(handle_interrupt=handle)


if __name__ == "__main__":
    main()

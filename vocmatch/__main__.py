"""``python -m vocmatch`` and the ``vocmatch`` command.

Kept light: Ctrl-C, SIGTERM and SIGHUP are handled from the first moment, while the
command's modules (numpy, lxml, rich) are still being imported, before
:func:`vocmatch.cli.run` takes over.
"""

from __future__ import annotations

import contextlib
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
    from vocmatch.cli import run

    run(handle_interrupt=handle)


if __name__ == "__main__":
    main()

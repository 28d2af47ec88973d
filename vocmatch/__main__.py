"""``python -m vocmatch`` and the ``vocmatch`` command.

Kept light: Ctrl-C is handled from the first moment, while the command's modules (numpy,
lxml, rich) are still being imported, before :func:`vocmatch.cli.run` takes over.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType


def _interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    # Nothing has been read or written yet: say so in one line and leave at once.
    start = "\n" if sys.stderr.isatty() else ""
    sys.stderr.write(f"{start}vocmatch: interrupted\n")
    sys.stderr.flush()
    os._exit(130)


def main() -> None:
    """Install the start-up Ctrl-C handler, then run the command line."""
    # Only when Python installed its own handler: a SIGINT ignored by the parent (a
    # background job of a script) stays ignored.
    handle = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if handle:
        signal.signal(signal.SIGINT, _interrupted_while_starting)
    from vocmatch.cli import run

    run(handle_interrupt=handle)


if __name__ == "__main__":
    main()

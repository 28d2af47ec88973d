"""Exit codes of the command line."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_SKIPPED = 3
EXIT_OUTPUT = 4
#: A run on a Dask cluster failed: a task failed on every try, the scheduler could not be
#: reached, or the merged images were not the listed ones (no report is printed).
EXIT_DISTRIBUTED = 5
EXIT_HANGUP = 128 + 1
EXIT_INTERRUPTED = 128 + 2
EXIT_TERMINATED = 128 + 15

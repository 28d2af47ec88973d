"""The modules a run needs once its files are read, imported while threads of this process
read them.

The compiled reader reads its chunks with the GIL released (:mod:`vocmatch.readers.threads`),
so the calling thread waits for them with little to do: :func:`after_reading` gives it the
imports of the matching, of the summary's accumulation and of the gates to make meanwhile,
which the run would otherwise make after the reading, on a core of its own. A module already
imported costs nothing to import again: the stages import what they use as before, and a run
that reads otherwise (in parts, from a cache, on a cluster) imports them when they run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vocmatch.core.protocol import Conventions

__all__ = ["AFTER_READING", "BY_SUMMARY", "after_reading", "import_after_reading"]

#: What every run that reads here imports after the reading: the column choices of the read
#: stage, the matching and accumulation, the counts of the input hints, the gates.
AFTER_READING = (
    "vocmatch.readers.unpaired",
    "vocmatch.readers.shapes",
    "vocmatch.evaluation.engine",
    "vocmatch.evaluation.score_counts",
    "vocmatch.evidence.gates",
)

#: What a summary's accumulation imports besides.
BY_SUMMARY = {
    "voc": (),
    "coco": ("vocmatch.evaluation.coco_tables", "vocmatch.evaluation.summary_stats"),
    "ultralytics": (
        "vocmatch.evaluation.ultralytics_summary",
        "vocmatch.evaluation.summary_stats",
    ),
}


def import_after_reading(conventions: Conventions) -> None:
    """Import the modules a run under ``conventions`` needs after reading its files."""
    for name in (*AFTER_READING, *BY_SUMMARY.get(conventions.summary, ())):
        importlib.import_module(name)


def after_reading(
    conventions: Conventions, also: Callable[[], None] | None = None
) -> Callable[[], None]:
    """What the calling thread does while the files are read: the run's imports
    (:func:`import_after_reading`), then ``also`` (the caller's own, such as the command
    line's report renderer)."""

    def meanwhile() -> None:
        import_after_reading(conventions)
        if also is not None:
            also()

    return meanwhile

"""Typed errors and warnings raised by the vocmatch library.

The library raises these and never prints; the command line turns them into one line on
stderr and a documented exit code.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "AnnotationError",
    "DistributedError",
    "InputError",
    "StateError",
    "VocmatchError",
    "VocmatchWarning",
    "no_annotation_files",
]


class VocmatchError(Exception):
    """Base class of every error vocmatch raises on purpose."""


class InputError(VocmatchError):
    """A path or argument given to the library cannot be used (not a directory, empty set)."""


class StateError(VocmatchError):
    """An evaluator state cannot be read (truncated, corrupted, another format version), or
    two states cannot be merged (other options, clashing class tables, a shared image)."""


class DistributedError(VocmatchError):
    """A run on a cluster failed: the scheduler could not be reached, or a task failed on
    every try (raised, or lost its worker), or the merged images are not those listed."""


class AnnotationError(VocmatchError):
    """An annotation file cannot be read or holds a value that is not allowed.

    Prints as ``path:line: message`` (or ``path: message`` when the line is unknown), the form
    compilers and linters use, so terminals and CI logs can link to the spot.

    Args:
        path: The file the problem is in.
        message: What is wrong, in one line.
        line: The 1-based source line, when known.
    """

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        self.path = path
        self.message = message
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"

    def __reduce__(self) -> tuple[type[AnnotationError], tuple[str, str, int | None]]:
        # Keeps the error picklable, so it can cross a process pool boundary.
        return (type(self), (self.path, self.message, self.line))


class VocmatchWarning(UserWarning):
    """A recoverable problem: the data was still evaluated, but the user should know."""


#: Skipped files a "no readable annotation files" error names before counting the rest.
SHOWN_SKIPPED = 3


def no_annotation_files(folder: str, skipped: Sequence[object]) -> InputError:
    """The error for a ground-truth folder with nothing to evaluate, naming why: the files
    skipped (each as ``path:line: message``, the first few, then how many more), so the one
    line says what to fix.

    >>> print(no_annotation_files("gt", ["gt/a.xml:3: <xmin> is not a number: 'x'"]))
    gt: no readable .xml annotation files found (1 skipped: gt/a.xml:3: <xmin> is not a number: 'x')
    >>> print(no_annotation_files("gt", []))
    gt: no .xml annotation files found
    """
    if not skipped:
        return InputError(f"{folder}: no .xml annotation files found")
    shown = "; ".join(str(s) for s in skipped[:SHOWN_SKIPPED])
    more = len(skipped) - SHOWN_SKIPPED
    rest = f"; and {more} more" if more > 0 else ""
    return InputError(
        f"{folder}: no readable .xml annotation files found ({len(skipped)} skipped: {shown}{rest})"
    )

"""Per-class score thresholds as a file: a CSV of ``class,threshold`` lines, read
(:func:`read_class_thresholds`, :func:`read_score_thresholds`; :class:`ClassThresholds` keeps
them as written, and where) and written (:func:`thresholds_csv`, what
``--write-thresholds`` saves), the one format both ways.

A module of its own, imported where per-class thresholds are given or written: a run
without them does not build its record.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass

from vocmatch.errors import AnnotationError, InputError, RequestError
from vocmatch.escapes import printable
from vocmatch.limits import MAX_THRESHOLD_FILE_BYTES
from vocmatch.readers.parse import number_problem
from vocmatch.readers.regular_files import read_bytes

__all__ = [
    "ClassThresholds",
    "read_class_thresholds",
    "read_score_thresholds",
    "thresholds_csv",
]


@dataclass(frozen=True, slots=True)
class ClassThresholds:
    """Per-class score thresholds as the user wrote them, and where.

    Attributes:
        source: The file they were read from, or None for a mapping given in code.
        entries: ``(class, threshold)`` pairs in the order given.
        lines: The file line of each entry (empty for a mapping).
    """

    source: str | None
    entries: tuple[tuple[str, float], ...]
    lines: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, float]:
        """The thresholds by class name, as written."""
        return dict(self.entries)

    def folded(self) -> dict[str, float]:
        """The thresholds by lower-cased class name, for class names folded to lower case.

        Names that fold to one name (``Animal`` and ``ANIMAL``) are one class: equal
        thresholds merge, different ones are refused, since which was meant cannot be told.

        Raises:
            AnnotationError: ``source:line``: two names of a file fold to one class with
                different thresholds.
            RequestError: The same, in a mapping (field ``score_thresholds``).

        >>> ClassThresholds(None, (("Animal", 0.5), ("animal", 0.5), ("Car", 0.25))).folded()
        {'animal': 0.5, 'car': 0.25}
        """
        found: dict[str, float] = {}
        first: dict[str, int] = {}
        for index, (name, value) in enumerate(self.entries):
            key = name.lower()
            if key not in first:
                first[key] = index
                found[key] = value
                continue
            other = self.entries[first[key]][1]
            if other != value:
                self._refuse(index, first[key], f"{value!r} and {other!r}")
        return found

    def spellings(self) -> dict[str, str]:
        """The first spelling of each lower-cased name, to name a class as it was written.

        >>> ClassThresholds(None, (("Animal", 0.5), ("ANIMAL", 0.5))).spellings()
        {'animal': 'Animal'}
        """
        found: dict[str, str] = {}
        for name, _ in self.entries:
            found.setdefault(name.lower(), name)
        return found

    def _refuse(self, index: int, earlier: int, values: str) -> None:
        name, first = self.entries[index][0], self.entries[earlier][0]
        at = f" (line {self.lines[earlier]})" if self.lines else ""
        message = (
            f"classes {name!r} and {first!r}{at} are one class when names are folded to lower "
            f"case, but have the thresholds {values}: give the class one threshold"
        )
        if self.source is None:
            raise RequestError("score_thresholds", message)
        raise AnnotationError(self.source, message, self.lines[index] if self.lines else None)


def _number(text: str, path: str, line: int) -> float:
    # The annotation files' one grammar: float() reads 0_5 as 5.0, and non-ASCII digits.
    value, problem = number_problem(text)
    if value is None:
        raise AnnotationError(path, f"threshold {text.strip()!r} {problem}", line)
    return value


def read_score_thresholds(path: str | os.PathLike[str]) -> dict[str, float]:
    """Read per-class thresholds: a CSV file of ``class,threshold`` lines (the threshold by
    class name, in file order; see :func:`read_class_thresholds`).

    Raises:
        AnnotationError: A line is not ``class,threshold``, the threshold is not a finite
            number, or a class is named twice (``path:line`` in the message).
        InputError: The file cannot be read or is too large.
    """
    return read_class_thresholds(path).as_dict()


def read_class_thresholds(path: str | os.PathLike[str]) -> ClassThresholds:
    """Read per-class thresholds: a CSV file of ``class,threshold`` lines.

    A first line ``class,threshold`` is a header; blank lines and lines starting with ``#``
    are skipped; a class name holding a comma is quoted (``"a,b",0.5``), as
    :func:`thresholds_csv` writes it.

    Args:
        path: The file.

    Returns:
        The thresholds in file order, with the line of each.

    Raises:
        AnnotationError: A line is not ``class,threshold``, the threshold is not a finite
            number, or a class is named twice (``path:line`` in the message).
        InputError: The file cannot be read or is too large.
    """
    name = os.fspath(path)
    try:
        # Regular files only, read without blocking (a named pipe cannot hang the run).
        data = read_bytes(name, MAX_THRESHOLD_FILE_BYTES)
    except AnnotationError as error:
        raise InputError(f"{name}: {error.message}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise AnnotationError(name, "not UTF-8 text", line) from None
    import csv

    found: dict[str, float] = {}
    lines: dict[str, int] = {}
    # One reader over the whole text: a quoted class name may hold a line break.
    reader = csv.reader(io.StringIO(text, newline=""))
    next_line = 1
    while True:
        number = next_line
        try:
            row = next(reader, None)
        except csv.Error as error:
            raise AnnotationError(name, f"not CSV: {error}", reader.line_num) from None
        if row is None:
            break
        next_line = reader.line_num + 1
        if not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) != 2:
            shown = ",".join(row)
            raise AnnotationError(
                name, f"expected class,threshold, got {len(row)} field(s): {shown!r}", number
            )
        cls, value = _unquoted(row[0].strip()), row[1]
        if number == 1 and (cls.lower(), value.strip().lower()) == ("class", "threshold"):
            continue
        if not cls:
            raise AnnotationError(name, "empty class name", number)
        if cls in found:
            raise AnnotationError(
                name, f"class {cls!r} named twice (first on line {lines[cls]})", number
            )
        found[cls] = _number(value, name, number)
        lines[cls] = number
    return ClassThresholds(name, tuple(found.items()), tuple(lines.values()))


# A class name a spreadsheet would read as a formula is written after a "'" (as spreadsheets
# expect, OWASP's "CSV injection"), and read back without it; so is a name the reader would
# take for a comment line ("#..."), and a name that starts with "'" before either.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _needs_mark(text: str) -> bool:
    return (
        text.startswith(_FORMULA_START)
        or text.lstrip().startswith("#")
        or (text.startswith("'") and _needs_mark(text[1:]))
    )


def _quoted(name: str) -> str:
    return f"'{name}" if _needs_mark(name) else name


def _unquoted(cell: str) -> str:
    return cell[1:] if cell.startswith("'") and _needs_mark(cell[1:]) else cell


def thresholds_csv(
    thresholds: Sequence[tuple[str, float | None]], notes: Sequence[str] = ()
) -> str:
    """Per-class thresholds as a ``class,threshold`` CSV (what :func:`read_score_thresholds`
    reads), one line per class that has one, after ``notes`` as ``#`` comment lines.

    Thresholds are written in full (``repr``), so reading the file back counts exactly the
    predictions of the operating point. A class name starting with ``= + - @`` is written
    after a ``'``, so that a spreadsheet never runs it as a formula, and so is one the reader
    would skip as a comment (``#...``); the reader removes it. A note is one line, its
    control characters shown as escapes.

    >>> print(thresholds_csv([("car", 0.7), ("dog", None)], ["dog: no threshold"]), end="")
    class,threshold
    # dog: no threshold
    car,0.7
    """
    lines = ["class,threshold", *(f"# {printable(note)}" for note in notes)]
    for name, threshold in thresholds:
        if threshold is not None:
            lines.append(f"{_field(_quoted(name))},{threshold!r}")
    return "\n".join(lines) + "\n"


def _field(text: str) -> str:
    """A CSV field, quoted when it holds a comma, a quote, a line break or outer spaces (the
    csv module quotes "\\n" but not "\\r" when lines end in "\\n", and a bare "\\r" ends
    the line for a reader)."""
    if any(c in text for c in ',"\r\n') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text

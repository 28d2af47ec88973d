"""The one grammar of a number written in an annotation file or given on the command line.

Coordinates, scores, sizes and angles in annotation files, thresholds in a thresholds file
and every number an option takes are read the same way, by the parser, the fast reader
(:mod:`vocmatch.readers.scan`), ``vocmatch lint`` and the command line. This module imports nothing
heavy, so the command line checks an option's number without loading the parser.
"""

from __future__ import annotations

import math
import re

__all__ = ["NUMBER_PATTERN", "XML_SPACE", "number_problem", "read_number"]

#: XML's whitespace (space, tab, CR, LF): what may surround a number. Other characters
#: that Python's ``str.strip`` removes (no-break space, other Unicode spaces) may not.
XML_SPACE = " \t\r\n"

#: The one grammar of a number in an annotation file (coordinates, scores, sizes, angles),
#: shared by the parser (:mod:`vocmatch.readers.parse`), the fast reader
#: (:mod:`vocmatch.readers.scan`), ``vocmatch lint``, thresholds files and the command line's
#: options: the lexical form of XML Schema's ``xs:decimal`` with the optional exponent of
#: ``xs:double`` -- an optional sign, ASCII digits with at most one point and at least one
#: digit, then ``e`` or ``E`` and a signed integer -- surrounded by XML whitespace only.
#: Python's ``float()`` accepts more (``0_5``, ``1_000``, Arabic-Indic and other Unicode digits,
#: Unicode spaces); those are refused as not numbers, the same in every reader.
NUMBER_PATTERN = r"[ \t\r\n]*([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[ \t\r\n]*"
_NUMBER = re.compile(NUMBER_PATTERN)
# NaN and the infinities as float() spells them: numbers, but refused as not finite (and
# so named in the message) rather than as text.
_NOT_FINITE = re.compile(r"[ \t\r\n]*[+-]?(?:inf|infinity|nan)[ \t\r\n]*", re.IGNORECASE)


def read_number(text: str) -> float:
    """Read a number written in the annotation grammar (:data:`NUMBER_PATTERN`).

    Args:
        text: The element's text, whitespace included.

    Returns:
        The value; NaN or an infinity only for ``nan``, ``inf``, ``infinity`` (any case,
        signed) or a number too large for a float (``1e400``), which callers refuse as
        not finite.

    Raises:
        ValueError: ``text`` is not a number in the grammar.

    >>> read_number(" 12.5e1 "), read_number("-.5"), read_number("7.")
    (125.0, -0.5, 7.0)
    >>> read_number("0_5")
    Traceback (most recent call last):
    ...
    ValueError: not a number: '0_5'
    """
    match = _NUMBER.fullmatch(text)
    if match is not None:
        return float(match[1])
    if _NOT_FINITE.fullmatch(text):
        return float(text.strip(XML_SPACE))
    raise ValueError(f"not a number: {text!r}")


def number_problem(text: str) -> tuple[float | None, str | None]:
    """A number's value, or what is wrong with it: ``is not a number`` or ``is not finite``
    (the wording of the parser's and ``lint``'s messages).

    >>> number_problem("3"), number_problem("x"), number_problem("nan")
    ((3.0, None), (None, 'is not a number'), (None, 'is not finite'))
    """
    try:
        value = read_number(text)
    except ValueError:
        return None, "is not a number"
    if not math.isfinite(value):
        return None, "is not finite"
    return value, None

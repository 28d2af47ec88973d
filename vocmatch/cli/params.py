"""Parameter types: numbers in the annotation files' grammar, input and output paths, sizes."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self

import click

from vocmatch.checks import FIELD_BOUNDS
from vocmatch.cli.exits import EXIT_USAGE
from vocmatch.errors import OutputError
from vocmatch.escapes import printable

if TYPE_CHECKING:
    pass


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN and infinities: every comparison with NaN
    is false, so click's range check lets ``--iou nan`` through; and refuses what is not a
    number in the one grammar of :mod:`vocmatch.core.numbers` (``0_5``, Arabic-Indic digits), which
    ``float()`` would read. Every option that takes a threshold or a measure uses this type."""

    @classmethod
    def of_field(cls, field: str) -> Self:
        """The type of the option that sets the request field ``field``, its range that of
        the library's rule (:data:`vocmatch.checks.FIELD_BOUNDS`)."""
        bounds = FIELD_BOUNDS[field]
        if bounds.whole:
            raise ValueError(f"{field} is a count: use WholeNumberRange.of_field")
        return cls(bounds.low, bounds.high, min_open=bounds.low_open, max_open=bounds.high_open)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _refuse_outside_grammar(self, value, param, ctx)
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def _refuse_outside_grammar(
    kind: click.ParamType[Any], value: Any, param: click.Parameter | None, ctx: click.Context | None
) -> None:
    """Fail unless ``value`` is a number in the one grammar of :mod:`vocmatch.core.numbers`
    (NaN and the infinities pass, for the option to judge): float() reads ``0_5`` as 5.0
    and ``0_1`` as 1.0."""
    if isinstance(value, str):
        from vocmatch.core.numbers import number_problem

        if number_problem(value)[1] == "is not a number":
            kind.fail(f"{value!r} is not a number", param, ctx)


class GrammarFloat(click.types.FloatParamType):
    """A float option read in the one number grammar (see :class:`FiniteFloatRange`)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _refuse_outside_grammar(self, value, param, ctx)
        return super().convert(value, param, ctx)


#: Digits a count may have: every count fits a 64-bit integer (a seed, an array's length),
#: and a value of thousands of digits is refused before ``int()`` (which refuses more than
#: 4,300 digits with a ValueError) or a message would have to repeat it.
MAX_COUNT_DIGITS = 18
_ASCII_DIGITS = re.compile(r"[0-9]+")  # a str pattern's [0-9] is ASCII only, unlike \d
_SIGNED = re.compile(r"[+-][0-9]+")
#: Characters of a refused value a message repeats; the rest is counted, not shown.
_SHOWN_CHARACTERS = 40


class CountError(ValueError):
    """A count option's value that is not ASCII digits, or has too many of them."""


def shown_value(text: str) -> str:
    """``text`` quoted as a message repeats a refused value: its first characters and how
    many there are when it is long (a value of 5,000 digits would fill the screen).

    >>> shown_value("1_0")
    "'1_0'"
    >>> shown_value("9" * 5000)
    "'9999999999999999999999999999999999999999...' (5,000 characters)"
    """
    if len(text) <= _SHOWN_CHARACTERS:
        return repr(text)
    return f"{text[:_SHOWN_CHARACTERS] + '...'!r} ({len(text):,} characters)"


def read_count(text: str) -> int:
    """A count written in ASCII digits only: no sign, no space, no ``_``, no other script's
    digits (``int()`` reads ``1_0`` as 10, ``' 7'`` as 7 and ``'\u0663'`` as 3), at most
    :data:`MAX_COUNT_DIGITS` of them. Every count option of every command reads its value,
    or each number in it (``--shard K/N``, ``--max-dets 1,10,N``, ``--dask local:N``), here.

    >>> read_count("0042")
    42

    Raises:
        CountError: The value is not such a count; the message names it.
    """
    shown = shown_value(text)
    if _ASCII_DIGITS.fullmatch(text) is None:
        if _SIGNED.fullmatch(text):
            raise CountError(f"{shown} is not a whole number: a count takes no sign")
        raise CountError(f"{shown} is not a whole number (ASCII digits 0-9 only)")
    if len(text) > MAX_COUNT_DIGITS:
        raise CountError(f"{shown} is too large: a count has at most {MAX_COUNT_DIGITS} digits")
    return int(text)


class WholeNumberRange(click.IntRange):
    """``click.IntRange`` that takes a count in ASCII digits only (:func:`read_count`):
    ``int()`` reads ``1_0`` as 10 and other scripts' digits, so ``--max-fp 1_0`` would gate
    at 10. Every option that takes a count uses this type (a test walks the commands)."""

    @classmethod
    def of_field(cls, field: str) -> Self:
        """The type of the option that sets the count ``field`` of a request, its least value
        that of the library's rule (:data:`vocmatch.checks.FIELD_BOUNDS`)."""
        bounds = FIELD_BOUNDS[field]
        if not bounds.whole or bounds.low is None:
            raise ValueError(f"{field} is not a count: use FiniteFloatRange.of_field")
        return cls(min=int(bounds.low))

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                value = read_count(value)
            except CountError as error:
                self.fail(str(error), param, ctx)
        return super().convert(value, param, ctx)


class InputPath(click.Path):
    """``click.Path`` that refuses an empty string, which the system would read as the
    current folder (``vocmatch "" pred`` must not evaluate ``.``), and gives the system's
    reason for a path it cannot look at (too long, a link loop, no permission) where click
    would say "does not exist"."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (str, bytes)) and not value:
            self.fail("the path is empty", param, ctx)
        try:
            os.stat(value)
        except (FileNotFoundError, NotADirectoryError):
            pass  # click's own message, or the command's
        except OSError as error:
            self.fail(f"{os.fsdecode(value)!r}: {error.strerror or error}", param, ctx)
        except ValueError:
            self.fail("the path holds a NUL character", param, ctx)
        return super().convert(value, param, ctx)


class CannotWrite(click.ClickException):
    """A report path refused while the command line is read: shown as the one line
    ``vocmatch: error: cannot write PATH: reason``, like every other report path refused."""

    exit_code = EXIT_USAGE

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(printable(f"vocmatch: error: {self.message}"), file=file, err=file is None)


class OutputPath(click.Path):
    """A report file: any path, checked by :func:`check_outputs` before the run (so that
    every refusal reads ``vocmatch: error: cannot write PATH: reason``). An empty string is refused
    here, before click would turn it into ``.``."""

    def __init__(self, dash_is_stdout: bool = False) -> None:
        super().__init__(path_type=Path)
        self.dash_is_stdout = dash_is_stdout

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (str, bytes)) and not value:
            raise CannotWrite(str(OutputError("", "the path is empty")))
        if value == "-" and not self.dash_is_stdout:
            # Standard output holds the report: a file named '-' is never what was meant.
            raise CannotWrite(
                str(OutputError("-", "standard output holds the report; give a file name"))
            )
        return super().convert(value, param, ctx)


# ASCII only: under re.IGNORECASE alone, K would also match the Kelvin sign (U+212A).
_SIZE = re.compile(r"([0-9]+)([KMG]?)(?:I?B)?", re.IGNORECASE | re.ASCII)
_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def byte_size(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """A size in bytes: ``5000``, ``64K``, ``32M`` or ``1G`` (powers of 1024; ``KiB``, ``MB``
    and the like are read the same way), its number a count (:func:`read_count`); anything
    else is a usage error (exit 2)."""
    match = _SIZE.fullmatch(value)
    try:
        if match is None:
            raise CountError(f"{shown_value(value)} is not a size such as 5000, 64K, 32M or 1G")
        count = read_count(match.group(1))
    except CountError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None
    return count * _SIZE_UNITS[match.group(2).upper()]


def finite_option(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A number option that must be finite (``nan`` and ``inf`` are usage errors)."""
    import math

    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number", ctx=ctx, param=param)
    return value

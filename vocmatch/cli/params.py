"""Parameter types: numbers in the annotation files' grammar, input and output paths, sizes."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

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


class WholeNumberRange(click.IntRange):
    """``click.IntRange`` that takes ASCII digits only (with a sign): ``int()`` reads
    ``1_0`` as 10 and other scripts' digits, so ``--max-fp 1_0`` would gate at 10."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not _WHOLE_NUMBER.fullmatch(value):
            try:
                int(value)
            except ValueError:
                pass  # not a number to int() either: click's own message
            else:
                self.fail(f"{value!r} is not a whole number", param, ctx)
        return super().convert(value, param, ctx)


_WHOLE_NUMBER = re.compile(r"[ \t\r\n]*[+-]?[0-9]+[ \t\r\n]*")


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


_SIZE = re.compile(r"(\d+)\s*([KMG]?)(?:I?B)?", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def byte_size(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """A size in bytes: ``5000``, ``64K``, ``32M`` or ``1G`` (powers of 1024; ``KiB``, ``MB``
    and the like are read the same way); anything else is a usage error (exit 2)."""
    match = _SIZE.fullmatch(value.strip())
    if match is None:
        raise click.BadParameter(
            f"{value!r} is not a size such as 5000, 64K, 32M or 1G", ctx=ctx, param=param
        )
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]


def finite_option(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A number option that must be finite (``nan`` and ``inf`` are usage errors)."""
    import math

    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number", ctx=ctx, param=param)
    return value

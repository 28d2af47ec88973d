"""The ``vocmatch`` command line: the only module that knows click, argv, exit codes and the
Console.

Exit codes:
    0: evaluated, every file read.
    1: a quality gate or a lint check failed.
    2: bad usage, input that could not be evaluated at all, or a report file that cannot
        be written (``vocmatch: cannot write PATH: reason``).
    3: evaluated, but some files were skipped (each named on stderr).
    4: something meant for stdout or stderr could not be written (a full disk, a closed
        descriptor); report files given with ``--output`` and the like are complete.
    129, 130, 143: ended by SIGHUP, Ctrl-C (SIGINT) or SIGTERM (128 + the signal number).

When several apply, the first in this order wins: 129/130/143, 2, 4, 1, 3, 0. A failed
gate (1) wins over skipped files (3) because the gate is the verdict a CI job asks for; the
skipped files are still named on stderr. Lost output (4) wins over the verdict, which is
still printed where it can be, because a job reading the report must not take a partial
one for whole; a reader that goes away (``vocmatch ... | head``) loses nothing it wanted,
so the exit code stays the verdict.

Rules for a new option or output:
    - a threshold or measure: ``FiniteFloatRange`` (click's ``FloatRange`` lets NaN in);
    - a path read: ``InputPath`` (refuses ""); a report file: ``OutputPath``, checked with
      :func:`check_outputs` before any work and written with :func:`write_text`;
    - names in any text: :mod:`vocmatch.escapes`; stderr lines through :func:`echo_err`.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import io
import math
import os
import re
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, TextIO, TypeVar

import click
from click.core import ParameterSource

from vocmatch import __version__
from vocmatch.errors import VocmatchError, VocmatchWarning, no_annotation_files
from vocmatch.escapes import printable
from vocmatch.output import InputFolder, OutputError, check_output
from vocmatch.output import write_text as write_file

# Everything else is imported where a command needs it: `vocmatch --version` and `--help`
# start without numpy, lxml or rich (a tenth of the time), and each command loads only what
# it uses. The names below serve the type checker only.
if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.progress import Progress, TaskID

    from vocmatch.analysis import ErrorAnalysis
    from vocmatch.batch import MatchedColumns
    from vocmatch.bootstrap import Bootstrap
    from vocmatch.calculator import BoxComparison, LabelComparison
    from vocmatch.calibration import Calibration
    from vocmatch.diff import RegressionGate
    from vocmatch.evaluate import Evaluation
    from vocmatch.gates import Gate, GateReport
    from vocmatch.labels import LabelEvaluation
    from vocmatch.parse import AnnotationSet
    from vocmatch.protocol import Conventions
    from vocmatch.scan import ColumnSet
    from vocmatch.seg import PredVoid
    from vocmatch.slices import Slice, SliceSpec
    from vocmatch.thresholds import ScoreThresholds

__all__ = [
    "EXIT_GATE",
    "EXIT_HANGUP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OUTPUT",
    "EXIT_SKIPPED",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "main",
]

#: The HTML report's pictures are scaled to this side (vocmatch.html.PICTURE_MAX_SIDE; a test
#: keeps the two equal, so the option's help is right without importing the HTML module).
HTML_PICTURE_MAX_SIDE = 640
#: Defaults shown in the options' help, kept equal to the library's by a test (so the help
#: needs none of the library's modules): vocmatch.protocol.PROTOCOLS,
#: vocmatch.parse.DEFAULT_MAX_BYTES, vocmatch.analysis.DEFAULT_BACKGROUND_IOU,
#: vocmatch.report.DIFF_MAX_ROWS and vocmatch.lint.DEFAULT_DUPLICATE_IOU.
PROTOCOL_NAMES = ("coco", "default", "voc07", "voc12")
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_BACKGROUND_IOU = 0.1
DIFF_MAX_ROWS = 20
DEFAULT_DUPLICATE_IOU = 0.9

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_SKIPPED = 3
EXIT_OUTPUT = 4
EXIT_HANGUP = 128 + 1
EXIT_INTERRUPTED = 128 + 2
EXIT_TERMINATED = 128 + 15

F = TypeVar("F", bound=Callable[..., Any])


class DefaultGroup(click.Group):
    """A group whose first argument, when it names no subcommand, belongs to ``eval``.

    So ``vocmatch GT_DIR PRED_DIR`` works as written beside ``vocmatch iou ...``.
    """

    default_command = "eval"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            self.refuse_mistyped_command(ctx, args[0])
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)

    def refuse_mistyped_command(self, ctx: click.Context, word: str) -> None:
        """A usage error for a first argument that is no path but nearly a command's name
        (``vocmatch lnit gt/``): read as ``eval``'s GT_DIR it would only say that ``lnit``
        is not a directory."""
        import difflib

        if word.startswith("-") or os.path.exists(word):
            return
        close = difflib.get_close_matches(word, sorted(self.commands), n=1, cutoff=0.6)
        if close:
            raise click.UsageError(f"no such command {word!r}; did you mean {close[0]!r}?", ctx)


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN and infinities: every comparison with NaN
    is false, so click's range check lets ``--iou nan`` through; and refuses what is not a
    number in the one grammar of :mod:`vocmatch.numbers` (``0_5``, Arabic-Indic digits), which
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
    """Fail unless ``value`` is a number in the one grammar of :mod:`vocmatch.numbers`
    (NaN and the infinities pass, for the option to judge): float() reads ``0_5`` as 5.0
    and ``0_1`` as 1.0."""
    if isinstance(value, str):
        from vocmatch.numbers import number_problem

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
    ``vocmatch: cannot write PATH: reason``, like every other report path refused."""

    exit_code = EXIT_USAGE

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(printable(f"vocmatch: {self.message}"), file=file, err=file is None)


class OutputPath(click.Path):
    """A report file: any path, checked by :func:`check_outputs` before the run (so that
    every refusal reads ``vocmatch: cannot write PATH: reason``). An empty string is refused
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


def stdout_console() -> Console:
    """The console for the report (stdout); colour only on a terminal, NO_COLOR honoured.

    Markup and emoji codes are off: a plain string that reached it from the data (a class
    named ``[link=...]`` or ``:skull:``) prints as it is written.
    """
    from rich.console import Console

    return Console(highlight=False, markup=False, emoji=False)


#: The width content is measured at: wider than any line of a report.
_UNBOUNDED_WIDTH = 1_000_000


def content_width(console: Console, renderable: RenderableType) -> tuple[int, int]:
    """The narrowest width at which ``renderable`` squeezes no table (a squeezed table cuts
    its cells, and its class names), and the width at which it wraps nothing."""
    from rich.console import Group
    from rich.measure import Measurement
    from rich.table import Table

    options = console.options.update_width(_UNBOUNDED_WIDTH)

    def narrowest(part: RenderableType) -> int:
        if isinstance(part, Group):
            return max((narrowest(child) for child in part.renderables), default=1)
        measured = Measurement.get(console, options, part)
        # Text may wrap between words; a table is kept whole.
        return measured.maximum if isinstance(part, Table) else measured.minimum

    widest = Measurement.get(console, options, renderable).maximum
    return max(narrowest(renderable), 1), max(widest, 1)


def print_report(console: Console, renderable: RenderableType) -> None:
    """Print a report on stdout at a width that suits where it goes.

    On a terminal, the terminal's width (or ``COLUMNS``); elsewhere (a CI log, a pipe, a
    file) ``COLUMNS`` when set, else the content's own width, so tables are not wrapped at
    rich's 80-column default. Never narrower than the content's narrowest form: a class name
    is not broken inside a word, a line is longer than the terminal instead.
    """
    narrowest, widest = content_width(console, renderable)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = widest
    else:
        console.width = max(console.width, narrowest)
    console.print(renderable)


def report_text(renderable: RenderableType) -> str:
    """A report as plain text at the content's own width (for ``--output`` files)."""
    from rich.console import Console

    buffer = io.StringIO()
    # No markup or emoji codes: a string from the data prints as it is written.
    console = Console(file=buffer, color_system=None, highlight=False, markup=False, emoji=False)
    console.width = content_width(console, renderable)[1]
    console.print(renderable)
    return buffer.getvalue()


def echo_err(text: str) -> None:
    """One line on stderr, control characters shown as escapes: file and class names come
    from the data, and a name holding ESC must not drive the terminal or the CI log."""
    click.echo(printable(text), err=True)


def fail(message: str, code: int = EXIT_USAGE) -> click.exceptions.Exit:
    """Print ``vocmatch: error: message`` on stderr and return the exit to raise."""
    echo_err(f"vocmatch: error: {message}")
    return click.exceptions.Exit(code)


@contextmanager
def library_errors() -> Iterator[None]:
    """Turn the library's typed errors into one line on stderr and exit code 2
    (``vocmatch: cannot write PATH: reason`` for a report file)."""
    try:
        yield
    except OutputError as error:
        echo_err(f"vocmatch: {error}")
        raise click.exceptions.Exit(EXIT_USAGE) from None
    except VocmatchError as error:
        raise fail(str(error)) from None


#: Suffixes of the pictures --images reads (vocmatch.html.PICTURE_SUFFIXES).
PICTURE_SUFFIXES = (".jpg", ".jpeg", ".png")


def xml_folders(*folders: Path) -> list[InputFolder]:
    """Annotation folders, whose ``*.xml`` files a run reads."""
    return [InputFolder(os.fspath(folder), (".xml",)) for folder in folders]


def check_outputs(
    outputs: Sequence[Path | None],
    files: Sequence[Path | None] = (),
    folders: Sequence[InputFolder] = (),
) -> None:
    """Refuse, before any work, report paths that cannot be written, that are inputs, or
    that are given for two outputs (one line and exit 2; see :mod:`vocmatch.output`)."""
    given = [path for path in outputs if path is not None]
    inputs = [path for path in files if path is not None]
    seen: dict[str, Path] = {}
    with library_errors():
        for path in given:
            check_output(path, inputs, folders)
            real = os.path.realpath(path)
            if real in seen:
                raise OutputError(os.fspath(path), f"it is also given as {seen[real]}")
            seen[real] = path


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vocmatch")
def main() -> None:
    """Score object-detection annotations in PASCAL VOC / LabelImg XML.

    vocmatch GT_DIR PRED_DIR evaluates predictions against ground truth (the `eval`
    command); the other commands are listed below.
    """


def format_option(choices: list[str], help_text: str) -> Callable[[F], F]:
    """``--format`` with the given choices, ``table`` first and the default."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(choices),
        default="table",
        show_default=True,
        help=help_text,
    )


def _dash_is_stdout(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    # ``-o -`` is standard output, as for most command-line tools, not a file named '-'.
    return None if value is not None and str(value) == "-" else value


def output_option(help_text: str) -> Callable[[F], F]:
    """``--output FILE`` / ``-o FILE``; ``-o -`` is standard output."""
    return click.option(
        "--output",
        "-o",
        type=OutputPath(dash_is_stdout=True),
        default=None,
        callback=_dash_is_stdout,
        help=help_text,
    )


def max_rows_option(default: int, help_text: str) -> Callable[[F], F]:
    """``--max-rows N`` for a report's longest table; 0 shows every row."""
    return click.option(
        "--max-rows",
        type=WholeNumberRange(min=0),
        default=default,
        show_default=True,
        help=help_text,
    )


def conventions_from(
    protocol_name: str,
    iou: float | None,
    strict_threshold: bool | None,
    pixel_inclusive: bool | None,
    match_rule: str | None,
    difficult: str | None,
    interpolation: str | None,
) -> Conventions:
    """The preset of ``protocol_name`` with every option the user gave laid over it."""
    from dataclasses import replace

    from vocmatch.protocol import protocol

    conv = protocol(protocol_name)
    if iou is not None:
        conv = conv.with_threshold(iou)
    changes: dict[str, Any] = {}
    if strict_threshold is not None:
        changes["strict_threshold"] = strict_threshold
    if pixel_inclusive is not None:
        changes["pixel_inclusive"] = pixel_inclusive
    if match_rule is not None:
        changes["match_rule"] = match_rule
    if difficult is not None:
        changes["difficult"] = difficult
    if interpolation is not None:
        changes["interpolation"] = interpolation
    return replace(conv, **changes) if changes else conv


def convention_options(function: F) -> F:
    """The options that choose a protocol and override its conventions one by one."""
    options = [
        click.option(
            "--protocol",
            "protocol_name",
            type=click.Choice(PROTOCOL_NAMES),
            default="default",
            show_default=True,
            help="Preset conventions: default, voc07, voc12 (PASCAL VOC devkit) or coco "
            "(pycocotools COCOeval).",
        ),
        click.option(
            "--iou",
            type=FiniteFloatRange(0.0, 1.0),
            default=None,
            help="IoU threshold for a match (inclusive, IoU >= t). [default: 0.5]",
        ),
        click.option(
            "--strict-threshold/--inclusive-threshold",
            default=None,
            help="Match at IoU > t, as the Python voc_eval.py does, instead of IoU >= t.",
        ),
        click.option(
            "--pixel-inclusive/--continuous",
            "pixel_inclusive",
            default=None,
            help="Box areas with the VOC devkit's +1 pixel, or continuous (x2 - x1).",
        ),
        click.option(
            "--match-rule",
            type=click.Choice(["unmatched", "devkit"]),
            default=None,
            help="unmatched: best still-unmatched GT (COCO); devkit: best GT even if taken, "
            "then FP.",
        ),
        click.option(
            "--difficult",
            type=click.Choice(["ignore", "count", "crowd"]),
            default=None,
            help="difficult objects: ignored, counted as ordinary objects, or COCO crowd regions.",
        ),
        click.option(
            "--interpolation",
            type=click.Choice(["all-point", "11-point", "101-point"]),
            default=None,
            help="AP interpolation: VOC2010+ all-point, VOC2007 11-point, COCO 101-point.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


#: Warnings of one kind listed one per line up to this many; beyond, one line counts them
#: (``--format json`` lists every one).
MAX_WARNINGS_OF_A_KIND = 20


def warn_each_or_count(lines: Sequence[str], count_line: Callable[[int], str]) -> None:
    """One warning per line, or, past :data:`MAX_WARNINGS_OF_A_KIND`, one line with the count
    (``count_line(n)``) and the first few: a CI log should not drown in them."""
    if len(lines) <= MAX_WARNINGS_OF_A_KIND:
        for line in lines:
            echo_err(f"vocmatch: warning: {line}")
    else:
        echo_err(f"vocmatch: warning: {count_line(len(lines))}")


def _first(names: Sequence[str], count: int = 3) -> str:
    return ", ".join(repr(n) for n in names[:count]) + (", ..." if len(names) > count else "")


def report_warnings(
    evaluation: Evaluation | LabelEvaluation, missing_means: str = "its objects count as missed"
) -> None:
    """One line on stderr per skipped file; missing prediction files and orphan files one
    per line, or counted in one line when there are many."""
    for skipped in evaluation.skipped:
        echo_err(f"vocmatch: skipped {skipped}")
    missing = evaluation.missing_pred
    warn_each_or_count(
        [f"no prediction file for {key!r}: {missing_means}" for key in missing],
        lambda n: (
            f"{n:,} images have no prediction file ({_first(missing)}): "
            f"{missing_means.replace('its', 'their')} (--format json lists all, missing_pred)"
        ),
    )
    orphan = evaluation.orphan_pred
    warn_each_or_count(
        [f"{path} has no ground-truth file: not evaluated" for path in orphan],
        lambda n: (
            f"{n:,} prediction files have no ground-truth file ({_first(orphan)}): "
            "not evaluated (--format json lists all, orphan_pred)"
        ),
    )


#: vocmatch.detections.PRED_FORMATS (a test keeps the two equal: --help imports neither).
PRED_FORMATS = ("voc", "coco", "yolo", "voc-results")


def pred_format_options(function: F) -> F:
    """``--pred-format``, ``--coco-gt`` and ``--names``: predictions from any detector."""
    options = [
        click.option(
            "--pred-format",
            type=click.Choice(PRED_FORMATS),
            default="voc",
            show_default=True,
            help="voc: a folder of XML files; coco: a COCO results JSON file (image_id, "
            "category_id, bbox [x, y, w, h], score) given as PRED_DIR; yolo: a folder of txt "
            "files (class cx cy w h [conf], normalised; needs --names); voc-results: a "
            "folder of the VOC devkit's comp4_det_<set>_<class>.txt files.",
        ),
        click.option(
            "--coco-gt",
            type=InputPath(exists=True, dir_okay=False, path_type=Path),
            default=None,
            metavar="FILE",
            help="With --pred-format coco: a COCO ground-truth JSON file whose "
            "images[].file_name and categories[].name name the results' numeric ids.",
        ),
        click.option(
            "--geometry",
            type=click.Choice(["shape", "box"]),
            default="shape",
            show_default=True,
            help="An object with both a <bndbox> and a <polygon> or <robndbox>: shape scores it "
            "by the shape (a note counts them); box scores every object as a box, its "
            "<bndbox> or a lone shape's bounding box.",
        ),
        click.option(
            "--split",
            default=None,
            metavar="NAME|FILE",
            help="Evaluate only the images of a list: ImageSets/Main/NAME.txt of a VOC folder "
            "given as GT_DIR (test, val, ...), or any file of image ids, one per line. A "
            "listed image without an annotation file is an error.",
        ),
        click.option(
            "--names",
            "names_file",
            type=InputPath(exists=True, dir_okay=False, path_type=Path),
            default=None,
            metavar="FILE",
            help="With --pred-format yolo: the class names, one per line, in class-index "
            "order (classes.txt, obj.names).",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def read_inputs(
    gt_dir: Path,
    pred_dir: Path,
    pred_format: str,
    coco_gt: Path | None,
    names_file: Path | None,
    jobs: int,
    max_file_size: int,
    progress: Callable[[int, int], None] | None = None,
    split: str | None = None,
    geometry: str = "shape",
) -> tuple[ColumnSet, ColumnSet]:
    """The ground truth (from ``GT_DIR/Annotations`` for a VOC folder, restricted to the
    images of ``split``) and the predictions in any format, as columns; exit 2 when no
    ground-truth image pairs with a prediction. Call inside :func:`library_errors`."""
    from dataclasses import replace

    from vocmatch.layout import annotation_folder, only_split, read_split, split_file
    from vocmatch.scan import read_column_pair, read_columns

    if pred_format != "coco" and coco_gt is not None:
        raise click.UsageError("--coco-gt names the ids of --pred-format coco results")
    if pred_format != "yolo" and names_file is not None:
        raise click.UsageError("--names names the class indices of --pred-format yolo files")
    if pred_format == "yolo" and names_file is None:
        raise click.UsageError("--pred-format yolo needs --names FILE (class names, one per line)")
    annotations, root = annotation_folder(gt_dir)
    listed = read_split(split_file(split, root)) if split is not None else None
    if pred_format == "voc":
        gt, pred = read_column_pair(annotations, pred_dir, jobs, max_file_size, progress)
    else:
        from vocmatch.detections import read_class_list, read_detections

        names = read_class_list(names_file) if names_file is not None else None
        gt = read_columns(annotations, jobs, max_file_size, progress)
        if not gt.keys:
            raise fail(str(no_annotation_files(str(annotations), gt.skipped)))
        if listed is not None:
            gt = only_split(gt, gt, listed)[0]
        pred = read_detections(
            pred_format,  # type: ignore[arg-type]  # one of click's choices
            pred_dir,
            gt,
            coco_gt=coco_gt,
            names=names,
            names_path=names_file,
            max_bytes=max_file_size,
        )
    if listed is not None:
        gt, pred, left_out = only_split(gt, pred, listed)
        note = f"split {listed.path}: {len(listed.ids):,} images listed"
        if left_out:
            note += f"; {left_out:,} images of other splits in the predictions, not evaluated"
        gt = replace(gt, notes=(*gt.notes, note))
        if not gt.keys:
            raise fail(f"{listed.path}: none of its images has an annotation file in {annotations}")
    if pred_format == "voc":
        refuse_unpaired(gt, pred, pred_dir)
    from vocmatch.shapes import Geometry, with_geometry

    chosen: Geometry = "box" if geometry == "box" else "shape"
    return with_geometry(gt, chosen, "ground truth"), with_geometry(pred, chosen, "predictions")


def prediction_inputs(pred_dir: Path, pred_format: str) -> list[InputFolder]:
    """The folders a run reads predictions from (reports must not be written there)."""
    if pred_format == "voc":
        return xml_folders(pred_dir)
    if pred_format == "coco":
        return []
    return [InputFolder(os.fspath(pred_dir), (".txt",))]


def refuse_unpaired(gt: ColumnSet, pred: ColumnSet, pred_dir: Path) -> None:
    """Exit 2 with one line when not a single ground-truth image pairs with a prediction:
    a wrong folder or a naming convention, not a model that missed everything."""
    from vocmatch.pairing import no_pairs_reason, other_files, paired

    unreadable = {s.key for s in gt.skipped if s.key is not None}
    gt_keys = [k for k in gt.keys if k not in unreadable]
    pred_keys = [*pred.keys, *(s.key for s in pred.skipped if s.key is not None)]
    if not gt_keys or paired(gt_keys, pred_keys):
        return
    others = other_files(pred_dir) if not pred_keys else []
    reason = no_pairs_reason(gt_keys, sorted(set(pred_keys)), str(pred_dir), others)
    raise fail(f"no ground-truth image pairs with a prediction: {reason}")


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


@contextmanager
def reader_may_leave() -> Iterator[None]:
    """Let the reader of stdout go away (``vocmatch ... | head``) without a traceback.

    The rest of the output is dropped and the command goes on, so its exit code is the
    verdict it would have given anyway.
    """
    try:
        yield
    except BrokenPipeError:
        discard_stdout()


def discard_stdout() -> None:
    """Point stdout at the null device, so nothing left to write can fail again (the
    "Note on SIGPIPE" in Python's signal documentation)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


#: Images over --max-fp/--max-fn named on stderr before the rest are counted in one line.
MAX_IMAGE_GATE_LINES = 20


def finite_option(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A number option that must be finite (``nan`` and ``inf`` are usage errors)."""
    import math

    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number", ctx=ctx, param=param)
    return value


def gate_option(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[Gate, ...]:
    """Parse each ``--fail-under`` value; a bad one is a usage error (exit 2)."""
    from vocmatch.gates import parse_gate

    try:
        return tuple(parse_gate(value) for value in values)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None


def report_gates(report: GateReport) -> None:
    """One line on stderr per failed gate and per image over a limit; nothing when all pass."""
    for result in report.failed_gates:
        echo_err(f"vocmatch: gate failed: {result}")
    failed = report.failed_images
    for check in failed[:MAX_IMAGE_GATE_LINES]:
        echo_err(f"vocmatch: gate failed: {check.key}: {', '.join(check.failures())}")
    if len(failed) > MAX_IMAGE_GATE_LINES:
        more = len(failed) - MAX_IMAGE_GATE_LINES
        echo_err(
            f"vocmatch: gate failed: {more} more images over a limit (--format junit lists all)"
        )


def machine_text(
    output_format: str,
    evaluation: Evaluation,
    gates: GateReport,
    analysis: ErrorAnalysis | None = None,
    evidence: Evidence | None = None,
    thresholds: ScoreThresholds | None = None,
    beta: float = 1.0,
) -> str:
    """The evaluation in one of the file formats (every ``--format`` but ``table``); JSON
    carries the error analysis and the evidence when given, the score thresholds and the
    operating points."""
    from vocmatch.formats import to_csv_images, to_json, to_junit, to_markdown

    if output_format == "json":
        found = evidence or Evidence()
        return to_json(
            evaluation,
            analysis,
            bootstrap=found.bootstrap,
            thresholds=thresholds,
            beta=beta,
            slices=found.slices,
            calibration=found.calibration,
        )
    if output_format == "csv":
        return to_csv_images(evaluation)
    if output_format == "markdown":
        return to_markdown(evaluation, gates, (evidence or Evidence()).bootstrap)
    return to_junit(evaluation, gates)


class ProgressDisplay:
    """A progress bar on stderr for long runs: shown only on a terminal, only once a run
    has taken more than a moment, and never with --quiet."""

    delay = 0.5  # seconds before a bar appears

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.started = time.monotonic()
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.stage_task: TaskID | None = None

    def _shown(self) -> Progress | None:
        """The bar, started once the run has taken more than a moment (None before)."""
        if self.bar is None and self.enabled and time.monotonic() - self.started >= self.delay:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.bar.start()
        return self.bar

    def files(self, done: int, total: int) -> None:
        """Files read so far, of all files to read."""
        bar = self._shown()
        if bar is None:
            return
        if self.task is None:
            self.task = bar.add_task("reading files", total=total)
        bar.update(self.task, completed=done, total=total)

    def stages(self, stage: str, done: int, total: int) -> None:
        """The evaluation's stages, each over every image at once."""
        bar = self._shown()
        if bar is None:
            return
        if self.stage_task is None:
            self.stage_task = bar.add_task("", total=total)
        description = "matching images" if stage == "done" else f"matching images: {stage}"
        bar.update(self.stage_task, description=description, completed=done, total=total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@contextmanager
def progress_display(quiet: bool) -> Iterator[ProgressDisplay]:
    """A :class:`ProgressDisplay` that is stopped however the block ends."""
    display = ProgressDisplay(enabled=not quiet and sys.stderr.isatty())
    try:
        yield display
    finally:
        display.close()


@dataclass(frozen=True, slots=True)
class Evidence:
    """What --bootstrap, --slice and their kin added to an evaluation, for every output."""

    bootstrap: Bootstrap | None = None
    slices: tuple[Slice, ...] = ()
    calibration: Calibration | None = None  # for every output (--calibration-bins)
    reliability: Calibration | None = None  # for the HTML report


def slice_option(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[SliceSpec, ...]:
    """Parse the ``--slice`` values; a bad one is a usage error (exit 2)."""
    from vocmatch.slices import parse_slices

    try:
        return parse_slices(values)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None


#: --bootstrap's help for eval and for diff.
BOOTSTRAP_HELP = (
    "Add 95 % intervals for mAP, per-class AP, precision, recall and F1 from N resamples of "
    "the images, drawn with replacement (1000 is usual)."
)
PAIRED_BOOTSTRAP_HELP = (
    "Evaluate both runs on the same N resamples of the images, drawn with replacement (1000 "
    "is usual): a 95 % interval and a two-sided p-value for every change, and each "
    "regression gate's one-sided p-value."
)


def evidence_options(function: F, bootstrap_help: str = BOOTSTRAP_HELP) -> F:
    """--bootstrap and --seed."""
    options = [
        click.option(
            "--bootstrap",
            "bootstrap_resamples",
            type=WholeNumberRange(min=1),
            default=None,
            metavar="N",
            help=bootstrap_help,
        ),
        click.option(
            "--seed",
            type=WholeNumberRange(min=0),
            default=0,
            show_default=True,
            help="Seed of the bootstrap's resamples: the same seed gives the same intervals.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def slice_options(function: F) -> F:
    """--slice, repeatable, and --calibration-bins."""
    function = click.option(
        "--calibration-bins",
        type=WholeNumberRange(min=1),
        default=None,
        metavar="N",
        help="Add each class's expected calibration error (ECE, and MCE) over N equal score "
        "bins, a prediction right when it is a TP at the IoU threshold. The HTML report always "
        "draws the reliability plot (10 bins unless N is given).",
    )(function)
    return click.option(
        "--slice",
        "slice_specs",
        multiple=True,
        callback=slice_option,
        metavar="SLICE",
        help="Also report AP and counts per value of SLICE: difficult, truncated, occluded, "
        "pose, size (COCO's small/medium/large), size edges as box sides (16,32,96), or a "
        "file-name pattern (night_*; every pattern is a value). Repeatable; a gate can "
        "target a value: --fail-under size=small:recall=0.6.",
    )(function)


def evidence_for(
    evaluation: Evaluation,
    matched: MatchedColumns | None,
    resamples: int | None,
    seed: int,
    slice_specs: tuple[SliceSpec, ...] = (),
    calibration_bins: int | None = None,
    html: bool = False,
) -> Evidence:
    """The analyses asked for beside the evaluation; the HTML report always draws the
    scores' calibration (with --calibration-bins bins, or 10)."""
    found = Evidence()
    with library_errors():
        if resamples is not None:
            from vocmatch.bootstrap import bootstrap, resampler

            sampler = resampler(evaluation, matched)
            found = replace(found, bootstrap=bootstrap(evaluation, sampler, resamples, seed))
        if slice_specs:
            from vocmatch.slices import slice_evaluation

            if matched is None:
                raise fail("--slice: no image was evaluated")
            found = replace(found, slices=slice_evaluation(evaluation, matched, slice_specs))
        if matched is not None and (calibration_bins is not None or html):
            from vocmatch.calibration import DEFAULT_BINS, calibration

            reliability = calibration(matched, calibration_bins or DEFAULT_BINS)
            found = replace(
                found,
                calibration=reliability if calibration_bins is not None else None,
                reliability=reliability,
            )
    return found


@main.command("eval")
@click.argument("gt_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_dir", type=InputPath(path_type=Path))
@click.option(
    "--mode",
    type=click.Choice(["boxes", "labels"]),
    default="boxes",
    show_default=True,
    help="boxes: match boxes per class, AP; labels: compare the set of class names of each "
    "image (per-image Jaccard, per-class IoU over images; --difficult, --format table or "
    "json, --output, --max-rows, --only-failing and --jobs apply, box options do not).",
)
@pred_format_options
@convention_options
@format_option(
    ["table", "json", "csv", "markdown", "junit"],
    "table: the rich report; json: every number, for scripts; csv: one row per image; "
    "markdown: summary, classes and gates, for a pull request or a CI job summary; junit: a "
    "test case per image and per gate, for CI test reports.",
)
@output_option("Write the report to FILE; the terminal still shows the summary.")
@max_rows_option(20, "Rows of the per-image table (worst first); 0 shows every image.")
@click.option("--only-failing", is_flag=True, help="List only images with an FP or an FN.")
@click.option(
    "--classes-csv",
    type=OutputPath(),
    default=None,
    metavar="FILE",
    help="Also write one CSV row per class to FILE (with any --format).",
)
@click.option(
    "--html",
    "html_file",
    type=OutputPath(),
    default=None,
    metavar="FILE",
    help="Also write a self-contained HTML report to FILE: summary, curves, confusion matrix "
    "and every image's boxes drawn (with any --format).",
)
@click.option(
    "--images",
    "images_dir",
    type=InputPath(exists=True, file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="With --html: draw the boxes on the pictures in DIR (found by <filename> or by "
    f"name; JPEG or PNG, embedded scaled to {HTML_PICTURE_MAX_SIDE} px).",
)
@click.option(
    "--fail-under",
    multiple=True,
    callback=gate_option,
    metavar="[CLASS:]METRIC=VALUE",
    help="Exit 1 unless METRIC (map, precision, recall or f1; ap50 or ap75 under --protocol "
    "coco) is at least VALUE, a fraction in [0, 1]; CLASS:METRIC for one class (ap = map). "
    "Repeatable.",
)
@click.option(
    "--max-fp",
    type=WholeNumberRange(min=0),
    default=None,
    metavar="N",
    help="Exit 1 if any image has more than N false positives.",
)
@click.option(
    "--max-fn",
    type=WholeNumberRange(min=0),
    default=None,
    metavar="N",
    help="Exit 1 if any image has more than N missed objects.",
)
@click.option(
    "--score-threshold",
    type=GrammarFloat(),
    callback=finite_option,
    default=None,
    metavar="T",
    help="Count only predictions with score >= T: TP, FP, FN, precision, recall, the tables, "
    "gates, confusion, errors and HTML overlays. AP uses every prediction. A prediction "
    "without a score passes no threshold.",
)
@click.option(
    "--score-thresholds",
    "score_thresholds_file",
    type=InputPath(exists=True, dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Per-class score thresholds: CSV lines class,threshold (as --write-thresholds "
    "writes them); other classes use --score-threshold, or count every prediction.",
)
@click.option(
    "--beta",
    type=FiniteFloatRange(min=0.0, min_open=True),
    default=1.0,
    show_default=True,
    help="Each class's operating point maximises F-beta on its precision/recall curve: 1 is "
    "F1, 2 weighs recall twice as much as precision, 0.5 precision twice.",
)
@click.option(
    "--write-thresholds",
    "write_thresholds_file",
    type=OutputPath(),
    default=None,
    metavar="FILE",
    help="Write each class's operating-point threshold to FILE as class,threshold CSV, for "
    "--score-thresholds in a later run.",
)
@click.option(
    "--errors/--no-errors",
    default=False,
    show_default=True,
    help="Add the error breakdown (TIDE types and their mAP cost) and the confusion matrix "
    "to the table report. JSON always has them.",
)
@click.option(
    "--background-iou",
    type=FiniteFloatRange(0.0, 1.0),
    default=DEFAULT_BACKGROUND_IOU,
    show_default=True,
    help="A false positive overlapping no object by more than this is a background error; "
    "one at least this close to an object of its class, a localisation error.",
)
@click.option(
    "--tightness",
    is_flag=True,
    help="Add IoU and edge-offset histograms of the matched boxes to the table report.",
)
@click.option(
    "--fold-case",
    is_flag=True,
    help="Lower-case class names before matching, so Car and car are one class (without it, "
    "names differing only in case are counted apart and noted).",
)
@click.option(
    "--max-file-size",
    callback=byte_size,
    default=f"{DEFAULT_MAX_BYTES // 1024**2}M",
    show_default=True,
    metavar="SIZE",
    help="Skip larger annotation files unread (5000, 64K, 32M, 1G; powers of 1024).",
)
@click.option(
    "--jobs",
    "-j",
    type=WholeNumberRange(min=0),
    default=0,
    help="Processes that read files in parallel; 0 (the default) uses every core.",
)
@evidence_options
@slice_options
@click.option("--quiet", "-q", is_flag=True, help="No progress bar on long runs.")
def eval_command(
    gt_dir: Path,
    pred_dir: Path,
    mode: str,
    pred_format: str,
    coco_gt: Path | None,
    names_file: Path | None,
    split: str | None,
    geometry: str,
    protocol_name: str,
    iou: float | None,
    strict_threshold: bool | None,
    pixel_inclusive: bool | None,
    match_rule: str | None,
    difficult: str | None,
    interpolation: str | None,
    output_format: str,
    output: Path | None,
    max_rows: int,
    only_failing: bool,
    classes_csv: Path | None,
    html_file: Path | None,
    images_dir: Path | None,
    fail_under: tuple[Gate, ...],
    max_fp: int | None,
    max_fn: int | None,
    score_threshold: float | None,
    score_thresholds_file: Path | None,
    beta: float,
    write_thresholds_file: Path | None,
    errors: bool,
    background_iou: float,
    tightness: bool,
    fold_case: bool,
    max_file_size: int,
    jobs: int,
    bootstrap_resamples: int | None,
    seed: int,
    slice_specs: tuple[SliceSpec, ...],
    calibration_bins: int | None,
    quiet: bool,
) -> None:
    """Evaluate the predictions in PRED_DIR against the ground truth in GT_DIR.

    XML files are paired by their path relative to each directory, without the extension.
    With --mode labels, only the class names in each file count.
    """
    from dataclasses import replace

    # The report's modules (rich, vocmatch.report) are imported below only for the outputs
    # that need them: JSON on stdout starts a tenth of a second sooner without them.
    from vocmatch.batch import evaluate_matched
    from vocmatch.evaluate import fold_names
    from vocmatch.gates import check_gates
    from vocmatch.thresholds import ScoreThresholds, read_score_thresholds

    if mode == "labels":
        labels_eval(
            gt_dir, pred_dir, difficult, output_format, output, max_rows, only_failing,
            max_file_size, jobs, pred_format, coco_gt, names_file, split,
        )  # fmt: skip
        return
    if images_dir is not None and html_file is None:
        raise click.UsageError("--images draws the HTML report's overlays: give --html FILE too")
    check_outputs(
        [output, classes_csv, html_file, write_thresholds_file],
        files=[pred_dir if pred_format == "coco" else None, coco_gt, names_file,
               score_thresholds_file],
        folders=xml_folders(gt_dir)
        + prediction_inputs(pred_dir, pred_format)
        + ([InputFolder(os.fspath(images_dir), PICTURE_SUFFIXES)] if images_dir else []),
    )  # fmt: skip
    conventions = conventions_from(
        protocol_name, iou, strict_threshold, pixel_inclusive, match_rule, difficult,
        interpolation,
    )  # fmt: skip
    # Per-box records are built only for the outputs that show boxes: they cost more than
    # the evaluation itself on large sets.
    needs_boxes = html_file is not None or errors or tightness or output_format == "junit"
    with library_errors():
        per_class = read_score_thresholds(score_thresholds_file) if score_thresholds_file else {}
    thresholds = ScoreThresholds.of(score_threshold, per_class)
    with library_errors(), progress_display(quiet) as progress:
        gt_columns, pred_columns = read_inputs(
            gt_dir, pred_dir, pred_format, coco_gt, names_file, jobs or os.cpu_count() or 1,
            max_file_size, progress.files, split, geometry,
        )  # fmt: skip
        evaluation, matched = evaluate_matched(
            gt_columns,
            pred_columns,
            conventions,
            keep_matches=needs_boxes,
            fold_case=fold_case,
            progress=progress.stages,
            score_thresholds=thresholds or None,
        )
        if thresholds:
            refuse_unknown_classes(per_class, evaluation, score_thresholds_file)
            evaluation = replace(evaluation, notes=(*evaluation.notes, thresholds.note()))
    gt = pred = None
    if needs_boxes:
        gt, pred = gt_columns.to_annotations(), pred_columns.to_annotations()
        if fold_case:
            # The error analysis and the HTML report see the names that were matched.
            gt, pred = fold_names(gt), fold_names(pred)
    evidence = evidence_for(
        evaluation, matched, bootstrap_resamples, seed, slice_specs, calibration_bins,
        html=html_file is not None,
    )  # fmt: skip
    # The columns are the largest thing held; the outputs below need only the evaluation.
    del gt_columns, pred_columns, matched
    report_warnings(evaluation)
    with library_errors():
        gates = check_gates(evaluation, fail_under, max_fp, max_fn, evidence.slices)
    analysis = None
    if (errors or tightness) and gt is not None and pred is not None:
        from vocmatch.analysis import error_analysis

        with library_errors():
            analysis = error_analysis(evaluation, gt, pred, background_iou)
    if output_format != "table":
        text = machine_text(
            output_format, evaluation, gates, analysis, evidence, thresholds or None, beta
        )
        if output is None:
            with reader_may_leave():
                click.echo(text, nl=False)
        else:
            from vocmatch.report import summary_table

            write_text(output, text)
            with reader_may_leave():
                print_report(stdout_console(), summary_table(evaluation))
    else:
        from rich.console import Group
        from rich.text import Text

        from vocmatch.report import ReportOptions, render, render_analysis, summary_table

        options = ReportOptions(
            max_rows=max_rows,
            only_failing=only_failing,
            score_thresholds=thresholds or None,
            beta=beta,
        )
        console = stdout_console()
        report = render(evaluation, options)
        if analysis is not None:
            threshold = evaluation.conventions.iou_threshold
            extra = render_analysis(analysis, threshold, errors, tightness, max_rows)
            report = Group(report, Text(), extra)
        report = Group(report, *evidence_report(evidence, evaluation.conventions.iou_threshold))
        if output is None:
            with reader_may_leave():
                print_report(console, report)
        else:
            write_text(output, report_text(report))
            with reader_may_leave():
                print_report(console, summary_table(evaluation))
    if classes_csv is not None:
        from vocmatch.formats import to_csv_classes

        write_text(classes_csv, to_csv_classes(evaluation))
    if write_thresholds_file is not None:
        write_text(write_thresholds_file, operating_thresholds(evaluation, beta))
    if html_file is not None and gt is not None and pred is not None:
        # The slider is one for every class: it starts at the lowest threshold in force.
        values = [thresholds.default, *dict(thresholds.per_class).values()]
        start = min((v for v in values if v is not None), default=0.0)
        write_text(html_file, html_text(evaluation, gt, pred, images_dir, evidence, start))
    report_gates(gates)
    if not gates.passed:
        raise click.exceptions.Exit(EXIT_GATE)
    if evaluation.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


def evidence_report(evidence: Evidence, threshold: float) -> list[RenderableType]:
    """The terminal report's parts for the evidence, each after a blank line."""
    from rich.text import Text

    from vocmatch.report import bootstrap_table, slice_table

    parts: list[RenderableType] = []
    if evidence.bootstrap is not None:
        parts += [Text(), bootstrap_table(evidence.bootstrap)]
    for found in evidence.slices:
        parts += [Text(), slice_table(found, threshold)]
    if evidence.calibration is not None:
        from vocmatch.report import calibration_table

        parts += [Text(), calibration_table(evidence.calibration)]
    return parts


#: The eval options that apply with --mode labels; any other given there is a usage error,
#: so that a box option (--iou, --fail-under, ...) never seems to take effect when it does not.
LABEL_MODE_OPTIONS = frozenset(
    (
        "gt_dir",
        "pred_dir",
        "mode",
        "difficult",
        "output_format",
        "output",
        "max_rows",
        "only_failing",
        "fold_case",
        "max_file_size",
        "jobs",
        "pred_format",
        "coco_gt",
        "names_file",
        "split",
    )
)


def reject_box_options(ctx: click.Context) -> None:
    """A usage error (exit 2) for an eval option given with --mode labels that does not
    apply there."""
    for param in ctx.command.params:
        if param.name is None or param.name in LABEL_MODE_OPTIONS:
            continue
        if ctx.get_parameter_source(param.name) in (ParameterSource.DEFAULT, None):
            continue
        names = "/".join([*param.opts, *getattr(param, "secondary_opts", [])])
        raise click.UsageError(f"{names} applies to boxes, not to --mode labels", ctx=ctx)


def report_label_warnings(evaluation: LabelEvaluation) -> None:
    """As :func:`report_warnings`: an image without a prediction file has nothing predicted."""
    report_warnings(evaluation, "nothing predicted")


def write_report(path: Path, report: RenderableType) -> None:
    """Write a terminal report to a file at the content's width, without colour."""
    write_text(path, report_text(report))


def show_report(
    output_format: str,
    output: Path | None,
    text: Callable[[], str],
    report: Callable[[], RenderableType],
    summary: Callable[[], RenderableType],
) -> None:
    """The JSON text or the table report, on stdout or in ``output`` with the summary on
    the terminal."""
    console = stdout_console()
    if output is not None:
        if output_format == "json":
            write_text(output, text())
        else:
            write_report(output, report())
        with reader_may_leave():
            print_report(console, summary())
        return
    with reader_may_leave():
        if output_format == "json":
            click.echo(text(), nl=False)
        else:
            print_report(console, report())


def labels_eval(
    gt_dir: Path,
    pred_dir: Path,
    difficult: str | None,
    output_format: str,
    output: Path | None,
    max_rows: int,
    only_failing: bool,
    max_file_size: int,
    jobs: int,
    pred_format: str = "voc",
    coco_gt: Path | None = None,
    names_file: Path | None = None,
    split: str | None = None,
) -> None:
    """``eval --mode labels``: compare the class-name set of each image (exit 0 or 3)."""
    from vocmatch.formats import labels_to_json
    from vocmatch.labels import LabelDifficult, evaluate_labels
    from vocmatch.report import ReportOptions, label_summary, render_labels

    reject_box_options(click.get_current_context())
    if output_format not in ("table", "json"):
        raise click.UsageError(
            f"--format {output_format} is not available in labels mode (use table or json)"
        )
    if difficult == "crowd":
        raise click.UsageError("--difficult crowd applies to boxes, not to --mode labels")
    label_difficult: LabelDifficult = "count" if difficult == "count" else "ignore"
    check_outputs(
        [output],
        files=[pred_dir if pred_format == "coco" else None, coco_gt, names_file],
        folders=xml_folders(gt_dir) + prediction_inputs(pred_dir, pred_format),
    )
    with library_errors():
        # The parallel reader: the same objects and skipped files as read_pair.
        gt_columns, pred_columns = read_inputs(
            gt_dir, pred_dir, pred_format, coco_gt, names_file, jobs or os.cpu_count() or 1,
            max_file_size, None, split,
        )  # fmt: skip
        gt, pred = gt_columns.to_annotations(), pred_columns.to_annotations()
        del gt_columns, pred_columns
        evaluation = evaluate_labels(gt, pred, label_difficult)
    report_label_warnings(evaluation)
    options = ReportOptions(max_rows=max_rows, only_failing=only_failing)
    show_report(
        output_format,
        output,
        lambda: labels_to_json(evaluation),
        lambda: render_labels(evaluation, options),
        lambda: label_summary(evaluation),
    )
    if evaluation.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


def html_text(
    evaluation: Evaluation,
    gt: AnnotationSet,
    pred: AnnotationSet,
    images_dir: Path | None,
    evidence: Evidence | None = None,
    score_start: float = 0.0,
) -> str:
    """The HTML report, on the pictures in ``images_dir`` if given; a picture that cannot be
    read is named on stderr and its overlay drawn blank."""
    # Imported here: the HTML report needs Jinja2 and Pillow, which other runs never load.
    from vocmatch.html import html_report, read_pictures

    pictures = None
    if images_dir is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", VocmatchWarning)
            with library_errors():
                keys = [image.key for image in evaluation.images]
                pictures = read_pictures(images_dir, gt, keys)
        for warning in caught:
            echo_err(f"vocmatch: warning: {warning.message}")
    found = evidence or Evidence()
    with library_errors():
        return html_report(
            evaluation,
            gt,
            pred,
            pictures,
            bootstrap=found.bootstrap,
            score_start=score_start,
            slices=found.slices,
            calibration=found.reliability,
        )


def refuse_unknown_classes(
    per_class: dict[str, float], evaluation: Evaluation, path: Path | None
) -> None:
    """A usage error for a threshold of a class in neither the ground truth nor the
    predictions: nearly always a typo, or the file of another data set."""
    import difflib

    known = sorted(c.name for c in evaluation.classes)
    for name in per_class:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise fail(
                f"{path}: a threshold for class {name!r}, which is in neither the ground "
                f"truth nor the predictions{hint}"
            )


def operating_thresholds(evaluation: Evaluation, beta: float) -> str:
    """The ``--write-thresholds`` file: each class's operating point, class,threshold CSV."""
    from vocmatch.thresholds import operating_point, thresholds_csv

    return thresholds_csv(
        [(c.name, operating_point(c.curve, c.gt, beta)) for c in evaluation.classes]
    )


def write_text(path: Path, text: str) -> None:
    """Write a report file atomically (:mod:`vocmatch.output`): a failure is one line,
    ``vocmatch: cannot write PATH: reason``, exit 2, and leaves any earlier file intact."""
    with library_errors():
        write_file(path, text)


def regression_gate_option(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[RegressionGate, ...]:
    """Parse each ``--fail-on-regression`` value; a bad one is a usage error (exit 2)."""
    from vocmatch.diff import parse_regression_gate

    try:
        return tuple(parse_regression_gate(value) for value in values)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None


@main.command("diff")
@click.argument("gt_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_a_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_b_dir", type=InputPath(file_okay=False, path_type=Path))
@convention_options
@format_option(
    ["table", "json", "markdown"],
    "table: the rich report; json: every change, for scripts; markdown: summary, classes, "
    "changed images and gates, for a pull request or a CI job summary.",
)
@output_option("Write the report to FILE instead of stdout.")
@max_rows_option(
    DIFF_MAX_ROWS, "Rows of the changed-images table (worst first); 0 shows every changed image."
)
@click.option(
    "--fold-case",
    is_flag=True,
    help="Lower-case class names before matching, so Car and car are one class (as eval's "
    "--fold-case).",
)
@click.option(
    "--fail-on-regression",
    multiple=True,
    callback=regression_gate_option,
    metavar="[CLASS:]METRIC=DELTA",
    help="Exit 1 if METRIC (map, precision, recall or f1) changes from A to B by less than "
    "DELTA: map=-0.01 fails when mAP falls by more than 0.01; CLASS:METRIC for one class "
    "(ap = map). Repeatable.",
)
@functools.partial(evidence_options, bootstrap_help=PAIRED_BOOTSTRAP_HELP)
@click.option(
    "--significant",
    "alpha",
    type=FiniteFloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=None,
    metavar="ALPHA",
    help="With --bootstrap: a regression gate fails only when the change is below its "
    "DELTA and significantly so, its one-sided p-value (the share of resamples whose change "
    "is not below DELTA) at most ALPHA, such as 0.05.",
)
def diff_command(
    gt_dir: Path,
    pred_a_dir: Path,
    pred_b_dir: Path,
    protocol_name: str,
    iou: float | None,
    strict_threshold: bool | None,
    pixel_inclusive: bool | None,
    match_rule: str | None,
    difficult: str | None,
    interpolation: str | None,
    output_format: str,
    output: Path | None,
    max_rows: int,
    fold_case: bool,
    fail_on_regression: tuple[RegressionGate, ...],
    bootstrap_resamples: int | None,
    seed: int,
    alpha: float | None,
) -> None:
    """Compare two runs, PRED_A_DIR (the reference) and PRED_B_DIR, on the ground truth in
    GT_DIR: two models, or two labelling passes.

    Shows the change in mAP, precision and recall overall and per class, and per image the
    objects newly missed or newly found and the false positives added or removed, worst
    regression first.
    """

    from vocmatch.batch import evaluate_matched
    from vocmatch.diff import check_regressions, evaluation_diff
    from vocmatch.evaluate import fold_names
    from vocmatch.formats import diff_to_json, diff_to_markdown
    from vocmatch.report import diff_report
    from vocmatch.scan import read_column_pair, read_columns

    if alpha is not None and bootstrap_resamples is None:
        raise click.UsageError("--significant tests the paired bootstrap: give --bootstrap N too")
    conventions = conventions_from(
        protocol_name, iou, strict_threshold, pixel_inclusive, match_rule, difficult,
        interpolation,
    )  # fmt: skip
    check_outputs([output], folders=xml_folders(gt_dir, pred_a_dir, pred_b_dir))
    with library_errors():
        # The vectorised path, as for eval: the same evaluations, with every per-box match.
        jobs = os.cpu_count() or 1
        gt_columns, pred_a_columns = read_column_pair(gt_dir, pred_a_dir, jobs)
        pred_b_columns = read_columns(pred_b_dir, jobs)
        refuse_unpaired(gt_columns, pred_a_columns, pred_a_dir)
        refuse_unpaired(gt_columns, pred_b_columns, pred_b_dir)
        evaluation_a, matched_a = evaluate_matched(
            gt_columns, pred_a_columns, conventions, fold_case=fold_case
        )
        evaluation_b, matched_b = evaluate_matched(
            gt_columns, pred_b_columns, conventions, fold_case=fold_case
        )
        evidence = None
        if bootstrap_resamples is not None:
            from vocmatch.bootstrap import paired_bootstrap, resampler

            evidence = paired_bootstrap(
                evaluation_a, resampler(evaluation_a, matched_a),
                evaluation_b, resampler(evaluation_b, matched_b),
                bootstrap_resamples, seed, jobs=jobs,
            )  # fmt: skip
        del matched_a, matched_b
        pred_a, pred_b = pred_a_columns.to_annotations(), pred_b_columns.to_annotations()
        if fold_case:
            # The image-by-image comparison sees the names that were matched.
            pred_a, pred_b = fold_names(pred_a), fold_names(pred_b)
        del gt_columns, pred_a_columns, pred_b_columns
        diff = evaluation_diff(
            evaluation_a, evaluation_b, pred_a, pred_b, str(pred_a_dir), str(pred_b_dir)
        )
        results = check_regressions(diff, fail_on_regression, evidence, alpha)
    skipped = {str(s): None for s in (*evaluation_a.skipped, *evaluation_b.skipped)}
    for line in skipped:
        echo_err(f"vocmatch: skipped {line}")
    if output_format in ("json", "markdown"):
        text = (
            diff_to_json(diff, results, evidence)
            if output_format == "json"
            else diff_to_markdown(diff, results, max_rows, evidence)
        )
        if output is None:
            click.echo(text, nl=False)
        else:
            write_text(output, text)
    elif output is None:
        with reader_may_leave():
            print_report(stdout_console(), diff_report(diff, results, max_rows, evidence))
    else:
        write_text(output, report_text(diff_report(diff, results, max_rows, evidence)))
    for result in results:
        if not result.passed:
            echo_err(f"vocmatch: regression: {result}")
    if not all(r.passed for r in results):
        raise click.exceptions.Exit(EXIT_GATE)
    if skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


def prepare_output_folder(folder: Path, inputs: Sequence[Path]) -> list[Path]:
    """Check, before any work, a folder that ``suspects`` writes into, and create it.

    The folder may be new, empty, or a previous ``suspects`` output (it holds
    ``suspects.json``), whose LabelImg copies are returned so that those not written again
    can be removed; anything else is refused, as is a folder whose copies would land in an
    input folder (the next run would read them as annotations).

    Returns:
        The copies a previous run wrote there.
    """
    import json

    from vocmatch.suspects import COPIES_FOLDER

    name = os.fspath(folder)
    copies = os.path.realpath(folder / COPIES_FOLDER)
    with library_errors():
        if not name:
            raise OutputError(name, "the path is empty")
        if os.path.exists(name) and not os.path.isdir(name):
            raise OutputError(name, "it is not a folder")
        for source in inputs:
            real = os.path.realpath(source)
            if os.path.commonpath([copies, real]) in (copies, real):
                raise OutputError(
                    name, f"its copies would mix with the input folder {os.fspath(source)}"
                )
        previous: list[Path] = []
        occupied = False
        if os.path.isdir(name):
            with os.scandir(name) as entries:
                occupied = any(True for _ in entries)
        if occupied:
            record = folder / "suspects.json"
            try:
                listed = json.loads(record.read_text(encoding="utf-8")).get("copies", [])
            except (OSError, ValueError, AttributeError):
                raise OutputError(
                    name,
                    "it holds other files; give a new or empty folder, or one a previous "
                    "vocmatch suspects run wrote",
                ) from None
            previous = [
                folder / entry
                for entry in listed
                if isinstance(entry, str)
                and entry.endswith(".xml")
                and os.path.realpath(folder / entry).startswith(copies + os.sep)
            ]
        try:
            os.makedirs(name, exist_ok=True)
        except OSError as error:
            raise OutputError(name, error.strerror or str(error)) from None
        check_output(folder / "suspects.json")
    return previous


@main.command("suspects")
@click.argument("gt_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_dir", type=InputPath(file_okay=False, path_type=Path))
@click.option(
    "--output",
    "-o",
    "output_dir",
    type=click.Path(path_type=Path),
    default=None,
    metavar="DIR",
    help="Write DIR/suspects.json, DIR/suspects.csv and, in DIR/annotations, a copy of each "
    "ground-truth file with suspects, each suggestion added as an object named "
    "suspect:<kind>:<class> (open them in LabelImg).",
)
@click.option(
    "--confidence",
    type=FiniteFloatRange(0.0, 1.0),
    default=0.5,
    show_default=True,
    help="A prediction at or above this score is confident (one without a score always is).",
)
@click.option(
    "--background-iou",
    type=FiniteFloatRange(0.0, 1.0),
    default=0.1,
    show_default=True,
    help="At most this IoU with every object, a prediction overlaps nothing (missing box); "
    "above it with an object of its class, it is on that object (loose box).",
)
@click.option(
    "--match-iou",
    type=FiniteFloatRange(0.0, 1.0),
    default=0.5,
    show_default=True,
    help="At or above this IoU a prediction is on an object: its own class agrees, another "
    "class is a wrong-class suspect.",
)
@click.option(
    "--duplicate-iou",
    type=FiniteFloatRange(0.0, 1.0),
    default=0.9,
    show_default=True,
    help="Two objects of one class at or above this IoU are a duplicate.",
)
@format_option(
    ["table", "json", "csv"],
    "table: the ranked suspects; json and csv: every suspect, as written to --output.",
)
@max_rows_option(20, "Suspects shown in the table (most confident first); 0 shows all.")
@click.option(
    "--jobs",
    "-j",
    type=WholeNumberRange(min=0),
    default=0,
    help="Processes that read files in parallel; 0 (the default) uses every core.",
)
def suspects_command(
    gt_dir: Path,
    pred_dir: Path,
    output_dir: Path | None,
    confidence: float,
    background_iou: float,
    match_iou: float,
    duplicate_iou: float,
    output_format: str,
    max_rows: int,
    jobs: int,
) -> None:
    """List likely annotation mistakes in GT_DIR from the confident predictions in PRED_DIR.

    Missing box (a confident prediction overlaps no object), wrong class (it lies on an
    object of another class, none of its own), loose box (its best IoU with its class lies
    between --background-iou and --match-iou) and duplicate (two objects of one class at
    --duplicate-iou), most confident first. Exit 0, or 3 when files were skipped.
    """
    from vocmatch.output import write_bytes
    from vocmatch.parse import read_bytes
    from vocmatch.scan import read_column_pair
    from vocmatch.suspects import (
        COPIES_FOLDER,
        SuspectOptions,
        find_suspects,
        suspect_copy,
        suspects_csv,
        suspects_json,
    )

    try:
        options = SuspectOptions(confidence, background_iou, match_iou, duplicate_iou)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    previous = prepare_output_folder(output_dir, [gt_dir, pred_dir]) if output_dir else []
    with library_errors():
        gt_columns, pred_columns = read_column_pair(gt_dir, pred_dir, jobs or os.cpu_count() or 1)
        refuse_unpaired(gt_columns, pred_columns, pred_dir)
        gt, pred = gt_columns.to_annotations(), pred_columns.to_annotations()
        del gt_columns, pred_columns
        report = find_suspects(gt, pred, options)
    skipped = [*gt.skipped, *pred.skipped]
    for found in skipped:
        echo_err(f"vocmatch: skipped {found}")
    if output_dir is not None:
        by_image: dict[str, list[Any]] = {}
        for suspect in report.suspects:
            by_image.setdefault(suspect.image, []).append(suspect)
        written: list[str] = []
        paths = {a.key: a.path for a in gt.annotations}
        with library_errors():
            for key in sorted(by_image):
                relative = f"{COPIES_FOLDER}/{key}.xml"
                target = output_dir / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    copy = suspect_copy(read_bytes(paths[key]), by_image[key])
                except ValueError as error:
                    echo_err(f"vocmatch: warning: {paths[key]}: no copy written: {error}")
                    continue
                write_bytes(target, copy)
                written.append(relative)
            for old in previous:
                if os.fspath(old.relative_to(output_dir)).replace(os.sep, "/") not in written:
                    with contextlib.suppress(FileNotFoundError):
                        old.unlink()
        write_text(output_dir / "suspects.json", suspects_json(report, written))
        write_text(output_dir / "suspects.csv", suspects_csv(report))
    if output_format == "json":
        with reader_may_leave():
            click.echo(suspects_json(report), nl=False)
    elif output_format == "csv":
        with reader_may_leave():
            click.echo(suspects_csv(report), nl=False)
    else:
        from vocmatch.report import suspects_report

        with reader_may_leave():
            print_report(stdout_console(), suspects_report(report, max_rows))
    if skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


@main.command("lint")
@click.argument("paths", nargs=-1, type=InputPath(exists=True, path_type=Path))
@click.option(
    "--select",
    multiple=True,
    metavar="CODES",
    help="Report only these rules: comma-separated codes or prefixes (V005,V006 or V00). "
    "[default: all]",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="CODES",
    help="Do not report these rules (codes or prefixes).",
)
@click.option(
    "--classes",
    "classes_file",
    type=InputPath(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Known class names, one per line; turns on V009 unknown-class.",
)
@click.option(
    "--tolerance",
    type=FiniteFloatRange(min=0.0),
    default=0.0,
    show_default=True,
    metavar="PIXELS",
    help="Pixels a box may extend outside the image before V006 reports it.",
)
@click.option(
    "--duplicate-iou",
    type=FiniteFloatRange(0.0, 1.0, min_open=True),
    default=DEFAULT_DUPLICATE_IOU,
    show_default=True,
    help="IoU at or above which two boxes of one class are a V010 duplicate.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "github", "json"]),
    default="text",
    show_default=True,
    help="text: path:line: CODE message; github: GitHub Actions ::error annotations; "
    "json: every finding, for scripts.",
)
@click.option(
    "--jobs",
    "-j",
    type=WholeNumberRange(min=0),
    default=0,
    help="Processes that lint files in parallel; 0 (the default) uses every core.",
)
@click.option("--list-rules", is_flag=True, help="Print the rules and exit.")
def lint_command(
    paths: tuple[Path, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    classes_file: Path | None,
    tolerance: float,
    duplicate_iou: float,
    output_format: str,
    jobs: int,
    list_rules: bool,
) -> None:
    """Check annotation files in PATHS (directories, searched recursively, or files).

    Prints one finding per line and a summary; exits 1 when there are findings.
    """
    from vocmatch import lint

    if list_rules:
        width = max(len(r.name) for r in lint.RULES)
        for rule in lint.RULES:
            click.echo(f"{rule.code}  {rule.name:<{width}}  {rule.description}")
        return
    if not paths:
        raise click.UsageError("give at least one directory or file to lint")
    selected = {part.strip().upper() for item in select for part in item.split(",")}
    if "V009" in selected and classes_file is None:
        raise click.UsageError("V009 unknown-class needs --classes FILE")
    with library_errors():
        options = lint.LintOptions(
            codes=lint.select_codes(select, ignore),
            classes=lint.read_classes(classes_file) if classes_file is not None else None,
            tolerance=tolerance,
            duplicate_iou=duplicate_iou,
        )
        result = lint.lint_paths(paths, options, jobs or os.cpu_count() or 1)
    if result.files_checked == 0:
        names = ", ".join(str(p) for p in paths)
        raise fail(f"no .xml annotation files found in {names}")
    if output_format == "json":
        click.echo(lint.to_json(result), nl=False)
    elif output_format == "github":
        for finding in result.findings:
            click.echo(lint.github_annotation(finding))
        # stdout holds only workflow commands; the summary still shows in the job log.
        click.echo(lint.summary(result), err=True)
    else:
        for finding in result.findings:
            click.echo(lint.text_line(finding))
        click.echo(lint.summary(result))
    if result.findings:
        raise click.exceptions.Exit(EXIT_GATE)


@main.command("iou", context_settings={"ignore_unknown_options": True})
@click.argument("values", nargs=-1, metavar="A B")
@click.option(
    "--labels",
    is_flag=True,
    help="Compare two comma-separated label sets (Jaccard) instead of two boxes.",
)
@click.option("--xywh", is_flag=True, help="Read each box as x,y,w,h instead of x1,y1,x2,y2.")
@click.option(
    "--polygon",
    is_flag=True,
    help="Either argument may be a polygon, written as its points 'x,y x,y x,y ...'; an "
    "argument of four numbers stays a box. Areas and overlap are exact.",
)
@click.option(
    "--threshold",
    type=FiniteFloatRange(0.0, 1.0),
    default=0.5,
    show_default=True,
    help="IoU (or Jaccard) threshold for the verdict; inclusive, IoU >= t matches.",
)
@format_option(
    ["table", "json"],
    "table: the terminal report and overlap diagram; json: every number, for scripts.",
)
def iou_command(
    values: tuple[str, ...],
    labels: bool,
    xywh: bool,
    polygon: bool,
    threshold: float,
    output_format: str,
) -> None:
    """Compare two boxes A and B, two regions with --polygon, or two label sets with --labels.

    Prints IoU, the verdict at --threshold and at 0.5/0.75/0.95, GIoU, Dice and the areas,
    and draws the two boxes. Separate a box's numbers with commas or spaces; a box that
    starts with a minus sign works as typed.

    \b
    vocmatch iou 50,50,150,150 80,80,180,180
    vocmatch iou --xywh "-5 3 10 20" 0,0,8,8
    vocmatch iou --polygon "200,100 300,100 200,200" 200,100,300,200
    vocmatch iou --labels "cat, dog, bird" "dog,bird,fish"
    """
    from vocmatch import calculator
    from vocmatch.diagram import box_report, label_report

    for value in values:
        # Unknown options reach us as values (negative coordinates need that): a dash
        # followed by anything but a digit or a point was meant as an option.
        if value.startswith("-") and len(value) > 1 and value[1] not in "0123456789.":
            raise fail(f"no such option: {value} (see vocmatch iou --help)")
    comparison: BoxComparison | LabelComparison
    try:
        if labels:
            if xywh or polygon:
                raise fail(f"{'--xywh' if xywh else '--polygon'} applies to boxes, not to --labels")
            if len(values) != 2:
                raise ValueError(f"expected two label sets A B, got {len(values)} argument(s)")
            sets = []
            for name, text in zip("AB", values, strict=True):
                try:
                    sets.append(calculator.parse_labels(text))
                except ValueError as error:
                    raise ValueError(f"label set {name}: {error}") from None
            comparison = calculator.compare_labels(sets[0], sets[1], threshold)
        elif polygon:
            region_a, region_b = calculator.parse_region_pair(values, xywh)
            comparison = calculator.compare_regions(region_a, region_b, threshold)
        else:
            box_a, box_b = calculator.parse_box_pair(values, xywh)
            comparison = calculator.compare_boxes(box_a, box_b, threshold)
    except ValueError as error:
        raise fail(str(error)) from None
    if isinstance(comparison, calculator.BoxComparison) and not comparison.dice_agree:
        echo_err(
            f"vocmatch: warning: Dice 2*I/(A+B) = {comparison.dice!r} disagrees with "
            f"2*IoU/(1+IoU) = {comparison.dice_from_iou!r}"
        )
    if output_format == "json":
        click.echo(calculator.to_json(comparison), nl=False)
        return
    console = stdout_console()
    if isinstance(comparison, calculator.BoxComparison):
        console.print(box_report(comparison, console.width))
    else:
        console.print(label_report(comparison))


@main.command("seg")
@click.argument("gt_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_dir", type=InputPath(file_okay=False, path_type=Path))
@click.option(
    "--classes",
    "classes_file",
    type=InputPath(exists=True, dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Class names, one per line, in mask-index order (the first line is index 0). "
    "[default: the 21 PASCAL VOC classes, 0 background]",
)
@click.option(
    "--pred-void",
    type=click.Choice(["error", "miss"]),
    default="error",
    show_default=True,
    help="A prediction holding 255 (void): error skips that image, as the VOC devkit rejects "
    "it; miss counts such pixels as missed pixels of their ground-truth class.",
)
@format_option(["table", "json"], "table: the rich report; json: every number, for scripts.")
@output_option("Write the report to FILE; the terminal still shows the summary.")
@click.option(
    "--jobs",
    "-j",
    type=WholeNumberRange(min=1),
    default=1,
    show_default=True,
    help="Processes reading and counting masks; decoding the PNGs is most of the work, so "
    "on a large set up to one per core runs faster.",
)
@max_rows_option(20, "Rows of the per-image table (lowest mIoU first); 0 shows every image.")
def seg_command(
    gt_dir: Path,
    pred_dir: Path,
    classes_file: Path | None,
    pred_void: PredVoid,
    output_format: str,
    output: Path | None,
    jobs: int,
    max_rows: int,
) -> None:
    """Score the segmentation masks in PRED_DIR against those in GT_DIR.

    Masks are PASCAL VOC SegmentationClass-style PNGs (palette or greyscale) whose pixel
    values are class indices, 255 void (ignored in the ground truth); they are paired by
    their path relative to each directory, without the extension. Per-class IoU is
    TP / (TP + FP + FN) over all pixels of the dataset. A pair that cannot be evaluated
    (sizes that differ, an unreadable file, a value out of range, no partner) is named on
    stderr, the rest still count, and the exit code is 3.
    """
    from vocmatch.formats import seg_to_json
    from vocmatch.report import render_seg, seg_summary
    from vocmatch.seg import VOC_CLASSES, evaluate_masks, read_class_names

    check_outputs(
        [output],
        files=[classes_file],
        folders=[InputFolder(os.fspath(d), (".png",)) for d in (gt_dir, pred_dir)],
    )
    with library_errors():
        names = read_class_names(classes_file) if classes_file is not None else VOC_CLASSES
        evaluation = evaluate_masks(gt_dir, pred_dir, names, pred_void=pred_void, jobs=jobs)
    for skipped in evaluation.skipped:
        echo_err(f"vocmatch: skipped {skipped}")
    show_report(
        output_format,
        output,
        lambda: seg_to_json(evaluation),
        lambda: render_seg(evaluation, max_rows),
        lambda: seg_summary(evaluation),
    )
    if evaluation.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


class Interrupted(BaseException):
    """Ctrl-C, raised instead of KeyboardInterrupt so that it passes click's own handler
    (which prints a blank line and "Aborted!") and reaches :func:`run`."""


class Stopped(BaseException):
    """SIGTERM or SIGHUP, raised by the handler :func:`run` installs, so that every block
    on the way out (worker pools, report files being written) cleans up as for Ctrl-C.

    Args:
        signum: The signal's number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: The signals that stop a run, each with its exit code (128 + the signal number, as a
#: shell reports a process that a signal ended) and its line on stderr.
_STOP_SIGNALS = {"SIGTERM": "terminated (SIGTERM)", "SIGHUP": "hung up (SIGHUP)"}


def _ignore_further_signals() -> None:
    """While the run cleans up after the first signal, a second one must not cut the
    clean-up short (workers left running, a temporary file left behind); it is bounded."""
    for name in ("SIGINT", *_STOP_SIGNALS):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) in (interrupt, stop):
            signal.signal(number, signal.SIG_IGN)


def interrupt(signum: int, frame: FrameType | None) -> None:
    """The SIGINT handler :func:`run` installs."""
    _ignore_further_signals()
    raise Interrupted


def stop(signum: int, frame: FrameType | None) -> None:
    """The SIGTERM and SIGHUP handler :func:`run` installs."""
    _ignore_further_signals()
    raise Stopped(signum)


class GuardedStream:
    """stdout or stderr, as a stream whose writes never raise ``OSError``.

    A write or flush that fails (a full disk, a file size limit, a closed descriptor, a
    terminal gone, a reader that went away) is recorded in :attr:`error`; the descriptor is
    then pointed at the null device, so what is still buffered, and Python's own flush at
    exit, go nowhere without a second error or a traceback, and the rest of the output is
    dropped. :func:`run` turns the record into the exit code. Every writer -- click, rich,
    ``print`` -- goes through it, so none needs its own handling.

    Args:
        stream: The stream (None when the descriptor was closed when the process started).
        descriptor: Its file descriptor.
    """

    def __init__(self, stream: IO[str] | None, descriptor: int) -> None:
        self._stream = stream
        self._descriptor = descriptor
        self.error: OSError | None = None

    @property
    def lost(self) -> bool:
        """Whether something written to the stream was lost for a reason other than its
        reader going away (EPIPE: ``vocmatch ... | head`` reads what it wants, then
        leaves)."""
        return self.error is not None and self.error.errno != errno.EPIPE

    def _fail(self, error: OSError) -> None:
        self.error = error
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._descriptor)
            os.close(null)
        except OSError:
            pass

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.error is None and self._stream is None and text:
            # Closed when the process started: lost only once there is something to write.
            self.error = OSError(errno.EBADF, "it is closed")
        if self.error is None and self._stream is not None:
            try:
                self._write(self._stream, text)
            except OSError as error:
                self._fail(error)
        return len(text)

    @staticmethod
    def _write(stream: IO[str], text: str) -> None:
        """Write all of ``text`` or raise. Under ``PYTHONUNBUFFERED`` (common in CI and
        containers) the text layer sits on the raw file, whose write may take only part of
        the bytes (a full disk, a file size limit), and the text layer drops the rest
        without a word; so the bytes go to the binary layer here, until all are written."""
        buffer = getattr(stream, "buffer", None)
        if not isinstance(stream, io.TextIOWrapper) or buffer is None:
            stream.write(text)
            return
        stream.flush()  # what the text layer holds goes first
        data = text.replace("\n", os.linesep) if os.linesep != "\n" else text
        view = memoryview(data.encode(stream.encoding, stream.errors or "strict"))
        while view:
            written = buffer.write(view)
            if written is None:  # a non-blocking descriptor that is full
                raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
            view = view[written:]
        if stream.line_buffering and "\n" in text:
            buffer.flush()

    def flush(self) -> None:
        if self.error is None and self._stream is not None:
            try:
                self._stream.flush()
            except OSError as error:
                self._fail(error)

    def isatty(self) -> bool:
        return self.error is None and self._stream is not None and self._stream.isatty()

    def fileno(self) -> int:
        return self._descriptor

    def writable(self) -> bool:
        return True

    @property
    def closed(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self._stream, "errors", None) or "backslashreplace"

    def __getattr__(self, name: str) -> Any:
        # No binary buffer: a writer that found one would write past the guard.
        if name == "buffer" or self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def _open_standard_descriptors() -> None:
    """Give a descriptor closed at start (``vocmatch ... >&-``) the null device, so that
    no file vocmatch opens later takes its number and receives what is meant for it."""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
                if null != descriptor:
                    os.dup2(null, descriptor)
                    os.close(null)
            except OSError:
                pass


def guard_standard_streams() -> tuple[GuardedStream, GuardedStream]:
    """Put :class:`GuardedStream` in place of ``sys.stdout`` and ``sys.stderr``."""
    # A file name that is not valid UTF-8 reaches the report as a lone surrogate; under a
    # strict stdout (PYTHONIOENCODING=utf-8, most UTF-8 locales) printing it would fail.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")
    _open_standard_descriptors()
    out = GuardedStream(sys.stdout, 1)
    err = GuardedStream(sys.stderr, 2)
    sys.stdout, sys.stderr = out, err
    return out, err


def show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Show the library's warnings as ``vocmatch: warning: ...`` lines, others as Python
    would."""
    if issubclass(category, VocmatchWarning):
        echo_err(f"vocmatch: warning: {message}")
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning


def install_signal_handlers(handle_interrupt: bool) -> None:
    """Ctrl-C, SIGTERM and SIGHUP raise exceptions that end the run cleanly. A signal the
    parent set to be ignored (``nohup``, a background job of a script) stays ignored."""
    if handle_interrupt:
        signal.signal(signal.SIGINT, interrupt)
    for name in _STOP_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) not in (signal.SIG_IGN, None):
            signal.signal(number, stop)


def show_usage_error(error: click.ClickException) -> None:
    """click's message for a usage error, each line escaped: the message repeats the value
    given, which may come from the data."""
    buffer = io.StringIO()
    error.show(file=buffer)
    for line in buffer.getvalue().splitlines():
        echo_err(line)


def run(handle_interrupt: bool | None = None) -> None:
    """Entry point that also turns signals and failed output into quiet, documented exits.

    Ctrl-C prints one line, ``vocmatch: interrupted``, and exits 130; SIGTERM and SIGHUP
    print ``vocmatch: terminated (SIGTERM)`` or ``vocmatch: hung up (SIGHUP)`` and exit 143
    or 129. Worker processes are ended at once and a report file being written is left as
    it was. When the reader of stdout goes away (``vocmatch ... | head``) the rest of the
    output is dropped and the command exits with its verdict. When stdout or stderr cannot
    be written (a full disk, a closed descriptor), the command still runs to its end, says
    so on stderr where it can, and exits 4.

    Args:
        handle_interrupt: Install the Ctrl-C handler; by default only where Python's own is
            in place (a SIGINT ignored by the parent, as for a background job of a script,
            stays ignored). :mod:`vocmatch.__main__` decides before its imports.
    """
    # A run builds hundreds of thousands of small records with no reference cycles (boxes,
    # matches, per-image results); at the default thresholds the cycle collector would walk
    # them again and again (a third of the HTML report's time on 5,000 images). Collect
    # less often, and never walk what the imports left.
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    if handle_interrupt is None:
        handle_interrupt = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    install_signal_handlers(handle_interrupt)
    out, err = guard_standard_streams()
    warnings.showwarning = show_warning
    try:
        try:
            # Outside standalone mode click returns, not raises, the code of a command's Exit.
            code = main.main(standalone_mode=False)
        except click.exceptions.Exit as exit_:
            code = exit_.exit_code
        except click.ClickException as error:
            show_usage_error(error)
            code = EXIT_USAGE
    except (Interrupted, KeyboardInterrupt, click.exceptions.Abort):
        _ignore_further_signals()
        # On a terminal the echoed ^C has no newline after it.
        start = "\n" if err.isatty() else ""
        click.echo(f"{start}vocmatch: interrupted", err=True)
        code = EXIT_INTERRUPTED
    except Stopped as stopped:
        name = signal.Signals(stopped.signum).name
        click.echo(f"vocmatch: {_STOP_SIGNALS.get(name, name)}", err=True)
        code = 128 + stopped.signum
    code = code if isinstance(code, int) else EXIT_OK
    out.flush()
    if out.lost and out.error is not None:
        echo_err(f"vocmatch: cannot write to stdout: {out.error.strerror or out.error}")
    err.flush()
    if (out.lost or err.lost) and code not in (EXIT_USAGE, EXIT_INTERRUPTED) and code < 128:
        code = EXIT_OUTPUT
    if code >= 128:
        # Stopped by a signal: the workers are ended and any report file cleaned up; leave
        # now rather than in the interpreter's exit, which joins the pools' threads.
        os._exit(code)
    sys.exit(code)

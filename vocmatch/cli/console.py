"""The terminal side of a run: the Console, stderr lines, warnings, progress, report files."""

from __future__ import annotations

import codecs
import io
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

import click

from vocmatch.cli.exits import EXIT_USAGE
from vocmatch.cli.keywords import OPTION_OF_FIELD
from vocmatch.errors import (
    Message,
    Option,
    OutputError,
    RequestError,
    VocmatchError,
    VocmatchWarning,
    message_of,
)
from vocmatch.escapes import printable
from vocmatch.files import InputFolder, check_output
from vocmatch.files import save_chunks as save_file_chunks
from vocmatch.files import save_text as save_file_text
from vocmatch.readers.formats import PREDICTION_FORMATS

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.progress import Progress, TaskID

    from vocmatch.evaluation.class_map import ClassChoice
    from vocmatch.evaluation.labels_and_masks.labels import LabelEvaluation
    from vocmatch.evaluation.scoring import Evaluation
    from vocmatch.evidence.gates import GateReport

E = TypeVar("E", "Evaluation", "LabelEvaluation")


def stdout_console() -> Console:
    """The console for the report (stdout); colour only on a terminal, NO_COLOR honoured.

    Markup and emoji codes are off: a plain string that reached it from the data (a class
    named ``[link=...]`` or ``:skull:``) prints as it is written.
    """
    from rich.console import Console

    return Console(highlight=False, markup=False, emoji=False)


def print_report(console: Console, renderable: RenderableType) -> None:
    """Print a report on stdout at a width that suits where it goes.

    On a terminal, the terminal's width (or ``COLUMNS``); elsewhere (a CI log, a pipe, a
    file) ``COLUMNS`` when set to a number, else the content's own width, so tables are not
    wrapped at rich's 80-column default. Never narrower than the content's narrowest form: a
    class name is not broken inside a word, a line is longer than the terminal instead.
    """
    from vocmatch.render.outputs import content_width, widest_width

    # As rich reads it: COLUMNS that is empty or no number is not set.
    columns_set = os.environ.get("COLUMNS", "").strip().isdigit()
    if not console.is_terminal and not columns_set:
        console.width = widest_width(console, renderable)
    else:
        console.width = max(console.width, content_width(console, renderable)[0])
    if console.is_terminal:
        console.print(renderable)
        return
    # Piped or redirected: no line ends in the spaces rich pads titles and grids with.
    with console.capture() as captured:
        console.print(renderable)
    from vocmatch.render.outputs import without_trailing_spaces

    console.file.write(without_trailing_spaces(captured.get()))
    console.file.flush()


def report_text(renderable: RenderableType) -> str:
    """A report as plain text at the content's own width (for ``--output`` files)."""
    from vocmatch.render.outputs import plain_text

    return plain_text(renderable)


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
    (``vocmatch: error: cannot write PATH: reason`` for a report file)."""
    try:
        yield
    except OutputError as error:
        echo_err(f"vocmatch: error: {error}")
        raise click.exceptions.Exit(EXIT_USAGE) from None
    except RequestError as error:
        raise request_error(error) from None
    except VocmatchError as error:
        raise fail(in_cli_words(message_of(error))) from None


def option_words(option: Option) -> str:
    """An option the library names in a message, as the command line spells it: the flag
    with the value to give (``--protocol coco``, ``--coco-gt FILE``, ``--fold-case``)."""
    flag = OPTION_OF_FIELD.get(option.field, "--" + option.field.replace("_", "-"))
    value = option.value
    if isinstance(value, list):
        return " ".join(f"{flag} {v}" for v in value)
    if value is True or (value is None and option.placeholder is None):
        return flag
    return f"{flag} {option.placeholder if value is None else value}"


def in_cli_words(text: str) -> str:
    """A library message with the options it names spelled as the command line's flags."""
    return text.worded(option_words) if isinstance(text, Message) else text


def evaluation_in_cli_words(evaluation: E) -> E:
    """An evaluation whose notes and skipped files name the command line's flags where the
    library names its options, for every report the command line writes."""
    return replace(
        evaluation,
        notes=tuple(in_cli_words(note) for note in evaluation.notes),
        skipped=tuple(replace(s, message=in_cli_words(s.message)) for s in evaluation.skipped),
    )


#: Fields whose misuse is a usage error, worded with the options that go together.
_USAGE_WORDING = {
    "coco_gt": "--coco-gt names the ids of --pred-format coco results",
    "names": "--names names the class indices of --pred-format yolo files",
    "pred_format": "--pred-format yolo needs --names FILE (class names, one per line)",
}


def request_error(error: RequestError) -> click.ClickException | click.exceptions.Exit:
    """A library request's error in the command line's words: its options, not its fields.

    A class table given with the wrong format is a usage error; a prediction file where a
    folder is read says which format reads it; anything else is ``--option: message``.
    """
    if error.field in _USAGE_WORDING and (error.value is None or error.value in PREDICTION_FORMATS):
        return click.UsageError(_USAGE_WORDING[error.field])
    if error.field == "pred":
        path = error.value or ""
        if path.lower().endswith(".json"):
            return fail(f"{path}: a file, not a folder: give --pred-format coco for COCO results")
        suffix = os.path.splitext(path)[1].lower()
        readers = " or ".join(
            record.name
            for record in PREDICTION_FORMATS.values()
            if suffix in (record.suffixes or ())
        )
        return fail(
            f"{path}: a file, not a folder: give the folder that holds it (--pred-format "
            f"{readers} read folders of {suffix} files)"
        )
    if error.field == "classes":
        return fail(
            f"{in_cli_words(error.message)} (--fold-case matches names that differ in case; "
            "--names names YOLO indices; --class-map renames classes, coco-to-voc for a COCO "
            "model on VOC)"
        )
    option = OPTION_OF_FIELD.get(error.field, error.field)
    where = option if error.value is None else f"{option} {error.value!r}"
    return fail(f"{where}: {in_cli_words(error.message)}")


#: Suffixes of the pictures --images reads (vocmatch.render.html.PICTURE_SUFFIXES).
PICTURE_SUFFIXES = (".jpg", ".jpeg", ".png")


def xml_folders(*folders: Path) -> list[InputFolder]:
    """Annotation folders, whose ``*.xml`` files a run reads."""
    return [InputFolder(os.fspath(folder), (".xml",)) for folder in folders]


def class_map_file(choice: ClassChoice | None) -> Path | None:
    """The file a ``--class-map`` was read from (None for none or a built-in map's name): an
    input, which no report may overwrite."""
    if choice is None or choice.class_map is None:
        return None
    from vocmatch.evaluation.class_map import BUILTIN_MAPS

    source = choice.class_map.source
    return None if source in BUILTIN_MAPS else Path(source)


def check_outputs(
    outputs: Sequence[Path | None],
    files: Sequence[Path | None] = (),
    folders: Sequence[InputFolder] = (),
) -> None:
    """Refuse, before any work, report paths that cannot be written, that are inputs, or
    that are given for two outputs (one line and exit 2; see :mod:`vocmatch.files`)."""
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
        echo_err(f"vocmatch: skipped {in_cli_words(str(skipped))}")
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


class ProgressDisplay:
    """A progress bar on stderr for long runs: shown only on a terminal, only once a run
    has taken more than a moment, and never with --quiet.

    Two phases, each a line: ``reading files`` (files read, of all), then ``evaluating``,
    shown as soon as the last file is read (so a full reading bar never stands alone while
    the evaluation runs) and moved on by the evaluation's stages as the library tells them.
    """

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
        if done >= total and self.stage_task is None:
            # The evaluation starts once the files are read; its first stage follows.
            self.stage_task = bar.add_task("evaluating", total=None)
            bar.refresh()

    def stages(self, stage: str, done: int, total: int) -> None:
        """The evaluation's stages, each over every image at once."""
        bar = self._shown()
        if bar is None:
            return
        if self.stage_task is None:
            self.stage_task = bar.add_task("", total=total)
        description = "evaluating" if stage == "done" else f"evaluating: {stage}"
        bar.update(self.stage_task, description=description, completed=done, total=total)
        # Drawn now: a stage may last longer than the bar's own refresh takes to come.
        bar.refresh()

    def close(self) -> None:
        """Stop the bar and show no other; closing again does nothing."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
        self.enabled = False


@contextmanager
def progress_display(quiet: bool) -> Iterator[ProgressDisplay]:
    """A :class:`ProgressDisplay` that is stopped however the block ends."""
    display = ProgressDisplay(enabled=not quiet and sys.stderr.isatty())
    try:
        yield display
    finally:
        display.close()


def save_text(path: Path, text: str) -> None:
    """Write a report file atomically (:mod:`vocmatch.files`): a failure is one line,
    ``vocmatch: error: cannot write PATH: reason``, exit 2, and leaves any earlier file intact."""
    with library_errors():
        save_file_text(path, text)


def save_chunks(path: Path, chunks: Sequence[bytes]) -> None:
    """:func:`save_text` for content given as consecutive pieces of bytes."""
    with library_errors():
        save_file_chunks(path, chunks)


def echo_chunks(chunks: Sequence[bytes]) -> None:
    """Write text given as consecutive pieces of its UTF-8 bytes on stdout, after the text
    already written there: as the bytes they are where stdout writes text as UTF-8 with
    ``"\\n"`` line ends (the command line's guarded stdout, a byte stream beneath), else as
    their text."""
    stream = sys.stdout
    as_bytes = os.linesep == "\n" and _is_utf8(getattr(stream, "encoding", None) or "utf-8")
    write_bytes = getattr(stream, "write_bytes", None)
    binary = getattr(stream, "buffer", None)
    if as_bytes and write_bytes is not None:
        write_bytes(chunks)
    elif as_bytes and binary is not None:
        stream.flush()
        binary.writelines(chunks)
        binary.flush()
    else:
        click.echo(b"".join(chunks).decode("utf-8"), nl=False)


def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Show the library's warnings as ``vocmatch: warning: ...`` lines, the options they
    name spelled as flags (``--class-map coco-to-voc``); others as Python would."""
    if issubclass(category, VocmatchWarning):
        text = message_of(message) if isinstance(message, Warning) else message
        echo_err(f"vocmatch: warning: {in_cli_words(text)}")
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning


@contextmanager
def library_warnings() -> Iterator[None]:
    """The library's warnings raised in the block, each shown once the block ends as one
    line in the command line's words (:func:`show_warning`): after the progress bar, never
    through it. Other warnings are shown as Python shows them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", VocmatchWarning)
        yield
    for found in caught:
        show = show_warning if issubclass(found.category, VocmatchWarning) else _python_showwarning
        show(found.message, found.category, found.filename, found.lineno, found.file, found.line)


def show_usage_error(error: click.ClickException) -> None:
    """click's message for a usage error, each line escaped: the message repeats the value
    given, which may come from the data."""
    buffer = io.StringIO()
    error.show(file=buffer)
    for line in buffer.getvalue().splitlines():
        echo_err(line)

"""Typed errors and warnings raised by the vocmatch library.

The library raises these and never prints; the command line turns them into one line on
stderr and a documented exit code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "AnnotationError",
    "CacheWarning",
    "ClassMapWarning",
    "DistributedError",
    "InputError",
    "Message",
    "MissingPredictionWarning",
    "Option",
    "OutputError",
    "RequestError",
    "StateError",
    "SwappedInputsWarning",
    "VocmatchError",
    "VocmatchWarning",
    "message_of",
    "no_annotation_files",
]


@dataclass(frozen=True, slots=True)
class Option:
    """An option of the library named inside a message: the keyword of its Python API.

    Printed in the library's words, ``keyword=value`` (``protocol='coco'``,
    ``fold_case=True``), or the keyword alone when no value is suggested. A caller with
    inputs of its own words it its way through :meth:`Message.worded` (the command line names
    its flag).

    Args:
        field: The keyword, a field of :class:`vocmatch.EvalRequest` (``"coco_gt"``).
        value: The value to give it, or None to name the option only.
        placeholder: What stands for a value the user picks (``"FILE"``), for a caller that
            shows one; the library's own words leave it out.

    >>> print(Option("protocol", "coco"), Option("fold_case", True), Option("coco_gt"))
    protocol='coco' fold_case=True coco_gt
    """

    field: str
    value: object = None
    placeholder: str | None = None

    def __str__(self) -> str:
        return self.field if self.value is None else f"{self.field}={self.value!r}"


class Message(str):
    """A message that names options of the library: a plain string in the library's words,
    whose parts still say which option is named where, so that a caller can name them in its
    own words (the command line names its flags; the library never does).

    Parts that are messages themselves are spliced in, so a message can be prefixed without
    losing its options.

    >>> note = Message("counted apart (fold them with ", Option("fold_case", True), ")")
    >>> print(note)
    counted apart (fold them with fold_case=True)
    >>> print(Message("a.txt: ", note).worded(lambda o: "--" + o.field.replace("_", "-")))
    a.txt: counted apart (fold them with --fold-case)
    """

    parts: tuple[str | Option, ...]

    def __new__(cls, *parts: str | Option) -> Message:
        flat: list[str | Option] = []
        for part in parts:
            flat.extend(part.parts if isinstance(part, Message) else (part,))
        text = super().__new__(cls, "".join(map(str, flat)))
        text.parts = tuple(flat)
        return text

    def __reduce__(self) -> tuple[type[Message], tuple[str | Option, ...]]:
        # Picklable with its parts, to cross a process pool boundary as the errors do.
        return (type(self), self.parts)

    def worded(self, word: Callable[[Option], str]) -> str:
        """The message with each option named by ``word``."""
        return "".join(part if isinstance(part, str) else word(part) for part in self.parts)


def message_of(error: BaseException) -> str:
    """An error's message, a :class:`Message` when it was raised with one (``str(error)``
    would give a plain copy of it).

    >>> message_of(ValueError(Message("give ", Option("names")))).parts
    ('give ', Option(field='names', value=None, placeholder=None))
    """
    if len(error.args) == 1 and isinstance(error.args[0], Message):
        return error.args[0]
    return str(error)


class VocmatchError(Exception):
    """Base class of every error vocmatch raises on purpose: catch it to catch them all.

    Example:
        >>> issubclass(AnnotationError, VocmatchError), issubclass(RequestError, VocmatchError)
        (True, True)
    """


class InputError(VocmatchError):
    """A path or argument given to the library cannot be used (not a directory, empty set).

    Example:
        >>> import vocmatch
        >>> try:
        ...     vocmatch.evaluate("fixtures/demo/pred", "fixtures/demo/gt/nothing-here")
        ... except InputError as error:
        ...     print(type(error).__name__)
        InputError
    """


class RequestError(InputError):
    """A field of a request holds a value that cannot be used, or one that needs another.

    ``field`` names the request's field (``"split"``, ``"names"``, ``"slices"``), so that a
    caller can word the message for its own inputs: the command line names its option.

    Args:
        field: The request field at fault.
        message: What is wrong, in one line, naming no spelling of the field.
        value: The value given, when the message is about it.

    >>> print(RequestError("split", "no such file", value="tset"))
    split 'tset': no such file
    >>> print(RequestError("slices", "no image was evaluated"))
    slices: no image was evaluated
    """

    def __init__(self, field: str, message: str, value: str | None = None) -> None:
        self.field = field
        self.message = message
        self.value = value
        where = field if value is None else f"{field} {value!r}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple[type[RequestError], tuple[str, str, str | None]]:
        # Picklable, as AnnotationError, to cross a process pool boundary.
        return (type(self), (self.field, self.message, self.value))


class StateError(VocmatchError):
    """An evaluator state cannot be read (truncated, corrupted, another format version), or
    two states cannot be merged (other options, clashing class tables, a shared image).

    Example:
        >>> import vocmatch
        >>> try:
        ...     vocmatch.Evaluator("voc12").merge(vocmatch.Evaluator("coco"))
        ... except StateError as error:
        ...     print(type(error).__name__)
        StateError
    """


class OutputError(VocmatchError):
    """A file cannot be written: a report, an evaluator state (:meth:`vocmatch.Evaluator.save`)
    or any other file vocmatch writes (:mod:`vocmatch.files`).

    Prints as ``cannot write PATH: reason``.

    Args:
        path: The file that was to be written, as given.
        reason: Why, in a few words (the system's reason where there is one).

    Example:
        >>> print(OutputError("out/r.json", "the folder out does not exist"))
        cannot write out/r.json: the folder out does not exist
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"cannot write {self.path or repr(self.path)}: {self.reason}"

    def __reduce__(self) -> tuple[type[OutputError], tuple[str, str]]:
        return (type(self), (self.path, self.reason))


class DistributedError(VocmatchError):
    """A run on a cluster failed: the scheduler could not be reached (or never answered),
    was lost mid-run, or a task failed on every try (raised, or lost its worker), or the
    merged images are not those listed. Dask's own exceptions never leave the library's
    Dask functions: they become this error, in one line naming the scheduler or the part.

    Example:
        >>> issubclass(DistributedError, VocmatchError)
        True
    """


class AnnotationError(VocmatchError):
    """An annotation file cannot be read or holds a value that is not allowed.

    Prints as ``path:line: message`` (or ``path: message`` when the line is unknown), the form
    compilers and linters use, so terminals and CI logs can link to the spot.

    Args:
        path: The file the problem is in.
        message: What is wrong, in one line.
        line: The 1-based source line, when known.

    Example:
        >>> print(AnnotationError("gt/a.xml", "<ymin> is not a number: 'x1'", line=14))
        gt/a.xml:14: <ymin> is not a number: 'x1'
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
    """A recoverable problem: the data was still evaluated, but the user should know.

    The library warns with it and never prints; a caller may collect them.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warnings.warn("a.jpg: not a picture", VocmatchWarning)
        >>> caught[0].category.__name__
        'VocmatchWarning'
    """


class ClassMapWarning(VocmatchWarning):
    """Classes found only in the predictions are ground-truth classes under another name, as
    a built-in class map renames them (a COCO model's ``motorcycle`` for VOC's
    ``motorbike``): they were scored as false positives and their objects as missed. The
    message is a :class:`Message` naming the map to give (``class_map='coco-to-voc'``).

    Example:
        >>> from vocmatch.evaluation.map_hints import MapHint
        >>> warning = ClassMapWarning(MapHint("coco-to-voc", (("tv", "tvmonitor"),)).message())
        >>> str(warning).endswith("rename them with class_map='coco-to-voc'")
        True
        >>> worded = message_of(warning).worded(lambda option: f"--class-map {option.value}")
        >>> worded.endswith("rename them with --class-map coco-to-voc")
        True
    """


class SwappedInputsWarning(VocmatchWarning):
    """The ground truth and the predictions look given in the wrong order: every
    ground-truth object has a score, and no prediction has one.

    Example:
        >>> issubclass(SwappedInputsWarning, VocmatchWarning)  # shown as the others are
        True
    """


class CacheWarning(VocmatchWarning):
    """A run's cache could not be read (damaged, of another format or vocmatch version) or
    written (a read-only folder): the run went on without it, its numbers those of a run
    without a cache.

    Example:
        >>> issubclass(CacheWarning, VocmatchWarning)  # shown as the others are
        True
    """


class MissingPredictionWarning(VocmatchWarning):
    """Ground-truth images without a prediction file were evaluated with no predictions:
    their objects count as missed (``missing_pred`` of the evaluation lists them). A wrong
    folder or naming shows here first.

    Filter it out when images without predictions are expected:
    ``warnings.simplefilter("ignore", vocmatch.MissingPredictionWarning)``.

    Example:
        >>> import vocmatch, warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     report = vocmatch.evaluate("fixtures/demo/gt", "fixtures/demo/pred")
        >>> caught[0].category.__name__, report.missing_pred
        ('MissingPredictionWarning', ('street_05',))
    """


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

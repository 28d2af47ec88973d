"""Every output of one evaluation run, from its :class:`~vocmatch.evidence.run_report.EvalReport`:
the terminal table, JSON, CSV, Markdown, JUnit XML and the HTML page.

Each renderer imports its own modules when called: JSON never loads rich, the table never
loads Jinja2.

Example:
    >>> import vocmatch
    >>> from vocmatch.render.outputs import render_text
    >>> import warnings
    >>> from vocmatch.errors import MissingPredictionWarning
    >>> warnings.simplefilter("ignore", MissingPredictionWarning)  # street_05: no predictions
    >>> report = vocmatch.evaluate("fixtures/demo/gt", "fixtures/demo/pred")
    >>> render_text(report, "csv").splitlines()[0].split(",")[:3]
    ['image', 'gt_path', 'pred_path']
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from vocmatch.errors import Option

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from vocmatch.evaluation.labels_and_masks.labels import LabelEvaluation
    from vocmatch.evidence.run_report import EvalReport, Evidence
    from vocmatch.render.html import Pictures

__all__ = [
    "FORMATS",
    "RENDERERS",
    "OutputFormat",
    "Renderer",
    "TableOptions",
    "content_width",
    "evidence_parts",
    "plain_text",
    "render_chunks",
    "render_html",
    "render_labels_text",
    "render_table",
    "render_text",
    "widest_width",
    "without_trailing_spaces",
]

#: The names of the text formats of an evaluation; each has its record in :data:`RENDERERS`
#: (a test keeps the two equal).
OutputFormat = Literal["table", "json", "csv", "markdown", "junit"]


@dataclass(frozen=True, slots=True)
class TableOptions:
    """What the terminal table shows beyond the summary and the classes.

    Attributes:
        max_rows: Rows of the per-image table (worst first); 0 shows every image.
        only_failing: List only images with a false positive or a missed object.
        errors: Add the error breakdown and the confusion matrix (needs the analysis).
        tightness: Add the IoU and edge-offset histograms (needs the analysis).
        words: How the hints under a table name an option (``ReportOptions.words`` of
            :mod:`vocmatch.render.terminal`).

    Example:
        >>> import vocmatch
        >>> import warnings
        >>> from vocmatch.errors import MissingPredictionWarning
        >>> warnings.simplefilter("ignore", MissingPredictionWarning)  # street_05: no predictions
        >>> report = vocmatch.evaluate("fixtures/demo/gt", "fixtures/demo/pred", analysis=True)
        >>> text = render_text(report, "table", TableOptions(max_rows=3, errors=True))
        >>> "Errors (TIDE types at IoU 0.5, background IoU 0.1)" in text
        True
    """

    max_rows: int = 20
    only_failing: bool = False
    errors: bool = False
    tightness: bool = False
    words: Callable[[Option], str] = str


def render_text(
    report: EvalReport, output_format: OutputFormat, options: TableOptions | None = None
) -> str:
    """The report as text in one format.

    Args:
        report: What the run found.
        output_format: ``table`` (plain text, no colour, at the content's width), ``json``
            (every number), ``csv`` (one row per image), ``markdown`` (summary, classes and
            gates) or ``junit`` (a test case per image and per gate).
        options: What the table shows (``table`` only).

    Returns:
        The text, ending in a newline.

    Raises:
        ValueError: No format has that name.

    Example:
        >>> import json, vocmatch
        >>> import warnings
        >>> from vocmatch.errors import MissingPredictionWarning
        >>> warnings.simplefilter("ignore", MissingPredictionWarning)  # street_05: no predictions
        >>> report = vocmatch.evaluate("fixtures/demo/gt", "fixtures/demo/pred")
        >>> json.loads(render_text(report, "json"))["summary"]["map"]
        0.625
    """
    renderer = RENDERERS.get(output_format) if isinstance(output_format, str) else None
    if renderer is None:
        raise ValueError(f"unknown format {output_format!r}: expected one of {', '.join(FORMATS)}")
    return renderer.render(report, options)


def _evidence(report: EvalReport) -> Evidence:
    from vocmatch.evidence.run_report import Evidence

    return report.evidence or Evidence()


def _table(report: EvalReport, options: TableOptions | None) -> str:
    return plain_text(render_table(report, options))


def render_chunks(
    report: EvalReport, output_format: OutputFormat, options: TableOptions | None = None
) -> Sequence[bytes]:
    """:func:`render_text`'s text as the bytes a file of it holds (UTF-8, a character that
    cannot be encoded as its backslash escape, as :func:`vocmatch.files.save_text` writes
    it), in consecutive pieces for :func:`vocmatch.files.save_chunks`: the JSON report is
    written as bytes from the start, without a copy of the whole text to join or encode.

    Raises:
        ValueError: No format has that name.
    """
    renderer = RENDERERS.get(output_format) if isinstance(output_format, str) else None
    if renderer is not None and renderer.chunks is not None:
        return renderer.chunks(report, options)
    return (render_text(report, output_format, options).encode("utf-8", "backslashreplace"),)


def _json(report: EvalReport, options: TableOptions | None) -> str:
    return b"".join(_json_chunks(report, options)).decode("utf-8")


def _json_chunks(report: EvalReport, options: TableOptions | None) -> Sequence[bytes]:
    from vocmatch.render.json_report import to_json_chunks

    evidence = _evidence(report)
    return to_json_chunks(
        report.evaluation,
        report.analysis,
        bootstrap=evidence.bootstrap,
        thresholds=report.thresholds,
        beta=report.beta,
        slices=evidence.slices,
        calibration=evidence.calibration,
        counting=evidence.counting,
        targets=evidence.targets,
        merge=report.merge,
    )


def _csv(report: EvalReport, options: TableOptions | None) -> str:
    from vocmatch.render.csv_report import to_csv_images

    return to_csv_images(report.evaluation)


def _markdown(report: EvalReport, options: TableOptions | None) -> str:
    from vocmatch.render.markdown import to_markdown

    evidence = _evidence(report)
    return to_markdown(
        report.evaluation, report.gates, evidence.bootstrap, evidence.counting, evidence.targets
    )


def _junit(report: EvalReport, options: TableOptions | None) -> str:
    from vocmatch.render.junit import to_junit

    return to_junit(report.evaluation, report.gates)


@dataclass(frozen=True, slots=True)
class Renderer:
    """One text format of an evaluation.

    Attributes:
        name: The format's name (``output_format``).
        description: What it holds and what it is for, for the help.
        render: The report as text in this format (``options`` are the table's).
        boxes: The format shows each image's boxes, so the run keeps them.
        chunks: Where the format writes bytes itself: ``render``'s text as UTF-8, in
            consecutive pieces (:func:`render_chunks`).
    """

    name: OutputFormat
    description: str
    render: Callable[[EvalReport, TableOptions | None], str]
    boxes: bool = False
    chunks: Callable[[EvalReport, TableOptions | None], Sequence[bytes]] | None = None


#: Every text format of an evaluation, each written once: :func:`render_text`, the choices
#: and help of the commands that write a report (``eval``, ``merge``) read these.
RENDERERS: dict[str, Renderer] = {
    renderer.name: renderer
    for renderer in (
        Renderer("table", "the rich report", _table),
        Renderer("json", "every number, for scripts", _json, chunks=_json_chunks),
        Renderer("csv", "one row per image", _csv),
        Renderer(
            "markdown",
            "summary, classes and gates, for a pull request or a CI job summary",
            _markdown,
        ),
        Renderer(
            "junit", "a test case per image and per gate, for CI test reports", _junit, boxes=True
        ),
    )
}

#: Every text format of an evaluation, by name.
FORMATS: tuple[OutputFormat, ...] = tuple(renderer.name for renderer in RENDERERS.values())


def render_labels_text(
    evaluation: LabelEvaluation,
    output_format: Literal["table", "json"],
    options: TableOptions | None = None,
) -> str:
    """A label-set evaluation (:func:`vocmatch.evaluate_labels`) as ``vocmatch eval --mode
    labels`` writes it.

    Args:
        evaluation: What the comparison found.
        output_format: ``table`` (plain text, no colour, at the content's width: conventions,
            images, classes and summary) or ``json`` (every number).
        options: The rows of the images table (``max_rows``, ``only_failing``) and the
            ``words`` of its hints (``table`` only; ``errors`` and ``tightness`` concern boxes).

    Returns:
        The text, ending in a newline.

    Raises:
        ValueError: No format of label sets has that name.

    Example:
        >>> import json, vocmatch
        >>> found = vocmatch.evaluate_labels("fixtures/labels/gt", "fixtures/labels/pred")
        >>> json.loads(render_labels_text(found, "json"))["summary"]["mean_dice"]
        0.775
        >>> text = render_labels_text(found, "table", TableOptions(max_rows=1))
        >>> "Images (lowest Jaccard first)" in text, "3 more images not shown" in text
        (True, True)
    """
    if output_format == "json":
        from vocmatch.render.labels_json import labels_to_json

        return labels_to_json(evaluation)
    if output_format != "table":
        raise ValueError(f"unknown format {output_format!r} for label sets: expected table or json")
    from vocmatch.render.label_tables import render_labels
    from vocmatch.render.terminal import ReportOptions

    shown = options or TableOptions()
    table_options = ReportOptions(
        max_rows=shown.max_rows, only_failing=shown.only_failing, words=shown.words
    )
    return plain_text(render_labels(evaluation, table_options))


def render_table(report: EvalReport, options: TableOptions | None = None) -> RenderableType:
    """The terminal report: summary, classes, images, then the analysis and the evidence
    asked for, each after a blank line."""
    from rich.console import Group
    from rich.text import Text

    from vocmatch.render.terminal import ReportOptions, render

    shown = options or TableOptions()
    evaluation = report.evaluation
    table_options = ReportOptions(
        max_rows=shown.max_rows,
        only_failing=shown.only_failing,
        score_thresholds=report.thresholds,
        beta=report.beta,
        words=shown.words,
    )
    table = render(evaluation, table_options)
    threshold = evaluation.conventions.iou_threshold
    if report.analysis is not None and (shown.errors or shown.tightness):
        from vocmatch.render.analysis_tables import render_analysis

        extra = render_analysis(
            report.analysis, threshold, shown.errors, shown.tightness, shown.max_rows
        )
        table = Group(table, Text(), extra)
    return Group(table, *evidence_parts(report.evidence, threshold))


def evidence_parts(evidence: Evidence, threshold: float) -> list[RenderableType]:
    """The terminal report's parts for the evidence, each after a blank line."""
    from rich.text import Text

    parts: list[RenderableType] = []
    if evidence.bootstrap is not None:
        from vocmatch.render.evidence_tables import bootstrap_table

        parts += [Text(), bootstrap_table(evidence.bootstrap)]
    if evidence.slices:
        from vocmatch.render.evidence_tables import slice_table

        parts += [
            part for found in evidence.slices for part in (Text(), slice_table(found, threshold))
        ]
    if evidence.calibration is not None:
        from vocmatch.render.evidence_tables import calibration_table

        parts += [Text(), calibration_table(evidence.calibration)]
    if evidence.targets is not None:
        from vocmatch.render.evidence_tables import targets_table

        parts += [Text(), targets_table(evidence.targets)]
    if evidence.counting is not None:
        from vocmatch.render.evidence_tables import counting_table

        parts += [Text(), counting_table(evidence.counting)]
    return parts


def render_html(report: EvalReport, pictures: Pictures | None = None) -> str:
    """The report as one self-contained HTML page: summary, curves, confusion matrix and
    every image's boxes, drawn on ``pictures`` when given.

    The score slider starts at the lowest threshold in force.

    Args:
        report: What the run found, with its boxes kept (``boxes=True``).
        pictures: The images' pictures, read by :func:`vocmatch.render.html.read_pictures`.

    Returns:
        The page, one string.

    Raises:
        ValueError: The report kept no boxes (ask for them in the request).

    Example:
        >>> import vocmatch
        >>> import warnings
        >>> from vocmatch.errors import MissingPredictionWarning
        >>> warnings.simplefilter("ignore", MissingPredictionWarning)  # street_05: no predictions
        >>> report = vocmatch.evaluate("fixtures/demo/gt", "fixtures/demo/pred", boxes=True)
        >>> render_html(report).startswith("<!DOCTYPE html>")
        True
    """
    from vocmatch.render.html import html_report

    if report.gt is None or report.pred is None:
        raise ValueError("the report kept no boxes to draw: evaluate with boxes=True")
    start = 0.0
    if report.thresholds is not None:
        # The slider is one for every class: it starts at the lowest threshold in force.
        values = [report.thresholds.default, *dict(report.thresholds.per_class).values()]
        start = min((v for v in values if v is not None), default=0.0)
    evidence = report.evidence
    return html_report(
        report.evaluation,
        report.gt,
        report.pred,
        pictures,
        bootstrap=evidence.bootstrap,
        score_start=start,
        slices=evidence.slices,
        calibration=evidence.reliability,
        targets=evidence.targets,
        counting=evidence.counting,
    )


#: The width content is measured at: wider than any line of a report.
_UNBOUNDED_WIDTH = 1_000_000


def content_width(console: Console, renderable: RenderableType) -> tuple[int, int]:
    """The narrowest width at which ``renderable`` squeezes no table (a squeezed table cuts
    its cells, and its class names), and the width at which it wraps nothing."""
    from rich.console import Group
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    options = console.options.update_width(_UNBOUNDED_WIDTH)

    def widths(part: RenderableType) -> tuple[int, int]:
        # Both widths from one measurement of each part: measuring a table walks every
        # cell. A group that fits its content is as wide as its widest part (rich's
        # measure_renderables).
        if isinstance(part, Group):
            sizes = [widths(child) for child in part.renderables]
            narrowest = max((n for n, _ in sizes), default=1)
            if not part.fit:
                return narrowest, Measurement.get(console, options, part).maximum
            return narrowest, max((w for _, w in sizes), default=0)
        measured = Measurement.get(console, options, part)
        # Text may wrap between words, and text that folds (a note naming a long path)
        # inside them; a table is kept whole.
        if isinstance(part, Text) and part.overflow == "fold":
            return 1, measured.maximum
        kept = measured.maximum if isinstance(part, Table) else measured.minimum
        return kept, measured.maximum

    narrowest, widest = widths(renderable)
    return max(narrowest, 1), max(widest, 1)


def widest_width(console: Console, renderable: RenderableType) -> int:
    """``content_width(console, renderable)[1]`` without measuring the narrower forms of
    a :class:`~vocmatch.render.terminal.Fitting`: a report printed at its content's width
    (a file, a pipe) shows every table in its full form."""
    from rich.console import Group
    from rich.measure import Measurement

    from vocmatch.render.terminal import Fitting

    options = console.options.update_width(_UNBOUNDED_WIDTH)

    def widest(part: RenderableType) -> int:
        if isinstance(part, Group) and part.fit:
            return max((widest(child) for child in part.renderables), default=0)
        if isinstance(part, Fitting):
            return part.full_width(console, options)
        return Measurement.get(console, options, part).maximum

    return max(widest(renderable), 1)


def plain_text(renderable: RenderableType) -> str:
    """A terminal report as plain text at the content's own width (for report files)."""
    from rich.console import Console

    buffer = io.StringIO()
    # No markup or emoji codes: a string from the data prints as it is written.
    console = Console(file=buffer, color_system=None, highlight=False, markup=False, emoji=False)
    console.width = widest_width(console, renderable)
    console.print(renderable)
    return without_trailing_spaces(buffer.getvalue())


def without_trailing_spaces(text: str) -> str:
    """``text`` with no line ending in the spaces rich pads titles and grids with.

    >>> without_trailing_spaces("a  \\nb\\n")
    'a\\nb\\n'
    """
    return "".join(line.rstrip(" ") + "\n" for line in text.splitlines())

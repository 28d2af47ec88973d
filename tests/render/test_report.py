"""The terminal report, compared with golden files (refresh: pytest --update-goldens)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from vocmatch.cli.console import option_words
from vocmatch.core.protocol import protocol
from vocmatch.evaluation.scoring import evaluate_directories
from vocmatch.render.terminal import ReportOptions, render, summary_table, worst_first


def text_of(renderable: object, width: int = 100) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(renderable)
    return buffer.getvalue()


#: The report as the command line shows it: its hints name its flags.
CLI = ReportOptions(words=option_words)


def test_demo_report(demo: tuple[Path, Path], golden: Callable[[str, str], None]) -> None:
    """The default report on the demo set reads as in the golden file (and the README)."""
    golden("demo_report.txt", text_of(render(evaluate_directories(*demo), CLI)))


def test_demo_report_coco(demo: tuple[Path, Path], golden: Callable[[str, str], None]) -> None:
    """Under coco the header says so and the 12 COCO numbers are shown."""
    evaluation = evaluate_directories(*demo, protocol("coco"))
    golden("demo_report_coco.txt", text_of(render(evaluation, CLI)))


def test_summary_shows_ignored_gt_as_the_class_table_does(demo: tuple[Path, Path]) -> None:
    """The summary's GT objects add the ignored ``difficult`` ones as ``(+n)``, as the class
    table's rows do; the Markdown summary likewise."""
    from vocmatch.render.markdown import to_markdown

    evaluation = evaluate_directories(*demo)
    summary = text_of(summary_table(evaluation)).splitlines()
    assert "GT objects       14 (+1)" in summary
    assert "| 6 | 14 (+1) | 16 |" in to_markdown(evaluation)


def test_hints_name_the_library_options_or_the_flags(demo: tuple[Path, Path]) -> None:
    """Under a cut table and the operating points, the library's report names its own
    options; the command line's names its flags."""
    evaluation = evaluate_directories(*demo)
    library = text_of(render(evaluation, ReportOptions(max_rows=2)), width=200)
    assert (
        "4 more images not shown (max_rows=0 shows all, only_failing=True hides perfect ones)"
        in library
    )
    assert "pin them: operating_thresholds, then score_thresholds; —: no true positive" in library
    cli = text_of(render(evaluation, ReportOptions(max_rows=2, words=option_words)), width=200)
    assert (
        "4 more images not shown (--max-rows 0 shows all, --only-failing hides perfect ones)" in cli
    )
    assert "pin them: --write-thresholds FILE, then --score-thresholds FILE; —: no true" in cli


def test_row_limit_and_failing_only(demo: tuple[Path, Path]) -> None:
    """The image table stops at max_rows, says how many were left out, and can hide
    perfect images."""
    evaluation = evaluate_directories(*demo)
    limited = text_of(render(evaluation, ReportOptions(max_rows=2)))
    assert "4 more images not shown" in limited
    assert limited.count("street_0") == 2
    failing = text_of(render(evaluation, ReportOptions(max_rows=0, only_failing=True)))
    assert "street_02" not in failing.split("Classes")[0]


def test_worst_images_come_first(demo: tuple[Path, Path]) -> None:
    """Images are ordered by FP + FN, then FN, then name."""
    evaluation = evaluate_directories(*demo)
    assert [i.key for i in worst_first(evaluation.images)] == [
        "street_01", "street_05", "street_03", "street_04", "street_06", "street_02",
    ]  # fmt: skip


def test_bootstrap_headers_print_as_written_on_a_default_console(demo: tuple[Path, Path]) -> None:
    """The intervals table's headers are text, not markup: a library user's Console (markup
    on) shows ``[interval]`` as the command line does."""
    from vocmatch.core.protocol import protocol
    from vocmatch.evaluation.matched import evaluate_matched
    from vocmatch.evidence.bootstrap import bootstrap, resampler
    from vocmatch.readers.scan import read_columns
    from vocmatch.render.evidence_tables import bootstrap_table

    done = evaluate_matched(read_columns(demo[0]), read_columns(demo[1]))
    evaluation = done.evaluation
    sampler = resampler(evaluation, done.records, protocol("default"))
    result = bootstrap(evaluation, sampler, resamples=20, seed=1)
    shown = text_of(bootstrap_table(result), width=160)
    for name in ("AP", "precision", "recall", "F1"):
        assert f"{name} [interval]" in shown

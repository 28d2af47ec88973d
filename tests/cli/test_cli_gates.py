"""The eval command's file formats and quality gates: exit codes, stdout and stderr apart."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, GOLDEN, ROOT
from tests.conftest import run_cli as run
from vocmatch.cli import EXIT_GATE, EXIT_OK, EXIT_SKIPPED, EXIT_USAGE

DEMO = ("fixtures/demo/gt", "fixtures/demo/pred")
WARNING = "vocmatch: warning: no prediction file for 'street_05': its objects count as missed\n"
#: The gates of the golden Markdown and JUnit files (see test_formats.py).
GOLDEN_GATES = (
    "--fail-under", "map=0.5", "--fail-under", "person:recall=0.9",
    "--fail-under", "car:recall=0.9", "--fail-under", "truck:recall=0.5",
    "--max-fp", "1", "--max-fn", "1",
)  # fmt: skip


@pytest.fixture(autouse=True)
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the repository root so paths in the output match the golden files."""
    monkeypatch.chdir(ROOT)


def golden(name: str) -> str:
    return (GOLDEN / name).read_text(encoding="utf-8")


def test_passing_gates_exit_0_and_add_nothing() -> None:
    """Passing gates print nothing extra: stdout is the plain report, stderr the warning."""
    _, plain, _ = run(*DEMO)
    code, out, err = run(
        *DEMO, "--fail-under", "map=0.6", "--fail-under", "person:recall=0.9",
        "--fail-under", "bicycle:ap=0.5", "--max-fp", "2", "--max-fn", "2",
    )  # fmt: skip
    assert code == EXIT_OK
    assert out == plain
    assert err == WARNING


def test_failing_dataset_gate_exits_1_with_the_measured_value() -> None:
    """A failed gate is one line on stderr with the measured value; stdout is unchanged."""
    _, plain, _ = run(*DEMO)
    code, out, err = run(*DEMO, "--fail-under", "map=0.7")
    assert code == EXIT_GATE
    assert out == plain
    assert err == WARNING + "vocmatch: gate failed: map 0.6250 < 0.7000\n"


def test_every_failed_gate_is_a_line_in_order() -> None:
    """Dataset and class gates in the order given, then images over a limit by key."""
    code, _, err = run(
        *DEMO, "--fail-under", "person:recall=0.9", "--fail-under", "car:recall=0.9",
        "--fail-under", "recall=0.75", "--fail-under", "truck:ap=0.1", "--max-fp", "1",
        "--max-fn", "0",
    )  # fmt: skip
    assert code == EXIT_GATE
    assert err == WARNING + (
        "vocmatch: gate failed: car:recall 0.7500 < 0.9000\n"
        "vocmatch: gate failed: recall 0.7143 < 0.7500\n"
        "vocmatch: gate failed: truck:ap undefined, needs >= 0.1000 "
        "(no ground truth of this class)\n"
        "vocmatch: gate failed: street_01: fp 2 > max-fp 1, fn 1 > max-fn 0\n"
        "vocmatch: gate failed: street_03: fn 1 > max-fn 0\n"
        "vocmatch: gate failed: street_05: fn 2 > max-fn 0\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ("--fail-under", "iou=0.5"),
            "Error: Invalid value for '--fail-under': unknown metric 'iou' in 'iou=0.5': "
            "expected one of map, precision, recall, f1, ap50, ap75, reached, map50-95, p, r",
            id="unknown-metric",
        ),
        pytest.param(
            ("--fail-under", "person:recall=1.5"),
            "Error: Invalid value for '--fail-under': value 1.5 in 'person:recall=1.5' is "
            "outside [0, 1] (a percentage? write 0.015)",
            id="value-above-1",
        ),
        pytest.param(
            ("--fail-under", "map=-0.5"),
            "Error: Invalid value for '--fail-under': value -0.5 in 'map=-0.5' is outside [0, 1]",
            id="value-below-0",
        ),
        pytest.param(
            ("--fail-under", "map"),
            "Error: Invalid value for '--fail-under': expected METRIC=VALUE or "
            "CLASS:METRIC=VALUE, got 'map'",
            id="syntax",
        ),
        pytest.param(
            ("--max-fp", "-1"),
            "Error: Invalid value for '--max-fp': '-1' is not a whole number: a count takes no sign",
            id="negative-max-fp",
        ),
        pytest.param(
            ("--format", "html"),
            "Error: Invalid value for '--format': 'html' is not one of 'table', 'json', 'csv', "
            "'markdown', 'junit'.",
            id="unknown-format",
        ),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], message: str) -> None:
    """A malformed gate is a usage error: exit 2, the reason last on stderr, no report."""
    code, out, err = run(*DEMO, *args)
    assert code == EXIT_USAGE
    assert out == ""
    assert err.splitlines()[-1] == message


def test_unknown_class_exits_2() -> None:
    """A class found nowhere in the data is a usage error, not a failed gate."""
    code, out, err = run(*DEMO, "--fail-under", "persn:recall=0.9")
    assert code == EXIT_USAGE
    assert out == ""
    assert err == WARNING + (
        "vocmatch: error: gate 'persn:recall' names class 'persn', which is in neither the "
        "ground truth nor the predictions; did you mean 'person'?\n"
    )


@pytest.mark.parametrize(
    ("fmt", "name", "code"),
    [
        pytest.param("csv", "demo.csv", EXIT_OK, id="csv"),
        pytest.param("markdown", "demo.md", EXIT_GATE, id="markdown"),
        pytest.param("junit", "demo.junit.xml", EXIT_GATE, id="junit"),
    ],
)
def test_format_on_stdout_is_the_golden_file(fmt: str, name: str, code: int) -> None:
    """--format prints exactly the golden file on stdout; gate lines go to stderr."""
    gates = () if fmt == "csv" else GOLDEN_GATES
    result, out, err = run(*DEMO, "--format", fmt, *gates)
    assert result == code
    assert out == golden(name)
    assert err.startswith(WARNING)


def test_output_file_keeps_the_summary_and_the_gate_lines(tmp_path: Path) -> None:
    """--output writes the format to the file; the terminal shows the summary and gate lines."""
    target = tmp_path / "report.xml"
    code, out, err = run(*DEMO, "--format", "junit", "--output", str(target), *GOLDEN_GATES)
    assert code == EXIT_GATE
    assert target.read_text(encoding="utf-8") == golden("demo.junit.xml")
    assert out.startswith("Summary\n")
    assert "<testsuite" not in out
    assert err == WARNING + (
        "vocmatch: gate failed: car:recall 0.7500 < 0.9000\n"
        "vocmatch: gate failed: truck:recall undefined, needs >= 0.5000 "
        "(no ground truth of this class)\n"
        "vocmatch: gate failed: street_01: fp 2 > max-fp 1\n"
        "vocmatch: gate failed: street_05: fn 2 > max-fn 1\n"
    )


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_classes_csv_with_any_format(fmt: str, tmp_path: Path) -> None:
    """--classes-csv writes the per-class CSV beside whatever --format prints."""
    target = tmp_path / "classes.csv"
    code, out, _ = run(*DEMO, "--format", fmt, "--classes-csv", str(target))
    assert code == EXIT_OK
    assert target.read_text(encoding="utf-8") == golden("demo_classes.csv")
    assert "name,gt,gt_ignored" not in out


def with_broken_file(tmp_path: Path) -> tuple[str, str]:
    gt = tmp_path / "gt"
    pred = tmp_path / "pred"
    shutil.copytree(FIXTURES / "demo" / "gt", gt)
    shutil.copytree(FIXTURES / "demo" / "pred", pred)
    (gt / "street_07.xml").write_text("<annotation><object>", encoding="utf-8")
    return str(gt), str(pred)


@pytest.mark.parametrize(
    ("gate", "code"),
    [
        pytest.param("map=0.7", EXIT_GATE, id="failed-gate-wins"),
        pytest.param("map=0.5", EXIT_SKIPPED, id="passed-gate-keeps-3"),
    ],
)
def test_gate_failure_takes_precedence_over_skipped_files(
    tmp_path: Path, gate: str, code: int
) -> None:
    """With skipped files a failed gate exits 1 and a passed one 3; the skip is still named."""
    result, _, err = run(*with_broken_file(tmp_path), "--fail-under", gate)
    assert result == code
    assert "vocmatch: skipped " in err
    assert ("vocmatch: gate failed: map 0.6250 < 0.7000\n" in err) is (code == EXIT_GATE)


def test_image_lines_stop_after_twenty(tmp_path: Path) -> None:
    """Past 20 images over a limit, one line counts the rest."""
    gt = tmp_path / "gt"
    gt.mkdir()
    (tmp_path / "pred").mkdir()
    source = (FIXTURES / "demo" / "gt" / "street_05.xml").read_text(encoding="utf-8")
    for k in range(23):
        (gt / f"img{k:02d}.xml").write_text(source, encoding="utf-8")
    # One image predicted (nothing found): a folder without any would be a usage error.
    (tmp_path / "pred" / "img00.xml").write_text("<annotation/>", encoding="utf-8")
    code, _, err = run(str(gt), str(tmp_path / "pred"), "--max-fn", "1")
    assert code == EXIT_GATE
    lines = [line for line in err.splitlines() if "gate failed" in line]
    assert len(lines) == 21
    assert lines[0] == "vocmatch: gate failed: img00: fn 2 > max-fn 1"
    assert lines[19] == "vocmatch: gate failed: img19: fn 2 > max-fn 1"
    assert lines[20] == (
        "vocmatch: gate failed: 3 more images over a limit (--format junit lists all)"
    )


def test_help_documents_formats_and_gates() -> None:
    """eval --help names every format and gate option."""
    code, out, _ = run("eval", "--help")
    assert code == EXIT_OK
    for text in ("markdown", "junit", "--classes-csv", "--fail-under", "--max-fp", "--max-fn"):
        assert text in out

"""Names are data, never markup: hostile file and class names through every output.

One set of annotation files whose names carry ANSI and OSC 8 sequences, BEL, C1 controls,
bidi overrides, rich markup, emoji codes, line breaks, Markdown, spreadsheet formulas and
bytes that are not UTF-8 is run through every command and format. Whatever the output,
nothing reaches it that a terminal, a CI log, a spreadsheet, a Markdown or HTML renderer
or an XML parser would act on; the names stay readable, and JSON gives them back exactly.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from vocmatch.cli import main
from vocmatch.escapes import printable

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="any byte in a file name")

#: Image names (file stems), each trying one trick.
FILE_STEMS: tuple[str | bytes, ...] = (
    "csi\x1b[31mred\x1b[0m",
    "osc8\x1b]8;;https:evil.example\x1b\\click\x1b]8;;\x1b\\",  # no '/' in a file name
    "title\x1b]0;pwned\x07",
    "bel\x07",
    "c1\u009b2J",
    "bidi\u202egpj.exe",
    "isolate\u2066x\u2069",
    "markup[bold]b[link=mailto:evil]l[red on red]hidden",  # [/] in class names
    "emoji :skull:",
    "newline\nFORGED line",
    "cr\rFORGED",
    "=HYPERLINK(1)",
    "+plus",
    "-minus",
    "@at",
    "\t=tab",
    "md|pipe`tick`*em*_u_ # hash ~~s~~ <b>&amp;",
    b"latin1-caf\xe9",
)

#: Class names, as written in the XML (character references for line breaks: XML 1.0 has
#: no ESC or BEL at all, even as references).
CLASS_XML: tuple[str, ...] = (
    "dog&#10;FORGED class",
    "cat&#13;FORGED",
    "[bold]b[/]",
    "[link=https://evil.example/]x[/link]",
    "=SUM(A1)",
    "\u009b2Jc1",
    "rlo\u202eexe",
    "|md| `x` *y*",
    "-1+2",
    ":skull:",
)


def xml_text_of(name: str) -> str:
    """The class name as the parser reads it."""
    return name.replace("&#10;", "\n").replace("&#13;", "\r")


CLASSES = tuple(xml_text_of(name) for name in CLASS_XML)
UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069"
    "\ud800-\udfff\ufffe\uffff]"
)


def annotation(stem: str, scored: bool, shift: int) -> bytes:
    objects = []
    for k, name in enumerate(CLASS_XML):
        x = 10 + 30 * k + (shift if k % 3 == 0 else 0)
        score = f"<score>{0.9 - k / 100}</score>" if scored else ""
        objects.append(
            f"<object><name>{name}</name><bndbox><xmin>{x}</xmin><ymin>10</ymin>"
            f"<xmax>{x + 20}</xmax><ymax>30</ymax></bndbox>{score}</object>"
        )
    # <filename> and <folder> carry the same tricks (as XML allows).
    return (
        f"<annotation><folder>f[bold]</folder><filename>{stem}\u202e\u009b.jpg</filename>"
        f"<size><width>400</width><height>100</height><depth>3</depth></size>"
        + "".join(objects)
        + "</annotation>"
    ).encode()


def as_path(folder: Path, stem: str | bytes, suffix: str) -> bytes:
    raw = stem if isinstance(stem, bytes) else stem.encode()
    return os.fsencode(folder) + b"/" + raw + suffix.encode()


@dataclass(frozen=True)
class HostileSet:
    root: Path
    gt: Path
    pred: Path
    pred_b: Path
    classes_file: Path
    masks_gt: Path
    masks_pred: Path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileSet:
    root = tmp_path_factory.mktemp("hostile")
    gt, pred, pred_b = root / "gt", root / "pred", root / "pred[bold]\x1b[31m"
    for folder in (gt, pred, pred_b):
        folder.mkdir()
    for i, stem in enumerate(FILE_STEMS):
        shown = f"picture [bold]{i}"  # what XML allows of the tricks: C1, bidi, markup
        with open(as_path(gt, stem, ".xml"), "wb") as handle:
            handle.write(annotation(shown, scored=False, shift=0))
        with open(as_path(pred, stem, ".xml"), "wb") as handle:
            handle.write(annotation(shown, scored=True, shift=8 * (i % 3)))
        with open(as_path(pred_b, stem, ".xml"), "wb") as handle:
            handle.write(annotation(shown, scored=True, shift=12 * (i % 2)))
    # An unreadable file whose name is hostile too: its line on stderr.
    with open(as_path(gt, "broken\x1b[2J\nFORGED", ".xml"), "wb") as handle:
        handle.write(b"<annotation><object>")
    classes_file = root / "classes.txt"
    classes_file.write_text(
        "background\nesc\x1b[31mred\n[bold]b[/]\n=SUM(A1)\nrlo\u202eexe\n", encoding="utf-8"
    )
    masks_gt, masks_pred = root / "masks_gt", root / "masks_pred"
    masks_gt.mkdir()
    masks_pred.mkdir()
    from PIL import Image

    values = np.zeros((8, 8), dtype=np.uint8)
    values[:4] = 1
    values[4:, :4] = 2
    for stem in ("mask\x1b[31m", "=cmd[bold]", b"caf\xe9"):
        for folder, data in ((masks_gt, values), (masks_pred, np.roll(values, 1, axis=1))):
            with open(as_path(folder, stem, ".png"), "wb") as handle:
                Image.fromarray(data, mode="L").save(handle, format="PNG")
    return HostileSet(root, gt, pred, pred_b, classes_file, masks_gt, masks_pred)


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: bytes
    stderr: bytes
    files: dict[str, bytes]


def vocmatch(args: list[str], files: tuple[str, ...] = ()) -> Outcome:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    written = {}
    for name in files:
        with open(name, "rb") as handle:
            written[name] = handle.read()
    return Outcome(result.exit_code, result.stdout_bytes, result.stderr_bytes, written)


def texts(outcome: Outcome) -> Iterator[tuple[str, str]]:
    """Every output as text: decoding as UTF-8 must not fail."""
    yield "stdout", outcome.stdout.decode("utf-8")
    yield "stderr", outcome.stderr.decode("utf-8")
    for name, data in outcome.files.items():
        yield name, data.decode("utf-8")


def assert_safe(outcome: Outcome) -> None:
    """Nothing a terminal, log, renderer or parser acts on; no forged line; no traceback."""
    for where, text in texts(outcome):
        found = UNSAFE.search(text)
        assert found is None, f"{where}: {found.group()!r} at {found.start()}"
        assert not re.search(r"^\W{0,4}FORGED", text, re.MULTILINE), where
        assert "Traceback" not in text and "MarkupError" not in text, where


def out_file(hostile: HostileSet, name: str) -> str:
    return str(hostile.root / name)


def test_the_terminal_report_and_stderr(hostile: HostileSet) -> None:
    """Table report with every table (errors, confusion matrix, tightness): names escaped,
    rich markup and emoji codes printed as written, the broken file named on one line."""
    outcome = vocmatch(
        [str(hostile.gt), str(hostile.pred), "--max-rows", "0", "--errors", "--tightness"]
    )
    assert outcome.code == 3
    assert_safe(outcome)
    out = outcome.stdout.decode()
    for shown in ("[link=https://evil.example/]", "[bold]b[/]", ":skull:", "csi\\x1b[31mred"):
        assert shown in out
    assert "latin1-caf\\udce9" in out
    assert "💀" not in out
    err = outcome.stderr.decode().splitlines()
    assert len(err) == 1
    assert err[0].startswith("vocmatch: skipped ") and "broken\\x1b[2J\\x0aFORGED.xml" in err[0]


@pytest.mark.parametrize("output_format", ["json", "csv", "markdown", "junit"])
def test_every_file_format_on_stdout_and_in_a_file(hostile: HostileSet, output_format: str) -> None:
    """The same text on stdout and in --output; both safe."""
    target = out_file(hostile, f"report.{output_format}")
    printed = vocmatch([str(hostile.gt), str(hostile.pred), "--format", output_format])
    written = vocmatch(
        [str(hostile.gt), str(hostile.pred), "--format", output_format, "-o", target],
        files=(target,),
    )
    assert printed.code == written.code == 3
    assert_safe(printed)
    assert_safe(written)
    assert written.files[target] == printed.stdout


def test_json_gives_every_name_back_exactly(hostile: HostileSet) -> None:
    """JSON escapes (ASCII only) and a JSON reader recovers the exact names, the bytes that
    are not UTF-8 included (as Python's surrogate escapes)."""
    outcome = vocmatch([str(hostile.gt), str(hostile.pred), "--format", "json", "--errors"])
    assert outcome.stdout.isascii()
    data = json.loads(outcome.stdout)
    assert [c["name"] for c in data["classes"]] == sorted(set(CLASSES))
    keys = {image["image"] for image in data["images"]}
    expected = {s if isinstance(s, str) else os.fsdecode(s) for s in FILE_STEMS}
    assert keys == expected
    assert data["confusion"]["names"][:-1] == sorted(set(CLASSES))


def test_csv_cells_are_never_formulas(hostile: HostileSet) -> None:
    """Both CSV files (images and classes) read back with no cell starting a formula."""
    target = out_file(hostile, "classes.csv")
    outcome = vocmatch(
        [str(hostile.gt), str(hostile.pred), "--format", "csv", "--classes-csv", target],
        files=(target,),
    )
    assert_safe(outcome)
    for text in (outcome.stdout.decode(), outcome.files[target].decode()):
        rows = list(csv.reader(io.StringIO(text)))
        assert len({len(row) for row in rows}) == 1  # no name broke a row
        for row in rows[1:]:
            for cell in row:
                if not re.fullmatch(r"-?[0-9.e-]+", cell):  # numbers may be negative
                    assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r"), cell
    names = [row[0] for row in csv.reader(io.StringIO(outcome.files[target].decode()))][1:]
    assert "'=SUM(A1)" in names and "'-1+2" in names
    images = [row[0] for row in csv.reader(io.StringIO(outcome.stdout.decode()))][1:]
    assert {"'=HYPERLINK(1)", "'+plus", "'-minus", "'@at", "'\t=tab"} <= set(images)


def test_written_thresholds_are_never_formulas_and_read_back_exactly(hostile: HostileSet) -> None:
    """--write-thresholds: class names that would start a formula are written after a "'",
    and --score-thresholds reads every name back exactly."""
    from vocmatch.evaluation.threshold_files import read_score_thresholds

    target = out_file(hostile, "thresholds.csv")
    outcome = vocmatch([str(hostile.gt), str(hostile.pred), "--write-thresholds", target],
                       files=(target,))  # fmt: skip
    assert outcome.code == 3
    # A data file read back by vocmatch: line breaks of a name stay, quoted, as CSV has it.
    rows = list(csv.reader(io.StringIO(outcome.files[target].decode(), newline="")))
    assert all(row[0][:1] not in ("=", "+", "-", "@") for row in rows)
    assert "'=SUM(A1)" in [row[0] for row in rows]
    assert set(read_score_thresholds(target)) == set(CLASSES)
    again = vocmatch([str(hostile.gt), str(hostile.pred), "--score-thresholds", target])
    assert again.code == 3


def test_markdown_has_only_its_own_headings_and_rows(hostile: HostileSet) -> None:
    """No name starts a line: the only headings are the report's, every table row has the
    table's number of cells."""
    outcome = vocmatch(
        [str(hostile.gt), str(hostile.pred), "--format", "markdown", "--fail-under", "map=0.99",
         "--max-fp", "0"]
    )  # fmt: skip
    assert outcome.code == 1
    assert_safe(outcome)
    lines = outcome.stdout.decode().splitlines()
    headings = [line for line in lines if line.startswith("#")]
    assert all(h.startswith(("## vocmatch", "### ")) for h in headings)
    assert not any("FORGED" in h for h in headings)
    for line in lines:
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line)
            assert len(cells) - 2 in (3, 6, 10), line
    assert "\\[bold\\]b\\[/\\]" in outcome.stdout.decode()


def test_junit_parses_and_shows_escapes(hostile: HostileSet) -> None:
    """JUnit XML parses (no character XML 1.0 forbids), names shown with visible escapes."""
    outcome = vocmatch([str(hostile.gt), str(hostile.pred), "--format", "junit", "--max-fp", "0"])
    assert_safe(outcome)
    root = ET.fromstring(outcome.stdout)
    names = {case.get("name") for case in root.iter("testcase")}
    assert "csi\\x1b[31mred\\x1b[0m" in names
    assert "latin1-caf\\udce9" in names
    failure = next(root.iter("failure"))
    assert failure.text is not None and "dog\\x0aFORGED class" in failure.text


def test_html_report(hostile: HostileSet) -> None:
    """The HTML page: markup escaped by the template, controls and bidi overrides shown as
    escapes in the page and in its data, so the page's script cannot restore them."""
    target = out_file(hostile, "report.html")
    outcome = vocmatch(
        [str(hostile.gt), str(hostile.pred), "--html", target, "--errors"], files=(target,)
    )
    assert_safe(outcome)
    page = outcome.files[target].decode()
    blob = page.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    data = json.loads(blob)
    assert not any(UNSAFE.search(name) for name in data["classes"])
    assert not any(UNSAFE.search(image["key"]) for image in data["images"])
    # A name's tags never become elements: the page has only its own.
    assert "<b>" not in page and "\\u003cb\\u003e\\u0026amp;" in blob
    assert page.count("<script") == 2


def test_labels_mode(hostile: HostileSet) -> None:
    """--mode labels, table and JSON."""
    table = vocmatch([str(hostile.gt), str(hostile.pred), "--mode", "labels", "--max-rows", "0"])
    assert table.code == 3
    assert_safe(table)
    assert "[bold]b[/]" in table.stdout.decode()
    as_json = vocmatch([str(hostile.gt), str(hostile.pred), "--mode", "labels", "--format", "json"])
    assert_safe(as_json)
    assert as_json.stdout.isascii()
    assert {c["name"] for c in json.loads(as_json.stdout)["classes"]} == {
        c.lower() for c in CLASSES
    }


def test_diff(hostile: HostileSet) -> None:
    """diff, table and JSON, with a hostile folder name as run B and a regression gate."""
    args = ["diff", str(hostile.gt), str(hostile.pred), str(hostile.pred_b), "--max-rows", "0"]
    table = vocmatch([*args, "--fail-on-regression", "[bold]b[/]:ap=0"])
    assert_safe(table)
    out = table.stdout.decode()
    assert "pred[bold]\\x1b[31m" in out and "[bold]b[/]" in out
    as_json = vocmatch([*args, "--format", "json"])
    assert_safe(as_json)
    assert json.loads(as_json.stdout)["b"] == str(hostile.pred_b)
    markdown = vocmatch([*args, "--format", "markdown"])
    assert_safe(markdown)
    text = markdown.stdout.decode()
    assert all(line.startswith(("## ", "### ")) for line in text.splitlines() if line[:1] == "#")
    assert "pred\\[bold\\]\\\\x1b\\[31m" in text  # the folder name, escaped, not in a code span


@pytest.mark.parametrize("output_format", ["text", "github", "json"])
def test_lint(hostile: HostileSet, output_format: str) -> None:
    """lint in every format, with --classes naming hostile classes (V009 quotes them)."""
    outcome = vocmatch(
        ["lint", "--format", output_format, "--classes", str(hostile.classes_file), str(hostile.gt)]
    )
    assert outcome.code == 1
    assert_safe(outcome)
    out = outcome.stdout.decode()
    if output_format == "text":
        lines = out.splitlines()
        assert all(re.match(r"^\S.*:\d+: V0\d\d ", line) for line in lines[:-1])
        assert lines[-1].startswith("Found ")
    elif output_format == "github":
        assert all(line.startswith("::error file=") for line in out.splitlines())
    else:
        assert outcome.stdout.isascii()
        paths = {f["path"] for f in json.loads(out)["findings"]}
        assert os.path.join(str(hostile.gt), "newline\nFORGED line.xml") in paths


@pytest.mark.parametrize("output_format", ["table", "json"])
def test_seg(hostile: HostileSet, output_format: str) -> None:
    """seg with hostile class names (--classes) and mask file names."""
    target = out_file(hostile, f"seg.{output_format}")
    outcome = vocmatch(
        ["seg", str(hostile.masks_gt), str(hostile.masks_pred), "--classes",
         str(hostile.classes_file), "--format", output_format, "-o", target],
        files=(target,),
    )  # fmt: skip
    assert outcome.code == 0
    assert_safe(outcome)
    if output_format == "json":
        assert outcome.files[target].isascii()
    else:
        assert "esc\\x1b[31mred" in outcome.files[target].decode()


def test_iou_labels_from_the_command_line() -> None:
    """``iou --labels``: the sets are shown escaped, markup as written."""
    outcome = vocmatch(["iou", "--labels", "[bold]a[/],b\x1b[31m", "b\x1b[31m,c\u202e"])
    assert_safe(outcome)
    assert "[bold]a[/]" in outcome.stdout.decode()


def test_a_real_terminal_stream(hostile: HostileSet) -> None:
    """Through the real entry point and a strict UTF-8 stdout: the same, byte for byte
    valid UTF-8, no traceback."""
    for args in ([], ["--format", "csv"], ["--format", "markdown"]):
        result = subprocess.run(
            [sys.executable, "-m", "vocmatch", str(hostile.gt), str(hostile.pred), *args],
            cwd=ROOT,
            capture_output=True,
            env={**os.environ, "PYTHONIOENCODING": "utf-8:strict", "COLUMNS": "300"},
            timeout=120,
            check=False,
        )
        assert result.returncode == 3
        assert_safe(Outcome(result.returncode, result.stdout, result.stderr, {}))


def test_printable_is_the_one_terminal_escape() -> None:
    """The CLI and the report use the one function (no second list of characters)."""
    from vocmatch.cli import console as cli
    from vocmatch.render import terminal as report

    assert cli.printable is printable
    assert report.printable is printable

"""`vocmatch lint`: output forms, exit codes, and stdout kept apart from stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, datasets_or_skip
from tests.conftest import run_cli as run
from vocmatch.cli import EXIT_GATE, EXIT_OK, EXIT_USAGE
from vocmatch.readers.lint import RULES

CLEAN = (
    "<annotation><filename>good.jpg</filename><size><width>100</width><height>80</height></size>\n"
    "<object><name>cat</name><bndbox><xmin>10</xmin><ymin>10</ymin><xmax>50</xmax><ymax>40</ymax>"
    "</bndbox></object>\n"
    "</annotation>\n"
)
BAD = (
    "<annotation><filename>bad.jpg</filename><size><width>100</width><height>80</height></size>\n"
    "<object><name>cat</name><bndbox><xmin>10</xmin><ymin>10</ymin><xmax>10</xmax><ymax>40</ymax>"
    "</bndbox></object>\n"
    "<object><name>dog</name><bndbox><xmin>10</xmin><ymin>10</ymin><xmax>150</xmax><ymax>40</ymax>"
    "</bndbox></object>\n"
    "</annotation>\n"
)
BAD_FINDINGS = [
    "labels/bad.xml:2: V005 zero-area box 'cat': xmin 10 = xmax 10",
    "labels/bad.xml:3: V006 box 'dog' outside the 100x80 image: xmax 150 > width 100",
]


@pytest.fixture
def labels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``labels`` directory, relative to the working directory, with one clean and one bad file."""
    monkeypatch.chdir(tmp_path)
    Path("labels").mkdir()
    Path("labels/good.xml").write_text(CLEAN, encoding="utf-8")
    Path("labels/bad.xml").write_text(BAD, encoding="utf-8")
    return Path("labels")


def test_text_findings_and_summary_on_stdout(labels: Path) -> None:
    """One `path:line: CODE message` line per finding, a summary, exit 1; stderr stays empty."""
    code, out, err = run("lint", str(labels))
    assert code == EXIT_GATE
    assert out.splitlines() == [*BAD_FINDINGS, "Found 2 findings in 1 file (2 files checked)."]
    assert err == ""


def test_clean_files_pass(labels: Path) -> None:
    """A clean file exits 0 with the all-clear line."""
    code, out, err = run("lint", str(labels / "good.xml"))
    assert (code, out, err) == (EXIT_OK, "All checks passed (1 file checked).\n", "")


def test_github_format(labels: Path) -> None:
    """stdout holds only workflow commands; the summary goes to stderr for the job log."""
    code, out, err = run("lint", "--format", "github", str(labels))
    assert code == EXIT_GATE
    assert out.splitlines() == [
        "::error file=labels/bad.xml,line=2,title=V005 empty-box::"
        "V005 zero-area box 'cat': xmin 10 = xmax 10",
        "::error file=labels/bad.xml,line=3,title=V006 box-outside-image::"
        "V006 box 'dog' outside the 100x80 image: xmax 150 > width 100",
    ]
    assert err == "Found 2 findings in 1 file (2 files checked).\n"


def test_json_format(labels: Path) -> None:
    """stdout is one JSON document and nothing else."""
    code, out, err = run("lint", "--format", "json", str(labels))
    assert code == EXIT_GATE
    assert json.loads(out) == {
        "files_checked": 2,
        "files_with_findings": 1,
        "findings": [
            {
                "path": "labels/bad.xml",
                "line": 2,
                "code": "V005",
                "name": "empty-box",
                "message": "zero-area box 'cat': xmin 10 = xmax 10",
            },
            {
                "path": "labels/bad.xml",
                "line": 3,
                "code": "V006",
                "name": "box-outside-image",
                "message": "box 'dog' outside the 100x80 image: xmax 150 > width 100",
            },
        ],
    }
    assert err == ""


def test_json_format_when_clean(labels: Path) -> None:
    """A clean run is still a JSON document, with an empty list, and exit 0."""
    code, out, _ = run("lint", "--format", "json", str(labels / "good.xml"))
    assert code == EXIT_OK
    assert json.loads(out) == {"files_checked": 1, "files_with_findings": 0, "findings": []}


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        pytest.param(["--select", "V005"], BAD_FINDINGS[:1], id="select"),
        pytest.param(["--ignore", "V005"], BAD_FINDINGS[1:], id="ignore"),
        pytest.param(["--select", "V005,V006", "--ignore", "v006"], BAD_FINDINGS[:1], id="both"),
        pytest.param(["--select", "V005", "--select", "V006"], BAD_FINDINGS, id="repeated"),
        pytest.param(["--tolerance", "50"], BAD_FINDINGS[:1], id="tolerance"),
    ],
)
def test_options_choose_findings(labels: Path, options: list[str], expected: list[str]) -> None:
    """--select, --ignore and --tolerance change which findings are printed."""
    code, out, _ = run("lint", *options, str(labels))
    assert code == EXIT_GATE
    assert out.splitlines()[:-1] == expected


def test_everything_ignored_passes(labels: Path) -> None:
    """With every finding's code ignored the run passes."""
    code, out, _ = run("lint", "--ignore", "V005,V006", str(labels))
    assert (code, out) == (EXIT_OK, "All checks passed (2 files checked).\n")


def test_classes_file(labels: Path) -> None:
    """--classes turns on V009 for names outside the list."""
    Path("classes.txt").write_text("cat\n", encoding="utf-8")
    code, out, _ = run("lint", "--classes", "classes.txt", "--select", "V009", str(labels))
    assert code == EXIT_GATE
    assert out.splitlines() == [
        "labels/bad.xml:3: V009 unknown class 'dog'",
        "Found 1 finding in 1 file (2 files checked).",
    ]


def test_duplicate_iou(labels: Path) -> None:
    """--duplicate-iou sets the V010 threshold."""
    box = "<bndbox><xmin>0</xmin><ymin>0</ymin><xmax>{}</xmax><ymax>10</ymax></bndbox>"
    text = CLEAN.replace("</annotation>\n", "").replace("good.jpg", "dup.jpg")
    text += f"<object><name>cat</name>{box.format(40)}</object>\n"
    text += f"<object><name>cat</name>{box.format(30)}</object>\n</annotation>\n"
    Path("labels/dup.xml").write_text(text, encoding="utf-8")
    assert run("lint", "labels/dup.xml")[0] == EXIT_OK
    code, out, _ = run("lint", "--duplicate-iou", "0.75", "labels/dup.xml")
    assert code == EXIT_GATE
    assert out.splitlines()[0] == (
        "labels/dup.xml:4: V010 duplicate 'cat' box: IoU 0.75 with the box at line 3"
    )


def test_list_rules() -> None:
    """--list-rules prints one line per rule, needs no path, and exits 0."""
    code, out, err = run("lint", "--list-rules")
    assert (code, err) == (EXIT_OK, "")
    lines = out.splitlines()
    assert len(lines) == len(RULES)
    assert lines[4] == (
        "V005  empty-box          A box has xmin >= xmax or ymin >= ymax: zero area, or inverted "
        "corners."
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param([], "give at least one directory or file to lint", id="no-path"),
        pytest.param(["nope"], "Path 'nope' does not exist", id="missing-path"),
        pytest.param(["--select", "V099", "labels"], "unknown rule code 'V099'", id="bad-code"),
        pytest.param(["--select", "V009", "labels"], "V009 unknown-class needs --classes FILE",
                     id="v009-without-classes"),
        pytest.param(["--duplicate-iou", "0", "labels"], "Invalid value for '--duplicate-iou'",
                     id="iou-zero"),
        pytest.param(["--tolerance", "-1", "labels"], "Invalid value for '--tolerance'",
                     id="negative-tolerance"),
        pytest.param(["--format", "sarif", "labels"], "Invalid value for '--format'",
                     id="bad-format"),
        pytest.param(["--classes", "empty.txt", "labels"], "class list holds no class name",
                     id="empty-class-list"),
        pytest.param(["empty"], "no .xml annotation files found in empty", id="no-xml-files"),
    ],
)  # fmt: skip
def test_usage_errors_exit_2(labels: Path, args: list[str], message: str) -> None:
    """Bad usage or unusable input exits 2 with the reason on stderr and nothing on stdout."""
    Path("empty.txt").write_text("\n", encoding="utf-8")
    Path("empty").mkdir()
    code, out, err = run("lint", *args)
    assert code == EXIT_USAGE
    assert out == ""
    assert message in err


def test_lint_is_not_taken_for_a_gt_dir(labels: Path) -> None:
    """`vocmatch lint DIR` runs the linter, not an evaluation of a directory named lint."""
    Path("lint").mkdir()
    code, out, _ = run("lint", str(labels))
    assert (code, out.splitlines()[-1]) == (
        EXIT_GATE,
        "Found 2 findings in 1 file (2 files checked).",
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [pytest.param("good.xml", EXIT_OK, id="clean"), pytest.param("bad.xml", EXIT_GATE, id="bad")],
)
def test_console_script_exit_code(labels: Path, name: str, expected: int) -> None:
    """The installed entry point (what pre-commit and CI run) exits with the command's code."""
    process = subprocess.run(
        [sys.executable, "-m", "vocmatch", "lint", str(labels / name)],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path.cwd(),
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert process.returncode == expected, process.stderr


def test_real_set_through_the_command() -> None:
    """BCCD through the command: nine findings in nine of its 364 files."""
    root = datasets_or_skip("bccd")
    code, out, _ = run("lint", str(root))
    assert code == EXIT_GATE
    assert out.splitlines()[-1] == "Found 9 findings in 9 files (364 files checked)."


def test_pre_commit_hook_definition() -> None:
    """The hook runs `vocmatch lint` on the XML files pre-commit passes it."""
    yaml = pytest.importorskip("yaml", reason="pyyaml is a test dependency")
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "vocmatch-lint"
    assert hook["entry"] == "vocmatch lint"
    assert hook["language"] == "python"
    assert hook["files"] == r"\.xml$"

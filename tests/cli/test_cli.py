"""The command line: exit codes, stdout and stderr kept apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli as run
from vocmatch.cli import EXIT_SKIPPED, EXIT_USAGE, main
from vocmatch.core.protocol import protocol
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.readers.scan import read_columns


def test_plain_form_prints_the_report(demo: tuple[Path, Path]) -> None:
    """`vocmatch GT PRED` works as written; warnings go to stderr only."""
    code, out, err = run(str(demo[0]), str(demo[1]))
    assert code == 0
    assert "Summary" in out and "street_01" in out
    assert "vocmatch" not in out.splitlines()[0]
    assert err == (
        "vocmatch: warning: no prediction file for 'street_05': its objects count as missed\n"
    )


def test_json_output(demo: tuple[Path, Path]) -> None:
    """--format json prints only JSON on stdout, with the documented keys."""
    code, out, _ = run(str(demo[0]), str(demo[1]), "--format", "json", "--protocol", "coco")
    assert code == 0
    data = json.loads(out)
    assert list(data) == [
        "vocmatch", "conventions", "summary", "classes", "images", "coco", "skipped",
        "missing_pred", "orphan_pred", "notes",
    ]  # fmt: skip
    _, with_errors, _ = run(
        str(demo[0]), str(demo[1]), "--format", "json", "--protocol", "coco", "--errors"
    )
    assert list(json.loads(with_errors))[-3:] == ["background_iou", "confusion", "tightness"]
    assert list(data["coco"]) == [
        "AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl",
    ]  # fmt: skip
    assert data["summary"]["map"] == data["coco"]["AP"]
    assert set(data["classes"][0]) >= {
        "name",
        "gt",
        "pred",
        "tp",
        "fp",
        "fn",
        "precision",
        "recall",
        "ap",
    }
    assert set(data["images"][0]["sweep"]) == {"0.50", "0.75", "0.95"}


@pytest.mark.parametrize("extra", [(), ("--errors",)])
def test_json_writes_one_line_per_image(demo: tuple[Path, Path], extra: tuple[str, ...]) -> None:
    """Each image record is one line (a large result reads, and greps, as a table); the
    rest is indented, and the number lists of the curves are one line each."""
    code, out, _ = run(str(demo[0]), str(demo[1]), "--format", "json", *extra)
    assert code == 0
    data = json.loads(out)
    lines = out.splitlines()
    image_lines = [line for line in lines if line.startswith('    {"image": ')]
    assert [json.loads(line.rstrip(",")) for line in image_lines] == data["images"]
    assert lines[lines.index('  "images": [') + 1] == image_lines[0]
    assert '  "summary": {' in lines
    assert any(line.startswith('        "recall": [') and line.endswith("],") for line in lines)


def test_json_output_file_keeps_the_summary_on_the_terminal(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """--output writes the file and the terminal still shows the summary."""
    target = tmp_path / "r.json"
    code, out, _ = run(str(demo[0]), str(demo[1]), "--format", "json", "--output", str(target))
    assert code == 0
    assert json.loads(target.read_text())["summary"]["tp"] == 10
    assert "Summary" in out


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["fixtures/demo/gt", "fixtures/demo/pred", "--format", "json"], id="eval"),
        pytest.param(["fixtures/demo/gt", "fixtures/demo/pred"], id="eval-table"),
        pytest.param(
            ["diff", "fixtures/diff/gt", "fixtures/diff/pred_a", "fixtures/diff/pred_b",
             "--format", "json"],
            id="diff",
        ),
        pytest.param(
            ["seg", "fixtures/seg/three_class/gt", "fixtures/seg/three_class/pred",
             "--format", "json"],
            id="seg",
        ),
    ],
)  # fmt: skip
def test_output_dash_is_stdout(
    command: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``-o -`` writes the report to stdout, as without ``-o``, and no file named '-'."""
    root = Path(__file__).resolve().parents[2]
    command = [str(root / a) if a.startswith("fixtures/") else a for a in command]
    monkeypatch.chdir(tmp_path)
    plain = run(*command)
    dashed = run(*command, "-o", "-")
    assert dashed == plain
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("option", ["--html", "--classes-csv", "--write-thresholds"])
def test_a_dash_for_a_report_file_is_refused(
    option: str, demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Standard output holds the report: '-' for another report file is one line, exit 2,
    and no file named '-'."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(str(demo[0]), str(demo[1]), option, "-")
    assert (code, out) == (EXIT_USAGE, "")
    assert (
        err
        == "vocmatch: error: cannot write -: standard output holds the report; give a file name\n"
    )
    assert not (tmp_path / "-").exists()


def test_explicit_eval_command_is_the_same(demo: tuple[Path, Path]) -> None:
    """`vocmatch eval GT PRED` equals the plain form."""
    assert run("eval", str(demo[0]), str(demo[1]))[1] == run(str(demo[0]), str(demo[1]))[1]


def test_options_override_the_preset(demo: tuple[Path, Path]) -> None:
    """Each convention option overrides the protocol preset and the header says so."""
    code, out, _ = run(
        str(demo[0]), str(demo[1]), "--protocol", "voc12", "--iou", "0.7", "--strict-threshold",
        "--continuous", "--match-rule", "unmatched", "--difficult", "count",
        "--interpolation", "11-point",
    )  # fmt: skip
    assert code == 0
    header = out.split("Images")[0]
    for expected in ("voc12", "IoU > 0.7", "continuous", "best unmatched GT", "count", "11-point"):
        assert expected in header


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--iou", "1.5"], "Invalid value for '--iou'", id="iou-range"),
        pytest.param(["--protocol", "voc99"], "Invalid value for '--protocol'", id="protocol"),
    ],
)
def test_usage_errors_exit_2(demo: tuple[Path, Path], args: list[str], message: str) -> None:
    """Bad options are usage errors (exit 2) with click's message on stderr."""
    code, out, err = run(str(demo[0]), str(demo[1]), *args)
    assert code == EXIT_USAGE
    assert out == ""
    assert message in err


def test_missing_directory_is_one_line_exit_2(tmp_path: Path) -> None:
    """A path that is not a directory: one line naming it, exit 2, no traceback."""
    code, out, err = run(str(tmp_path / "nope"), str(tmp_path))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == f"vocmatch: error: {tmp_path / 'nope'}: not a directory\n"


def test_empty_directory_is_one_line_exit_2(tmp_path: Path) -> None:
    """An empty ground-truth directory: nothing to evaluate, exit 2."""
    code, _, err = run(str(tmp_path), str(tmp_path))
    assert code == EXIT_USAGE
    assert err == f"vocmatch: error: {tmp_path}: no .xml annotation files found\n"


BAD_NUMBER = (
    b"<annotation><object><name>a</name><bndbox><xmin>x</xmin><ymin>1</ymin><xmax>2</xmax>"
    b"<ymax>3</ymax></bndbox></object></annotation>"
)


def test_a_folder_of_unreadable_files_names_them_in_its_one_line(tmp_path: Path) -> None:
    """Ground truth whose every file is unreadable: one line, exit 2, saying which files
    and why (not only that none was readable)."""
    gt = tmp_path / "gt"
    gt.mkdir()
    (gt / "a.xml").write_bytes(BAD_NUMBER)
    (gt / "b.xml").write_bytes(b"<annotation><object>")
    code, out, err = run(str(gt), str(tmp_path))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        f"vocmatch: error: {gt}: no readable .xml annotation files found (2 skipped: "
        f"{gt / 'a.xml'}:1: <xmin> is not a number: 'x'; {gt / 'b.xml'}:1: not well-formed "
        "XML: Premature end of data in tag object line 1)\n"
    )


def test_many_unreadable_files_are_counted_after_the_first_three(tmp_path: Path) -> None:
    """Past three skipped files the line counts the rest; a name's escape sequence is shown
    as an escape, not sent to the terminal."""
    gt = tmp_path / "gt"
    gt.mkdir()
    for name in ("0\x1b[31mred", "a", "b", "c", "d"):
        (gt / f"{name}.xml").write_bytes(BAD_NUMBER)
    code, _, err = run(str(gt), str(tmp_path))
    assert code == EXIT_USAGE
    assert err.count("\n") == 1 and "\x1b" not in err
    assert "(5 skipped: " in err and "0\\x1b[31mred.xml:1: <xmin> is not a number" in err
    assert err.endswith(f"{gt / 'b.xml'}:1: <xmin> is not a number: 'x'; and 2 more)\n")


def test_skipped_files_are_named_and_exit_3(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """A broken file is named with its line on stderr; the rest is evaluated; exit 3."""
    gt = tmp_path / "gt"
    gt.mkdir()
    for path in demo[0].glob("*.xml"):
        (gt / path.name).write_bytes(path.read_bytes())
    (gt / "broken.xml").write_text("<annotation>\n<object>\n<name>cat</name>\n")
    code, out, err = run(str(gt), str(demo[1]))
    assert code == EXIT_SKIPPED
    assert "skipped files" in out and "street_01" in out
    assert f"vocmatch: skipped {gt / 'broken.xml'}:4: not well-formed XML" in err


def test_every_command_has_help() -> None:
    """Every command documents itself."""
    for name, command in main.commands.items():
        code, _, _ = run(name, "--help")
        assert code == 0, name
        assert command.help, name
    assert run("--help")[0] == 0


def test_parallel_reading_changes_nothing(demo: tuple[Path, Path]) -> None:
    """--jobs only changes how fast files are read, never the report."""
    one = run(str(demo[0]), str(demo[1]), "--jobs", "1", "--format", "json")
    two = run(str(demo[0]), str(demo[1]), "--jobs", "2", "--format", "json")
    assert one == two


def test_progress_bar_waits_and_can_be_silenced(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bar appears only on a terminal, after a moment, and never when disabled."""
    from vocmatch.cli.console import ProgressDisplay

    quiet = ProgressDisplay(enabled=False)
    quiet.files(1, 10)
    assert quiet.bar is None
    early = ProgressDisplay(enabled=True)
    early.files(1, 10)
    assert early.bar is None  # within the first moment
    monkeypatch.setattr(ProgressDisplay, "delay", 0.0)
    late = ProgressDisplay(enabled=True)
    late.files(4, 10)
    assert late.bar is not None and late.task is not None
    assert late.bar.tasks[0].completed == 4
    late.stages("COCO area small", 3, 8)
    assert [(t.description, t.completed, t.total) for t in late.bar.tasks] == [
        ("reading files", 4, 10),
        ("evaluating: COCO area small", 3, 8),
    ]
    late.close()


def test_evaluating_phase_follows_the_last_file_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once every file is read the display shows the evaluation, before its first stage is
    told: the full reading bar never stands alone while the evaluation runs."""
    from vocmatch.cli.console import ProgressDisplay

    monkeypatch.setattr(ProgressDisplay, "delay", 0.0)
    display = ProgressDisplay(enabled=True)
    display.files(9, 10)
    assert display.bar is not None
    assert [t.description for t in display.bar.tasks] == ["reading files"]
    display.files(10, 10)
    assert [(t.description, t.total) for t in display.bar.tasks] == [
        ("reading files", 10),
        ("evaluating", None),
    ]
    display.stages("selecting boxes", 0, 6)
    display.stages("done", 6, 6)
    assert [(t.description, t.completed, t.total) for t in display.bar.tasks][1] == (
        "evaluating",
        6,
        6,
    )
    display.close()


def test_a_terminal_run_shows_the_evaluating_phase(demo: tuple[Path, Path]) -> None:
    """On a terminal (a pseudo-terminal as stderr) the progress display shows reading, then
    evaluating, driven by the library's callbacks; stdout holds the report alone."""
    pty = pytest.importorskip("pty", reason="pseudo-terminals are a POSIX module")
    import os
    import subprocess
    import sys

    primary, secondary = pty.openpty()
    # The bar waits half a second before it shows: no wait here, on a set read in less.
    script = (
        "import sys; from vocmatch.cli.console import ProgressDisplay; "
        "ProgressDisplay.delay = 0.0; from vocmatch.cli.app import run; "
        "sys.argv = ['vocmatch', *sys.argv[1:]]; run()"
    )
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(Path(__file__).parents[2])}
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(demo[0]), str(demo[1]), "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=secondary,
        env=env,
    )
    os.close(secondary)
    shown = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the terminal closed: the run is over
            break
        if not chunk:
            break
        shown += chunk
    out, _ = process.communicate(timeout=60)
    os.close(primary)
    assert process.returncode == 0
    text = shown.decode("utf-8", "replace")
    assert "reading files" in text
    assert "evaluating: pairing boxes" in text
    assert out.startswith(b"{")


def test_evaluation_reports_each_stage_in_order(demo: tuple[Path, Path]) -> None:
    """The evaluation names each stage as it starts, counting them, then says it is done."""
    gt, pred = read_columns(demo[0]), read_columns(demo[1])
    seen: list[tuple[str, int, int]] = []
    evaluate_columns(gt, pred, protocol("coco"), progress=lambda *a: seen.append(a))
    names = ["selecting boxes", "sorting boxes", "pairing boxes", "matching", "COCO area all"]
    names += ["COCO area small", "COCO area medium", "COCO area large", "per-image results"]
    names += ["AP per class"]
    assert seen == [(name, i, 10) for i, name in enumerate(names)] + [("done", 10, 10)]
    seen.clear()
    evaluate_columns(gt, pred, protocol("voc12"), progress=lambda *a: seen.append(a))
    assert [s[0] for s in seen] == [
        "selecting boxes", "sorting boxes", "pairing boxes", "matching", "per-image results",
        "AP per class", "done",
    ]  # fmt: skip


@pytest.mark.parametrize("protocol_name", ["default", "voc07", "voc12"])
def test_json_curve_corners_give_the_class_ap(demo: tuple[Path, Path], protocol_name: str) -> None:
    """The JSON curve keeps only its corners, and they still give each class's AP exactly."""
    from vocmatch.core.ap import average_precision
    from vocmatch.core.protocol import protocol

    _, out, _ = run(str(demo[0]), str(demo[1]), "--format", "json", "--protocol", protocol_name)
    interpolation = protocol(protocol_name).interpolation
    for cls in json.loads(out)["classes"]:
        if cls["ap"] is None:
            continue
        curve = cls["curve"]
        assert average_precision(curve["recall"], curve["precision"], interpolation) == cls["ap"]


def test_json_curve_of_a_class_without_ground_truth_has_no_recall(demo: tuple[Path, Path]) -> None:
    """truck is only predicted (one FP scored 0.71): its curve's recall is null, as its
    summary recall is, not 0; precision and score stay."""
    _, out, _ = run(str(demo[0]), str(demo[1]), "--format", "json")
    truck = next(c for c in json.loads(out)["classes"] if c["name"] == "truck")
    assert (truck["gt"], truck["recall"], truck["ap"]) == (0, None, None)
    assert truck["curve"] == {"recall": [None], "precision": [0.0], "scores": [0.71]}


def test_html_picture_size_in_help_is_the_html_modules() -> None:
    """The eval help names the HTML report's picture size without importing that module."""
    from vocmatch.cli.options import HTML_PICTURE_MAX_SIDE
    from vocmatch.render.html import PICTURE_MAX_SIDE

    assert HTML_PICTURE_MAX_SIDE == PICTURE_MAX_SIDE


def test_control_characters_in_names_never_reach_the_terminal(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """A file name holding ESC is shown escaped on stderr and in the report."""
    gt = tmp_path / "gt"
    gt.mkdir()
    for path in demo[0].glob("*.xml"):
        (gt / path.name).write_bytes(path.read_bytes())
    (gt / "evil\x1b[31m.xml").write_text("<annotation>\n<object>\n")
    (gt / "shown\x1b]0;title\x07.xml").write_bytes((demo[0] / "street_01.xml").read_bytes())
    code, out, err = run(str(gt), str(demo[1]), "--max-rows", "0")
    assert code == EXIT_SKIPPED
    assert "\x1b" not in err and "\x07" not in err
    assert "evil\\x1b[31m.xml" in err
    assert "\x1b" not in out and "\x07" not in out
    assert "shown\\x1b]0;title" in out  # the table may fold the rest onto the next line

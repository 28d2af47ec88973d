"""Every report file a command writes, and stdout and stderr: a path that cannot be written
is one line and exit 2 before any work, a failed write leaves the earlier file, and a
stdout or stderr that is full or closed is exit 4 without a traceback."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, run_cli
from vocmatch.cli import EXIT_GATE, EXIT_OK, EXIT_OUTPUT, EXIT_USAGE
from vocmatch.cli.console import PICTURE_SUFFIXES

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX files and descriptors")

DEMO = FIXTURES / "demo"
DIFF = FIXTURES / "diff"
LABELS = FIXTURES / "labels"
SEG = FIXTURES / "seg" / "three_class"

EVAL = ["eval", str(DEMO / "gt"), str(DEMO / "pred")]
LABEL_MODE = ["eval", str(LABELS / "gt"), str(LABELS / "pred"), "--mode", "labels"]
DIFF_RUN = ["diff", str(DIFF / "gt"), str(DIFF / "pred_a"), str(DIFF / "pred_b")]
SEG_RUN = ["seg", str(SEG / "gt"), str(SEG / "pred"), "--classes", str(SEG / "classes.txt")]

#: Every option that writes a report file, with the rest of its command line.
WRITERS = [
    pytest.param([*EVAL, "-o"], id="eval-table"),
    pytest.param([*EVAL, "--format", "json", "-o"], id="eval-json"),
    pytest.param([*EVAL, "--format", "csv", "-o"], id="eval-csv"),
    pytest.param([*EVAL, "--format", "markdown", "-o"], id="eval-markdown"),
    pytest.param([*EVAL, "--format", "junit", "-o"], id="eval-junit"),
    pytest.param([*EVAL, "--classes-csv"], id="eval-classes-csv"),
    pytest.param([*EVAL, "--html"], id="eval-html"),
    pytest.param([*EVAL, "--write-thresholds"], id="eval-write-thresholds"),
    pytest.param([*LABEL_MODE, "-o"], id="labels-table"),
    pytest.param([*LABEL_MODE, "--format", "json", "-o"], id="labels-json"),
    pytest.param([*DIFF_RUN, "-o"], id="diff-table"),
    pytest.param([*DIFF_RUN, "--format", "json", "-o"], id="diff-json"),
    pytest.param([*SEG_RUN, "-o"], id="seg-table"),
    pytest.param([*SEG_RUN, "--format", "json", "-o"], id="seg-json"),
]


def run(args: list[str]) -> tuple[int, str, str]:
    return run_cli(*args)


@pytest.mark.parametrize("command", WRITERS)
def test_a_report_file_is_written_and_replaced(tmp_path: Path, command: list[str]) -> None:
    """The file is complete, a second run replaces it in place keeping its permissions,
    and no temporary file is left."""
    target = tmp_path / "report"
    code, _, _ = run([*command, str(target)])
    assert code in (EXIT_OK, EXIT_GATE)
    first = target.read_bytes()
    assert first
    target.chmod(0o600)
    assert run([*command, str(target)])[0] == code
    assert target.read_bytes() == first
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def unwritable(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """Paths that cannot be written, each with the reason vocmatch gives."""
    (tmp_path / "file.txt").write_text("", encoding="utf-8")
    return {
        "folder": (str(tmp_path), "it is a folder"),
        "missing-folder": (str(tmp_path / "no" / "r"), f"the folder {tmp_path / 'no'} does not exist"),
        "empty": ("", "the path is empty"),
        "under-a-file": (str(tmp_path / "file.txt" / "r"), f"{tmp_path / 'file.txt'} is not a folder"),
        "name-too-long": (str(tmp_path / ("x" * 300)), "File name too long"),
    }  # fmt: skip


@pytest.mark.parametrize("command", WRITERS)
@pytest.mark.parametrize(
    "case", ["folder", "missing-folder", "empty", "under-a-file", "name-too-long"]
)
def test_a_path_that_cannot_be_written_is_refused_before_the_run(
    tmp_path: Path, command: list[str], case: str
) -> None:
    """One line, ``vocmatch: error: cannot write PATH: reason``, exit 2, before anything is read
    (so no warning about the data comes first) and no traceback."""
    path, reason = unwritable(tmp_path)[case]
    code, out, err = run([*command, path])
    assert code == EXIT_USAGE
    assert err == f"vocmatch: error: cannot write {path or repr(path)}: {reason}\n"
    assert out == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("command", WRITERS)
def test_a_full_disk_is_one_line_and_exit_2(command: list[str]) -> None:
    """``/dev/full`` passes the check (it is writable) and fails the write: the last line
    says so, exit 2, no traceback."""
    code, _, err = run([*command, "/dev/full"])
    assert code == EXIT_USAGE
    assert (
        err.splitlines()[-1] == "vocmatch: error: cannot write /dev/full: No space left on device"
    )
    assert "Traceback" not in err


@pytest.mark.skipif(not os.path.isdir("/sys"), reason="no read-only /sys")
def test_a_read_only_folder_is_refused() -> None:
    """/sys refuses new files even to root, who ignores permission bits."""
    code, _, err = run([*EVAL, "-o", "/sys/vocmatch-report.txt"])
    assert code == EXIT_USAGE
    assert err in (
        "vocmatch: error: cannot write /sys/vocmatch-report.txt: Permission denied\n",
        "vocmatch: error: cannot write /sys/vocmatch-report.txt: Read-only file system\n",
    )


def test_a_read_only_folder_as_an_ordinary_user() -> None:
    """chmod 555 on the folder: refused, the earlier report kept (run as another user when
    the tests run as root, who ignores permission bits)."""
    # Not under pytest's tmp_path, which only its owner may enter.
    top = Path(tempfile.mkdtemp(prefix="vocmatch-ro-"))
    try:
        top.chmod(0o755)
        folder = top / "ro"
        folder.mkdir()
        (folder / "report.txt").write_text("earlier\n", encoding="utf-8")
        folder.chmod(0o555)
        preexec: Callable[[], None] | None = None
        if os.geteuid() == 0:
            nobody = 65534

            def preexec() -> None:
                os.setgid(nobody)
                os.setuid(nobody)

        try:
            result = subprocess.run(
                [sys.executable, "-m", "vocmatch", *EVAL, "-o", str(folder / "report.txt")],
                cwd=ROOT,
                capture_output=True,
                text=True,
                preexec_fn=preexec,
                timeout=120,
                check=False,
            )
        except PermissionError as error:
            pytest.skip(f"the other user cannot run this Python: {error}")
        if "cannot write" not in result.stderr:
            pytest.skip(f"the other user cannot run vocmatch here: {result.stderr[-300:]}")
        assert result.returncode == EXIT_USAGE, result.stderr
        assert result.stderr == (
            f"vocmatch: error: cannot write {folder / 'report.txt'}: Permission denied\n"
        )
        assert (folder / "report.txt").read_text(encoding="utf-8") == "earlier\n"
    finally:
        folder.chmod(0o755)
        shutil.rmtree(top)


def copy_tree(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(
            lambda d: [*EVAL[:1], str(d / "gt"), str(d / "pred"), "-o", str(d / "gt" / "street_01.xml")],
            "it is inside the input folder {d}/gt and would be read as input", id="eval-gt-file"),
        pytest.param(
            lambda d: [*EVAL[:1], str(d / "gt"), str(d / "pred"), "--format", "junit", "-o",
                       str(d / "pred" / "report.xml")],
            "it is inside the input folder {d}/pred and would be read as input", id="eval-junit-in-pred"),
        pytest.param(
            lambda d: ["diff", str(d / "gt"), str(d / "pred"), str(d / "pred"), "-o",
                       str(d / "pred" / "street_02.xml")],
            "it is inside the input folder {d}/pred and would be read as input", id="diff"),
        pytest.param(
            lambda d: [*EVAL[:1], str(d / "gt"), str(d / "pred"), "--mode", "labels", "-o",
                       str(d / "gt" / "new.XML")],
            "it is inside the input folder {d}/gt and would be read as input", id="labels"),
        pytest.param(
            lambda d: [*EVAL[:1], str(d / "gt"), str(d / "pred"), "--html", str(d / "r.html"),
                       "--images", str(d / "gt"), "--classes-csv", str(d / "gt" / "x.jpg")],
            "it is inside the input folder {d}/gt and would be read as input", id="images"),
        pytest.param(
            lambda d: [*EVAL[:1], str(d / "gt"), str(d / "pred"), "-o", str(d / "r.csv"),
                       "--format", "csv", "--classes-csv", str(d / "r.csv")],
            "it is also given as {d}/r.csv", id="two-outputs"),
    ],
)  # fmt: skip
def test_a_report_that_would_overwrite_an_input_is_refused(
    tmp_path: Path, make: Callable[[Path], list[str]], message: str
) -> None:
    """Writing over an annotation file, or a report the next run would read as one, is
    refused before the run; the inputs are unchanged."""
    copy_tree(DEMO, tmp_path / "demo")
    folder = tmp_path / "demo"
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    args = make(folder)
    code, out, err = run(args)
    assert out == ""
    assert code == EXIT_USAGE
    path = args[args.index("--classes-csv") + 1] if "--classes-csv" in args else args[-1]
    assert err == f"vocmatch: error: cannot write {path}: {message.format(d=folder)}\n"
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


def test_seg_refuses_its_class_list_or_a_mask_as_the_report(tmp_path: Path) -> None:
    """seg: the --classes file and the mask folders are inputs too."""
    seg = copy_tree(SEG, tmp_path / "seg")
    classes = seg / "classes.txt"
    before = classes.read_bytes()
    base = ["seg", str(seg / "gt"), str(seg / "pred"), "--classes", str(classes), "-o"]
    code, _, err = run([*base, str(classes)])
    assert (code, err) == (
        EXIT_USAGE,
        f"vocmatch: error: cannot write {classes}: it is the input file {classes}\n",
    )
    code, _, err = run([*base, str(seg / "pred" / "hand.png")])
    assert code == EXIT_USAGE and "would be read as input" in err
    assert classes.read_bytes() == before


@pytest.mark.parametrize(
    "mode", [pytest.param([], id="boxes"), pytest.param(["--mode", "labels"], id="labels")]
)
def test_eval_refuses_its_class_map_file_as_the_report(tmp_path: Path, mode: list[str]) -> None:
    """eval: the --class-map file is an input too; a built-in map's name is no file."""
    copy_tree(DEMO, tmp_path / "demo")
    folder = tmp_path / "demo"
    mapping = tmp_path / "map.csv"
    mapping.write_text("automobile,car\n")
    before = mapping.read_bytes()
    base = [*EVAL[:1], str(folder / "gt"), str(folder / "pred"), *mode, "--class-map"]
    code, out, err = run([*base, str(mapping), "--format", "json", "-o", str(mapping)])
    assert (code, out, err) == (
        EXIT_USAGE,
        "",
        f"vocmatch: error: cannot write {mapping}: it is the input file {mapping}\n",
    )
    assert mapping.read_bytes() == before
    report = tmp_path / "coco-to-voc"
    code, _, _ = run([*base, "coco-to-voc", "--format", "json", "-o", str(report)])
    assert code == 0 and report.is_file()


def test_picture_suffixes_are_the_html_modules() -> None:
    """The CLI's list of picture suffixes (for refusing reports in --images) is html's."""
    from vocmatch.render.html import PICTURE_SUFFIXES as HTML_SUFFIXES

    assert set(PICTURE_SUFFIXES) == {s.lower() for s in HTML_SUFFIXES}


# stdout and stderr ------------------------------------------------------------------------

#: Every command that prints a report on stdout, in every format.
PRINTERS = [
    pytest.param(EVAL, id="eval-table"),
    pytest.param([*EVAL, "--format", "json"], id="eval-json"),
    pytest.param([*EVAL, "--format", "csv"], id="eval-csv"),
    pytest.param([*EVAL, "--format", "markdown"], id="eval-markdown"),
    pytest.param([*EVAL, "--format", "junit"], id="eval-junit"),
    pytest.param([*EVAL, "-o", os.devnull], id="eval-summary"),
    pytest.param(LABEL_MODE, id="labels"),
    pytest.param(DIFF_RUN, id="diff"),
    pytest.param(SEG_RUN, id="seg"),
    pytest.param(["lint", str(DEMO / "gt")], id="lint-text"),
    pytest.param(["lint", "--format", "json", str(DEMO / "gt")], id="lint-json"),
    pytest.param(["iou", "0,0,10,10", "5,5,15,15"], id="iou"),
    pytest.param(["--help"], id="help"),
]


def vocmatch(
    args: list[str], close: tuple[int, ...] = (), **streams: object
) -> subprocess.CompletedProcess[bytes]:
    """``python -m vocmatch ARGS`` with the descriptors in ``close`` closed at start."""

    def preexec() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        for descriptor in close:
            os.close(descriptor)

    options: dict[str, object] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **streams}
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-m", "vocmatch", *args],
        cwd=ROOT,
        preexec_fn=preexec,
        timeout=120,
        check=False,
        **options,
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("command", PRINTERS)
def test_a_full_stdout_is_exit_4_and_one_line(command: list[str]) -> None:
    """``> /dev/full``: the run goes to its end, the last line says what was lost, exit 4."""
    with open("/dev/full", "wb") as full:
        result = vocmatch(command, stdout=full)
    err = result.stderr.decode()
    assert result.returncode == EXIT_OUTPUT, err
    assert (
        err.splitlines()[-1] == "vocmatch: error: cannot write to stdout: No space left on device"
    )
    assert "Traceback" not in err and "Exception ignored" not in err


@pytest.mark.parametrize("command", PRINTERS)
def test_a_closed_stdout_is_exit_4_and_one_line(command: list[str]) -> None:
    """``>&-``: exit 4 and ``vocmatch: error: cannot write to stdout: it is closed``."""
    result = vocmatch(command, close=(1,), stdout=subprocess.DEVNULL)
    err = result.stderr.decode()
    assert result.returncode == EXIT_OUTPUT, err
    assert err.splitlines()[-1] == "vocmatch: error: cannot write to stdout: it is closed"
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("command", "code"),
    [
        pytest.param(EVAL, EXIT_OUTPUT, id="eval-with-a-warning"),
        pytest.param(["lint", str(DEMO / "gt"), "--format", "github"], EXIT_OUTPUT, id="lint-github"),
        pytest.param(["iou", "0,0,10,10", "5,5,15,15"], EXIT_OK, id="nothing-for-stderr"),
        pytest.param([*EVAL, "--iou", "nan"], EXIT_USAGE, id="usage-error-keeps-2"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("how", ["closed", "full"])
def test_a_closed_or_full_stderr(command: list[str], code: int, how: str) -> None:
    """``2>&-`` or ``2>/dev/full``: stdout is still complete; exit 4 when something meant
    for stderr was lost (bad usage keeps its 2), the verdict when nothing was."""
    if how == "full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    expected = vocmatch(command)
    if how == "closed":
        result = vocmatch(command, close=(2,), stderr=subprocess.DEVNULL)
    else:
        with open("/dev/full", "wb") as full:
            result = vocmatch(command, stderr=full)
    assert result.returncode == code
    assert result.stdout == expected.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash")
def test_stdout_closed_with_a_report_file(tmp_path: Path) -> None:
    """With -o, the report file is complete even when the summary cannot be shown."""
    target = tmp_path / "r.json"
    result = vocmatch(
        [*EVAL, "--format", "json", "-o", str(target)], close=(1,), stdout=subprocess.DEVNULL
    )
    assert result.returncode == EXIT_OUTPUT
    assert target.read_text(encoding="utf-8").startswith('{\n  "vocmatch"')


def test_two_runs_writing_one_report_never_mix(tmp_path: Path) -> None:
    """Two runs at once, each writing its own format to the same path: the file is always
    one of the two complete reports, and no temporary file is left."""
    target = tmp_path / "report.txt"
    expected = {
        run([*EVAL, "--format", output_format])[1].encode() for output_format in ("json", "csv")
    }
    for _ in range(3):
        processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "vocmatch",
                    *EVAL,
                    "--format",
                    output_format,
                    "-o",
                    str(target),
                ],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for output_format in ("json", "csv")
        ]
        assert [p.wait(timeout=120) for p in processes] == [EXIT_OK, EXIT_OK]
        assert target.read_bytes() in expected
        assert sorted(p.name for p in tmp_path.iterdir()) == ["report.txt"]


def file_size_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_file_size_limit_on_the_report(tmp_path: Path) -> None:
    """Under ``ulimit -f`` a report larger than the limit fails in one line, exit 2, and the
    earlier report stays (Python ignores SIGXFSZ, so the write fails with EFBIG)."""
    target = tmp_path / "report.json"
    target.write_text("earlier\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "vocmatch", *EVAL, "--format", "json", "-o", str(target)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        preexec_fn=file_size_limit(2000),
    )  # fmt: skip
    assert result.returncode == EXIT_USAGE
    assert (
        result.stderr.splitlines()[-1] == f"vocmatch: error: cannot write {target}: File too large"
    )
    assert target.read_text(encoding="utf-8") == "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["unbuffered", "buffered"])
def test_a_file_size_limit_on_stdout(tmp_path: Path, unbuffered: str) -> None:
    """stdout redirected to a file under ``ulimit -f``: exit 4, one line. Also under
    PYTHONUNBUFFERED, where the write that reaches the limit takes part of the bytes and
    Python's text layer would drop the rest without a word (exit 0, a cut report)."""
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    with open(tmp_path / "out.txt", "wb") as out:
        result = subprocess.run(
            [sys.executable, "-m", "vocmatch", *EVAL, "--format", "json"],
            cwd=ROOT, stdout=out, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
            preexec_fn=file_size_limit(2000), env=env,
        )  # fmt: skip
    assert result.returncode == EXIT_OUTPUT
    assert (
        result.stderr.splitlines()[-1] == "vocmatch: error: cannot write to stdout: File too large"
    )
    assert "Traceback" not in result.stderr

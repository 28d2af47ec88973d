"""Files that block, and paths the system cannot take: named pipes, sockets, devices and
links to them are refused without waiting, in every command and option that reads a file;
a tree 2,000 folders deep and a path longer than the system allows are one line each, never
a RecursionError or a traceback.

Every run is a subprocess with a timeout, so a read that blocks fails the test instead of
hanging it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="named pipes, /dev, PATH_MAX")

DEMO = FIXTURES / "demo"
SEG = FIXTURES / "seg" / "three_class"
DEPTH = 2000
#: Longer than PATH_MAX (4,096 on Linux).
LONG = "x/" * 3000


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


def vocmatch(*args: str | Path) -> Result:
    """``python -m vocmatch ARGS`` with nothing on stdin, ended after a minute at most."""
    result = subprocess.run(
        [sys.executable, "-m", "vocmatch", *map(str, args)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        check=False,
    )
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr and "RecursionError" not in stderr, stderr
    return Result(result.returncode, result.stdout.decode(), stderr)


def add_specials(folder: Path, suffix: str) -> dict[str, str]:
    """A named pipe, a link to it, a socket and a link to a device, named like inputs;
    each with the reason vocmatch gives."""
    os.mkfifo(folder / f"pipe{suffix}")
    (folder / f"link-to-pipe{suffix}").symlink_to(folder / f"pipe{suffix}")
    (folder / f"zero{suffix}").symlink_to("/dev/zero")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / f"sock{suffix}"))
    server.close()
    return {
        f"pipe{suffix}": "not a regular file: a named pipe",
        f"link-to-pipe{suffix}": "not a regular file: a named pipe",
        f"zero{suffix}": "not a regular file: a character device",
        f"sock{suffix}": "not a regular file: a socket",
    }


@dataclass(frozen=True)
class Specials:
    gt: Path
    pred: Path
    masks_gt: Path
    masks_pred: Path
    pipe: Path
    xml_reasons: dict[str, str]
    png_reasons: dict[str, str]


@pytest.fixture(scope="module")
def specials(tmp_path_factory: pytest.TempPathFactory) -> Specials:
    root = tmp_path_factory.mktemp("specials")
    gt, pred = root / "gt", root / "pred"
    shutil.copytree(DEMO / "gt", gt)
    shutil.copytree(DEMO / "pred", pred)
    masks_gt, masks_pred = root / "masks_gt", root / "masks_pred"
    shutil.copytree(SEG / "gt", masks_gt)
    shutil.copytree(SEG / "pred", masks_pred)
    xml_reasons = add_specials(gt, ".xml")
    add_specials(pred, ".xml")
    png_reasons = add_specials(masks_gt, ".png")
    add_specials(masks_pred, ".png")
    pipe = root / "pipe.txt"
    os.mkfifo(pipe)
    return Specials(gt, pred, masks_gt, masks_pred, pipe, xml_reasons, png_reasons)


def skipped_lines(stderr: str, folder: Path) -> dict[str, str]:
    """``name: reason`` of each ``vocmatch: skipped FOLDER/name: reason`` line."""
    found = {}
    prefix = f"vocmatch: skipped {folder}/"
    for line in stderr.splitlines():
        if line.startswith(prefix):
            name, reason = line[len(prefix) :].split(": ", 1)
            found[name] = reason
    return found


@pytest.mark.parametrize(
    "command",
    [
        pytest.param([], id="eval"),
        pytest.param(["--mode", "labels"], id="labels"),
        pytest.param(["--format", "json", "--errors"], id="eval-json"),
        pytest.param(["diff"], id="diff"),
    ],
)
def test_special_files_in_annotation_folders_are_skipped(
    specials: Specials, command: list[str]
) -> None:
    """Each is one ``skipped`` line with what it is; the rest is evaluated; exit 3."""
    if command == ["diff"]:
        result = vocmatch("diff", specials.gt, specials.pred, specials.pred)
    else:
        result = vocmatch(specials.gt, specials.pred, *command)
    assert result.code == 3
    assert skipped_lines(result.stderr, specials.gt) == specials.xml_reasons
    assert set(skipped_lines(result.stderr, specials.pred)) <= set(specials.xml_reasons)


def test_lint_reports_special_files_as_v001(specials: Specials) -> None:
    """In a folder or named directly, each is a V001 finding in the same words (a file
    reached twice, as the pipe and its link, is linted once)."""
    result = vocmatch("lint", "--select", "V001", specials.gt, specials.pipe, "/dev/null")
    assert result.code == 1
    found = {line.rsplit("/", 1)[-1] for line in result.stdout.splitlines()[:-1]}
    expected = {f"{name}:1: V001 {reason}" for name, reason in specials.xml_reasons.items()}
    expected -= {"pipe.xml:1: V001 not a regular file: a named pipe"}  # its link comes first
    expected |= {"pipe.txt:1: V001 not a regular file: a named pipe"}
    expected |= {"null:1: V001 not a regular file: a character device"}
    assert found == expected


def test_seg_skips_special_masks(specials: Specials) -> None:
    """Masks that are pipes, sockets or devices are skipped with their reason."""
    result = vocmatch(
        "seg", specials.masks_gt, specials.masks_pred, "--classes", SEG / "classes.txt"
    )
    assert result.code == 3
    assert skipped_lines(result.stderr, specials.masks_gt) == specials.png_reasons


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["lint", "--classes", "{pipe}", str(DEMO / "gt")],
                     "vocmatch: error: {pipe}: cannot read class list: not a regular file: a named pipe",
                     id="lint-classes"),
        pytest.param(["seg", str(SEG / "gt"), str(SEG / "pred"), "--classes", "{pipe}"],
                     "vocmatch: error: {pipe}: cannot read class names: not a regular file: a named pipe",
                     id="seg-classes"),
        pytest.param([str(DEMO / "gt"), str(DEMO / "pred"), "--score-thresholds", "{pipe}"],
                     "vocmatch: error: {pipe}: not a regular file: a named pipe",
                     id="score-thresholds"),
        pytest.param(["{pipe}", str(DEMO / "pred")], "vocmatch: error: {pipe}: not a directory",
                     id="gt-dir"),
        pytest.param(["diff", str(DEMO / "gt"), str(DEMO / "pred"), "{pipe}"],
                     "vocmatch: error: {pipe}: not a directory", id="diff-pred-b"),
        pytest.param(["seg", "{pipe}", str(SEG / "pred")], "is not a directory", id="seg-gt-dir"),
        pytest.param([str(DEMO / "gt"), "{pipe}", "--pred-format", "coco", "--coco-gt",
                      "{pipe}"], "not a regular file: a named pipe", id="coco-results"),
        pytest.param([str(DEMO / "gt"), str(DEMO / "pred"), "--pred-format", "yolo", "--names",
                      "{pipe}"], "not a regular file: a named pipe", id="yolo-names"),
    ],
)  # fmt: skip
def test_a_pipe_given_for_a_file_or_folder_is_refused_at_once(
    specials: Specials, args: list[str], message: str
) -> None:
    """One line, exit 2, without waiting for a writer that never comes."""
    result = vocmatch(*(a.format(pipe=specials.pipe) for a in args))
    assert result.code == 2
    assert message.format(pipe=specials.pipe) in result.stderr.splitlines()[-1]


def test_a_pipe_among_the_pictures_is_passed_over(specials: Specials, tmp_path: Path) -> None:
    """--images: a picture that is a pipe is not a picture; the report is still written."""
    images = tmp_path / "images"
    images.mkdir()
    os.mkfifo(images / "street_01.jpg")
    (images / "street_02.jpg").symlink_to("/dev/zero")
    html = tmp_path / "r.html"
    result = vocmatch(DEMO / "gt", DEMO / "pred", "--html", html, "--images", images)
    assert result.code == 0
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def make_deep(top: Path, depth: int, bottom: bytes, suffix: str) -> None:
    """``depth`` nested folders below ``top`` (deeper than any path the system takes), with
    a file at the bottom; built through descriptors, as no path reaches there."""
    top.mkdir(parents=True, exist_ok=True)
    current = os.open(top, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("dd", dir_fd=current)
            deeper = os.open("dd", os.O_RDONLY, dir_fd=current)
            os.close(current)
            current = deeper
        handle = os.open(f"bottom{suffix}", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=current)
        os.write(handle, bottom)
        os.close(handle)
    finally:
        os.close(current)


def remove_deep(top: Path) -> None:
    """Remove a tree too deep for a path, and for shutil.rmtree's recursion: down through
    descriptors, emptying each folder on the way back up."""
    stack = [os.open(top, os.O_RDONLY)]
    names: list[str] = []  # names[i]: the folder stack[i + 1] within stack[i]
    try:
        while stack:
            current = stack[-1]
            folder = None
            with os.scandir(current) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folder = entry.name
                    else:
                        os.unlink(entry.name, dir_fd=current)
            if folder is not None:
                stack.append(os.open(folder, os.O_RDONLY, dir_fd=current))
                names.append(folder)
                continue
            os.close(stack.pop())
            if stack:
                os.rmdir(names.pop(), dir_fd=stack[-1])
    finally:
        for descriptor in stack:
            os.close(descriptor)
    top.rmdir()


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("deep")
    xml = (DEMO / "gt" / "street_01.xml").read_bytes()
    png = (SEG / "gt" / "hand.png").read_bytes()
    for name, data, suffix in (("gt", xml, ".xml"), ("pred", xml, ".xml"),
                               ("masks_gt", png, ".png"), ("masks_pred", png, ".png")):  # fmt: skip
        make_deep(root / name, DEPTH, data, suffix)
        (root / name / f"top{suffix}").write_bytes(data)
    yield root
    for name in ("gt", "pred", "masks_gt", "masks_pred"):
        remove_deep(root / name)


def too_long_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.endswith("File name too long")]


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["{gt}", "{pred}"], id="eval"),
        pytest.param(["{gt}", "{pred}", "--mode", "labels"], id="labels"),
        pytest.param(["diff", "{gt}", "{pred}", "{pred}"], id="diff"),
        pytest.param(["seg", "{masks_gt}", "{masks_pred}", "--classes", str(SEG / "classes.txt")],
                     id="seg"),
    ],
)  # fmt: skip
def test_a_tree_2000_folders_deep_is_one_line_per_folder_set(
    deep: Path, command: list[str]
) -> None:
    """The walk keeps its own stack: the first folder too deep for the system is one
    ``skipped`` line with its reason; what lies above it is evaluated; exit 3."""
    args = [a.format(gt=deep / "gt", pred=deep / "pred", masks_gt=deep / "masks_gt",
                     masks_pred=deep / "masks_pred") for a in command]  # fmt: skip
    result = vocmatch(*args)
    assert result.code == 3
    lines = too_long_lines(result.stderr)
    assert len(lines) == 2  # one in each folder set
    assert all(line.startswith("vocmatch: skipped ") for line in lines)
    assert all(": cannot read directory: File name too long" in line for line in lines)


def test_lint_a_tree_2000_folders_deep(deep: Path) -> None:
    """lint: the folder it cannot enter is a V001 finding, the rest is linted."""
    result = vocmatch("lint", "--select", "V001", deep / "gt")
    assert result.code == 1
    (line,) = [line for line in result.stdout.splitlines() if "V001" in line]
    assert line.endswith(":1: V001 cannot read directory: File name too long")
    assert result.stdout.splitlines()[-1] == "Found 1 finding in 1 file (1 file checked)."


@pytest.mark.parametrize(
    ("args", "where"),
    [
        pytest.param([LONG, str(DEMO / "pred")], "GT_DIR", id="eval-gt"),
        pytest.param([str(DEMO / "gt"), LONG, "--mode", "labels"], "PRED_DIR", id="labels"),
        pytest.param(["diff", str(DEMO / "gt"), str(DEMO / "pred"), LONG], "PRED_B_DIR", id="diff"),
        pytest.param(["lint", LONG], "[PATHS]...", id="lint"),
        pytest.param(["lint", "--classes", LONG, str(DEMO / "gt")], "--classes", id="lint-classes"),
        pytest.param(["seg", LONG, str(SEG / "pred")], "GT_DIR", id="seg"),
        pytest.param([str(DEMO / "gt"), str(DEMO / "pred"), "--html", "r.html", "--images", LONG],
                     "--images", id="images"),
    ],
)  # fmt: skip
def test_a_path_longer_than_the_system_allows_is_one_error(args: list[str], where: str) -> None:
    """Named with the system's reason, not "does not exist" or "not a directory"."""
    result = vocmatch(*args)
    assert result.code == 2
    last = result.stderr.splitlines()[-1]
    assert last.startswith(f"Error: Invalid value for '{where}': 'x/x/x/")
    assert last.endswith(": File name too long")


def test_a_report_path_longer_than_the_system_allows(tmp_path: Path) -> None:
    """-o: ``vocmatch: error: cannot write PATH: File name too long``, before the run."""
    result = vocmatch(DEMO / "gt", DEMO / "pred", "-o", LONG)
    assert result.code == 2
    assert (
        result.stderr == f"vocmatch: error: cannot write {LONG.rstrip('/')}: File name too long\n"
    )


#: ``python -m vocmatch`` in which a named pipe passes for a regular file, as /proc/kmsg
#: does: stat calls that file regular, yet a read of it waits for the next kernel message.
PASSES_FOR_REGULAR = """
import os, stat, sys
real_fstat = os.fstat
def fstat(descriptor):
    status = real_fstat(descriptor)
    if not stat.S_ISFIFO(status.st_mode):
        return status
    fields = list(status)
    fields[0] = stat.S_IFREG | 0o444
    return os.stat_result(fields)
os.fstat = fstat
from vocmatch.__main__ import main
sys.argv[0] = "vocmatch"
main()
"""


@pytest.mark.parametrize(
    ("command", "folder", "name", "reason"),
    [
        pytest.param(["seg", "--classes", str(SEG / "classes.txt")], "masks_pred", "blocks.png",
                     "cannot read mask: Resource temporarily unavailable", id="seg-mask"),
        pytest.param([], "pred", "blocks.xml", "cannot read file: Resource temporarily unavailable",
                     id="eval"),
    ],
)  # fmt: skip
def test_a_regular_file_whose_read_blocks_is_skipped_at_once(
    tmp_path: Path, command: list[str], folder: str, name: str, reason: str
) -> None:
    """A link to a file that stat calls regular but whose read waits (/proc/kmsg; here a
    pipe with a writer that never writes, passed off as regular): that file is skipped with
    its path and the system's reason, the rest evaluated, exit 3, and nothing waits."""
    for kind, source in (("gt", DEMO / "gt"), ("pred", DEMO / "pred"),
                         ("masks_gt", SEG / "gt"), ("masks_pred", SEG / "pred")):  # fmt: skip
        shutil.copytree(source, tmp_path / kind)
    shutil.copy(SEG / "gt" / "hand.png", tmp_path / "masks_gt" / "blocks.png")
    shutil.copy(DEMO / "gt" / "street_01.xml", tmp_path / "gt" / "blocks.xml")
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    (tmp_path / folder / name).symlink_to(pipe)
    writer = os.open(pipe, os.O_RDWR)  # held open: a read waits for data, not for EOF
    try:
        gt = tmp_path / ("masks_gt" if folder == "masks_pred" else "gt")
        args = [*command[:1], gt, tmp_path / folder, *command[1:]]
        result = subprocess.run(
            [sys.executable, "-c", PASSES_FOR_REGULAR, *map(str, args)],
            cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False,
        )  # fmt: skip
    finally:
        os.close(writer)
    stderr = result.stderr.decode()
    assert result.returncode == 3, stderr
    skipped = [line for line in stderr.splitlines() if line.startswith("vocmatch: skipped ")]
    assert skipped == [f"vocmatch: skipped {tmp_path / folder / name}: {reason}"]

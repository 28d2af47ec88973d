"""Ctrl-C and a reader that goes away: one line or nothing on stderr, never a traceback, and
the documented exit code."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from vocmatch.cli import EXIT_INTERRUPTED, EXIT_OK, EXIT_SKIPPED

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and pipes")

GT = (
    b"<annotation><filename>a.jpg</filename><object><name>cat</name><bndbox><xmin>10</xmin>"
    b"<ymin>10</ymin><xmax>50</xmax><ymax>50</ymax></bndbox></object></annotation>"
)
PRED = GT.replace(b"</bndbox>", b"</bndbox><score>0.9</score>")


#: A stem of 84 characters: each row of the report is about 175 bytes long, so a thousand
#: images make a report of about 175 KB (the table: 175,735 bytes), well past a pipe's buffer
#: (64 KiB on Linux), in a third of the time three thousand short rows took to render.
LONG_STEM = "{:06d}" + "-long-name" * 8


def tiny_set(
    root: Path, images: int, broken: bool = False, stem: str = "{:06d}"
) -> tuple[Path, Path]:
    """``images`` one-object images in gt/ and pred/, named ``stem.format(i)``; with
    ``broken``, one more GT file that is not XML."""
    gt, pred = root / "gt", root / "pred"
    gt.mkdir()
    pred.mkdir()
    for i in range(images):
        (gt / f"{stem.format(i)}.xml").write_bytes(GT)
        (pred / f"{stem.format(i)}.xml").write_bytes(PRED)
    if broken:
        (gt / "broken.xml").write_bytes(b"<annotation>")
    return gt, pred


def vocmatch(*args: str | Path, **options: object) -> subprocess.Popen[bytes]:
    """``python -m vocmatch ARGS`` with SIGINT at its default, whatever the test runner's."""
    return subprocess.Popen(
        [sys.executable, "-m", "vocmatch", *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        **options,  # type: ignore[call-overload]
    )


def wait_until_reading(process: subprocess.Popen[bytes], folder: Path) -> None:
    """Wait until the process has a file or directory of ``folder`` open (so its imports are
    done and it is at work), or two seconds where /proc cannot tell."""
    fds = Path(f"/proc/{process.pid}/fd")
    if not fds.is_dir():
        time.sleep(2.0)
        return
    deadline = time.monotonic() + 30
    prefix = str(folder)
    while time.monotonic() < deadline and process.poll() is None:
        try:
            targets = [os.readlink(fd) for fd in fds.iterdir()]
        except OSError:
            continue  # a descriptor closed while being listed
        if any(target.startswith(prefix) for target in targets):
            return
        time.sleep(0.002)
    pytest.fail("vocmatch never started reading its input")


def test_ctrl_c_exits_130_with_one_line(tmp_path: Path) -> None:
    """SIGINT while the files are read: exit 130 within seconds, one line, no traceback."""
    gt, pred = tiny_set(tmp_path, 15_000)
    process = vocmatch(gt, pred)
    wait_until_reading(process, tmp_path)
    assert process.poll() is None, "the run ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    start = time.monotonic()
    stdout, stderr = process.communicate(timeout=30)
    assert time.monotonic() - start < 5.0
    assert process.returncode == EXIT_INTERRUPTED
    assert stderr == b"vocmatch: interrupted\n"
    assert stdout == b""


def wait_until_mapped(process: subprocess.Popen[bytes], fragment: str) -> bool:
    """Wait until the process has mapped a file whose path holds ``fragment``; False where
    /proc cannot tell or it ended first."""
    maps = Path(f"/proc/{process.pid}/maps")
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if fragment in maps.read_text(encoding="utf-8", errors="replace"):
                return True
        except OSError:
            return False
        time.sleep(0.001)
    return False


@pytest.mark.parametrize("command", [["--help"], ["lint", "--list-rules"]])
def test_ctrl_c_while_starting_exits_130_with_one_line(command: list[str]) -> None:
    """SIGINT while the command's modules are still being imported (numpy is being loaded):
    the same one line and exit 130, not Python's traceback."""
    process = vocmatch(*command)
    if not wait_until_mapped(process, "_multiarray_umath"):
        process.kill()
        process.communicate()
        pytest.skip("cannot see the process's imports (no /proc, or it ended first)")
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == EXIT_INTERRUPTED
    assert stderr == b"vocmatch: interrupted\n"
    assert stdout == b""


@pytest.mark.parametrize(
    ("options", "broken", "code"),
    [
        pytest.param(["--max-rows", "0"], False, EXIT_OK, id="table"),
        pytest.param(["--format", "csv"], False, EXIT_OK, id="csv"),
        pytest.param(["--format", "json"], True, EXIT_SKIPPED, id="json-skipped-file"),
    ],
)
def test_a_closed_pipe_ends_quietly_with_the_verdict(
    tmp_path: Path, options: list[str], broken: bool, code: int
) -> None:
    """The reader stops after one line: no traceback, and the exit code is still the
    evaluation's (0, or 3 when a file was skipped)."""
    gt, pred = tiny_set(tmp_path, 1000, broken, LONG_STEM)
    with vocmatch(gt, pred, *options) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline()
        process.stdout.close()  # the report is far larger than the pipe's buffer
        stderr = process.stderr.read()
        assert process.wait(timeout=120) == code
    expected = f"vocmatch: skipped {gt / 'broken.xml'}:1: " if broken else ""
    assert stderr.decode().startswith(expected)
    assert stderr.count(b"\n") == (1 if broken else 0)
    assert b"Traceback" not in stderr and b"BrokenPipe" not in stderr


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("head") is None, reason="bash")
def test_piping_into_head(tmp_path: Path) -> None:
    """`vocmatch GT PRED | head -1` under pipefail: vocmatch's own exit code, clean stderr."""
    gt, pred = tiny_set(tmp_path, 1000, broken=True, stem=LONG_STEM)
    command = (
        f'set -o pipefail; "{sys.executable}" -m vocmatch "{gt}" "{pred}" --max-rows 0 | head -1'
    )
    result = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, capture_output=True, timeout=120, check=False
    )
    assert result.returncode == EXIT_SKIPPED
    assert result.stdout.count(b"\n") == 1
    assert result.stderr == f"vocmatch: skipped {gt / 'broken.xml'}:1: ".encode() + (
        b"not well-formed XML: Premature end of data in tag annotation line 1\n"
    )

"""Report files are written to a temporary file in their folder and renamed into place: a
failure of any kind leaves the earlier file as it was and no partial or temporary file."""

from __future__ import annotations

import errno
import os
import resource
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import ROOT
from vocmatch import files as output
from vocmatch.errors import OutputError
from vocmatch.files import (
    InputFolder,
    check_output,
    remove_temporary_files,
    save_bytes,
    save_text,
    temporary_files,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file system")


def leftovers(folder: Path) -> list[str]:
    """Temporary files of the writer left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".vocmatch-"))


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_new_file_gets_the_permissions_open_would_give(tmp_path: Path) -> None:
    """A new report is 0666 less the umask, as ``open(path, "w")`` makes it."""
    target = tmp_path / "report.json"
    save_text(target, "{}\n")
    assert target.read_text(encoding="utf-8") == "{}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~current_umask()
    assert leftovers(tmp_path) == []


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    """Rewriting a report keeps the mode the user gave it."""
    target = tmp_path / "report.csv"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o640)
    save_text(target, "new\n")
    assert target.read_text(encoding="utf-8") == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_symbolic_link_keeps_pointing_at_its_file(tmp_path: Path) -> None:
    """Writing through a link replaces the file it names; the link stays a link."""
    real = tmp_path / "real.md"
    real.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    save_text(link, "new\n")
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == "new\n"


def test_lone_surrogates_are_written_as_escapes(tmp_path: Path) -> None:
    """Text holding a non-UTF-8 file name byte never fails the write."""
    target = tmp_path / "r.txt"
    save_text(target, "caf\udce9\n")
    assert target.read_bytes() == b"caf\\udce9\n"


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(OSError(errno.ENOSPC, "No space left on device"), id="disk-full"),
        pytest.param(OSError(errno.EFBIG, "File too large"), id="size-limit"),
        pytest.param(KeyboardInterrupt(), id="ctrl-c"),
        pytest.param(SystemExit(143), id="exit"),
    ],
)
def test_a_failure_while_writing_leaves_the_earlier_file_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    """The disk filling up, a size limit, Ctrl-C or an exit half-way through the write: the
    earlier report is untouched and the temporary file is gone."""
    target = tmp_path / "report.json"
    target.write_text("earlier\n", encoding="utf-8")
    real_write = os.write
    calls = 0

    def failing_write(descriptor: int, data: bytes | memoryview) -> int:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise failure
        return real_write(descriptor, bytes(data)[:100])  # a partial write first

    def failing_writev(descriptor: int, pieces: Sequence[bytes | memoryview]) -> int:
        return failing_write(descriptor, pieces[0])

    # The content is written with os.writev where the system has it, else os.write.
    monkeypatch.setattr(output.os, "write", failing_write)
    monkeypatch.setattr(output.os, "writev", failing_writev, raising=False)
    expected = OutputError if isinstance(failure, OSError) else type(failure)
    with pytest.raises(expected):
        save_text(target, "x" * 10_000)
    monkeypatch.undo()
    assert target.read_text(encoding="utf-8") == "earlier\n"
    assert leftovers(tmp_path) == []


def test_a_failed_rename_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even the last step failing cleans up."""

    def refuse(source: str, target: str) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(output.os, "replace", refuse)
    with pytest.raises(OutputError, match="Invalid cross-device link"):
        save_text(tmp_path / "r.txt", "text")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param("", r"cannot write '': the path is empty", id="empty"),
        pytest.param(".", r"cannot write \.: it is a folder", id="folder"),
        pytest.param(
            "no/such/folder/r.json",
            r"the folder .*no/such/folder does not exist",
            id="missing-folder",
        ),
        pytest.param("file.txt/r.json", r": file\.txt is not a folder", id="under-a-file"),
        pytest.param("x" * 300 + ".json", r": File name too long", id="name-too-long"),
        pytest.param("d/" * 3000 + "r.json", r": File name too long", id="path-too-long"),
    ],
)
def test_paths_that_cannot_be_written_are_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, message: str
) -> None:
    """Each is an :class:`OutputError` with the path and the reason, from the check before
    the run and from the write itself."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.txt").write_text("", encoding="utf-8")
    with pytest.raises(OutputError, match=message):
        check_output(name)
    with pytest.raises(OutputError, match=message):
        save_text(name, "text")


def test_dev_full_is_a_full_disk() -> None:
    """A device is written in place (it cannot be replaced), and a full one says so."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    check_output("/dev/full")
    with pytest.raises(OutputError, match=r"cannot write /dev/full: No space left on device"):
        save_text("/dev/full", "report\n")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # still the device


def test_dev_null_and_a_pipe_are_written_in_place(tmp_path: Path) -> None:
    """``-o /dev/stdout`` and a shell's ``>(...)`` are streams: written, never replaced."""
    save_text(os.devnull, "nothing\n")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            save_text(fifo, "through the pipe\n")
            break
        except OutputError:  # the reader has not opened its end yet
            time.sleep(0.01)
    reader.join(timeout=10)
    assert received == [b"through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_pipe_nobody_reads_is_refused_without_blocking(tmp_path: Path) -> None:
    """Opening a named pipe for writing would wait for a reader; it is refused at once."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(OutputError, match="no process is reading the named pipe"):
        save_text(fifo, "text")
    assert time.monotonic() - start < 5


def test_a_read_only_folder_is_refused(tmp_path: Path) -> None:
    """The check before the run creates and removes a file: the one sure test."""
    if os.path.isdir("/sys") and os.geteuid() == 0:
        folder = Path("/sys")  # read-only even for root, who ignores permission bits
        reason = "Permission denied|Read-only file system"
    elif os.geteuid() != 0:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        reason = "Permission denied"
    else:  # pragma: no cover - root without /sys
        pytest.skip("no folder root cannot write to")
    with pytest.raises(OutputError, match=reason):
        check_output(folder / "vocmatch-report.json")
    with pytest.raises(OutputError, match=reason):
        save_text(folder / "vocmatch-report.json", "text")


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="no file size limit")
def test_a_file_size_limit_leaves_the_earlier_file(tmp_path: Path) -> None:
    """Under ``ulimit -f`` the write fails with EFBIG (Python ignores SIGXFSZ): the earlier
    report is kept and nothing else is left."""
    target = tmp_path / "report.txt"
    target.write_text("earlier\n", encoding="utf-8")
    script = (
        "import sys\n"
        "from vocmatch.errors import OutputError\nfrom vocmatch.files import save_text\n"
        "try:\n"
        "    save_text(sys.argv[1], 'x' * 1_000_000)\n"
        "except OutputError as error:\n"
        "    print(error)\n"
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    result = subprocess.run(
        [sys.executable, "-c", script, str(target)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"cannot write {target}: File too large\n"
    assert target.read_text(encoding="utf-8") == "earlier\n"
    assert leftovers(tmp_path) == []


def test_two_writers_of_one_path_never_mix(tmp_path: Path) -> None:
    """Concurrent runs writing the same report: whichever renames last wins, and the file
    is always one complete report, never a mix."""
    target = tmp_path / "report.txt"
    contents = [(f"writer {i}\n" * 20_000).encode() for i in range(4)]
    errors: list[BaseException] = []
    seen: set[bytes] = set()

    def write(data: bytes) -> None:
        try:
            for _ in range(25):
                save_bytes(target, data)
                seen.add(target.read_bytes())
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(data,)) for data in contents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert seen <= set(contents)
    assert target.read_bytes() in contents
    assert leftovers(tmp_path) == []


def test_a_leftover_temporary_name_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link (or any file) already at the temporary name the writer draws is left alone:
    the name is created with ``O_EXCL``, and another is drawn."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    taken = tmp_path / ".vocmatch-000000000000.tmp"
    taken.symlink_to(victim)
    draws = iter([bytes(6), bytes([1] * 6)])
    monkeypatch.setattr(output.os, "urandom", lambda n: next(draws))
    target = tmp_path / "report.txt"
    save_text(target, "new\n")
    assert target.read_text(encoding="utf-8") == "new\n"
    assert victim.read_text(encoding="utf-8") == "keep me\n"
    assert taken.is_symlink()
    assert leftovers(tmp_path) == [taken.name]


def test_the_files_being_written_are_listed_for_a_signal_handler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a file is written its temporary file is listed, and
    :func:`remove_temporary_files` (what the command line's signal handlers call) removes
    it; once written, nothing is listed."""
    listed: list[tuple[str, ...]] = []
    write_all = output._write_all

    def watched(descriptor: int, data: bytes) -> None:
        listed.append(temporary_files())
        remove_temporary_files()
        write_all(descriptor, data)

    monkeypatch.setattr(output, "_write_all", watched)
    with pytest.raises(OutputError, match="No such file or directory"):
        save_text(tmp_path / "r.txt", "x\n")  # its temporary file is gone: no rename
    assert len(listed) == 1 and len(listed[0]) == 1
    assert Path(listed[0][0]).parent == tmp_path
    assert temporary_files() == ()
    assert os.listdir(tmp_path) == []


def test_the_report_may_not_be_an_input(tmp_path: Path) -> None:
    """The same file as an input, or a file of an input folder that the next run would read
    as input, is refused; another file in that folder is not."""
    gt = tmp_path / "gt"
    gt.mkdir()
    (gt / "a.xml").write_text("<annotation/>", encoding="utf-8")
    classes = tmp_path / "classes.txt"
    classes.write_text("cat\n", encoding="utf-8")
    folders = [InputFolder(str(gt), (".xml",))]
    with pytest.raises(OutputError, match=r"it is the input file .*classes\.txt"):
        check_output(tmp_path / "." / "classes.txt", files=[classes])
    with pytest.raises(OutputError, match=r"inside the input folder .*gt and would be read"):
        check_output(gt / "a.xml", folders=folders)
    with pytest.raises(OutputError, match=r"inside the input folder"):
        check_output(gt / "sub" / "new.XML", folders=folders)
    check_output(gt / "report.json", folders=folders)
    check_output(tmp_path / "a.xml", folders=folders)

"""Evaluator state files (``.vms``): written by the one writer (whole or not at all, never
through a link, a device or a leftover name), and read only when they are regular files of
bounded size whose signature is checked before the rest is read. Every door -- the
library's ``Evaluator.load`` and ``read_states``, ``vocmatch eval --save-state`` and
``vocmatch merge`` -- refuses a bad state in one line, without a traceback or a hang."""

from __future__ import annotations

import json
import os
import signal
import stat
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import ROOT
from vocmatch import Evaluator, read_states
from vocmatch.cli import EXIT_HANGUP, EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE
from vocmatch.errors import InputError, OutputError, StateError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX files and signals")

DEMO = ROOT / "fixtures" / "demo"
SIGNALS = [
    pytest.param(signal.SIGTERM, EXIT_TERMINATED, "vocmatch: terminated (SIGTERM)", id="term"),
    pytest.param(signal.SIGHUP, EXIT_HANGUP, "vocmatch: hung up (SIGHUP)", id="hup"),
    pytest.param(signal.SIGINT, EXIT_INTERRUPTED, "vocmatch: interrupted", id="int"),
]


def evaluator(*keys: str) -> Evaluator:
    """An evaluator of one matched cat per key."""
    ev = Evaluator("voc12")
    box = np.array([[0.0, 0, 10, 10]])
    for key in keys or ("a",):
        ev.add(key, box, ["cat"], box, [0.9], ["cat"])
    return ev


def names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def default_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def python(
    script: str, *args: str | Path, limits: Callable[[], None] | None = None, timeout: int = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a fresh interpreter: a hang or a runaway read cannot take the test
    run with it."""

    def child() -> None:
        default_signals()
        if limits is not None:
            limits()

    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=child,
    )


def memory_limit(size: int) -> Callable[[], None]:
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return apply


def file_size_limit(size: int) -> Callable[[], None]:
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


# Writing ------------------------------------------------------------------------------------


def test_save_through_a_symbolic_link_replaces_the_file_it_names(tmp_path: Path) -> None:
    """The link stays a link; the file it names holds the state."""
    real = tmp_path / "real.vms"
    real.write_bytes(b"earlier")
    link = tmp_path / "link.vms"
    link.symlink_to(real)
    evaluator("a", "b").save(link)
    assert link.is_symlink()
    assert os.readlink(link) == str(real)
    assert Evaluator.load(real).keys == ["a", "b"]
    assert names_in(tmp_path) == ["link.vms", "real.vms"]


def test_save_into_a_named_pipe_writes_through_it_and_keeps_it(tmp_path: Path) -> None:
    """A named pipe (``--save-state >(ssh host 'cat > s.vms')``) is written, not replaced."""
    pipe = tmp_path / "state.pipe"
    os.mkfifo(pipe)
    received: list[bytes] = []

    def read() -> None:
        with open(pipe, "rb") as stream:
            received.append(stream.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.1)
    ev = evaluator("a")
    ev.save(pipe)
    reader.join(timeout=30)
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    assert received == [ev.to_bytes()]
    assert names_in(tmp_path) == ["state.pipe"]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
@pytest.mark.parametrize(
    ("minor", "error"),
    [
        pytest.param(3, None, id="null"),
        pytest.param(7, "No space left on device", id="full"),
    ],
)
def test_save_onto_a_device_never_replaces_it(
    tmp_path: Path, minor: int, error: str | None
) -> None:
    """``--save-state /dev/null`` (here a copy of the node) writes into the device; the node
    stays a device, and ``/dev/full`` is a full disk in one line."""
    device = tmp_path / "device"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    if error is None:
        evaluator("a").save(device)
    else:
        with pytest.raises(OutputError, match=f"^cannot write {device}: {error}$"):
            evaluator("a").save(device)
    assert stat.S_ISCHR(device.lstat().st_mode)
    assert names_in(tmp_path) == ["device"]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda p, victim: p.symlink_to(victim), id="link-to-a-file"),
        pytest.param(lambda p, victim: p.mkdir(), id="folder"),
    ],
)
def test_save_ignores_what_lies_at_the_name_plus_partial(
    tmp_path: Path, make: Callable[[Path, Path], None]
) -> None:
    """``s.vms.partial`` -- a link to another file, a folder -- is neither written through
    nor in the way: the writer's temporary names are new files (``O_EXCL``)."""
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    make(tmp_path / "s.vms.partial", victim)
    evaluator("a").save(tmp_path / "s.vms")
    assert victim.read_bytes() == b"keep me"
    assert Evaluator.load(tmp_path / "s.vms").keys == ["a"]
    assert names_in(tmp_path) == ["s.vms", "s.vms.partial", "victim.txt"]


SAVE_MANY = """
import sys
import numpy as np
from vocmatch import Evaluator
ev = Evaluator("voc12")
box = np.array([[0.0, 0, 10, 10]])
for k in range(int(sys.argv[2])):
    ev.add(f"{sys.argv[3]}{k}", box, ["cat"], box, [0.9], ["cat"])
for _ in range(40):
    ev.save(sys.argv[1])
"""


def test_two_processes_saving_one_path_at_once(tmp_path: Path) -> None:
    """Each renames a complete state of its own: neither fails, the file is one of the two."""
    target = tmp_path / "s.vms"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", SAVE_MANY, str(target), str(images), prefix],
            cwd=ROOT,
            stderr=subprocess.PIPE,
        )
        for images, prefix in ((200, "x"), (300, "y"))
    ]
    errors = [p.communicate(timeout=120)[1].decode() for p in processes]
    assert [p.returncode for p in processes] == [0, 0], errors
    assert len(Evaluator.load(target)) in (200, 300)
    assert names_in(tmp_path) == ["s.vms"]


SAVE_OVER_LIMIT = """
import sys
import numpy as np
from vocmatch import Evaluator
from vocmatch.errors import OutputError
ev = Evaluator("voc12")
box = np.array([[0.0, 0, 10, 10]])
for k in range(2000):
    ev.add(f"image{k}", box, ["cat"], box, [0.9], ["cat"])
try:
    ev.save(sys.argv[1])
except OutputError as error:
    print(error)
"""


def test_a_full_disk_while_saving_is_one_error_and_leaves_the_earlier_state(
    tmp_path: Path,
) -> None:
    """A file size limit (as a full disk): one :class:`OutputError`, the earlier state as it
    was, no partial or temporary file."""
    target = tmp_path / "s.vms"
    evaluator("a").save(target)
    earlier = target.read_bytes()
    result = python(SAVE_OVER_LIMIT, target, limits=file_size_limit(20_000))
    assert result.stderr == ""
    assert result.stdout == f"cannot write {target}: File too large\n"
    assert target.read_bytes() == earlier
    assert names_in(tmp_path) == ["s.vms"]


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(OSError(28, "No space left on device"), id="disk-full"),
        pytest.param(KeyboardInterrupt(), id="ctrl-c"),
    ],
)
def test_a_failure_while_saving_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    """An error of the system or Ctrl-C in the middle of the write: the earlier state as it
    was and nothing else in the folder."""
    import vocmatch.files as files

    target = tmp_path / "s.vms"
    evaluator("a").save(target)
    earlier = target.read_bytes()

    def failing_write(descriptor: int, data: Any) -> None:
        raise failure

    monkeypatch.setattr(files, "_write_all", failing_write)
    expected = OutputError if isinstance(failure, OSError) else type(failure)
    with pytest.raises(expected):
        evaluator("a", "b").save(target)
    assert target.read_bytes() == earlier
    assert names_in(tmp_path) == ["s.vms"]
    assert files.temporary_files() == ()


def test_eval_save_state_on_a_full_disk_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """``vocmatch eval --save-state`` under a file size limit: ``vocmatch: error: cannot write
    PATH: File too large``, exit 2, nothing left."""
    target = tmp_path / "s.vms"
    result = subprocess.run(
        [sys.executable, "-m", "vocmatch", str(DEMO / "gt"), str(DEMO / "pred"),
         "--save-state", str(target), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        preexec_fn=file_size_limit(100),
    )  # fmt: skip
    assert result.returncode == EXIT_USAGE
    assert result.stderr == f"vocmatch: error: cannot write {target}: File too large\n"
    assert names_in(tmp_path) == []


SLOW_WRITER = """
import sys, time
import vocmatch.files as files
def slow(descriptor, chunks):
    view = memoryview(b"".join(chunks))
    sys.stderr.write("writing\\n")
    sys.stderr.flush()
    while view:
        written = files.os.write(descriptor, view[:64])
        view = view[written:]
        time.sleep(0.05)
files._write_all = slow
from vocmatch.__main__ import main
sys.argv = ["vocmatch", *sys.argv[1:]]
main()
"""


def wait_for_line(process: subprocess.Popen[bytes], line: bytes) -> None:
    """Read the child's stderr up to ``line`` (the test fails if it ends first)."""
    assert process.stderr is not None
    for raw in process.stderr:
        if raw == line:
            return
    pytest.fail(f"the child ended without writing {line!r}")


@pytest.mark.parametrize(("signum", "code", "line"), SIGNALS)
def test_a_signal_while_a_state_is_saved_leaves_the_earlier_state(
    tmp_path: Path, signum: int, code: int, line: str
) -> None:
    """``eval --save-state``: the state is half-written when the signal comes; the earlier
    state is intact and neither a partial nor a temporary file is left."""
    target = tmp_path / "s.vms"
    evaluator("a").save(target)
    earlier = target.read_bytes()
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_WRITER, str(DEMO / "gt"), str(DEMO / "pred"),
         "--save-state", str(target), "--quiet"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals,
    )  # fmt: skip
    wait_for_line(process, b"writing\n")
    time.sleep(0.1)
    process.send_signal(signum)
    _, rest = process.communicate(timeout=60)
    assert process.returncode == code
    assert rest.decode() == f"{line}\n"
    assert target.read_bytes() == earlier
    assert names_in(tmp_path) == ["s.vms"]


SLOW_CHECK = """
import sys, time
import vocmatch.files as files
create = files._create_temporary
def slow(*args):
    descriptor = create(*args)
    sys.stderr.write("checking\\n")
    sys.stderr.flush()
    time.sleep(30)
    return descriptor
files._create_temporary = slow
from vocmatch.__main__ import main
sys.argv = ["vocmatch", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize(("signum", "code", "line"), SIGNALS)
@pytest.mark.parametrize("option", ["--save-state", "-o"])
def test_a_signal_while_the_output_folder_is_checked_leaves_nothing(
    tmp_path: Path, option: str, signum: int, code: int, line: str
) -> None:
    """Before any work, a file is created and removed to check that the folder can be
    written; a signal in between leaves no ``.vocmatch-*.tmp`` behind."""
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_CHECK, str(DEMO / "gt"), str(DEMO / "pred"),
         option, str(tmp_path / "out")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals,
    )  # fmt: skip
    wait_for_line(process, b"checking\n")
    process.send_signal(signum)
    _, rest = process.communicate(timeout=60)
    assert process.returncode == code
    assert rest.decode() == f"{line}\n"
    assert names_in(tmp_path) == []


# Reading: what is not a regular file --------------------------------------------------------

LOAD = """
import sys
from vocmatch import Evaluator, read_states
from vocmatch.errors import VocmatchError
try:
    if sys.argv[1] == "load":
        Evaluator.load(sys.argv[2])
    else:
        read_states([sys.argv[2]])
except VocmatchError as error:
    print(f"{type(error).__name__}: {error}")
"""


def special_file(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A path that is no regular file, and what the refusal calls it."""
    if kind == "fifo":
        path = tmp_path / "s.vms"
        os.mkfifo(path)
        return path, "a named pipe"
    if kind.startswith("link-to-"):
        path = tmp_path / "s.vms"
        path.symlink_to(f"/dev/{kind.removeprefix('link-to-')}")
        return path, "a character device"
    return Path(f"/dev/{kind}"), "a character device"


SPECIAL = [
    pytest.param("fifo", id="named-pipe"),
    pytest.param("zero", id="dev-zero"),
    pytest.param("urandom", id="dev-urandom"),
    pytest.param("link-to-zero", id="link-to-dev-zero"),
]


@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("door", ["load", "read_states"])
def test_a_state_that_is_no_regular_file_is_refused_at_once(
    tmp_path: Path, kind: str, door: str
) -> None:
    """A named pipe nobody writes, ``/dev/zero``, a link to it: one StateError naming the
    path and what it is, at once, with no byte read (the child has 1 GiB of memory)."""
    path, what = special_file(tmp_path, kind)
    result = python(LOAD, door, path, limits=memory_limit(1 << 30), timeout=30)
    assert result.stderr == ""
    assert result.stdout == f"StateError: {path}: not a regular file: {what}\n"


@pytest.mark.parametrize("kind", SPECIAL)
def test_merge_refuses_a_state_that_is_no_regular_file(tmp_path: Path, kind: str) -> None:
    """``vocmatch merge``: one line and exit 2, never a hang."""
    path, what = special_file(tmp_path, kind)
    good = tmp_path / "good.vms"
    evaluator("a").save(good)
    result = subprocess.run(
        [sys.executable, "-m", "vocmatch", "merge", str(good), str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
        preexec_fn=memory_limit(1 << 30),
    )  # fmt: skip
    assert result.returncode == EXIT_USAGE
    assert result.stdout == ""
    assert result.stderr == f"vocmatch: error: {path}: not a regular file: {what}\n"


# Reading: size and signature first --------------------------------------------------------


def sparse_file(path: Path, size: int, head: bytes) -> Path:
    """A file of ``size`` bytes that takes no room: ``head``, then a hole."""
    with open(path, "wb") as stream:
        stream.write(head)
        stream.truncate(size)
    return path


@pytest.mark.parametrize(
    ("size", "head", "message"),
    [
        pytest.param(
            3 << 30, b"PK\x03\x04" + bytes(12), "not a vocmatch state (no VMSTATE signature)",
            id="3GiB-zip",
        ),
        pytest.param(
            3 << 30, struct.pack("<8sII", b"VMSTATE\0", 1, 10),
            "state format version 1; this vocmatch reads versions 2, 3, 4, 5, 6 and 7", id="3GiB-version-1",
        ),
        pytest.param(
            3 << 30, struct.pack("<8sII", b"VMSTATE\0", 2, 0xFFFFFFF0),
            "truncated (header of 4294967280 bytes runs past the end)", id="3GiB-long-header",
        ),
        pytest.param(
            6 << 30, struct.pack("<8sII", b"VMSTATE\0", 2, 10),
            "larger than the 4,294,967,296-byte limit of a state (6,442,450,944 bytes)",
            id="6GiB",
        ),
    ],
)  # fmt: skip
def test_a_large_file_is_judged_by_its_first_bytes_and_its_size(
    tmp_path: Path, size: int, head: bytes, message: str
) -> None:
    """Gigabytes that are not a state are refused from the 16 bytes of their signature or
    from their size, without being read (the child has 1 GiB of memory)."""
    path = sparse_file(tmp_path / "s.vms", size, head)
    result = python(LOAD, "load", path, limits=memory_limit(1 << 30))
    assert result.stderr == ""
    assert result.stdout == f"StateError: {path}: {message}\n"


def test_load_takes_another_size_limit(tmp_path: Path) -> None:
    """``max_bytes`` (library): a state over it is refused from its size."""
    path = tmp_path / "s.vms"
    evaluator("a").save(path)
    size = path.stat().st_size
    with pytest.raises(StateError, match=rf"^{path}: larger than the 100-byte limit of a state"):
        Evaluator.load(path, max_bytes=100)
    with pytest.raises(StateError, match="larger than the 100-byte limit"):
        read_states([path], max_bytes=100)
    assert Evaluator.load(path, max_bytes=size).keys == ["a"]


# Reading: the header, every field checked ---------------------------------------------------


def with_header(data: bytes, change: Callable[[dict[str, Any]], bytes]) -> bytes:
    """``data`` (a state) with its header rewritten by ``change`` and a valid checksum."""
    magic, version, size = struct.unpack_from("<8sII", data)
    header = change(json.loads(data[16 : 16 + size]))
    body = struct.pack("<8sII", magic, version, len(header)) + header + data[16 + size : -4]
    return body + struct.pack("<I", zlib.crc32(body))


def option(path: list[str], value: object) -> Callable[[dict[str, Any]], bytes]:
    def change(header: dict[str, Any]) -> bytes:
        place = header
        for name in path[:-1]:
            place = place[name]
        place[path[-1]] = value
        return json.dumps(header).encode()

    return change


def raw(transform: Callable[[str], str]) -> Callable[[dict[str, Any]], bytes]:
    return lambda header: transform(json.dumps(header)).encode()


CONV = ["options", "conventions"]
CRAFTED = [
    pytest.param(option([*CONV, "iou_threshold"], "x"),
                 "options: conventions.iou_threshold is 'x', not a number in [0, 1]",
                 id="iou-threshold-string"),
    pytest.param(option([*CONV, "iou_threshold"], 1.5),
                 "options: conventions.iou_threshold is 1.5, not a number in [0, 1]",
                 id="iou-threshold-out-of-range"),
    pytest.param(option([*CONV, "match_rule"], "zzz"),
                 "options: conventions.match_rule is 'zzz', not one of 'unmatched', 'devkit', "
                 "'unmatched-first', 'iou-order'", id="match-rule-unknown"),
    pytest.param(option([*CONV, "difficult"], 3),
                 "options: conventions.difficult is 3, not one of 'ignore', 'count', 'crowd', "
                 "'drop'", id="difficult-number"),
    pytest.param(option([*CONV, "interpolation"], "q"),
                 "options: conventions.interpolation is 'q', not one of 'all-point', "
                 "'11-point', '101-point', '101-point-trapezoid', '101-point-trapezoid-to-1'",
                 id="interpolation-unknown"),
    pytest.param(option([*CONV, "pixel_inclusive"], 1),
                 "options: conventions.pixel_inclusive is 1, not true or false",
                 id="flag-number"),
    pytest.param(option([*CONV, "ap_thresholds"], 5),
                 "options: conventions.ap_thresholds is 5, not a list of numbers in [0, 1]",
                 id="ap-thresholds-number"),
    pytest.param(option([*CONV, "max_dets"], "x"),
                 "options: conventions.max_dets is 'x', not a whole number above 0 or null",
                 id="max-dets-string"),
    pytest.param(option([*CONV, "sweep_thresholds"], [0.9, 0.5]),
                 "options: conventions.sweep_thresholds is [0.9, 0.5], not in ascending order",
                 id="sweep-unsorted"),
    pytest.param(option([*CONV, "coco_stats"], "yes"),
                 "options: conventions.coco_stats is 'yes', not true or false",
                 id="coco-stats-string"),
    pytest.param(option([*CONV, "summary"], "voc"),
                 "options: conventions.summary is 'voc', not one of 'ultralytics'",
                 id="summary-names-only-ultralytics"),
    pytest.param(option([*CONV, "protocol"], 5),
                 "options: conventions.protocol is 5, not a string", id="protocol-number"),
    pytest.param(option([*CONV, "extra"], 1),
                 "options: conventions.extra is unknown", id="conventions-unknown-field"),
    pytest.param(option(["options", "score_thresholds"], {"default": "x", "per_class": []}),
                 "options: score_thresholds.default is 'x', not a number or null",
                 id="score-threshold-string"),
    pytest.param(option(["options", "score_thresholds"], {"default": True, "per_class": []}),
                 "options: score_thresholds.default is True, not a number or null",
                 id="score-threshold-bool"),
    pytest.param(option(["options", "score_thresholds"],
                        {"default": None, "per_class": [[1, 0.5]]}),
                 "options: score_thresholds.per_class is [[1, 0.5]], not a list of "
                 "[class, number] pairs", id="per-class-name-number"),
    pytest.param(option(["options", "fold_case"], "x"),
                 "options: fold_case is 'x', not true or false", id="fold-case-string"),
    pytest.param(option(["options"], []),
                 "options is not an object", id="options-list"),
    pytest.param(option(["options"], {"conventions": {"protocol": "x"}}),
                 "options: fold_case is missing", id="options-field-missing"),
    pytest.param(option(["names"], [1]), "names", id="names-number"),
    pytest.param(option(["notes", "scored"], "x"), "notes", id="notes-scored-string"),
    pytest.param(option(["notes", "names"], "cat"), "notes", id="notes-names-string"),
    pytest.param(option(["notes", "odd"], [[["x", 0]], [], []]), "notes", id="notes-odd-count-0"),
    pytest.param(option(["notes", "preds"], -1), "notes", id="notes-count-negative"),
    pytest.param(option(["notes", "preds"], 1.5), "notes", id="notes-count-fraction"),
    pytest.param(option(["keys"], ["a", 1]), "image keys, paths or classes", id="keys-number"),
    pytest.param(option(["keys"], "a"), "image keys, paths or classes", id="keys-string"),
    pytest.param(option(["class_names"], ["cat", 1]), "image keys, paths or classes", id="class-names-number"),
    pytest.param(option(["class_names"], "cat"), "image keys, paths or classes", id="class-names-string"),
    pytest.param(option(["gt_paths"], "a"), "image keys, paths or classes", id="gt-paths-string"),
    pytest.param(option(["pred_paths"], [1]), "image keys, paths or classes", id="pred-paths-number"),
    pytest.param(option(["beyond"], "x"), "image keys, paths or classes", id="beyond-string"),
    pytest.param(option(["unscored"], 1), "image keys, paths or classes", id="unscored-number"),
    pytest.param(option(["coco_all_from_main"], None), "image keys, paths or classes", id="from-main-null"),
    pytest.param(option(["class_table"], [["1", "a"]]), "class_table", id="class-id-string"),
    pytest.param(option(["class_table"], [[1, "a"], [1, "b"]]),
                 "class_table: an id repeats", id="class-id-twice"),
    pytest.param(raw(lambda text: text[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"),
                 "nested too deeply", id="deep-nesting"),
    pytest.param(raw(lambda text: text[:-1] + ', "numbered": [[0, 1' + "0" * 5000 + "]]}"),
                 "a number too long to read", id="5000-digit-number"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "message"), CRAFTED)
def test_a_crafted_header_with_a_valid_checksum_is_one_state_error(
    tmp_path: Path, change: Callable[[dict[str, Any]], bytes], message: str
) -> None:
    """Each malformed field is a StateError naming the file and the field, never a
    TypeError, RecursionError or ValueError, and never evaluated as if it were valid."""
    path = tmp_path / "s.vms"
    path.write_bytes(with_header(evaluator("a").to_bytes(), change))
    expected = f"{path}: corrupted header ({message})"
    with pytest.raises(StateError) as caught:
        Evaluator.load(path)
    assert str(caught.value) == expected
    with pytest.raises(StateError) as caught:
        Evaluator.from_bytes(path.read_bytes(), str(path))
    assert str(caught.value) == expected


def test_every_convention_is_checked_in_a_header() -> None:
    """A field added to Conventions gets its check in state files (the header records the
    summary kind as ``coco_stats``, with ``summary`` beside it for the ``ultralytics``
    summary only, every other field under its own name)."""
    import dataclasses

    from vocmatch.core.protocol import Conventions, protocol
    from vocmatch.evaluation.shards.state_options import CONVENTION_CHECKS, conventions_header

    header = conventions_header(Conventions("mine"))
    assert len(header) == len(dataclasses.fields(Conventions))
    assert sorted(CONVENTION_CHECKS) == sorted([*header, "summary"])
    assert sorted(conventions_header(protocol("ultralytics"))) == sorted(CONVENTION_CHECKS)


@pytest.mark.parametrize(
    ("name", "coco_stats", "summary"),
    [
        pytest.param("voc12", False, "voc", id="voc12"),
        pytest.param("default", False, "voc", id="default"),
        pytest.param("coco", True, "coco", id="coco"),
    ],
)
def test_a_states_header_records_the_summary_kind_as_coco_stats(
    name: str, coco_stats: bool, summary: str
) -> None:
    """States of format versions 2-4 record the summary kind as ``coco_stats``; it is read
    back as the kind, and a header without it (an older state) has the ``voc`` summary."""
    ev = Evaluator(name)
    box = np.array([[0.0, 0, 10, 10]])
    ev.add("a", box, ["cat"], box, [0.9], ["cat"])
    data = ev.to_bytes()
    size = struct.unpack_from("<8sII", data)[2]
    conventions = json.loads(data[16 : 16 + size])["options"]["conventions"]
    assert conventions["coco_stats"] is coco_stats
    assert "summary" not in conventions
    assert Evaluator.from_bytes(data, "s.vms").conventions.summary == summary
    if not coco_stats:

        def without(header: dict[str, Any]) -> bytes:
            del header["options"]["conventions"]["coco_stats"]
            return json.dumps(header).encode()

        older = Evaluator.from_bytes(with_header(data, without), "s.vms")
        assert older.conventions == ev.conventions


def test_states_sharing_a_5000_digit_key_are_refused_in_one_short_line(tmp_path: Path) -> None:
    """Past Python's 4,300-digit limit of int(): the shared key is named, shortened."""
    key = "1" * 5000
    paths = [tmp_path / "1.vms", tmp_path / "2.vms"]
    for path in paths:
        evaluator(key).save(path)
    with pytest.raises(StateError) as caught:
        read_states(paths)
    assert str(caught.value) == (
        f"cannot merge states that share images: {key[:50]!r}... (5,000 characters)"
    )


@pytest.mark.parametrize(
    "paths",
    [
        pytest.param("s1.vms", id="str"),
        pytest.param(Path("s1.vms"), id="path"),
        pytest.param(b"s1.vms", id="bytes"),
    ],
)
def test_read_states_refuses_one_path_for_a_sequence(paths: Any) -> None:
    """A string is a sequence of letters: it is refused, not read letter by letter."""
    with pytest.raises(InputError) as caught:
        read_states(paths)
    assert str(caught.value) == (
        "Expected `paths` to be a sequence of paths, got the one path 's1.vms' "
        "(give [path] for one state)"
    )


def test_merge_takes_another_size_limit(tmp_path: Path) -> None:
    """``merge --max-file-size``: a state over it is one line and exit 2."""
    from tests.conftest import run_cli

    path = tmp_path / "s.vms"
    evaluator("a").save(path)
    size = path.stat().st_size
    code, stdout, stderr = run_cli("merge", str(path), "--max-file-size", "100")
    assert (code, stdout) == (EXIT_USAGE, "")
    assert stderr == (
        f"vocmatch: error: {path}: larger than the 100-byte limit of a state ({size:,} bytes)\n"
    )
    code, _, stderr = run_cli("merge", str(path), "--max-file-size", str(size), "--format", "json")
    # Read whole: a state made from arrays records no shard, which merge notes.
    assert (code, stderr) == (
        0,
        f"vocmatch: warning: completeness of the merge not checked: {path} records no shard"
        " of a run (made from arrays, or saved by an earlier vocmatch)\n",
    )


# Reading: the format's own bounds -----------------------------------------------------------


def framed(header: bytes, arrays: bytes = b"", version: int = 4) -> bytes:
    """A state file's bytes around ``header`` and ``arrays``, with a valid checksum."""
    body = struct.pack("<8sII", b"VMSTATE\0", version, len(header)) + header + arrays
    return body + struct.pack("<I", zlib.crc32(body))


def declaring(*entries: object) -> bytes:
    """A header whose array table is ``entries``."""
    return json.dumps({"arrays": list(entries)}).encode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(framed(b"")[:16], "not a vocmatch state (only 16 bytes)", id="16-bytes"),
        pytest.param(framed(b"")[:19], "not a vocmatch state (only 19 bytes)", id="19-bytes"),
        pytest.param(framed(b""), "corrupted header (Expecting value: line 1 column 1 (char 0))",
                     id="20-bytes-empty-header"),
        pytest.param(framed(declaring({"name": "a", "dtype": "|u1", "shape": [2**48]})),
                     "array 'a' declares shape [281474976710656]", id="dimension-2**48"),
        pytest.param(framed(declaring({"name": "a", "dtype": "|u1", "shape": [2**48 - 1]})),
                     "arrays declare 281474976710655 bytes but the file holds 0",
                     id="dimension-2**48-1"),
        pytest.param(framed(declaring({"name": "a", "dtype": "|u1", "shape": [1, 1, 1]})),
                     "array 'a' declares shape [1, 1, 1]", id="three-dimensions"),
        pytest.param(framed(declaring({"name": "a", "dtype": "|u1", "shape": [-1]})),
                     "array 'a' declares shape [-1]", id="dimension-negative"),
        pytest.param(framed(declaring({"name": "a", "dtype": "|u1", "shape": [0]},
                                      {"name": "a", "dtype": "|u1", "shape": [0]})),
                     "corrupted header (array name 'a')", id="name-twice"),
        pytest.param(framed(declaring({"name": 1, "dtype": "|u1", "shape": [0]})),
                     "corrupted header (array name 1)", id="name-number"),
    ],
)  # fmt: skip
def test_the_format_bounds_are_exact(data: bytes, message: str) -> None:
    """Each bound of the frame and of the array table, on either side: the shortest file,
    the largest dimension, a repeated or unnamed array."""
    from vocmatch.evaluation.shards.state import read_state

    with pytest.raises(StateError) as caught:
        read_state(data, "s.vms")
    assert str(caught.value) == f"s.vms: {message}"


def test_a_state_without_arrays_reads_back() -> None:
    """A header alone, its last byte just before the checksum, is a whole state."""
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    state = read_state(write_state(RawState({"a": 1}, {})))
    assert (dict(state.header), dict(state.arrays)) == ({"a": 1}, {})
    empty = read_state(framed(declaring({"name": "a", "dtype": "<u4", "shape": [0, 3]})))
    assert empty.arrays["a"].shape == (0, 3)


def fstat_after_open(
    monkeypatch: pytest.MonkeyPatch, change: Callable[[os.stat_result], os.stat_result]
) -> None:
    """``os.fstat`` as it is when a file is opened, then ``change`` of it once (the reader's
    own look at the open file), then as it is: what a state reader sees of a file that
    changes between its open and its read."""
    real = os.fstat
    calls = []

    def fstat(descriptor: int) -> os.stat_result:
        calls.append(descriptor)
        found = real(descriptor)
        return change(found) if len(calls) == 2 else found

    monkeypatch.setattr(os, "fstat", fstat)


def test_a_state_that_grows_past_the_limit_while_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size taken is one byte short of the file (it grew): one byte past the limit is
    read, and the state is refused by its size, not read in part."""
    path = tmp_path / "s.vms"
    evaluator("a").save(path)
    size = path.stat().st_size

    def shorter(found: os.stat_result) -> os.stat_result:
        fields = list(found)
        fields[stat.ST_SIZE] = size - 1
        return os.stat_result(fields)

    fstat_after_open(monkeypatch, shorter)
    with pytest.raises(StateError) as caught:
        Evaluator.load(path, max_bytes=size - 1)
    assert str(caught.value) == f"{path}: larger than the {size - 1:,}-byte limit of a state"


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        pytest.param(OSError(5, "Input/output error"), "Input/output error", id="strerror"),
        pytest.param(OSError("device gone"), "device gone", id="no-strerror"),
    ],
)
def test_a_state_that_fails_while_read_names_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, reason: str
) -> None:
    """The system's reason, once, after the path: never ``None`` nor ``[Errno 5]``."""
    path = tmp_path / "s.vms"
    evaluator("a").save(path)

    def failing(found: os.stat_result) -> os.stat_result:
        raise error

    fstat_after_open(monkeypatch, failing)
    with pytest.raises(StateError) as caught:
        Evaluator.load(path)
    assert str(caught.value) == f"{path}: cannot read state: {reason}"


# Reading: the header's options, field by field ----------------------------------------------


def options(conventions: dict[str, object] | None = None, **fields: object) -> dict[str, Any]:
    """A header's ``options``: protocol ``p``, ``conventions`` and ``fields`` over the
    defaults."""
    found: dict[str, Any] = {"fold_case": False, "score_thresholds": None, **fields}
    return {"conventions": {"protocol": "p", **(conventions or {})}, **found}


def conventions(**fields: Any) -> Any:
    from vocmatch.core.protocol import Conventions

    return Conventions(protocol=fields.pop("protocol", "p"), **fields)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(options({"iou_threshold": 0}), (conventions(iou_threshold=0.0), False, None),
                     id="iou-0-made-float"),
        pytest.param(options({"iou_threshold": 1}), (conventions(iou_threshold=1.0), False, None),
                     id="iou-1-made-float"),
        pytest.param(options({"max_dets": 1}), (conventions(max_dets=1), False, None),
                     id="max-dets-1"),
        pytest.param(options({"ap_thresholds": [0.5, 1]}),
                     (conventions(ap_thresholds=(0.5, 1.0)), False, None), id="ap-thresholds"),
        pytest.param(options({"sweep_thresholds": [0.5, 0.5]}),
                     (conventions(sweep_thresholds=(0.5, 0.5)), False, None), id="sweep-equal"),
        pytest.param(options({"match_rule": "devkit", "difficult": "crowd",
                              "interpolation": "11-point", "strict_threshold": True,
                              "pixel_inclusive": True, "coco_stats": True}, fold_case=True),
                     (conventions(match_rule="devkit", difficult="crowd",
                                  interpolation="11-point", strict_threshold=True,
                                  pixel_inclusive=True, summary="coco"), True, None),
                     id="every-choice"),
        pytest.param(options(score_thresholds={"default": 0, "per_class": [["cat", 1]]}),
                     (conventions(), False, "ScoreThresholds(default=0.0, per_class=(('cat', 1.0),))"),
                     id="score-thresholds-made-float"),
    ],
)  # fmt: skip
def test_the_options_of_a_header_are_read_exactly(given: object, expected: Any) -> None:
    """Every accepted field, at its bounds, read as the type the evaluator uses (a JSON
    integer where a float is meant becomes a float)."""
    from vocmatch.evaluation.shards.state_options import options_of_header

    found = options_of_header(given, "s.vms")
    made, fold_case, thresholds = expected
    assert (repr(found[0]), found[1]) == (repr(made), fold_case)
    assert (None if found[2] is None else repr(found[2])) == thresholds


PER_CLASS = "not a list of [class, number] pairs"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        pytest.param([], "options is not an object", id="options-list"),
        pytest.param({"conventions": {"protocol": "p"}, "fold_case": False},
                     "options: score_thresholds is missing", id="score-thresholds-missing"),
        pytest.param(options(fold_case=1), "options: fold_case is 1, not true or false",
                     id="fold-case-number"),
        pytest.param({**options(), "conventions": []},
                     "options: conventions is [], not an object", id="conventions-list"),
        pytest.param(options({"zz": 1, "aa": 2}),
                     "options: conventions.aa is unknown", id="unknowns-first-named"),
        pytest.param({**options(), "conventions": {"iou_threshold": 0.5}},
                     "options: conventions.protocol is missing", id="protocol-missing"),
        pytest.param(options({"iou_threshold": 1.0000001}),
                     "options: conventions.iou_threshold is 1.0000001, not a number in [0, 1]",
                     id="iou-above-1"),
        pytest.param(options({"iou_threshold": -1e-7}),
                     "options: conventions.iou_threshold is -1e-07, not a number in [0, 1]",
                     id="iou-below-0"),
        pytest.param(options({"iou_threshold": True}),
                     "options: conventions.iou_threshold is True, not a number in [0, 1]",
                     id="iou-bool"),
        pytest.param(options({"max_dets": 0}),
                     "options: conventions.max_dets is 0, not a whole number above 0 or null",
                     id="max-dets-0"),
        pytest.param(options({"max_dets": True}),
                     "options: conventions.max_dets is True, not a whole number above 0 or null",
                     id="max-dets-bool"),
        pytest.param(options({"ap_thresholds": []}),
                     "options: conventions.ap_thresholds is [], not a list of numbers in [0, 1]",
                     id="ap-thresholds-empty"),
        pytest.param(options({"sweep_thresholds": [0.5, "x"]}),
                     "options: conventions.sweep_thresholds is [0.5, 'x'], not a list of numbers"
                     " in [0, 1]", id="sweep-string"),
        pytest.param(options({"match_rule": "z" * 58}),
                     f"options: conventions.match_rule is '{'z' * 58}', not one of 'unmatched',"
                     " 'devkit', 'unmatched-first', 'iou-order'", id="value-of-60-characters-whole"),
        pytest.param(options({"match_rule": "z" * 59}),
                     f"options: conventions.match_rule is '{'z' * 56}..., not one of 'unmatched',"
                     " 'devkit', 'unmatched-first', 'iou-order'", id="value-of-61-characters-shortened"),
        pytest.param(options(score_thresholds={"default": None}),
                     "options: score_thresholds is {'default': None}, not an object of default"
                     " and per_class", id="per-class-missing"),
        pytest.param(options(score_thresholds=[]),
                     "options: score_thresholds is [], not an object of default and per_class",
                     id="score-thresholds-list"),
        pytest.param(options(score_thresholds={"default": float("nan"), "per_class": []}),
                     "options: score_thresholds.default is nan, not a number or null",
                     id="default-nan"),
        pytest.param(options(score_thresholds={"default": None, "per_class": [["cat", 1, 2]]}),
                     f"options: score_thresholds.per_class is [['cat', 1, 2]], {PER_CLASS}",
                     id="per-class-triple"),
        pytest.param(options(score_thresholds={"default": None, "per_class": [["cat"]]}),
                     f"options: score_thresholds.per_class is [['cat']], {PER_CLASS}",
                     id="per-class-single"),
        pytest.param(options(score_thresholds={"default": None, "per_class": [["cat", np.inf]]}),
                     f"options: score_thresholds.per_class is [['cat', inf]], {PER_CLASS}",
                     id="per-class-infinite"),
        pytest.param(options(score_thresholds={"default": None, "per_class": "cat"}),
                     f"options: score_thresholds.per_class is 'cat', {PER_CLASS}",
                     id="per-class-string"),
    ],
)  # fmt: skip
def test_each_bad_option_of_a_header_is_named(given: object, message: str) -> None:
    """One StateError naming the file and the field, its value shortened past 60
    characters."""
    from vocmatch.evaluation.shards.state_options import options_of_header

    with pytest.raises(StateError) as caught:
        options_of_header(given, "s.vms")
    assert str(caught.value) == f"s.vms: corrupted header ({message})"


# Reading: the records, every field checked against the others --------------------------------


def two_classes() -> bytes:
    """A state of two images, ``a`` with a cat and ``b`` with a dog, each matched."""
    ev = Evaluator("voc12")
    box = np.array([[0.0, 0, 10, 10]])
    for key, name in (("a", "cat"), ("b", "dog")):
        ev.add(key, box, [name], box, [0.9], [name])
    return ev.to_bytes()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("keys", ["a", "a"], id="image-key-twice"),
        pytest.param("class_names", ["cat", "cat"], id="class-twice"),
        pytest.param("class_names", ["dog", "cat"], id="classes-unsorted"),
    ],
)
def test_a_header_whose_keys_or_classes_repeat_is_refused(field: str, value: list[str]) -> None:
    """Image keys and class names are each listed once, class names sorted: a header
    breaking either alone (its arrays fitting it) is a corrupted header."""
    data = with_header(two_classes(), option([field], value))
    with pytest.raises(StateError) as caught:
        Evaluator.from_bytes(data, "s.vms")
    assert str(caught.value) == "s.vms: corrupted header (an image key or class repeats)"


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        pytest.param([], "uint8", id="empty"),
        pytest.param([0, 255], "uint8", id="255"),
        pytest.param([256], "uint16", id="256"),
        pytest.param([2**16 - 1], "uint16", id="2**16-1"),
        pytest.param([2**16], "uint32", id="2**16"),
        pytest.param([2**32 - 1], "uint32", id="2**32-1"),
        pytest.param([2**32], "uint64", id="2**32"),
        pytest.param([2**64 - 1], "uint64", id="2**64-1"),
    ],
)
def test_a_states_integers_are_stored_in_the_narrowest_type(values: list[int], dtype: str) -> None:
    """Each integer array of a state takes the smallest unsigned type that holds its
    values exactly (the bytes a state takes, and what a reader of the format meets)."""
    from vocmatch.evaluation.shards.state_records import narrowest_int

    given = np.array(values, dtype=np.uint64)
    stored = narrowest_int(given)
    assert stored.dtype == np.dtype(dtype)
    assert stored.tolist() == values


def test_a_state_matched_at_63_thresholds_keeps_every_flag() -> None:
    """63 IoU thresholds (the most records hold): a prediction matched at all of them has
    flags 2**63 - 1, stored as uint64 and read back exactly."""
    import dataclasses

    from vocmatch.core.protocol import protocol
    from vocmatch.evaluation.shards.state import read_state

    sweep = tuple(k / 100 for k in range(1, 64))
    ev = Evaluator(dataclasses.replace(protocol("default"), sweep_thresholds=sweep))
    box = np.array([[0.0, 0, 10, 10]])
    ev.add("a", box, ["cat"], box, [0.9], ["cat"])
    data = ev.to_bytes()
    flags = read_state(data).arrays["pred_matched"]
    assert (flags.dtype, flags.tolist()) == (np.dtype(np.uint64), [2**63 - 1])
    loaded = Evaluator.from_bytes(data, "s.vms")
    assert loaded.to_bytes() == data
    assert loaded.result().summary.map == ev.result().summary.map == 1.0


def test_predictions_out_of_class_order_in_an_image_are_refused() -> None:
    """An image's predictions are stored class by class: two whose classes are one apart
    and out of order are a corrupted state, as any others are."""
    from tests.evaluation.test_incremental import edited_array

    ev = Evaluator("voc12")
    boxes = np.array([[0.0, 0, 10, 10], [20, 20, 30, 30]])
    ev.add("a", boxes, ["cat", "dog"], boxes, [0.9, 0.8], ["cat", "dog"])
    data = edited_array(ev.to_bytes(), "pred_label", lambda v: v[::-1])
    with pytest.raises(StateError) as caught:
        Evaluator.from_bytes(data, "s.vms")
    assert str(caught.value) == "s.vms: array 'pred_label' is not sorted within each image"

"""Command-line values are checked where they enter: a threshold that is NaN, infinite or
out of range, and an empty path, are usage errors (exit 2, no traceback) before any work;
--jobs is capped at the cores and the files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES, ROOT, run_cli
from vocmatch.cli import EXIT_OK, EXIT_USAGE
from vocmatch.readers.scan import PURE_READER_VARIABLE, active_reader

DEMO = FIXTURES / "demo"
DIFF = FIXTURES / "diff"
SEG = FIXTURES / "seg" / "three_class"
EVAL = [str(DEMO / "gt"), str(DEMO / "pred")]
DIFF_RUN = ["diff", str(DIFF / "gt"), str(DIFF / "pred_a"), str(DIFF / "pred_b")]


def run(args: list[str]) -> tuple[int, str, str]:
    return run_cli(*args)


#: Every option that takes a number of a bounded or finite kind, with its command.
THRESHOLDS = [
    pytest.param([*EVAL, "--iou"], id="eval-iou"),
    pytest.param([*EVAL, "--background-iou"], id="background-iou"),
    pytest.param(["merge", str(ROOT / "README.md"), "--background-iou"], id="merge-background-iou"),
    pytest.param([*EVAL, "--beta"], id="beta"),
    pytest.param([*EVAL, "--score-threshold"], id="score-threshold"),
    pytest.param([*EVAL, "--fail-under", "map="], id="fail-under"),
    pytest.param([*EVAL, "--fail-under", "car:recall="], id="fail-under-class"),
    pytest.param([*DIFF_RUN, "--iou"], id="diff-iou"),
    pytest.param([*DIFF_RUN, "--fail-on-regression", "map="], id="fail-on-regression"),
    pytest.param(["lint", str(DEMO / "gt"), "--duplicate-iou"], id="lint-duplicate-iou"),
    pytest.param(["lint", str(DEMO / "gt"), "--tolerance"], id="lint-tolerance"),
    pytest.param(["iou", "0,0,1,1", "0,0,1,1", "--threshold"], id="iou-threshold"),
    pytest.param(["iou", "--labels", "a", "a", "--threshold"], id="iou-labels-threshold"),
]


def with_value(command: list[str], value: str) -> list[str]:
    """The command with ``value`` after its last option (joined to a ``NAME=`` gate)."""
    if command[-1].endswith("="):
        return [*command[:-1], command[-1] + value]
    return [*command, value]


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999"])
@pytest.mark.parametrize("command", THRESHOLDS)
def test_a_threshold_that_is_not_finite_is_a_usage_error(command: list[str], value: str) -> None:
    """NaN passes every comparison click makes; each option refuses it itself."""
    code, out, err = run(with_value(command, value))
    assert code == EXIT_USAGE
    assert out == ""
    assert "Error: Invalid value for" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("0_5", id="underscore"),
        pytest.param("\u0660.\u0665", id="arabic-indic-digits"),
        pytest.param("\uff10.5", id="fullwidth-digit"),
        pytest.param("0x1", id="hexadecimal"),
        pytest.param("0 .5", id="space-inside"),
    ],
)
@pytest.mark.parametrize("command", THRESHOLDS)
def test_a_threshold_outside_the_number_grammar_is_a_usage_error(
    command: list[str], value: str
) -> None:
    """Options read numbers in the annotation files' one grammar: float() would read
    ``0_1`` as 1.0 and other scripts' digits, silently changing a gate or a threshold."""
    code, out, err = run(with_value(command, value))
    assert code == EXIT_USAGE
    assert out == ""
    assert repr(value) in err and "is not a number" in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["0_5", "1_0", "\u0663", "\uff11"])
@pytest.mark.parametrize(
    "command",
    [
        pytest.param([*EVAL, "--max-fp"], id="max-fp"),
        pytest.param([*EVAL, "--jobs"], id="jobs"),
        pytest.param([*EVAL, "--bootstrap"], id="bootstrap"),
    ],
)
def test_a_count_that_is_not_ascii_digits_is_a_usage_error(command: list[str], value: str) -> None:
    """A count takes ASCII digits only: int() reads ``1_0`` as 10 and other scripts' digits,
    so ``--max-fp 1_0`` would gate at 10."""
    code, out, err = run([*command, value])
    assert (code, out) == (EXIT_USAGE, "")
    assert f"{value!r} is not a whole number" in err


#: Options whose value is a fraction in [0, 1], and a value just outside.
FRACTIONS = [p for p in THRESHOLDS if p.id not in ("beta", "score-threshold", "lint-tolerance")]


@pytest.mark.parametrize("value", ["1.5", "-0.1", "1.0000001"])
@pytest.mark.parametrize("command", FRACTIONS)
def test_a_threshold_outside_0_1_is_a_usage_error(command: list[str], value: str) -> None:
    """Every fraction is checked against [0, 1] (a regression delta against [-1, 1])."""
    if command[-2] == "--fail-on-regression" and value == "-0.1":
        pytest.skip("a regression delta may be negative: it lies in [-1, 1]")
    code, out, err = run(with_value(command, value))
    assert code == EXIT_USAGE
    assert out == ""
    assert "Error: Invalid value for" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--duplicate-iou", "0"], "0<x<=1", id="duplicate-iou-zero"),
        pytest.param(["--tolerance", "-1"], "x>=0", id="tolerance-negative"),
    ],
)
def test_lint_ranges(args: list[str], message: str) -> None:
    """lint's own ranges: a duplicate IoU of 0 would call every pair a duplicate."""
    code, _, err = run(["lint", *args, str(DEMO / "gt")])
    assert code == EXIT_USAGE and message in err


def test_iou_nan_was_a_traceback() -> None:
    """The case that was seen: ``--iou nan`` raised ValueError from the library (exit 1)."""
    result = subprocess.run(
        [sys.executable, "-m", "vocmatch", *EVAL, "--iou", "nan"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == EXIT_USAGE
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        "Error: Invalid value for '--iou': 'nan' is not a finite number"
    )


#: Every argument or option that names a file or folder read.
INPUTS = [
    pytest.param(["", str(DEMO / "pred")], "GT_DIR", id="eval-gt"),
    pytest.param([str(DEMO / "gt"), ""], "PRED_DIR", id="eval-pred"),
    pytest.param([str(DEMO / "gt"), "", "--mode", "labels"], "PRED_DIR", id="labels-pred"),
    pytest.param([*EVAL, "--html", "r.html", "--images", ""], "--images", id="images"),
    pytest.param([*EVAL, "--score-thresholds", ""], "--score-thresholds", id="score-thresholds"),
    pytest.param(["diff", "", str(DIFF / "pred_a"), str(DIFF / "pred_b")], "GT_DIR", id="diff-gt"),
    pytest.param(["diff", str(DIFF / "gt"), str(DIFF / "pred_a"), ""], "PRED_B_DIR", id="diff-b"),
    pytest.param(["lint", ""], "PATHS", id="lint-path"),
    pytest.param(["lint", str(DEMO / "gt"), "--classes", ""], "--classes", id="lint-classes"),
    pytest.param(["seg", "", str(SEG / "pred")], "GT_DIR", id="seg-gt"),
    pytest.param(["seg", str(SEG / "gt"), str(SEG / "pred"), "--classes", ""], "--classes",
                 id="seg-classes"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "name"), INPUTS)
def test_an_empty_path_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], name: str
) -> None:
    """``""`` is not the current folder: ``vocmatch "" pred`` used to evaluate ``.``."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(args)
    assert code == EXIT_USAGE
    assert out == ""
    assert "Invalid value for '" in err and name in err
    assert "the path is empty" in err or "does not exist" in err
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    "command",
    [
        pytest.param([*EVAL], id="eval"),
        pytest.param([*EVAL, "--mode", "labels"], id="labels"),
        pytest.param(["lint", str(DEMO / "gt")], id="lint"),
        pytest.param(["seg", str(SEG / "gt"), str(SEG / "pred"), "--classes",
                      str(SEG / "classes.txt")], id="seg"),
    ],
)  # fmt: skip
def test_more_jobs_than_cores_or_files_is_capped(command: list[str]) -> None:
    """--jobs 100000 on a handful of files: the same output as one job, at once."""
    one = run([*command, "--jobs", "1"])
    many = run([*command, "--jobs", "100000"])
    assert many == one
    assert one[0] in (EXIT_OK, 1)


def test_jobs_zero_means_every_core() -> None:
    """``--jobs 0`` (the default of eval and lint) is every core, capped like any number."""
    assert run([*EVAL, "--jobs", "0"]) == run(EVAL)
    code, _, err = run([*EVAL, "--jobs", "-1"])
    assert code == EXIT_USAGE and "--jobs" in err


@pytest.mark.parametrize(
    ("pool", "reader"),
    [
        pytest.param("concurrent.futures.process.ProcessPoolExecutor", "1", id="processes"),
        pytest.param("concurrent.futures.ThreadPoolExecutor", "", id="threads"),
    ],
)
def test_huge_jobs_on_a_large_set_starts_one_worker_per_core(
    tmp_path: Path, pool: str, reader: str
) -> None:
    """On 400 files, --jobs 10000 starts no more workers than there are cores: processes
    with the pure reader, threads with the compiled one."""
    if not reader and active_reader() != "compiled":
        pytest.skip("the compiled reader reads with threads")
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    gt.mkdir()
    pred.mkdir()
    xml = (DEMO / "gt" / "street_01.xml").read_bytes()
    for i in range(400):
        (gt / f"{i:04d}.xml").write_bytes(xml)
        (pred / f"{i:04d}.xml").write_bytes(xml)
    module, name = pool.rsplit(".", 1)
    script = (
        f"import {module} as p, sys\n"
        "from vocmatch.readers.workers import available_cores\n"
        "started = []\n"
        f"original = p.{name}.__init__\n"
        "def init(self, max_workers=None, *a, **k):\n"
        "    started.append(max_workers)\n"
        "    original(self, max_workers, *a, **k)\n"
        f"p.{name}.__init__ = init\n"
        "from vocmatch.readers.scan import read_column_pair\n"
        "gt, pred = read_column_pair(sys.argv[1], sys.argv[2], jobs=10000)\n"
        "print(json.dumps([len(gt.keys), started, available_cores()]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", "import json\n" + script, str(gt), str(pred)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, PURE_READER_VARIABLE: reader},
    )
    assert result.returncode == 0, result.stderr
    count, started, cores = json.loads(result.stdout)
    assert count == 400
    assert started == ([min(cores, 400)] if cores > 1 else [])


#: Every option that takes a count, with a command it belongs to (a test below checks that
#: the list holds every count option of every command).
COUNTS = [
    pytest.param([*EVAL, "--max-rows"], id="eval-max-rows"),
    pytest.param([*EVAL, "--max-fp"], id="eval-max-fp"),
    pytest.param([*EVAL, "--max-fn"], id="eval-max-fn"),
    pytest.param([*EVAL, "--jobs"], id="eval-jobs"),
    pytest.param([*EVAL, "--bootstrap"], id="eval-bootstrap"),
    pytest.param([*EVAL, "--seed"], id="eval-seed"),
    pytest.param([*EVAL, "--calibration-bins"], id="eval-calibration-bins"),
    pytest.param([*EVAL, "--max-per-image"], id="eval-max-per-image"),
    pytest.param([*DIFF_RUN, "--max-rows"], id="diff-max-rows"),
    pytest.param([*DIFF_RUN, "--bootstrap"], id="diff-bootstrap"),
    pytest.param([*DIFF_RUN, "--seed"], id="diff-seed"),
    pytest.param([*DIFF_RUN, "--jobs"], id="diff-jobs"),
    pytest.param([*DIFF_RUN, "--max-per-image"], id="diff-max-per-image"),
    pytest.param(["lint", str(DEMO / "gt"), "--jobs"], id="lint-jobs"),
    pytest.param(["merge", str(ROOT / "README.md"), "--max-rows"], id="merge-max-rows"),
    pytest.param(["merge", str(ROOT / "README.md"), "--max-fp"], id="merge-max-fp"),
    pytest.param(["merge", str(ROOT / "README.md"), "--max-fn"], id="merge-max-fn"),
    pytest.param(["merge", str(ROOT / "README.md"), "--bootstrap"], id="merge-bootstrap"),
    pytest.param(["merge", str(ROOT / "README.md"), "--seed"], id="merge-seed"),
    pytest.param(
        ["merge", str(ROOT / "README.md"), "--calibration-bins"], id="merge-calibration-bins"
    ),
    pytest.param(["seg", str(SEG / "gt"), str(SEG / "pred"), "--jobs"], id="seg-jobs"),
    pytest.param(["seg", str(SEG / "gt"), str(SEG / "pred"), "--max-rows"], id="seg-max-rows"),
    pytest.param(["suspects", *EVAL, "--max-rows"], id="suspects-max-rows"),
    pytest.param(["suspects", *EVAL, "--jobs"], id="suspects-jobs"),
    pytest.param(["suspects", *EVAL, "--max-per-image"], id="suspects-max-per-image"),
    pytest.param(
        ["explain", *EVAL, "--from", "voc07", "--to", "coco", "--jobs"], id="explain-jobs"
    ),
]
#: Options whose value holds counts in a form of its own: the value is ``{}`` filled.
COUNTS_INSIDE = [
    pytest.param([*EVAL, "--shard", "{}/2", "--save-state", "x.vms"], id="shard-k"),
    pytest.param([*EVAL, "--shard", "1/{}", "--save-state", "x.vms"], id="shard-n"),
    pytest.param([*EVAL, "--max-dets", "{}"], id="eval-max-dets"),
    pytest.param([*EVAL, "--max-dets", "1,10,{}"], id="eval-max-dets-triple"),
    pytest.param([*DIFF_RUN, "--max-dets", "{}"], id="diff-max-dets"),
    pytest.param([*EVAL, "--max-file-size", "{}"], id="eval-max-file-size"),
    pytest.param([*EVAL, "--max-file-size", "{}K"], id="eval-max-file-size-unit"),
    pytest.param([*DIFF_RUN, "--max-file-size", "{}"], id="diff-max-file-size"),
    pytest.param(["suspects", *EVAL, "--max-file-size", "{}"], id="suspects-max-file-size"),
    pytest.param([*EVAL, "--dask", "local:{}"], id="dask-local"),
]
#: Counts that are not ASCII digits, each of which int() or a str method would read.
NOT_COUNTS = [
    pytest.param("+1", id="plus"),
    pytest.param("-0", id="minus-zero"),
    pytest.param(" 1", id="leading-space"),
    pytest.param("1 ", id="trailing-space"),
    pytest.param("1\n", id="trailing-newline"),
    pytest.param("1_0", id="underscore"),
    pytest.param("\u0663", id="arabic-indic"),
    pytest.param("\u06f3", id="extended-arabic-indic"),
    pytest.param("\u0969", id="devanagari"),
    pytest.param("\uff13", id="fullwidth"),
    pytest.param("\u00b3", id="superscript"),
    pytest.param("", id="empty"),
    pytest.param("9" * 5000, id="5000-digits"),
    pytest.param("1" + "0" * 18, id="19-digits"),
]


def _refused(command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The command's stderr, checked to be a usage error of a few lines and no traceback."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(command)
    assert (code, out) == (EXIT_USAGE, "")
    assert err.splitlines()[-1].startswith("Error: Invalid value for '")
    assert "Traceback" not in err and len(err) < 600
    assert list(tmp_path.iterdir()) == []  # nothing written
    return err


@pytest.mark.parametrize("value", NOT_COUNTS)
@pytest.mark.parametrize("command", COUNTS)
def test_a_count_takes_ascii_digits_only(
    command: list[str], value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No sign, no space, no ``_``, no other script's digits, at most 18 digits: anything
    else is a usage error (exit 2) repeating the value, shortened when long."""
    err = _refused([*command, value], tmp_path, monkeypatch)
    shown = repr(value) if len(value) <= 40 else repr(value[:40] + "...")
    assert shown in err


@pytest.mark.parametrize("value", NOT_COUNTS)
@pytest.mark.parametrize("command", COUNTS_INSIDE)
def test_a_count_inside_a_value_takes_ascii_digits_only(
    command: list[str], value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--shard K/N, --max-dets 1,10,N, --max-file-size NK and --dask local:N read their
    numbers as counts: a usage error, never a traceback, never a number int() made up."""
    _refused([arg.replace("{}", value) for arg in command], tmp_path, monkeypatch)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("0/0", id="zero-of-zero"),
        pytest.param("0/2", id="zero"),
        pytest.param("3/2", id="beyond"),
        pytest.param("1/", id="no-n"),
        pytest.param("/2", id="no-k"),
        pytest.param("/", id="slash"),
        pytest.param("1/2/3", id="two-slashes"),
        pytest.param("12", id="no-slash"),
        pytest.param("1 /2", id="space"),
        pytest.param("\u0661/\u0662", id="arabic-indic"),
        pytest.param("\uff11/\uff12", id="fullwidth"),
        pytest.param("\u00b9/\u00b2", id="superscript"),
        pytest.param("1/" + "9" * 5000, id="5000-digits"),
    ],
)
def test_a_shard_that_is_not_k_of_n_is_a_usage_error(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = _refused([*EVAL, "--shard", value, "--save-state", "x.vms"], tmp_path, monkeypatch)
    assert "is not K/N with 1 <= K <= N (for example 2/8)" in err


_K_OF_N = re.compile(r"([0-9]{1,18})/([0-9]{1,18})")
#: Digits of any script (which str.isdigit() and int() take), mixed with ASCII ones.
_DIGITS = st.text(
    alphabet=st.one_of(st.sampled_from("0123456789"), st.characters(categories=("Nd", "No"))),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.text(alphabet="0123456789/+-_ \u0661\uff12\u00b2", max_size=8),
        st.builds("{}/{}".format, st.integers(-3, 40), st.integers(-3, 40)),
        st.builds("{}/{}".format, _DIGITS, _DIGITS),
    )
)
def test_any_shard_text_is_k_of_n_or_a_usage_error(text: str) -> None:
    """Whatever the text, --shard reads K/N of ASCII digits with 1 <= K <= N, or refuses
    it in one usage error; never a traceback. (The state's folder does not exist, so that a
    shard taken ends in the one line that says so, before any file is read.)"""
    state = "/nonexistent-vocmatch-folder/x.vms"
    code, out, err = run([*EVAL, f"--shard={text}", "--save-state", state])
    assert (code, out) == (EXIT_USAGE, "")
    assert "Traceback" not in err
    found = _K_OF_N.fullmatch(text)
    if found is not None and 1 <= int(found[1]) <= int(found[2]):
        assert err.startswith("vocmatch: error: cannot write /nonexistent-vocmatch-folder/x.vms: ")
    else:
        assert err.splitlines()[-1].startswith("Error: Invalid value for '--shard': ")


def test_every_count_option_of_every_command_is_listed() -> None:
    """Every option click would read with int() is a WholeNumberRange (ASCII digits only),
    and each of them is in COUNTS, so that the tests above reach every count option."""
    import click

    from vocmatch.cli import main
    from vocmatch.cli.params import WholeNumberRange

    ctx = click.Context(main)
    found = set()
    for name in main.list_commands(ctx):  # type: ignore[attr-defined]
        command = main.get_command(ctx, name)  # type: ignore[attr-defined]
        for param in command.params:
            if isinstance(param.type, click.types.IntParamType):
                assert isinstance(param.type, WholeNumberRange), (name, param.opts)
                found.add((name, param.opts[0]))
    # Each id is the command and the option: eval-max-rows is eval's --max-rows.
    listed = {(p.id.split("-", 1)[0], "--" + p.id.split("-", 1)[1]) for p in COUNTS if p.id}
    assert found == listed


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("007K", 7 * 1024, id="leading-zeros"),
        pytest.param("2kib", 2 * 1024, id="kib"),
        pytest.param("5000", 5000, id="bytes"),
        pytest.param("1G", 1024**3, id="gib"),
    ],
)
def test_a_size_reads_its_ascii_digits(value: str, expected: int) -> None:
    """A size's number is a count of ASCII digits, its unit one of K, M and G (the Kelvin
    sign, which an ignore-case match would take for K, is refused below)."""
    import click

    from vocmatch.cli.params import byte_size

    context = click.Context(click.Command("x"))
    assert byte_size(context, click.Option(["--max-file-size"]), value) == expected


def test_a_kelvin_sign_is_no_unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    err = _refused([*EVAL, "--max-file-size", "5\u212a"], tmp_path, monkeypatch)
    assert "is not a size such as 5000, 64K, 32M or 1G" in err

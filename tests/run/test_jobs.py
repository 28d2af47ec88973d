"""``--jobs N`` (and ``vocmatch.evaluate(..., jobs=N)``): N worker processes each read and
match a part of the images, and the main process joins their match records and
accumulates them once; the report is byte for byte that of ``--jobs 1``, slices, class
choices, the geometry, the calibration, counting and target thresholds included. Runs whose
report lists or draws boxes (and the other cases :mod:`vocmatch.run.in_parts` lists) read
the files in parallel and match them in the main process, as before."""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import vocmatch
import vocmatch.readers.workers as workers
import vocmatch.run.evaluate as run_evaluate
import vocmatch.run.in_parts as in_parts
from tests.conftest import ROOT, run_cli
from vocmatch.errors import InputError
from vocmatch.evaluation.shards.parts import (
    LocalParts,
    PartListing,
    PartOptions,
    gathered_parts,
    part_records,
    run_parts,
)
from vocmatch.evaluation.slice_records import SliceSpec
from vocmatch.readers.scan import PURE_READER_VARIABLE, reads_in_threads
from vocmatch.run.evaluate import slice_specs

DEMO = ROOT / "fixtures" / "demo"
#: The generated set of bench/run.py (python bench/run.py --images 2000 writes it).
BENCH_2000 = ROOT / "bench" / "data" / "2000"


@pytest.fixture(autouse=True)
def cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four cores, whatever the machine has: --jobs 2 and 3 start that many workers; and
    parts for every set of files here, however the files are read (the compiled reader's
    threads read small sets in the main process: test_small_sets_read_by_threads_...)."""
    monkeypatch.setattr(workers, "available_cores", lambda: 4)
    monkeypatch.setattr(in_parts, "THREADED_FILES", 0)


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("this route was not to be taken")


@pytest.mark.parametrize("pure", [False, True], ids=["compiled-reader", "pure-reader"])
def test_small_sets_read_by_threads_are_matched_here(
    generated: Path, monkeypatch: pytest.MonkeyPatch, pure: bool
) -> None:
    """With the compiled reader, a set of fewer than THREADED_FILES files is read by threads
    and matched in this process; with the pure reader it goes in parts. The report is
    --jobs 1's either way."""
    if not pure and not reads_in_threads():
        pytest.skip("the compiled reader is not built here")
    if pure:
        monkeypatch.setenv(PURE_READER_VARIABLE, "1")
    monkeypatch.setattr(in_parts, "THREADED_FILES", 10**9)
    args = [str(generated / "gt"), str(generated / "pred"), "--protocol", "coco", "--format",
            "json"]  # fmt: skip
    single = run_cli(*args, "--jobs", "1")
    seen: list[object] = []
    original = in_parts.evaluated_in_parts

    def spy(*a: Any, **k: Any) -> Any:
        seen.append(original(*a, **k))
        return seen[-1]

    monkeypatch.setattr(in_parts, "evaluated_in_parts", spy)
    assert run_cli(*args, "--jobs", "2") == single
    assert len(seen) == 1
    assert (seen[0] is None) is not pure


def _copy(source: Path, target: Path) -> tuple[Path, Path]:
    shutil.copytree(source / "gt", target / "gt")
    shutil.copytree(source / "pred", target / "pred")
    return target / "gt", target / "pred"


def _unscored(gt: Path, pred: Path, every: int) -> None:
    """The predictions of every ``every``-th image without scores."""
    for path in sorted(pred.glob("*.xml"))[::every]:
        path.write_text(re.sub(r"\s*<score>[^<]*</score>", "", path.read_text()))


def _tied(gt: Path, pred: Path) -> None:
    """Scores of one decimal: many equal scores, in every part."""

    def rounded(match: re.Match[str]) -> str:
        return f"<score>{float(match.group(1)):.1f}</score>"

    for path in pred.glob("*.xml"):
        path.write_text(re.sub(r"<score>([^<]*)</score>", rounded, path.read_text()))


def _none_scored(gt: Path, pred: Path) -> None:
    _unscored(gt, pred, 1)


def _damaged(gt: Path, pred: Path) -> None:
    """A ground-truth file and a prediction file that cannot be read."""
    sorted(gt.glob("*.xml"))[3].write_text("garbage")
    sorted(pred.glob("*.xml"))[7].write_text("<annotation>")


def _orphans(gt: Path, pred: Path) -> None:
    """Prediction files of no ground-truth image, one of them damaged and one key taken
    twice, and an image without predictions."""
    first = sorted(pred.glob("*.xml"))[0]
    shutil.copy(first, pred / "zz_extra.xml")
    shutil.copy(first, pred / "aa_extra.xml")
    shutil.copy(first, pred / "aa_extra.XML")  # the same key: one skipped, one an orphan
    (pred / "mm_broken.xml").write_text("garbage")
    sorted(pred.glob("*.xml"))[10].unlink()


def _swapped(gt: Path, pred: Path) -> None:
    """The folders given the wrong way round (every ground-truth object scored)."""
    held = gt.parent / "held"
    gt.rename(held)
    pred.rename(gt)
    held.rename(pred)


def _nested(gt: Path, pred: Path) -> None:
    """Files in sub-folders (keys with a ``/``), a key taken twice and one differing only
    in case."""
    for side in (gt, pred):
        (side / "sub").mkdir()
        for path in sorted(side.glob("*.xml"))[:20]:
            path.rename(side / "sub" / path.name)
    first = sorted(gt.glob("*.xml"))[0]
    shutil.copy(first, gt / (first.stem + ".XML"))
    # A key differing only in case, kept in place of the prediction's: that one is then
    # neither evaluated nor an orphan.
    shutil.copy(first, gt / first.name.upper())


#: Changes to the generated set, each a case a run in parts must report as one process.
CHANGES: list[Any] = [
    pytest.param(None, id="as-generated"),
    pytest.param(lambda gt, pred: _unscored(gt, pred, 3), id="some-unscored"),
    pytest.param(_none_scored, id="none-scored"),
    pytest.param(_tied, id="tied-scores"),
    pytest.param(lambda gt, pred: (_tied(gt, pred), _unscored(gt, pred, 4)), id="tied-unscored"),
    pytest.param(_damaged, id="damaged-files"),
    pytest.param(_orphans, id="orphans-and-missing"),
    pytest.param(_swapped, id="swapped-inputs"),
    pytest.param(_nested, id="nested-and-taken-key"),
]

#: Options of the command line, each run with --jobs 1 and in parts.
OPTIONS = [
    pytest.param(["--format", "json"], id="default"),
    pytest.param(["--protocol", "coco", "--format", "json"], id="coco"),
    pytest.param(["--protocol", "voc07", "--format", "json"], id="voc07"),
    pytest.param(["--protocol", "voc12", "--difficult", "count", "--format", "json"], id="count"),
    pytest.param(["--score-threshold", "0.3", "--format", "json"], id="score-threshold"),
    pytest.param(["--fold-case", "--format", "csv"], id="fold-case"),
    pytest.param(["--bootstrap", "15", "--seed", "2", "--format", "json"], id="bootstrap"),
    pytest.param(["--calibration-bins", "4", "--format", "json"], id="calibration"),
    pytest.param(
        ["--calibration-bins", "3", "--protocol", "coco", "--format", "json"], id="calibration-coco"
    ),
    pytest.param(["--slice", "size", "--format", "json"], id="slice-size"),
    pytest.param(["--slice", "size", "--slice", "truncated", "--format", "json"], id="slices"),
    pytest.param(
        ["--slice", "size", "--calibration-bins", "4", "--protocol", "coco", "--format", "json"],
        id="slice-calibration-coco",
    ),
    pytest.param(["--count", "--format", "json"], id="count-objects"),
    pytest.param(["--count", "--bootstrap", "10", "--format", "json"], id="count-bootstrap"),
    pytest.param(
        ["--target-precision", "0.6", "--bootstrap", "20", "--format", "json"],
        id="target-precision",
    ),
    pytest.param(["--target-recall", "0.5", "--format", "json"], id="target-recall"),
    pytest.param(["--class-map", "MAP", "--format", "json"], id="class-map"),
    pytest.param(["--classes", "class01,class02", "--format", "json"], id="classes"),
    pytest.param(["--agnostic", "--format", "json"], id="agnostic"),
    pytest.param(["--class-map", "MAP", "--fold-case", "--format", "csv"], id="class-map-folded"),
    pytest.param(["--geometry", "box", "--format", "json"], id="geometry-box"),
    pytest.param(["--protocol", "coco"], id="table"),
    pytest.param(["--fail-under", "map=0.9", "--max-fn", "0"], id="gates"),
]


@pytest.mark.parametrize("jobs", ["2", "3"])
@pytest.mark.parametrize("change", CHANGES)
def test_a_run_in_parts_reports_as_one_process(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, Path], None] | None,
    jobs: str,
) -> None:
    """The same exit code, report and warnings, and the files were read and matched by the
    workers, not here."""
    gt, pred = _copy(generated, tmp_path)
    if change is not None:
        change(gt, pred)
    args = [str(gt), str(pred), "--format", "json"]
    single = run_cli(*args, "--jobs", "1")
    monkeypatch.setattr(run_evaluate, "read_inputs", _never)
    assert run_cli(*args, "--jobs", jobs) == single


@pytest.mark.parametrize("args", OPTIONS)
def test_options_in_parts_report_as_one_process(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """Every option whose report needs no more than match records runs in parts: slices,
    calibration inputs and class choices included."""
    mapping = tmp_path / "map.csv"
    mapping.write_text("class03,class01\nCLASS04,class02\n")
    args = [str(mapping) if a == "MAP" else a for a in args]
    gt, pred = str(generated / "gt"), str(generated / "pred")
    single = run_cli(gt, pred, *args, "--jobs", "1")
    assert single[1]
    monkeypatch.setattr(run_evaluate, "read_inputs", _never)
    assert run_cli(gt, pred, *args, "--jobs", "2") == single


@pytest.mark.parametrize("protocol", ["default", "coco", "voc07"])
def test_the_demo_in_parts_reports_as_one_process(
    monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    """A set of few files too, once parts are asked for below any size."""
    args = [str(DEMO / "gt"), str(DEMO / "pred"), "--protocol", protocol, "--format", "json"]
    single = run_cli(*args, "--jobs", "1")
    monkeypatch.setattr(in_parts, "FEW_FILES", 0)
    monkeypatch.setattr(run_evaluate, "read_inputs", _never)
    assert run_cli(*args, "--jobs", "2") == single


def _fixture_pairs() -> list[Any]:
    """Every ground-truth folder of fixtures/ with each prediction folder beside it."""
    pairs = []
    for gt in sorted((ROOT / "fixtures").glob("**/gt")):
        if not any(gt.glob("*.xml")):
            continue  # label masks, not boxes
        for pred in sorted(gt.parent.glob("pred*")):
            name = str(pred.relative_to(ROOT / "fixtures"))
            pairs.append(pytest.param(gt, pred, id=name))
    return pairs


@pytest.mark.parametrize(("gt", "pred"), _fixture_pairs())
@pytest.mark.parametrize("protocol", ["default", "coco", "voc07"])
def test_every_fixture_in_parts_reports_as_one_process(
    monkeypatch: pytest.MonkeyPatch, gt: Path, pred: Path, protocol: str
) -> None:
    args = [str(gt), str(pred), "--protocol", protocol, "--format", "json"]
    single = run_cli(*args, "--jobs", "1")
    monkeypatch.setattr(in_parts, "FEW_FILES", 0)
    assert run_cli(*args, "--jobs", "3") == single


@pytest.mark.skipif(not BENCH_2000.is_dir(), reason="bench/data/2000 is not generated here")
@pytest.mark.parametrize("protocol", ["default", "coco", "voc07"])
def test_2000_images_in_parts_report_as_one_process(protocol: str) -> None:
    args = [str(BENCH_2000 / "gt"), str(BENCH_2000 / "pred"), "--protocol", protocol]
    single = run_cli(*args, "--format", "json", "--jobs", "1")
    assert run_cli(*args, "--format", "json", "--jobs", "2") == single


def _formats(folder: Path) -> dict[str, list[str]]:
    converted = folder / "converted"
    return {
        "coco": [str(converted / "coco" / "results.json"), "--pred-format", "coco",
                 "--coco-gt", str(converted / "coco" / "gt.json")],
        "yolo": [str(converted / "yolo"), "--pred-format", "yolo",
                 "--names", str(converted / "yolo" / "classes.txt")],
        "voc-results": [str(converted / "voc-results"), "--pred-format", "voc-results"],
    }  # fmt: skip


#: Runs read in the main process (files read in parallel), each a documented exception.
READ_HERE = [
    pytest.param(["--errors"], id="errors"),
    pytest.param(["--format", "junit"], id="junit"),
    pytest.param(["--format", "html", "-o", "OUT"], id="html"),
    pytest.param(["--errors", "--slice", "size", "--classes", "class01"], id="errors-slice"),
    pytest.param(["FORMAT", "coco"], id="coco-results"),
    pytest.param(["FORMAT", "yolo"], id="yolo"),
    pytest.param(["FORMAT", "voc-results"], id="voc-results"),
]


@pytest.mark.parametrize("args", READ_HERE)
def test_runs_that_need_boxes_are_read_here_as_before(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """Every box is needed in this process (an output lists or draws them, the predictions
    are one file or scaled by the ground truth): the workers read the files, this process
    matches them; the report is --jobs 1's."""
    mapping = tmp_path / "map.csv"
    mapping.write_text("class03,class01\n")
    report = tmp_path / "report.html"
    pred = [str(generated / "pred")]
    if args[0] == "FORMAT":
        pred, args = _formats(generated)[args[1]], []
    given = {"MAP": str(mapping), "OUT": str(report)}
    args = [given.get(a, a) for a in args]
    if "--format" not in args:
        args = [*args, "--format", "json"]
    full = [str(generated / "gt"), *pred, *args]
    single = run_cli(*full, "--jobs", "1")
    written = report.read_bytes() if report.exists() else None
    monkeypatch.setattr(in_parts, "evaluated_in_parts", _never)
    assert run_cli(*full, "--jobs", "2") == single
    assert (report.read_bytes() if report.exists() else None) == written


def test_rotated_boxes_and_polygons_are_matched_in_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts match rotated boxes and polygons by their regions: the report of one process."""
    shapes = ROOT / "fixtures" / "shapes"
    args = [str(shapes / "gt"), str(shapes / "pred"), "--format", "json"]
    single = run_cli(*args, "--jobs", "1")
    monkeypatch.setattr(in_parts, "FEW_FILES", 0)
    found: list[object] = []
    original = in_parts.evaluated_in_parts

    def spy(*a: Any, **k: Any) -> Any:
        found.append(original(*a, **k))
        return found[-1]

    monkeypatch.setattr(in_parts, "evaluated_in_parts", spy)
    assert run_cli(*args, "--jobs", "2") == single
    assert len(found) == 1 and found[0] is not None


class Recorder:
    """A :class:`vocmatch.Progress` that keeps what it is told."""

    def __init__(self) -> None:
        self.files: list[tuple[int, int]] = []
        self.stage_calls: list[tuple[str, int, int]] = []

    def files_read(self, done: int, total: int) -> None:
        self.files.append((done, total))

    def stages(self, stage: str, done: int, total: int) -> None:
        self.stage_calls.append((stage, done, total))


def test_progress_counts_files_as_parts_come_back(generated: Path) -> None:
    """Files read go up to every file of both sides, a part at a time; the evaluation
    then ends."""
    recorder = Recorder()

    class Progress:
        files = staticmethod(recorder.files_read)
        stages = staticmethod(recorder.stages)

    vocmatch.evaluate(generated / "gt", generated / "pred", jobs=2, progress=Progress())
    total = 300
    assert recorder.files[-1] == (total, total)
    done = [d for d, _ in recorder.files]
    assert done == sorted(done) and len(done) == 8 and {t for _, t in recorder.files} == {total}
    assert recorder.stage_calls[-1][0] == "done"


def test_the_joined_parts_are_the_listed_images(generated: Path) -> None:
    """A part that comes back without its images is never accumulated."""
    listing = PartListing.of(generated / "gt", generated / "pred")
    options = PartOptions(vocmatch.Evaluator("coco").conventions)
    results = run_parts(listing, LocalParts(2), part_records, options)
    results.pop()
    from vocmatch.errors import DistributedError

    with pytest.raises(DistributedError, match=r"hold 132 images, not the 150 listed"):
        gathered_parts(listing, results, options)


def test_no_readable_ground_truth_is_refused_as_in_one_process(
    generated: Path, tmp_path: Path
) -> None:
    gt, pred = _copy(generated, tmp_path)
    for path in gt.glob("*.xml"):
        path.write_text("garbage")
    single = run_cli(str(gt), str(pred), "--jobs", "1")
    assert single[0] == 2 and single[2].startswith("vocmatch: error: ")
    assert run_cli(str(gt), str(pred), "--jobs", "2") == single


def test_nothing_paired_is_refused_as_in_one_process(generated: Path, tmp_path: Path) -> None:
    gt, pred = _copy(generated, tmp_path)
    for path in pred.glob("*.xml"):
        path.rename(pred / f"other_{path.name}")
    single = run_cli(str(gt), str(pred), "--jobs", "1")
    assert single[0] == 2 and "no ground-truth image pairs" in single[2]
    assert run_cli(str(gt), str(pred), "--jobs", "2") == single


def test_a_threshold_without_scores_is_refused_as_in_one_process(
    generated: Path, tmp_path: Path
) -> None:
    gt, pred = _copy(generated, tmp_path)
    _none_scored(gt, pred)
    args = [str(gt), str(pred), "--score-threshold", "0.5"]
    single = run_cli(*args, "--jobs", "1")
    assert single[0] == 2 and single[2].startswith("vocmatch: error: ")
    assert run_cli(*args, "--jobs", "2") == single


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--classes", "class_01"], id="unknown-class"),
        pytest.param(["--class-map", "MAP", "--fold-case"], id="map-folds-to-two"),
        pytest.param(["--score-thresholds", "THRESHOLDS"], id="threshold-of-unknown-class"),
    ],
)
def test_a_wrong_class_is_refused_as_in_one_process(
    generated: Path, tmp_path: Path, args: list[str]
) -> None:
    mapping = tmp_path / "map.csv"
    mapping.write_text("Class03,class01\nclass03,class02\n")
    thresholds = tmp_path / "thresholds.csv"
    thresholds.write_text("class01,0.5\nclass_99,0.5\n")
    given = {"MAP": str(mapping), "THRESHOLDS": str(thresholds)}
    full = [str(generated / "gt"), str(generated / "pred"), *(given.get(a, a) for a in args)]
    single = run_cli(*full, "--jobs", "1")
    assert single[0] == 2 and single[2].startswith("vocmatch: error: ")
    assert run_cli(*full, "--jobs", "2") == single


def test_one_worker_reads_and_matches_here(
    generated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--jobs 1, or one core: no part, no worker process."""
    monkeypatch.setattr(in_parts, "evaluated_in_parts", _never)
    assert run_cli(str(generated / "gt"), str(generated / "pred"), "--jobs", "1")[0] == 0
    monkeypatch.setattr(workers, "available_cores", lambda: 1)
    assert run_cli(str(generated / "gt"), str(generated / "pred"), "--jobs", "0")[0] == 0


def test_the_library_runs_in_parts_as_the_command_line(generated: Path) -> None:
    single = vocmatch.evaluate(generated / "gt", generated / "pred", protocol="coco", jobs=1)
    parts = vocmatch.evaluate(generated / "gt", generated / "pred", protocol="coco", jobs=3)
    from vocmatch.render.json_report import to_json

    assert to_json(parts.evaluation) == to_json(single.evaluation)


def test_a_missing_prediction_folder_is_refused_before_any_part(generated: Path) -> None:
    with pytest.raises(InputError, match="no such file or folder"):
        vocmatch.evaluate(generated / "gt", generated / "nowhere", jobs=2)


#: The file whose creation tells the first part to end its worker (set before workers fork).
_KILL_MARKER: list[Path] = []


def _killing_once(part: Any, options: Any) -> Any:
    """:func:`part_records`, but the first call anywhere ends its worker process at once, as
    the system's out-of-memory killer would."""
    import os

    try:
        with open(_KILL_MARKER[0], "x"):
            pass
    except FileExistsError:
        return part_records(part, options)
    os._exit(1)


def test_a_killed_worker_costs_no_part(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parts left run with fewer workers, then here, with one warning; the report is
    --jobs 1's."""
    import vocmatch.evaluation.shards.parts as parts

    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    code, out, err = run_cli(*args, "--jobs", "1")
    _KILL_MARKER[:] = [tmp_path / "killed"]
    monkeypatch.setattr(parts, "part_records", _killing_once)
    try:
        killed = run_cli(*args, "--jobs", "2")
    finally:
        _KILL_MARKER.clear()
    assert (tmp_path / "killed").exists()
    assert killed[:2] == (code, out)
    warning = "vocmatch: warning: worker processes failed "
    lines = killed[2].splitlines(keepends=True)
    assert "".join(line for line in lines if not line.startswith(warning)) == err
    assert [line.rstrip("\n") for line in lines if line.startswith(warning)] == [
        f"{warning}(A process in the process pool was terminated abruptly while the future "
        "was running or pending.); going on with this process"
    ]


@pytest.mark.parametrize("parts", [2, 3, 7, 150])
@pytest.mark.parametrize("unscored", [0, 4], ids=["scored", "some-unscored"])
@pytest.mark.parametrize(
    "slices", [(), slice_specs(["size"])], ids=["no-slices", "slices-and-calibration"]
)
@pytest.mark.parametrize("ranges", [False, True], ids=["every-nth-key", "key-ranges"])
def test_merged_rankings_are_those_of_the_joined_records(
    generated: Path,
    tmp_path: Path,
    parts: int,
    unscored: int,
    slices: tuple[SliceSpec, ...],
    ranges: bool,
) -> None:
    """Each class's ranking merged from the parts' (equal scores from several parts in
    image order, predictions without a score last) is the one the joined records give,
    parts of every n-th key (joined, then put in key order) or of consecutive keys (in key
    order as joined)."""
    from vocmatch.evaluation.from_records import class_rankings
    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.evaluation.shards.parts import key_ranges, split_parts

    gt, pred = _copy(generated, tmp_path)
    _tied(gt, pred)
    if unscored:
        _unscored(gt, pred, unscored)
    listing = PartListing.of(gt, pred)
    options = PartOptions(
        vocmatch.Evaluator("coco").conventions, slices=slices, calibration=bool(slices)
    )
    split = key_ranges if ranges else split_parts
    shares = split(listing.gt.files, listing.pred.files, parts)
    found = [r for r in (part_records(share, options).records for share in shares) if r]
    # A part whose predictions all lack a score keeps no ranking: the joined records are
    # then ranked again (150 parts of one image each, every fourth unscored).
    every_part_ranked = all(r.ranked is not None for r in found)
    assert every_part_ranked == (parts < 150 or not unscored)
    joined = MatchRecords.taken_in_key_order(list(found), options.conventions)
    assert (joined.ranked is not None) == every_part_ranked
    unranked = [dataclasses.replace(r, ranked=None) for r in found]
    expected = MatchRecords.taken_in_key_order(unranked, options.conventions)
    assert expected.ranked is None
    merged = list(class_rankings(joined))
    again = list(class_rankings(expected))
    assert len(merged) == len(again) == len(joined.class_names)
    for (ranked, rank), (ranked_again, rank_again) in zip(merged, again, strict=True):
        assert ranked.tolist() == ranked_again.tolist()
        assert rank.tolist() == rank_again.tolist()

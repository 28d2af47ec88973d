"""``vocmatch eval --shard K/N --save-state FILE`` and ``vocmatch merge FILE...``: the merged
shards report the numbers of one run on every image."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from vocmatch.cli import EXIT_GATE, EXIT_SKIPPED, EXIT_USAGE
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.render.junit import NO_BOXES


@pytest.mark.parametrize("name", ["voc12", "coco"])
def test_merged_shards_report_the_single_run(
    demo: tuple[Path, Path], tmp_path: Path, name: str
) -> None:
    """Three shards saved, merged in another order: the same summary, classes and images."""
    gt, pred = map(str, demo)
    states = []
    for k in (1, 2, 3):
        state = tmp_path / f"shard{k}.vms"
        code, out, err = run_cli(
            "eval", gt, pred, "--protocol", name, "--shard", f"{k}/3", "--save-state", str(state)
        )
        assert (code, out, err) == (0, "", f"saved 2 images to {state}\n")
        states.append(str(state))
    merged = run_cli("merge", states[2], states[0], states[1], "--format", "json")
    single = run_cli("eval", gt, pred, "--protocol", name, "--format", "json")
    missing = "vocmatch: warning: no prediction file for 'street_05': its objects count as missed\n"
    assert (single[0], single[2]) == (0, missing)
    assert merged == single


def test_merge_refuses_overlapping_shards(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """A shard of two and the whole run (shard 1 of 1) are of different splits; merged
    anyway (--partial), their shared images are refused."""
    gt, pred = map(str, demo)
    a, whole = str(tmp_path / "a.vms"), str(tmp_path / "all.vms")
    run_cli("eval", gt, pred, "--shard", "1/2", "--save-state", a)
    run_cli("eval", gt, pred, "--save-state", whole)
    code, out, err = run_cli("merge", a, whole)
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        f"vocmatch: error: cannot merge states of different runs: {a} is shard 1/2, "
        f"{whole} shard 1/1\n"
    )
    code, out, err = run_cli("merge", a, whole, "--partial")
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        "vocmatch: error: cannot merge states that share images: 'street_01', 'street_03', 'street_05'\n"
    )


def test_merge_refuses_a_damaged_state(demo: tuple[Path, Path], tmp_path: Path) -> None:
    state = tmp_path / "a.vms"
    run_cli("eval", *map(str, demo), "--save-state", str(state))
    state.write_bytes(state.read_bytes()[:-1])
    code, out, err = run_cli("merge", str(state))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == f"vocmatch: error: {state}: truncated or corrupted (checksum does not match)\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--shard", "1/2"], "--shard evaluates part of the images", id="no-state"),
        pytest.param(["--shard", "3/2", "--save-state", "x"], "'3/2' is not K/N", id="range"),
    ],
)
def test_shard_usage_errors(demo: tuple[Path, Path], args: list[str], message: str) -> None:
    code, out, err = run_cli("eval", *map(str, demo), *args)
    assert (code, out) == (EXIT_USAGE, "")
    assert message in err


@pytest.mark.parametrize(
    "output_format", [pytest.param(f, id=f) for f in ("json", "table", "csv", "markdown")]
)
def test_merged_shards_report_the_files_skipped_as_the_single_run(
    demo: tuple[Path, Path], tmp_path: Path, output_format: str
) -> None:
    """A damaged file of street_02 (shard 2 of 3) and a second file of street_01's key (of
    no image: every shard lists it): merged in another order, the shards name each once on
    stderr and in the report, with the score threshold's note, and exit 3, as the run on
    the whole folder does."""
    data = tmp_path / "data"
    shutil.copytree(demo[0].parent, data)
    gt, pred = data / "gt", data / "pred"
    (gt / "street_02.xml").write_text("garbage")
    shutil.copy(gt / "street_01.xml", gt / "street_01.XML")
    args = [str(gt), str(pred), "--score-threshold", "0.3"]
    duplicate = (
        f"vocmatch: skipped {gt}/street_01.xml: same image key 'street_01' as {gt}/street_01.XML\n"
    )
    damaged = f"vocmatch: skipped {gt}/street_02.xml:1: not well-formed XML: Start tag expected, '<' not found\n"
    states = [str(tmp_path / f"shard{k}.vms") for k in (1, 2, 3)]
    runs = [
        run_cli("eval", *args, "--shard", f"{k}/3", "--save-state", states[k - 1])
        for k in (1, 2, 3)
    ]
    assert runs == [
        (EXIT_SKIPPED, "", duplicate + f"saved 2 images to {states[0]}\n"),
        (EXIT_SKIPPED, "", duplicate + damaged + f"saved 1 images to {states[1]}\n"),
        (EXIT_SKIPPED, "", duplicate + f"saved 2 images to {states[2]}\n"),
    ]  # fmt: skip
    merged = run_cli("merge", states[1], states[2], states[0], "--format", output_format)
    single = run_cli("eval", *args, "--format", output_format)
    missing = "vocmatch: warning: no prediction file for 'street_05': its objects count as missed\n"
    assert (single[0], single[2]) == (EXIT_SKIPPED, duplicate + damaged + missing)
    assert merged == single
    if output_format == "json":
        report = json.loads(merged[1])
        assert report["skipped"] == [
            {"path": f"{gt}/street_01.xml", "line": None,
             "error": f"same image key 'street_01' as {gt}/street_01.XML"},
            {"path": f"{gt}/street_02.xml", "line": 1,
             "error": "not well-formed XML: Start tag expected, '<' not found"},
        ]  # fmt: skip
        assert report["summary"]["skipped"] == 2
        assert report["notes"][-1].startswith("counts use predictions with score >= 0.3")


@pytest.mark.parametrize(
    "output_format", [pytest.param(f, id=f) for f in ("json", "table", "csv", "markdown")]
)
def test_merged_shards_report_the_prediction_files_without_ground_truth(
    demo: tuple[Path, Path], tmp_path: Path, output_format: str
) -> None:
    """A prediction file of no ground-truth image (extra.xml) and a damaged one (broken.xml):
    the first of three shards reads them, and merged in another order the shards report
    them on stderr and in the report, and exit 3, as the run on the whole folder does."""
    data = tmp_path / "data"
    shutil.copytree(demo[0].parent, data)
    gt, pred = data / "gt", data / "pred"
    shutil.copy(pred / "street_01.xml", pred / "extra.xml")
    (pred / "broken.xml").write_text("garbage")
    damaged = f"vocmatch: skipped {pred}/broken.xml:1: not well-formed XML: Start tag expected, '<' not found\n"
    states = [str(tmp_path / f"shard{k}.vms") for k in (1, 2, 3)]
    runs = [
        run_cli("eval", str(gt), str(pred), "--shard", f"{k}/3", "--save-state", states[k - 1])
        for k in (1, 2, 3)
    ]
    assert runs == [
        (EXIT_SKIPPED, "", damaged + f"saved 2 images to {states[0]}\n"),
        (0, "", f"saved 2 images to {states[1]}\n"),
        (0, "", f"saved 2 images to {states[2]}\n"),
    ]
    merged = run_cli("merge", states[2], states[0], states[1], "--format", output_format)
    single = run_cli("eval", str(gt), str(pred), "--format", output_format)
    missing = "vocmatch: warning: no prediction file for 'street_05': its objects count as missed\n"
    orphan = f"vocmatch: warning: {pred}/extra.xml has no ground-truth file: not evaluated\n"
    assert (single[0], single[2]) == (EXIT_SKIPPED, damaged + missing + orphan)
    assert merged == single
    if output_format == "json":
        report = json.loads(merged[1])
        assert report["orphan_pred"] == [f"{pred}/extra.xml"]
        assert report["summary"]["orphan_pred"] == 1


FORMATS = ("table", "json", "csv", "markdown", "junit")
MISSING = "vocmatch: warning: no prediction file for 'street_05': its objects count as missed\n"


def save_shards(
    gt: Path | str, pred: Path | str, folder: Path, n: int = 3, *extra: str
) -> list[str]:
    """Save the n shards of a run in ``folder`` (each exit 0, saying only where it saved)."""
    states = []
    for k in range(1, n + 1):
        state = str(folder / f"shard{k}.vms")
        code, out, err = run_cli(
            "eval", str(gt), str(pred), "--shard", f"{k}/{n}", "--save-state", state, *extra
        )
        assert (code, out) == (0, ""), err
        states.append(state)
    return states


@pytest.mark.parametrize("output_format", [pytest.param(f, id=f) for f in FORMATS])
def test_three_shards_in_any_order_render_as_one_eval_run(
    demo: tuple[Path, Path], tmp_path: Path, output_format: str
) -> None:
    """Every order of three shards gives eval's exit code, stdout and stderr byte for byte,
    and the same report file with -o."""
    states = save_shards(*demo, tmp_path)
    single = run_cli("eval", *map(str, demo), "--format", output_format)
    assert single[0] == 0 and single[2] == MISSING
    for order in itertools.permutations(states):
        assert run_cli("merge", *order, "--format", output_format) == single
    merged_file, single_file = tmp_path / "merged.out", tmp_path / "single.out"
    run_cli("merge", *states, "--format", output_format, "-o", str(merged_file))
    run_cli("eval", *map(str, demo), "--format", output_format, "-o", str(single_file))
    assert merged_file.read_bytes() == single_file.read_bytes()


@pytest.mark.parametrize("protocol", ["default", "coco", "voc07"])
@pytest.mark.parametrize("output_format", ["table", "json"])
def test_calibration_after_merge_renders_as_one_eval_run(
    demo: tuple[Path, Path], tmp_path: Path, output_format: str, protocol: str
) -> None:
    """The scores' calibration, OCE and D-ECE included, is read from the states' match
    records (shards saved with --calibration-bins keep what OCE and D-ECE read): three
    shards merged in any order give eval's calibration, byte for byte."""
    states = save_shards(*demo, tmp_path, 3, "--protocol", protocol, "--calibration-bins", "10")
    args = ["--calibration-bins", "10", "--format", output_format]
    single = run_cli("eval", *map(str, demo), "--protocol", protocol, *args)
    assert single[0] == 0
    if output_format == "json":
        assert json.loads(single[1])["calibration"]["all"]["d_ece"] is not None
    else:
        assert "D-ECE" in single[1]
    for order in itertools.permutations(states):
        assert run_cli("merge", *order, *args) == single


def test_calibration_and_slices_saved_together_merge_as_one_eval_run(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """A state keeps the slices and the calibration inputs side by side (format 6): three
    shards merged in any order report eval's slices and calibration, byte for byte."""
    extra = ["--slice", "size", "--calibration-bins", "10"]
    states = save_shards(*demo, tmp_path, 3, *extra)
    single = run_cli("eval", *map(str, demo), *extra, "--format", "json")
    found = json.loads(single[1])
    assert single[0] == 0 and found["calibration"]["all"]["oce"] is not None
    for order in itertools.permutations(states):
        assert run_cli("merge", *order, "--calibration-bins", "10", "--format", "json") == single


def test_calibration_of_states_saved_without_its_inputs_leaves_oce_out(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """States saved without --calibration-bins merge and report ECE and MCE; OCE and D-ECE,
    which read what only the matching sees, are left out and the report says so."""
    states = save_shards(*demo, tmp_path)
    code, out, err = run_cli("merge", *states, "--calibration-bins", "10", "--format", "json")
    assert (code, err) == (0, MISSING)
    found = json.loads(out)["calibration"]
    assert (found["detection"], found["all"]["oce"], found["all"]["d_ece"]) == (False, None, None)
    assert found["all"]["ece"] is not None
    code, out, err = run_cli("merge", *states, "--calibration-bins", "10", columns=400)
    assert (code, err) == (0, MISSING)
    assert "OCE and D-ECE left out: the match records hold no calibration inputs" in out
    assert "D-ECE │" not in out


def test_calibration_bins_at_save_state_keeps_the_inputs_and_says_merge_reports(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """--calibration-bins given to a shard is not dropped unsaid: the state keeps what OCE
    and D-ECE read (format version 6), and one warning says merge reports them."""
    from vocmatch.evaluation.shards.state import read_state

    state = tmp_path / "s.vms"
    code, out, err = run_cli(
        "eval", *map(str, demo), "--shard", "1/2", "--save-state", str(state),
        "--calibration-bins", "5",
    )  # fmt: skip
    assert (code, out) == (0, "")
    assert err == (
        "vocmatch: warning: --calibration-bins: the state keeps what OCE and D-ECE read; the "
        "calibration is reported by `vocmatch merge --calibration-bins N`\n"
        f"saved 3 images to {state}\n"
    )
    raw = read_state(state.read_bytes())
    assert int.from_bytes(state.read_bytes()[8:12], "little") == 6
    assert raw.header["calibration"] == {"oce_iou_thresholds": [0.5, 0.75]}
    assert {"calibration_label", "calibration_brier", "calibration_box"} <= set(raw.arrays)


@pytest.mark.parametrize("protocol", ["default", "coco", "voc07"])
@pytest.mark.parametrize("output_format", ["table", "json"])
def test_bootstrap_after_merge_renders_as_one_eval_run(
    demo: tuple[Path, Path], tmp_path: Path, protocol: str, output_format: str
) -> None:
    """The bootstrap resamples the states' match records (each image-class's ground truth
    kept with them): three shards merged in any order give eval's intervals, byte for
    byte, for the same seed."""
    states = save_shards(*demo, tmp_path, 3, "--protocol", protocol)
    args = ["--protocol", protocol, "--bootstrap", "50", "--seed", "3", "--format", output_format]
    single = run_cli("eval", *map(str, demo), *args)
    assert single[0] == 0 and ("interval" in single[1] or "bootstrap" in single[1])
    for order in itertools.permutations(states):
        assert run_cli("merge", *order, *args[2:]) == single


def test_bootstrap_of_states_without_ground_truth_cells_is_refused_in_one_line(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """A state saved before the ground-truth cells were kept (format 4) merges and is
    calibrated as before; its bootstrap is refused in one line saying why."""
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    states = save_shards(*demo, tmp_path)
    for state in states:
        raw = read_state(Path(state).read_bytes())
        arrays = {k: v for k, v in raw.arrays.items() if k != "gt_cells"}
        header = {k: v for k, v in raw.header.items() if k != "gt_cells"}
        Path(state).write_bytes(write_state(RawState(header, arrays), version=4))
    code, out, err = run_cli("merge", *states, "--calibration-bins", "5", "--format", "json")
    assert code == 0 and json.loads(out)["calibration"]["bins"] == 5
    code, out, err = run_cli("merge", *states, "--bootstrap", "10")
    assert (code, out) == (EXIT_USAGE, "")
    assert err.endswith(
        "vocmatch: error: these match records keep no per-image ground-truth counts (states "
        "saved by a vocmatch before state format version 5): save them again to resample "
        "them\n"
    )


@pytest.mark.parametrize(
    ("args", "flags"),
    [
        pytest.param(
            ["--bootstrap", "10", "--seed", "2"], ["--bootstrap", "--seed"], id="bootstrap"
        ),
    ],
)
def test_evidence_at_save_state_says_merge_applies_it(
    demo: tuple[Path, Path], tmp_path: Path, args: list[str], flags: list[str]
) -> None:
    """The bootstrap given to a shard is not dropped unsaid: one warning each, the state is
    saved."""
    state = tmp_path / "s.vms"
    code, out, err = run_cli(
        "eval", *map(str, demo), "--shard", "1/2", "--save-state", str(state), *args
    )
    assert (code, out) == (0, "")
    assert (
        err
        == "".join(
            f"vocmatch: warning: {flag} applies to the report, which a shard does not write: give "
            "it to `vocmatch merge`\n"
            for flag in flags
        )
        + f"saved 3 images to {state}\n"
    )


@pytest.mark.parametrize("bins", [0, -1, 2.0, True, "5"])
def test_merged_report_refuses_calibration_bins_out_of_range(
    demo: tuple[Path, Path], tmp_path: Path, bins: object
) -> None:
    from vocmatch.errors import RequestError
    from vocmatch.run.shard_states import read_states

    merged = read_states(save_shards(*demo, tmp_path))
    with pytest.raises(RequestError, match="calibration_bins"):
        merged.report(calibration_bins=bins)  # type: ignore[arg-type]


def test_merge_writes_the_class_and_threshold_files_as_eval(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    states = save_shards(*demo, tmp_path)
    files = {}
    for name, command in (("merged", ["merge", *states]), ("single", ["eval", *map(str, demo)])):
        classes, thresholds = tmp_path / f"{name}.csv", tmp_path / f"{name}.thr"
        code, _, _ = run_cli(
            *command, "--classes-csv", str(classes), "--write-thresholds", str(thresholds),
            "--beta", "2",
        )  # fmt: skip
        assert code == 0
        files[name] = (classes.read_bytes(), thresholds.read_bytes())
    assert files["merged"] == files["single"]


def other_predictions(demo: tuple[Path, Path], tmp_path: Path) -> Path:
    """A copy of the demo predictions with one file changed (another model's output)."""
    pred = tmp_path / "other_pred"
    shutil.copytree(demo[1], pred)
    path = pred / "street_03.xml"
    path.write_text(path.read_text().replace("</annotation>", "\n</annotation>"))
    return pred


@pytest.mark.parametrize(
    ("case", "message"),
    [
        pytest.param(
            "missing",
            "cannot merge: shard 3 of 3 is missing ({0} is shard 1/3, {1} is shard 2/3); give "
            "every shard, or ask for a partial merge (--partial)",
            id="two-of-three",
        ),
        pytest.param(
            "repeated",
            "cannot merge: shard 1 of 3 is given more than once ({0} and {3})",
            id="repeated",
        ),
        pytest.param(
            "run-id",
            "cannot merge states of different runs: {0} is of run (no run id), {3} of run "
            "'model-b'",
            id="other-run-id",
        ),
        pytest.param(
            "predictions",
            "cannot merge states of different runs: {0} and {3} were made from other ground "
            "truth, predictions or options",
            id="other-predictions",
        ),
        pytest.param(
            "options",
            "cannot merge states of different runs: {0} and {3} were made from other ground "
            "truth, predictions or options",
            id="other-class-choice",
        ),
    ],
)
def test_merge_refuses_states_that_are_not_one_whole_run(
    demo: tuple[Path, Path], tmp_path: Path, case: str, message: str
) -> None:
    """Two of three shards, a shard twice, or a shard of another run (another --run-id,
    other predictions, another class choice; no image shared): exit 2 and one line naming
    the states and the shards; --partial merges them."""
    states = save_shards(*demo, tmp_path)
    other = str(tmp_path / "other.vms")
    gt, pred = map(str, demo)
    if case == "missing":
        given = states[:2]
    elif case == "repeated":
        shutil.copy(states[0], other)
        given = [states[0], states[1], other, states[2]]
    else:
        extra = {
            "run-id": [gt, pred, "--run-id", "model-b"],
            "predictions": [gt, str(other_predictions(demo, tmp_path))],
            "options": [gt, pred, "--classes", "car,cat,dog,person,bicycle"],
        }[case]
        assert run_cli("eval", *extra, "--shard", "3/3", "--save-state", other)[0] == 0
        given = [states[0], states[1], other]
    code, out, err = run_cli("merge", *given)
    assert (code, out) == (EXIT_USAGE, "")
    names = [*states, other]
    assert err == f"vocmatch: error: {message.format(*names)}\n"
    if case != "repeated":  # a shard given twice shares its images: refused anyway
        assert run_cli("merge", *given, "--partial")[0] == 0


def test_a_partial_merge_says_so(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """Two of three shards with --partial: exit 0, a warning, a note in the table and the
    Markdown, and the merge object in JSON."""
    states = save_shards(*demo, tmp_path)
    note = "partial merge: shard 3 of 3 missing: the numbers are not those of the whole run"
    code, out, err = run_cli("merge", *states[:2], "--partial")
    assert (code, err) == (0, MISSING + f"vocmatch: warning: {note}\n")
    assert note in " ".join(out.split())
    assert (
        f"- note: {note}\n" in run_cli("merge", *states[:2], "--partial", "--format", "markdown")[1]
    )
    report = json.loads(run_cli("merge", *states[:2], "--partial", "--format", "json")[1])
    assert report["notes"][-1] == note
    assert report["merge"] == {
        "complete": False, "partial": True, "shards": 3, "present": [1, 2], "missing": [3],
        "repeated": [], "runs": 1, "unchecked": [],
    }  # fmt: skip
    assert report["summary"]["images"] == 4
    # Every shard, with --partial: complete, nothing to say.
    assert run_cli("merge", *states, "--partial") == run_cli("eval", *map(str, demo))


def test_states_that_record_no_shard_merge_with_a_note(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """States saved without their shard (an evaluator fed arrays, an earlier vocmatch: format
    version 2 or 3) merge as before, the report saying completeness was not checked."""
    states = save_shards(*demo, tmp_path)
    old = []
    for state in states:
        evaluator = Evaluator.load(state)
        evaluator.origin = None
        evaluator.save(state + ".old")
        old.append(state + ".old")
    note = (
        f"completeness of the merge not checked: {old[0]}, {old[1]} and {old[2]} record no "
        "shard of a run (made from arrays, or saved by an earlier vocmatch)"
    )
    code, out, err = run_cli("merge", *old, "--format", "json")
    assert (code, err) == (0, MISSING + f"vocmatch: warning: {note}\n")
    report = json.loads(out)
    assert report["notes"][-1] == note
    assert report["merge"]["unchecked"] == old
    single = json.loads(run_cli("eval", *map(str, demo), "--format", "json")[1])
    assert report["summary"] == single["summary"]


@pytest.mark.parametrize("output_format", [pytest.param(f, id=f) for f in FORMATS])
def test_a_dataset_gate_at_merge_fails_as_in_eval(
    demo: tuple[Path, Path], tmp_path: Path, output_format: str
) -> None:
    """--fail-under at merge: exit 1, the same gate lines and report as one eval run."""
    states = save_shards(*demo, tmp_path)
    gates = ["--fail-under", "map=0.9", "--fail-under", "car:recall=0.5"]
    merged = run_cli("merge", *states, *gates, "--format", output_format)
    single = run_cli("eval", *map(str, demo), *gates, "--format", output_format)
    assert merged[0] == EXIT_GATE
    assert merged[2] == MISSING + "vocmatch: gate failed: map 0.6250 < 0.9000\n"
    assert merged == single


@pytest.mark.parametrize("output_format", [pytest.param(f, id=f) for f in FORMATS])
def test_a_per_image_limit_at_merge_fails_as_in_eval(
    demo: tuple[Path, Path], tmp_path: Path, output_format: str
) -> None:
    """--max-fp at merge: exit 1 and the same lines as eval; the same report, but JUnit's
    failed images say their boxes are not listed (states keep counts) instead of listing
    each FP and FN."""
    states = save_shards(*demo, tmp_path)
    merged = run_cli("merge", *states, "--max-fp", "0", "--format", output_format)
    single = run_cli("eval", *map(str, demo), "--max-fp", "0", "--format", output_format)
    assert merged[0] == EXIT_GATE
    assert (merged[0], merged[2]) == (single[0], single[2])
    if output_format != "junit":
        assert merged[1] == single[1]
        return
    box_lines = re.compile(r"\n(?:fp|fn): [^\n<]*")
    assert merged[1].count(NO_BOXES) == 4
    assert merged[1].replace("\n" + NO_BOXES, "") == box_lines.sub("", single[1])


def test_save_state_says_where_the_dataset_gate_and_the_report_apply(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """--fail-under, -o and --format given to a shard are not dropped unsaid: one warning
    each, and the state is saved (exit 0)."""
    state = tmp_path / "s.vms"
    args = ["--fail-under", "map=0.99", "-o", str(tmp_path / "r.json"), "--format", "json"]
    code, out, err = run_cli(
        "eval", *map(str, demo), "--shard", "1/2", "--save-state", str(state), *args
    )
    assert (code, out) == (0, "")
    assert err == (
        "vocmatch: warning: --fail-under is a gate on the whole set: a shard does not apply it; "
        "give it to `vocmatch merge`\n"
        "vocmatch: warning: --format applies to the report, which a shard does not write: give "
        "it to `vocmatch merge`\n"
        "vocmatch: warning: --output/-o applies to the report, which a shard does not write: "
        "give it to `vocmatch merge`\n"
        f"saved 3 images to {state}\n"
    )
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--run-id", "model-a"],
            "Error: --run-id names a saved run: give --save-state FILE too",
            id="run-id-without-state",
        ),
    ],
)
def test_eval_refuses_what_a_state_cannot_serve(
    demo: tuple[Path, Path], tmp_path: Path, args: list[str], message: str
) -> None:
    args = [str(tmp_path / a) if a.endswith((".vms", ".html")) else a for a in args]
    message = message.replace("s.vms", str(tmp_path / "s.vms"))
    code, out, err = run_cli("eval", *map(str, demo), *args)
    assert (code, out) == (EXIT_USAGE, "")
    assert err.endswith(message + "\n")
    assert not (tmp_path / "s.vms").exists()


def test_merge_refuses_html_in_one_line(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """States saved without boxes: --html is refused in one line naming them."""
    states = save_shards(*demo, tmp_path)
    code, out, err = run_cli("merge", *states, "--html", str(tmp_path / "r.html"))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        f"vocmatch: error: {states[0]}, {states[1]}, {states[2]} keep no boxes, which the report "
        "asked for lists or draws: save the state of every shard with --keep-boxes\n"
    )


def test_a_shard_applies_the_per_image_limits_to_its_images(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """--max-fp with --save-state: the shard's images over the limit are named, the state is
    saved, exit 1; the shard without such an image passes."""
    runs = [
        run_cli(
            "eval", *map(str, demo), "--shard", f"{k}/3", "--max-fp", "0",
            "--save-state", str(tmp_path / f"s{k}.vms"),
        )
        for k in (1, 2, 3)
    ]  # fmt: skip
    single = run_cli("eval", *map(str, demo), "--max-fp", "0")
    failed = sorted(line for line in single[2].splitlines() if "gate failed" in line)
    shard_lines = sorted(line for _, _, err in runs for line in err.splitlines() if "gate" in line)
    assert shard_lines == failed
    assert [code for code, _, _ in runs] == [
        EXIT_GATE if any("gate failed" in line for line in err.splitlines()) else 0
        for _, _, err in runs
    ]
    assert {code for code, _, _ in runs} == {0, EXIT_GATE}
    assert all((tmp_path / f"s{k}.vms").exists() for k in (1, 2, 3))


K_OF_N = "is not K/N with 1 <= K <= N (for example 2/8)"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("1/1", (1, 1), id="whole-run"),
        pytest.param("2/2", (2, 2), id="last"),
        pytest.param("1/2", (1, 2), id="first"),
        pytest.param((2, 3), (2, 3), id="already-read"),
        pytest.param("12", f"'12' {K_OF_N}", id="no-slash"),
        pytest.param("0/2", f"'0/2' {K_OF_N}", id="zero"),
        pytest.param("3/2", f"'3/2' {K_OF_N}", id="beyond"),
        pytest.param("1/", f"'1/' {K_OF_N}", id="no-n"),
        pytest.param("/2", f"'/2' {K_OF_N}", id="no-k"),
        pytest.param("1/x", f"'1/x' {K_OF_N}: 'x' is not a whole number (ASCII digits 0-9 only)",
                     id="n-not-a-count"),
        pytest.param("-1/2", f"'-1/2' {K_OF_N}: '-1' is not a whole number: a count takes no sign",
                     id="k-signed"),
    ],
)  # fmt: skip
def test_shard_values_read_exactly(value: object, expected: object) -> None:
    """``--shard K/N``: 1 <= K <= N, each an ASCII count; a refusal repeats the value and,
    when both numbers are there, says what is wrong with one."""
    import click

    from vocmatch.cli.shard_options import ShardParam

    if isinstance(expected, tuple):
        assert ShardParam().convert(value, None, None) == expected
        return
    with pytest.raises(click.BadParameter) as caught:
        ShardParam().convert(value, None, None)
    assert caught.value.format_message() == f"Invalid value: {expected}"


def test_merge_refuses_a_state_over_4_gib_by_default(tmp_path: Path) -> None:
    """``--max-file-size`` defaults to 4G: a 5 GiB file is refused from its size, unread."""
    path = tmp_path / "big.vms"
    with open(path, "wb") as stream:
        stream.write(b"VMSTATE\0" + (4).to_bytes(4, "little") + (10).to_bytes(4, "little"))
        stream.truncate(5 << 30)
    code, out, err = run_cli("merge", str(path))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        f"vocmatch: error: {path}: larger than the 4,294,967,296-byte limit of a state "
        "(5,368,709,120 bytes)\n"
    )


def test_merge_shows_20_image_rows_by_default(tmp_path: Path) -> None:
    """22 images, half of them missed: the default report is the one of ``--max-rows 20``,
    neither 19 nor 21."""
    import numpy as np

    evaluator = Evaluator("voc12")
    box = np.array([[0.0, 0, 10, 10]])
    for k in range(22):
        evaluator.add(f"im{k:02d}", box, ["cat"], box * 2 if k % 2 else box, [0.9], ["cat"])
    path = tmp_path / "s.vms"
    evaluator.save(path)
    reports = {
        rows: run_cli("merge", str(path), "--format", "table", *rows)
        for rows in ((), ("--max-rows", "19"), ("--max-rows", "20"), ("--max-rows", "21"))
    }
    default = reports[()]
    assert default[0] == 0
    assert default == reports[("--max-rows", "20")]
    assert default != reports[("--max-rows", "19")]
    assert default != reports[("--max-rows", "21")]


@pytest.mark.parametrize("protocol_name", ["default", "coco", "voc07"])
def test_shards_of_rotated_boxes_and_polygons_give_one_runs_numbers(
    tmp_path: Path, protocol_name: str
) -> None:
    """Rotated boxes and polygons are matched by their regions in each shard: merged in
    any order, the states give one run's numbers and notes (the reading's note on objects
    with both a <bndbox> and a shape included, worded from every shard's counts)."""
    shapes = Path("fixtures/shapes")
    options = ["--protocol", protocol_name]
    states = save_shards(shapes / "gt", shapes / "pred", tmp_path, 3, *options)
    code, single, _ = run_cli(
        "eval", str(shapes / "gt"), str(shapes / "pred"), *options, "--format", "json"
    )
    one = json.loads(single)
    for order in (states, states[::-1]):
        merged_code, merged, _ = run_cli("merge", *order, "--format", "json")
        found = json.loads(merged)
        assert merged_code == code
        for field in ("summary", "classes", "images", "coco"):
            assert found.get(field) == one.get(field), field
        assert found["notes"] == one["notes"]

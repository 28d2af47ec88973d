"""``vocmatch eval --shard K/N``: a shard chooses its images from the file names and reads only
their files, in every prediction format and with a split; merged, the shards report one run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, run_cli, street_05_unpredicted
from tests.evaluation.test_batch import assert_identical
from tests.run.test_api import PRED_FORMATS, converted, inputs_of  # noqa: F401  (a fixture)
from vocmatch.cli import EXIT_SKIPPED
from vocmatch.errors import InputError
from vocmatch.readers.scan import read_column_pair
from vocmatch.readers.shards import shard_keys
from vocmatch.run.evaluate import EvalRequest, Inputs, shard_state
from vocmatch.run.read_stage import read_inputs

DEMO = FIXTURES / "demo"
KEYS = [f"street_0{i}" for i in range(1, 7)]


def shard_runs(tmp_path: Path, args: list[str], n: int) -> list[tuple[int, str]]:
    """Run shard ``k`` of ``n`` for each ``k``: (exit code, stderr) of each; states in tmp_path."""
    runs = []
    for k in range(1, n + 1):
        state = tmp_path / f"shard{k}.vms"
        code, out, err = run_cli(*args, "--shard", f"{k}/{n}", "--save-state", str(state))
        assert out == ""
        runs.append((code, err))
    return runs


def merged_json(tmp_path: Path, n: int) -> tuple[int, str, str]:
    """``vocmatch merge`` of the ``n`` states, last first, as JSON: (exit code, stdout, stderr)."""
    return run_cli(
        "merge", *(str(tmp_path / f"shard{k}.vms") for k in range(n, 0, -1)), "--format", "json"
    )


@pytest.mark.parametrize("n", [pytest.param(n, id=f"{n}-shards") for n in (1, 2, 3, 4, 6, 7)])
def test_the_partition_is_the_place_in_key_order(n: int) -> None:
    """Shard k of n holds the images at place k - 1 modulo n of the sorted keys, as states
    saved before were split (every file of the demo reads)."""
    request = EvalRequest(gt=DEMO / "gt", pred=DEMO / "pred")
    for k in range(1, n + 1):
        state = shard_state(request, shard=(k, n))
        assert state.evaluator.keys == KEYS[k - 1 :: n]
        assert state.skipped == ()


def test_shard_keys_refuses_a_shard_that_does_not_exist() -> None:
    with pytest.raises(InputError, match="shard 4/3 does not exist"):
        shard_keys(KEYS, (4, 3))


def test_a_shard_does_not_open_the_files_of_other_shards(tmp_path: Path) -> None:
    """Garbage in two files of shard 2 of 3: shards 1 and 3 read as if nothing were wrong;
    shard 2 reports both files and exits 3, as the unsharded run does."""
    data = tmp_path / "data"
    shutil.copytree(DEMO, data)
    (data / "gt" / "street_02.xml").write_text("garbage")
    (data / "pred" / "street_05.xml").write_text("<annotation><object>")
    gt, pred = str(data / "gt"), str(data / "pred")
    runs = shard_runs(tmp_path, [gt, pred], 3)
    skipped = (
        f"vocmatch: skipped {gt}/street_02.xml:1: not well-formed XML: Start tag expected, "
        "'<' not found\n"
        f"vocmatch: skipped {pred}/street_05.xml:1: not well-formed XML: Premature end of data "
        "in tag object line 1\n"
    )
    assert runs == [
        (0, f"saved 2 images to {tmp_path / 'shard1.vms'}\n"),
        (EXIT_SKIPPED, skipped + f"saved 0 images to {tmp_path / 'shard2.vms'}\n"),
        (0, f"saved 2 images to {tmp_path / 'shard3.vms'}\n"),
    ]
    code, _, err = run_cli(gt, pred, "--format", "json")
    assert code == EXIT_SKIPPED
    assert err.startswith(skipped)


def test_a_shard_reads_its_files_only(tmp_path: Path) -> None:
    """The columns a shard reads hold its images and nothing of the others'."""
    gt, pred = read_inputs(Inputs(DEMO / "gt", DEMO / "pred"), shard=(1, 3))
    assert (gt.keys, pred.keys) == (("street_01", "street_04"), ("street_01", "street_04"))
    all_gt, _ = read_column_pair(DEMO / "gt", DEMO / "pred")
    assert len(all_gt.keys) == 6


def test_shards_merge_to_the_single_run(demo: tuple[Path, Path], tmp_path: Path) -> None:
    gt, pred = map(str, demo)
    runs = shard_runs(tmp_path, [gt, pred, "--protocol", "coco"], 4)
    assert [code for code, _ in runs] == [0, 0, 0, 0]
    single = run_cli(gt, pred, "--protocol", "coco", "--format", "json")
    assert single[0] == 0
    # The same report, and the same warning on stderr (street_05 has no prediction file).
    assert merged_json(tmp_path, 4) == single


@pytest.mark.parametrize("pred_format", [f for f in PRED_FORMATS if f != "voc"])
def test_shards_of_every_prediction_format_merge_to_the_single_run(
    converted: Path,  # noqa: F811
    tmp_path: Path,
    pred_format: str,
) -> None:
    """COCO results (read whole), YOLO and devkit txt files: each shard keeps its own images'
    predictions, the others' are neither orphans nor errors."""
    args = [str(DEMO / "gt"), *inputs_of(pred_format, converted)[0]]
    runs = shard_runs(tmp_path, args, 4)
    assert [err.count("saved") for _, err in runs] == [1, 1, 1, 1]
    assert all(code == 0 for code, _ in runs), runs
    single = run_cli(*args, "--format", "json")
    assert single[0] == 0
    assert merged_json(tmp_path, 4) == single


def test_yolo_files_of_other_shards_are_not_opened(
    converted: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A broken YOLO file of shard 2's image leaves shard 1 unaffected."""
    labels = tmp_path / "yolo"
    shutil.copytree(converted / "yolo", labels)
    (labels / "street_02.txt").write_text("not a yolo line\n")
    names = str(labels / "classes.txt")
    args = [str(DEMO / "gt"), str(labels), "--pred-format", "yolo", "--names", names]
    runs = shard_runs(tmp_path, args, 2)
    assert runs[0] == (0, f"saved 3 images to {tmp_path / 'shard1.vms'}\n")
    assert runs[1][0] == EXIT_SKIPPED
    assert runs[1][1].startswith(f"vocmatch: skipped {labels}/street_02.txt:1: ")


def voc_year(tmp_path: Path) -> Path:
    """A VOC year folder: the demo's annotations, a val split of four images of which one
    has no annotation file."""
    root = tmp_path / "VOC2007"
    shutil.copytree(DEMO / "gt", root / "Annotations")
    (root / "ImageSets" / "Main").mkdir(parents=True)
    listed = "street_01\nstreet_03\nstreet_04\nstreet_06\nstreet_09\n"
    (root / "ImageSets" / "Main" / "val.txt").write_text(listed)
    return root


def test_shards_of_a_split_merge_to_the_single_run(tmp_path: Path) -> None:
    """Shards are chosen among the split's images; the listed image without an annotation
    file is reported once, by the first shard."""
    root = voc_year(tmp_path)
    args = [str(root), str(DEMO / "pred"), "--split", "val"]
    runs = shard_runs(tmp_path, args, 2)
    missing = (
        f"vocmatch: skipped {root}/ImageSets/Main/val.txt:5: no annotation file for "
        f"'street_09' in {root}/Annotations\n"
    )
    assert runs == [
        (EXIT_SKIPPED, missing + f"saved 2 images to {tmp_path / 'shard1.vms'}\n"),
        (0, f"saved 2 images to {tmp_path / 'shard2.vms'}\n"),
    ]
    request = EvalRequest(gt=root, pred=DEMO / "pred", split="val")
    assert shard_state(request, shard=(2, 2)).evaluator.keys == ["street_03", "street_06"]
    code, single, err = run_cli(*args, "--format", "json")
    assert (code, err.startswith(missing)) == (EXIT_SKIPPED, True)
    merged_code, merged, merged_err = merged_json(tmp_path, 2)
    # Shard 1's state carries the listed image without a file: merged, it is reported as the
    # single run reports it. The split's note is the reading's, which a state does not keep.
    assert (merged_code, merged_err) == (EXIT_SKIPPED, err)
    merged_report, whole = json.loads(merged), json.loads(single)
    assert (merged_report.pop("notes"), whole.pop("notes")[0]) == (
        ["classes only in predictions (all FP, not averaged into mAP): dog, truck"],
        f"split {root}/ImageSets/Main/val.txt: 5 images listed; 1 image of other splits in "
        "the predictions, not evaluated",
    )
    assert merged_report == whole


def test_a_damaged_prediction_file_of_a_split_image_without_annotation_is_reported(
    tmp_path: Path,
) -> None:
    """street_09 is listed by the split, has no annotation file, and a damaged prediction
    file: the first shard reads that file and reports it, as the single run does; a
    prediction file outside the split (zz.xml) is neither read nor an orphan."""
    root = voc_year(tmp_path)
    pred = tmp_path / "pred"
    shutil.copytree(DEMO / "pred", pred)
    (pred / "street_09.xml").write_text("garbage")
    shutil.copy(pred / "street_01.xml", pred / "zz.xml")
    args = [str(root), str(pred), "--split", "val"]
    runs = shard_runs(tmp_path, args, 2)
    missing = (
        f"vocmatch: skipped {root}/ImageSets/Main/val.txt:5: no annotation file for "
        f"'street_09' in {root}/Annotations\n"
    )
    damaged = (
        f"vocmatch: skipped {pred}/street_09.xml:1: not well-formed XML: Start tag expected, "
        "'<' not found\n"
    )
    assert runs == [
        (EXIT_SKIPPED, missing + damaged + f"saved 2 images to {tmp_path / 'shard1.vms'}\n"),
        (0, f"saved 2 images to {tmp_path / 'shard2.vms'}\n"),
    ]
    code, single, err = run_cli(*args, "--format", "json")
    assert (code, err) == (EXIT_SKIPPED, missing + damaged)
    merged_code, merged, merged_err = merged_json(tmp_path, 2)
    assert (merged_code, merged_err) == (EXIT_SKIPPED, err)
    merged_report, whole = json.loads(merged), json.loads(single)
    assert merged_report["orphan_pred"] == whole["orphan_pred"] == []
    merged_report.pop("notes")
    whole.pop("notes")
    assert merged_report == whole


def test_a_class_chosen_that_only_another_shard_holds_is_not_refused(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """`--classes bus`: only street_03 (shard 3 of 3) has a bus; shards 1 and 2 evaluate
    nothing of it rather than refuse the name, and the merge is the single run."""
    args = [*map(str, demo), "--classes", "bus"]
    runs = shard_runs(tmp_path, args, 3)
    assert [code for code, _ in runs] == [0, 0, 0]
    code, single, err = run_cli(*args, "--format", "json")
    assert code == 0
    merged_code, merged_out, merged_err = merged_json(tmp_path, 3)
    assert (merged_code, merged_err) == (0, err)
    # A state keeps the images, not the reading's notes (here the class choice's).
    merged, whole = json.loads(merged_out), json.loads(single)
    assert (merged.pop("notes"), len(whole.pop("notes"))) == ([], 1)
    assert merged == whole


def test_a_broken_coco_record_is_reported_by_its_image_s_shard_only(
    converted: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The results file is read whole by every shard; a bad detection of street_02 (shard
    2 of 3) is reported by shard 2 alone, as the single run reports it."""
    records = json.loads((converted / "coco" / "results.json").read_text())
    broken = next(i for i, r in enumerate(records) if r["image_id"] == 2)
    records[broken]["bbox"] = [1, 2]
    results = tmp_path / "results.json"
    results.write_text(json.dumps(records))
    args = [str(DEMO / "gt"), str(results), "--pred-format", "coco"]
    args += ["--coco-gt", str(converted / "coco" / "gt.json")]
    runs = shard_runs(tmp_path, args, 3)
    line = f"vocmatch: skipped {results}:1: detection {broken}: bbox is not [x, y, width, height]"
    assert [code for code, _ in runs] == [0, EXIT_SKIPPED, 0]
    assert [err.startswith(line) for _, err in runs] == [False, True, False]
    code, _, err = run_cli(*args, "--format", "json")
    assert (code, err.startswith(line)) == (EXIT_SKIPPED, True)


def test_columns_already_read_split_into_the_same_shards(tmp_path: Path) -> None:
    """Columns read whole (on a cluster, from URLs) give each shard the images and skipped
    files a shard reading its own files gets, a broken file's key keeping its place."""
    data = tmp_path / "data"
    shutil.copytree(DEMO, data)
    (data / "gt" / "street_02.xml").write_text("garbage")
    request = EvalRequest(gt=data / "gt", pred=data / "pred")
    columns = read_column_pair(data / "gt", data / "pred")
    for k in (1, 2, 3):
        own = shard_state(request, shard=(k, 3))
        given = shard_state(request, shard=(k, 3), columns=columns)
        assert (given.evaluator.keys, given.skipped) == (own.evaluator.keys, own.skipped)
    assert shard_state(request, shard=(3, 3), columns=columns).evaluator.keys == [
        "street_03",
        "street_06",
    ]


def test_columns_given_are_not_read_again(tmp_path: Path) -> None:
    """Columns already read are the shard's input: a file damaged since is not read again
    (the columns were read once, on a cluster or from URLs)."""
    data = tmp_path / "data"
    shutil.copytree(DEMO, data)
    request = EvalRequest(gt=data / "gt", pred=data / "pred")
    columns = read_column_pair(data / "gt", data / "pred")
    (data / "gt" / "street_02.xml").write_text("garbage")
    given = shard_state(request, shard=(2, 3), columns=columns)
    assert (given.evaluator.keys, given.skipped) == (["street_02", "street_05"], ())


def test_a_shard_of_file_urls_holds_the_images_of_its_folder() -> None:
    """URLs are read whole, then split: the shard of ``file://`` folders is the folder's."""
    gt, pred = (f"file://{(DEMO / name).resolve()}" for name in ("gt", "pred"))
    state = shard_state(EvalRequest(gt=gt, pred=pred), shard=(2, 3))
    assert (state.evaluator.keys, state.skipped) == (["street_02", "street_05"], ())


@pytest.mark.parametrize(
    ("max_fp", "max_fn"),
    [
        pytest.param(None, None, id="no-limit"),
        pytest.param(None, 0, id="max-fn-only"),
        pytest.param(0, None, id="max-fp-only"),
    ],
)
def test_a_shard_checks_the_limits_given_on_its_images(
    max_fp: int | None, max_fn: int | None
) -> None:
    """Shard 1 of 2 of the demo: each limit given alone is checked on the shard's three
    images (each has an FP or an FN); none given, none is."""
    state = shard_state(EvalRequest(gt=DEMO / "gt", pred=DEMO / "pred"), shard=(1, 2))
    gates = state.image_gates(max_fp, max_fn)
    if max_fp is None and max_fn is None:
        assert gates is None
        return
    assert gates is not None and not gates.passed
    assert (gates.max_fp, gates.max_fn) == (max_fp, max_fn)
    assert [image.key for image in gates.images] == ["street_01", "street_03", "street_05"]


def test_read_states_gives_the_single_run_with_its_skipped_files(tmp_path: Path) -> None:
    """The library's merge: shard states saved and read back in another order give the
    single run's evaluation, the files each shard skipped and the threshold's note
    included."""
    from vocmatch.run.evaluate import evaluate, read_states

    data = tmp_path / "data"
    shutil.copytree(DEMO, data)
    (data / "gt" / "street_02.xml").write_text("garbage")
    (data / "pred" / "street_04.xml").write_text("<annotation><object>")
    request = EvalRequest(gt=data / "gt", pred=data / "pred", score_threshold=0.3)
    paths = []
    for k in (1, 2, 3):
        state = shard_state(request, shard=(k, 3))
        assert state.evaluator.skipped == state.skipped
        paths.append(tmp_path / f"shard{k}.vms")
        state.evaluator.save(paths[-1])
    merged = read_states([paths[2], paths[0], paths[1]])
    with street_05_unpredicted():
        single = evaluate(request).evaluation
    assert [(s.path, s.line, s.key) for s in merged.evaluation.skipped] == [
        (f"{data}/gt/street_02.xml", 1, "street_02"),
        (f"{data}/pred/street_04.xml", 1, "street_04"),
    ]
    assert_identical(merged.evaluation, single)
    assert merged.evaluator.keys == ["street_01", "street_03", "street_05", "street_06"]


def test_read_states_needs_a_state() -> None:
    from vocmatch.run.evaluate import read_states

    with pytest.raises(InputError, match=r"^no evaluator state to merge$"):
        read_states([])


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        pytest.param([None], "expected a state file's path, got NoneType", id="none"),
        pytest.param([b"a.vms"], "expected a state file's path, got bytes", id="bytes"),
    ],
)  # fmt: skip
def test_read_states_takes_a_list_of_paths(paths: Any, message: str) -> None:
    """An item of the list that is not a path is an InputError, not a TypeError (one path
    given for the list: tests/evaluation/test_state_files.py)."""
    from vocmatch.run.evaluate import read_states

    with pytest.raises(InputError) as caught:
        read_states(paths)
    assert str(caught.value) == message


def test_read_states_gives_the_prediction_files_without_ground_truth(tmp_path: Path) -> None:
    """A prediction file of no ground-truth image and a damaged one: the first shard alone
    reads them, whether it reads its own files or is given columns read whole, and the
    merged states report them as the single run does."""
    from vocmatch.run.evaluate import evaluate, read_states

    data = tmp_path / "data"
    shutil.copytree(DEMO, data)
    shutil.copy(data / "pred" / "street_01.xml", data / "pred" / "extra.xml")
    (data / "pred" / "broken.xml").write_text("garbage")
    request = EvalRequest(gt=data / "gt", pred=data / "pred")
    columns = read_column_pair(data / "gt", data / "pred")
    broken = (f"{data}/pred/broken.xml", 1, "broken")
    paths = []
    for k in (1, 2, 3):
        own = shard_state(request, shard=(k, 3))
        given = shard_state(request, shard=(k, 3), columns=columns)
        expected = ((f"{data}/pred/extra.xml",), [broken]) if k == 1 else ((), [])
        for state in (own, given):
            assert state.evaluator.orphan_pred == expected[0]
            assert [(s.path, s.line, s.key) for s in state.skipped] == expected[1]
        paths.append(tmp_path / f"shard{k}.vms")
        own.evaluator.save(paths[-1])
    merged = read_states([paths[1], paths[2], paths[0]])
    with street_05_unpredicted():
        single = evaluate(request).evaluation
    assert merged.evaluation.orphan_pred == single.orphan_pred == (f"{data}/pred/extra.xml",)
    assert_identical(merged.evaluation, single)


@pytest.mark.parametrize("pred_format", ["yolo", "coco"])
def test_orphan_predictions_of_a_file_read_by_every_shard_are_reported_once(
    converted: Path,  # noqa: F811
    tmp_path: Path,
    pred_format: str,
) -> None:
    """A YOLO file, or COCO detections on an image of the COCO ground truth, with no
    ground-truth XML: every shard sees them, the first records them, and the merge reports
    them once, as the single run does."""
    formats = tmp_path / "formats"
    shutil.copytree(converted, formats)
    if pred_format == "yolo":
        shutil.copy(formats / "yolo" / "street_01.txt", formats / "yolo" / "extra.txt")
        orphan = f"{formats}/yolo/extra.txt"
    else:
        gt_json, results = formats / "coco" / "gt.json", formats / "coco" / "results.json"
        images = json.loads(gt_json.read_text())
        images["images"].append({"id": 7, "file_name": "extra.jpg"})
        gt_json.write_text(json.dumps(images))
        records = json.loads(results.read_text())
        records.append({"image_id": 7, "category_id": 5, "bbox": [1, 2, 3, 4], "score": 0.5})
        results.write_text(json.dumps(records))
        orphan = f"{results} (image 7)"
    args = [str(DEMO / "gt"), *inputs_of(pred_format, formats)[0]]
    runs = shard_runs(tmp_path, args, 3)
    assert [code for code, _ in runs] == [0, 0, 0]
    single = run_cli(*args, "--format", "json")
    assert (single[0], json.loads(single[1])["orphan_pred"]) == (0, [orphan])
    assert f"vocmatch: warning: {orphan} has no ground-truth file: not evaluated\n" in single[2]
    assert merged_json(tmp_path, 3) == single

"""``vocmatch eval --shard K/N --save-state FILE`` and ``vocmatch merge FILE...``: the merged
shards report the numbers of one run on every image."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from vocmatch.cli import EXIT_SKIPPED, EXIT_USAGE


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
    gt, pred = map(str, demo)
    run_cli("eval", gt, pred, "--shard", "1/2", "--save-state", str(tmp_path / "a.vms"))
    run_cli("eval", gt, pred, "--save-state", str(tmp_path / "all.vms"))
    code, out, err = run_cli("merge", str(tmp_path / "a.vms"), str(tmp_path / "all.vms"))
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

"""What the reading of a run notes (the class choice, the geometry, the split, the folder
walk) is said by merge as one run says it, worded from the counts of every shard; a class
chosen that no shard found is refused at merge as one run refuses it."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from tests.conftest import run_cli
from vocmatch.cli import EXIT_USAGE
from vocmatch.evaluation.class_map import ClassChoice
from vocmatch.run.evaluate import evaluate
from vocmatch.run.shard_states import read_states

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DEMO = (FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred")
SHAPES = (FIXTURES / "shapes" / "gt", FIXTURES / "shapes" / "pred")


def renamed_predictions(tmp_path: Path) -> tuple[Path, Path]:
    """The demo's predictions with 'car' written 'Automobile', and a map back to 'car'."""
    pred = tmp_path / "renamed"
    pred.mkdir()
    for path in DEMO[1].glob("*.xml"):
        text = path.read_text("utf-8").replace("<name>car</name>", "<name>Automobile</name>")
        (pred / path.name).write_text(text, "utf-8")
    class_map = tmp_path / "map.csv"
    class_map.write_text("# theirs,ours\nAutomobile,car\ndog,\n", "utf-8")
    return pred, class_map


def voc_split(tmp_path: Path) -> tuple[Path, Path]:
    """A VOC folder of the demo's ground truth whose split 'val' lists four of its six images
    and one without a file; the predictions hold a file of another split too."""
    voc = tmp_path / "voc"
    (voc / "ImageSets" / "Main").mkdir(parents=True)
    shutil.copytree(DEMO[0], voc / "Annotations")
    listed = sorted(p.stem for p in DEMO[0].glob("*.xml"))[:4]
    (voc / "ImageSets" / "Main" / "val.txt").write_text("\n".join([*listed, "ghost"]) + "\n")
    pred = tmp_path / "pred"
    shutil.copytree(DEMO[1], pred)
    shutil.copy(pred / "street_01.xml", pred / "train_07.xml")
    return voc, pred


def cases(tmp_path: Path, case: str) -> tuple[Path, Path, list[str]]:
    if case == "classes":
        return *DEMO, ["--classes", "car,dog"]
    if case == "agnostic":
        return *DEMO, ["--agnostic"]
    if case == "class-map":
        pred, class_map = renamed_predictions(tmp_path)
        return DEMO[0], pred, ["--class-map", str(class_map), "--classes", "car,person"]
    if case == "shapes":
        return *SHAPES, []
    if case == "geometry-box":
        return *SHAPES, ["--geometry", "box"]
    assert case == "split"
    return *voc_split(tmp_path), ["--split", "val"]


def save_shards(
    gt: Path, pred: Path, folder: Path, n: int, options: list[str], code: int
) -> list[str]:
    """Save the n shards of a run in ``folder``, each exiting 0 or as one run does (a file
    skipped is the exit code of the shard that skips it)."""
    states = []
    for k in range(1, n + 1):
        state = str(folder / f"shard{k}.vms")
        found = run_cli(
            "eval", str(gt), str(pred), "--shard", f"{k}/{n}", "--save-state", state, *options
        )
        assert found[0] in (0, code) and found[1] == "", found[2]
        states.append(state)
    return states


CASES = ["classes", "agnostic", "class-map", "shapes", "geometry-box", "split"]


@pytest.mark.parametrize("output_format", ["table", "json"])
@pytest.mark.parametrize("case", CASES)
def test_merge_notes_what_the_reading_of_one_run_notes(
    tmp_path: Path, case: str, output_format: str
) -> None:
    """Two and three shards merged print one run's exit code, stdout and stderr, byte for
    byte: the notes of the class choice, the geometry and the split included."""
    gt, pred, options = cases(tmp_path, case)
    single = run_cli("eval", str(gt), str(pred), *options, "--format", output_format)
    assert "note:" in single[1] or '"notes"' in single[1]
    for n in (2, 3):
        folder = tmp_path / f"of{n}"
        folder.mkdir()
        states = save_shards(gt, pred, folder, n, options, single[0])
        assert run_cli("merge", *states, "--format", output_format) == single


@pytest.mark.parametrize("case", CASES)
def test_read_states_gives_the_notes_of_evaluate(tmp_path: Path, case: str) -> None:
    gt, pred, options = cases(tmp_path, case)
    code = 3 if case == "split" else 0  # the split lists an image without a file
    states = save_shards(gt, pred, tmp_path, 2, options, code)
    choices = {
        "classes": ClassChoice(classes=("car", "dog")),
        "agnostic": ClassChoice(agnostic=True),
        "class-map": ClassChoice(classes=("car", "person")),
    }
    keywords: dict[str, object] = {"class_choice": choices[case]} if case in choices else {}
    if case == "class-map":
        keywords["class_map"] = options[1]
    if case == "geometry-box":
        keywords["geometry"] = "box"
    if case == "split":
        keywords["split"] = "val"
    with warnings.catch_warnings():  # the run's warnings (a missing file): not at issue here
        warnings.simplefilter("ignore")
        one = evaluate(str(gt), str(pred), **keywords)  # type: ignore[arg-type]
    assert read_states(states).evaluation.notes == one.evaluation.notes


@pytest.mark.parametrize("n", [1, 2, 3])
def test_merge_refuses_a_class_no_shard_found_as_one_run_does(tmp_path: Path, n: int) -> None:
    """A shard cannot tell a class of other shards from one of none; the merge can, and
    refuses it in eval's line (exit 2)."""
    options = ["--classes", "car,nonexistent"]
    single = run_cli("eval", *map(str, DEMO), *options)
    assert single[0] == EXIT_USAGE and single[1] == ""
    states = save_shards(*DEMO, tmp_path, n, options, 0)
    code, out, err = run_cli("merge", *states)
    assert (code, out) == (EXIT_USAGE, "")
    assert err.splitlines()[-1] == single[2].splitlines()[-1]
    assert "'nonexistent' is in neither" in err


@pytest.mark.parametrize("case", ["classes", "geometry-box"])
def test_shards_saved_from_a_dask_cluster_note_what_one_run_notes(
    tmp_path: Path, case: str
) -> None:
    """Shards read and matched on a cluster keep the reading's counts as local shards do; a
    shard whose images lack a chosen class is not refused (the merge judges the class)."""
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    gt, pred, options = cases(tmp_path, case)
    if case == "classes":
        options = ["--classes", "cat"]  # one object, in one shard of two
    single = run_cli("eval", str(gt), str(pred), *options)
    states = save_shards(gt, pred, tmp_path, 2, [*options, "--dask", "local:1"], single[0])
    assert run_cli("merge", *states) == single

"""``--min-score``, ``--nms``, ``--nms-agnostic`` and ``--max-per-image``: predictions prepared
before matching, as torchvision's NMS keeps them, on every route (one process, ``--jobs``,
shards merged, Dask), and what was removed in every report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.oracle import write_voc
from vocmatch.cli import EXIT_USAGE
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.readers.parse import AnnotationSet

MISSING = "vocmatch: warning: no prediction file for 'street_05': its objects count as missed\n"


def test_nms_07_reports_what_the_files_torchvision_kept_report(raw: Path) -> None:
    """`--nms 0.7` on raw output reports every number, image by image, that evaluating
    the boxes torchvision.ops.nms kept class by class reports; the preparation block says
    what was removed."""
    gt, pred, kept = str(raw / "gt"), str(raw / "pred"), str(raw / "kept" / "pred")
    code, out, err = run_cli(
        "eval", gt, pred, "--nms", "0.7", "--protocol", "coco", "--format", "json"
    )
    assert (code, err) == (0, "")
    prepared = json.loads(out.replace(pred, kept))
    block = prepared.pop("preparation")
    assert block["removed"] == {"min_score": 0, "nms": 2 * (1437 - 613), "max_per_image": 0,
                                "total": 2 * (1437 - 613)}  # fmt: skip
    assert (block["nms"], block["nms_agnostic"], block["min_score"]) == (0.7, False, None)
    code, out, err = run_cli("eval", gt, kept, "--protocol", "coco", "--format", "json")
    assert (code, err) == (0, "")
    assert prepared == json.loads(out)
    assert "preparation" not in out


ULTRALYTICS = ["--min-score", "0.001", "--nms", "0.7", "--max-per-image", "30"]


@pytest.mark.parametrize("output_format", ["json", "table", "markdown"])
def test_shards_merged_and_parts_report_the_one_run(
    raw: Path, tmp_path: Path, output_format: str
) -> None:
    """Three shards saved with a preparation and merged, and --jobs 2, print the one run's
    report byte for byte, the counts of what was removed added up."""
    gt, pred = str(raw / "gt"), str(raw / "pred")
    args = [*ULTRALYTICS, "--protocol", "coco", "--format", output_format]
    single = run_cli("eval", gt, pred, *args)
    assert single[0] == 0 and single[2] == ""
    assert "reparation" in single[1]
    states = []
    for k in (1, 2, 3):
        state = tmp_path / f"{k}.vms"
        code, out, err = run_cli(
            "eval", gt, pred, *ULTRALYTICS, "--protocol", "coco", "--shard", f"{k}/3",
            "--save-state", str(state),
        )  # fmt: skip
        assert (code, out) == (0, ""), err
        states.append(str(state))
    assert run_cli("merge", states[2], states[0], states[1], "--format", output_format) == single
    assert run_cli("eval", gt, pred, *args, "--jobs", "2") == single


def test_a_local_cluster_reports_the_one_run(raw: Path) -> None:
    pytest.importorskip("distributed")
    gt, pred = str(raw / "gt"), str(raw / "pred")
    args = [*ULTRALYTICS, "--protocol", "coco", "--format", "json"]
    single = run_cli("eval", gt, pred, *args)
    assert run_cli("eval", gt, pred, *args, "--dask", "local:2") == single


def test_states_of_another_preparation_refuse_to_merge(raw: Path, tmp_path: Path) -> None:
    gt, pred = str(raw / "gt"), str(raw / "pred")
    first, second = tmp_path / "1.vms", tmp_path / "2.vms"
    run_cli("eval", gt, pred, "--nms", "0.7", "--shard", "1/2", "--save-state", str(first))
    run_cli("eval", gt, pred, "--nms", "0.5", "--shard", "2/2", "--save-state", str(second))
    code, out, err = run_cli("merge", str(first), str(second))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        f"vocmatch: error: cannot merge states of different runs: {first} and {second} were "
        "made from other ground truth, predictions or options\n"
    )
    # Taken as parts of no one run, they are still of other options.
    code, out, err = run_cli("merge", str(first), str(second), "--partial")
    assert (code, out) == (EXIT_USAGE, "")
    assert err == "vocmatch: error: cannot merge states made with other options: nms 0.7 != 0.5\n"


def test_reports_say_what_was_removed_only_when_asked(demo: tuple[Path, Path]) -> None:
    """The terminal and Markdown reports show a preparation table of the classes with
    something removed and the total; without a preparation, none."""
    gt, pred = map(str, demo)
    code, out, err = run_cli("eval", gt, pred, "--min-score", "0.5", "--nms", "0.3", columns=200)
    assert (code, err) == (0, MISSING)
    table = out[out.index("Preparation") :].split("\n\n")[0]
    assert table.splitlines()[0] == "Preparation (score > 0.5, NMS 0.3 by class): 4 removed"
    rows = [re.sub(r"[│ ]+", " ", line).strip() for line in table.splitlines()[4:-1]]
    assert rows == [
        "bicycle 0 1 — 1", "car 1 0 — 1", "dog 1 0 — 1", "person 1 0 — 1", "all 3 1 — 4",
    ]  # fmt: skip
    code, out, _ = run_cli("eval", gt, pred, "--max-per-image", "2", "--format", "markdown")
    assert "### Preparation (2 per image): 7 removed" in out
    assert "| car | — | — | 2 | 2 |\n" in out
    assert "| all | — | — | 7 | 7 |\n" in out
    for output_format in ("table", "markdown", "json"):
        assert "reparation" not in run_cli("eval", gt, pred, "--format", output_format)[1]


def test_the_html_and_json_reports_say_what_was_removed(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    gt, pred = map(str, demo)
    html = tmp_path / "r.html"
    code, out, err = run_cli("eval", gt, pred, "--nms", "0.3", "--html", str(html))
    assert (code, err) == (0, MISSING)
    text = html.read_text(encoding="utf-8")
    assert "<h3>Preparation (NMS 0.3 by class): 2 removed</h3>" in text
    assert "<tr><td>all</td><td>—</td><td>2</td><td>—</td><td>2</td></tr>" in text
    run_cli("eval", gt, pred, "--html", str(html))
    assert "Preparation" not in html.read_text(encoding="utf-8")
    code, out, _ = run_cli("eval", gt, pred, "--nms", "0.3", "--nms-agnostic", "--format", "json")
    assert json.loads(out)["preparation"] == {
        "min_score": None, "nms": 0.3, "nms_agnostic": True, "max_per_image": None,
        "removed": {"min_score": 0, "nms": 3, "max_per_image": 0, "total": 3},
        "classes": {
            # street_06: the person (0.97) overlaps both bicycles by IoU 0.354 and 0.339.
            "bicycle": {"min_score": 0, "nms": 2, "max_per_image": 0, "total": 2},
            # street_01: the person at 0.45 overlaps the one at 0.91 by IoU 0.875.
            "person": {"min_score": 0, "nms": 1, "max_per_image": 0, "total": 1},
        },
    }  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--nms-agnostic"], "vocmatch: error: --nms-agnostic: suppresses with an NMS IoU: give one too\n", id="agnostic-alone"),
        pytest.param(["--nms", "1.5"], "Invalid value for '--nms'", id="nms-above-1"),
        pytest.param(["--nms", "nan"], "Invalid value for '--nms'", id="nms-nan"),
        pytest.param(["--min-score", "nan"], "Invalid value for '--min-score'", id="score-nan"),
        pytest.param(["--max-per-image", "0"], "Invalid value for '--max-per-image'", id="cap-0"),
        pytest.param(["--max-per-image", "1.5"], "Invalid value for '--max-per-image'", id="cap-float"),
    ],
)  # fmt: skip
def test_bad_values_are_usage_errors(
    demo: tuple[Path, Path], args: list[str], message: str
) -> None:
    code, out, err = run_cli("eval", *map(str, demo), *args)
    assert (code, out) == (EXIT_USAGE, "")
    assert message in err
    assert "Traceback" not in err


def test_unscored_predictions_are_refused_in_one_line(tmp_path: Path) -> None:
    image = ImageAnnotation("a", "a.xml", (Box("car", 0, 0, 5, 5),))
    write_voc(AnnotationSet("gt", (image,), ()), tmp_path / "gt")
    write_voc(AnnotationSet("pred", (image,), ()), tmp_path / "pred")
    code, out, err = run_cli("eval", str(tmp_path / "gt"), str(tmp_path / "pred"), "--nms", "0.5")
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        f"vocmatch: error: {tmp_path / 'pred' / 'a.xml'}: a prediction without a score: "
        "preparing predictions ranks them by score\n"
    )


def test_suspects_are_found_among_the_prepared_predictions(raw: Path) -> None:
    """`suspects --nms 0.7` reads the predictions torchvision's NMS keeps: the report of
    the files holding only those, byte for byte (the folders' names aside)."""
    gt, pred, kept = str(raw / "gt"), str(raw / "pred"), str(raw / "kept" / "pred")
    prepared = run_cli(
        "suspects", gt, pred, "--nms", "0.7", "--confidence", "0.3", "--format", "json"
    )
    plain = run_cli("suspects", gt, kept, "--confidence", "0.3", "--format", "json")
    assert prepared[0] == plain[0] == 0
    assert prepared[1].replace(pred, kept) == plain[1]
    assert json.loads(plain[1])["confident_predictions"] > 0
    raw_run = run_cli("suspects", gt, pred, "--confidence", "0.3", "--format", "json")
    assert raw_run[1].replace(pred, kept) != plain[1]


def test_diff_prepares_both_prediction_sets(raw: Path) -> None:
    """Raw output and the boxes torchvision kept, both prepared with --nms 0.7: the same
    predictions, so no number changes."""
    gt, pred, kept = str(raw / "gt"), str(raw / "pred"), str(raw / "kept" / "pred")
    code, out, err = run_cli("diff", gt, pred, kept, "--nms", "0.7", "--format", "json")
    assert (code, err) == (0, "")
    summary = json.loads(out)["summary"]
    assert [summary[name]["delta"] for name in ("map", "precision", "recall")] == [0, 0, 0]
    code, out, _ = run_cli("diff", gt, pred, kept, "--format", "json")
    assert json.loads(out)["summary"]["map"]["delta"] != 0

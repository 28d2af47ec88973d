"""The command line of the evidence beside the numbers: bootstrap intervals, paired bootstrap
regressions, slices, label-error suspects and calibration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.conftest import run_cli as run
from tests.evidence.test_bootstrap import EXPECTED_DEMO
from vocmatch.cli import EXIT_GATE, EXIT_OK, EXIT_USAGE

DEMO = ("fixtures/demo/gt", "fixtures/demo/pred")


@pytest.fixture(autouse=True)
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the repository root so paths in the output match the expected text."""
    monkeypatch.chdir(ROOT)


def interval(entry: dict[str, object]) -> tuple[object, ...]:
    return (entry["value"], entry["low"], entry["high"], entry["defined"])


def test_bootstrap_json_holds_the_intervals() -> None:
    """--bootstrap 200 --seed 7 puts the library's intervals, exactly, under "bootstrap"."""
    code, out, _ = run(*DEMO, "--bootstrap", "200", "--seed", "7", "--format", "json")
    assert code == EXIT_OK
    data = json.loads(out)["bootstrap"]
    assert (data["resamples"], data["seed"], data["confidence"], data["images"]) == (
        200,
        7,
        0.95,
        6,
    )
    expected_map = EXPECTED_DEMO["map"]
    assert interval(data["summary"]["map"]) == (
        expected_map.value,
        expected_map.low,
        expected_map.high,
        expected_map.defined,
    )
    car = next(c for c in data["classes"] if c["name"] == "car")
    expected_car = EXPECTED_DEMO["car:ap"]
    assert interval(car["ap"]) == (
        expected_car.value,
        expected_car.low,
        expected_car.high,
        expected_car.defined,
    )


def test_bootstrap_table_and_html() -> None:
    """The table report gains the interval table; the HTML report an intervals section."""
    code, out, _ = run(*DEMO, "--bootstrap", "200", "--seed", "7")
    assert code == EXIT_OK
    assert "Bootstrap: 95 % intervals over 200 resamples of the 6 images (seed 7)" in out
    assert "all (mAP, micro)" in out
    assert "0.6250 [0.4167, 0.9334]" in out


def test_bootstrap_in_html(tmp_path: Path) -> None:
    """The HTML report shows the intervals, named by metric."""
    html = tmp_path / "report.html"
    code, _, _ = run(*DEMO, "--bootstrap", "200", "--seed", "7", "--html", str(html))
    assert code == EXIT_OK
    page = html.read_text(encoding="utf-8")
    assert '<section id="intervals">' in page
    assert '0.6250 <span class="muted">[0.4167, 0.9334]</span>' in page


def test_without_bootstrap_nothing_changes() -> None:
    """Without --bootstrap the outputs carry no interval."""
    _, out, _ = run(*DEMO, "--format", "json")
    assert "bootstrap" not in json.loads(out)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(("--bootstrap", "0"), "0 is not in the range x>=1", id="zero"),
        pytest.param(
            ("--bootstrap", "many"),
            "'many' is not a whole number (ASCII digits 0-9 only)",
            id="word",
        ),
        pytest.param(
            ("--seed", "-1"),
            "'-1' is not a whole number: a count takes no sign",
            id="negative-seed",
        ),
    ],
)
def test_bootstrap_options_are_checked(args: tuple[str, ...], message: str) -> None:
    """A resample count below 1 or a negative seed is a usage error (exit 2)."""
    code, out, err = run(*DEMO, *args)
    assert code == EXIT_USAGE
    assert out == ""
    assert message in err


REGRESSION = "fixtures/regression"


def diff_json(run_b: str, *args: str) -> tuple[int, dict[str, object], str]:
    code, out, err = run(
        "diff", f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/{run_b}",
        "--format", "json", *args,
    )  # fmt: skip
    return code, json.loads(out), err


GATES = ("--fail-on-regression", "recall=-0.01", "--fail-on-regression", "map=-0.01")


def test_insignificant_drop_passes_its_gate() -> None:
    """One missed object in twelve frames: below the gate, but not in 374 of 1,000
    resamples (p = 0.374 > 0.05), so the gate passes."""
    code, data, err = diff_json(
        "pred_b_noise", "--bootstrap", "1000", "--seed", "0", *GATES, "--significant", "0.05"
    )
    assert code == EXIT_OK
    assert err == ""
    gates = data["gates"]
    assert [(g["gate"], g["below"], g["p_value"], g["passed"]) for g in gates] == [
        ("recall", True, 0.374, True),
        ("map", True, 0.374, True),
    ]
    recall = data["bootstrap"]["summary"]["recall"]
    assert (recall["low"], recall["high"], recall["p_value"], recall["defined"]) == (
        -0.125,
        0.0,
        0.748,
        1000,
    )


def test_significant_drop_fails_its_gate() -> None:
    """Eight missed objects in twelve frames: below the gate in every resample, p = 0."""
    code, data, err = diff_json(
        "pred_b_drop", "--bootstrap", "1000", "--seed", "0", *GATES, "--significant", "0.05"
    )
    assert code == EXIT_GATE
    assert err == (
        "vocmatch: regression: recall 1.0000 -> 0.6667 (-0.3333 < -0.0100, p = 0.0000 <= 0.05:"
        " significant)\n"
        "vocmatch: regression: map 1.0000 -> 0.6667 (-0.3333 < -0.0100, p = 0.0000 <= 0.05:"
        " significant)\n"
    )
    recall = data["bootstrap"]["summary"]["recall"]
    assert (recall["low"], recall["high"], recall["p_value"]) == (
        -0.45833333333333337,
        -0.20833333333333337,
        0.0,
    )


def test_without_significance_a_drop_below_the_gate_fails() -> None:
    """--bootstrap alone reports the p-value; the gate still fails on the measured change."""
    code, data, _ = diff_json("pred_b_noise", "--bootstrap", "200", *GATES)
    assert code == EXIT_GATE
    assert [g["passed"] for g in data["gates"]] == [False, False]
    assert all(g["p_value"] is not None for g in data["gates"])


def test_significance_needs_the_bootstrap() -> None:
    """--significant without --bootstrap is a usage error."""
    code, out, err = run(
        "diff", f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/pred_b_drop",
        "--significant", "0.05",
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert out == ""
    assert "--significant tests the paired bootstrap: give --bootstrap N too" in err


def test_paired_bootstrap_without_scores(tmp_path: Path) -> None:
    """Predictions without scores: counts, precision, recall and F1 get intervals; mAP
    stays undefined and a gate on it fails with the reason."""
    for run_name in ("pred_a", "pred_b_drop"):
        folder = tmp_path / run_name
        folder.mkdir()
        for path in (ROOT / REGRESSION / run_name).glob("*.xml"):
            text = path.read_text(encoding="utf-8")
            kept = [line for line in text.splitlines() if "<score>" not in line]
            (folder / path.name).write_text("\n".join(kept) + "\n", encoding="utf-8")
    code, out, err = run(
        "diff", f"{REGRESSION}/gt", str(tmp_path / "pred_a"), str(tmp_path / "pred_b_drop"),
        "--format", "json", "--bootstrap", "300", *GATES, "--significant", "0.05",
    )  # fmt: skip
    assert code == EXIT_GATE
    data = json.loads(out)
    recall = data["bootstrap"]["summary"]["recall"]
    assert (recall["delta"], recall["p_value"], recall["defined"]) == (
        -0.33333333333333337,
        0.0,
        300,
    )
    assert data["bootstrap"]["summary"]["map"]["defined"] == 0
    assert [g["passed"] for g in data["gates"]] == [False, False]
    assert "map change undefined" in err


def test_diff_table_shows_intervals_and_p_values() -> None:
    """The table report gains an interval and p column, and a line on how they were made."""
    code, out, _ = run(
        "diff", f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/pred_b_drop",
        "--bootstrap", "1000",
    )  # fmt: skip
    assert code == EXIT_OK
    assert "95 % interval" in out
    assert "paired bootstrap: 1,000 resamples of the 12 images (seed 0)" in out


SLICED = ("fixtures/slices/gt", "fixtures/slices/pred")


def test_slices_in_json_table_and_html(tmp_path: Path) -> None:
    """--slice size --slice occluded: a table per slice, the values in the JSON ("slices")
    and a section of the HTML report."""
    code, out, _ = run(*SLICED, "--slice", "size", "--slice", "occluded", "--format", "json")
    assert code == EXIT_OK
    slices = json.loads(out)["slices"]
    assert [s["name"] for s in slices] == ["size", "occluded"]
    small = slices[0]["values"][0]
    assert (small["value"], small["gt"], small["tp"], small["fp"], small["fn"]) == (
        "small",
        2,
        1,
        2,
        1,
    )
    assert [c["name"] for c in small["classes"]] == ["car", "person"]
    code, out, _ = run(*SLICED, "--slice", "size")
    assert "Slice: size (at IoU 0.5)" in out
    html = tmp_path / "report.html"
    code, _, _ = run(*SLICED, "--slice", "pose", "--html", str(html))
    page = html.read_text(encoding="utf-8")
    assert '<table class="slice-table" id="slice-pose">' in page
    assert '<td class="name">Frontal</td>' in page


def test_slice_gate_fails_with_the_value() -> None:
    """--fail-under size=small:recall=0.6 fails on the small objects' recall (0.5)."""
    code, _, err = run(*SLICED, "--slice", "size", "--fail-under", "size=small:recall=0.6")
    assert code == EXIT_GATE
    assert err == "vocmatch: gate failed: size=small:recall 0.5000 < 0.6000\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ("--fail-under", "size=small:recall=0.6"),
            "names slice 'size', which was not evaluated (give --slice size)",
            id="slice-not-given",
        ),
        pytest.param(
            ("--slice", "size", "--fail-under", "size=tiny:recall=0.6"),
            "the size slice has no value 'tiny'",
            id="unknown-value",
        ),
        pytest.param(("--slice", "96,32"), "positive and increasing", id="bad-edges"),
    ],
)
def test_slice_usage_errors(args: tuple[str, ...], message: str) -> None:
    """A gate on a slice not given, an unknown value or bad edges: exit 2, no report."""
    code, out, err = run(*SLICED, *args)
    assert code == EXIT_USAGE
    assert out == ""
    assert message in err


def test_calibration_in_table_and_json() -> None:
    """--calibration-bins 5: the ECE table in the report and "calibration" in the JSON."""
    code, out, _ = run(*DEMO, "--calibration-bins", "5", "--format", "json")
    assert code == EXIT_OK
    data = json.loads(out)["calibration"]
    assert (data["bins"], data["iou_threshold"], data["all"]["predictions"]) == (5, 0.5, 15)
    assert data["all"]["ece"] == pytest.approx(0.076)
    assert [b["count"] for b in data["all"]["bins"]] == [0, 2, 1, 3, 9]
    code, out, _ = run(*DEMO, "--calibration-bins", "5")
    assert "Calibration (TP at IoU 0.5, 5 score bins)" in out
    _, out, _ = run(*DEMO, "--format", "json")
    assert "calibration" not in json.loads(out)


def test_html_always_draws_the_reliability_plot(tmp_path: Path) -> None:
    """The HTML report has the calibration section with or without --calibration-bins."""
    html = tmp_path / "report.html"
    code, _, _ = run(*DEMO, "--html", str(html))
    assert code == EXIT_OK
    page = html.read_text(encoding="utf-8")
    assert '<section id="calibration">' in page
    assert 'aria-label="reliability plot of person"' in page
    assert "in 10 equal score bins" in page


def test_markdown_carries_the_intervals() -> None:
    """--format markdown: eval shows the bootstrap table, diff the paired intervals and
    p-values (for a pull-request comment)."""
    code, out, _ = run(*DEMO, "--bootstrap", "200", "--seed", "7", "--format", "markdown")
    assert code == EXIT_OK
    assert "### Bootstrap: 95 % intervals over 200 resamples of the 6 images (seed 7)" in out
    assert "| all (mAP, micro) | 0.6250 [0.4167, 0.9334] |" in out
    code, out, _ = run(
        "diff", f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/pred_b_drop",
        "--bootstrap", "1000", "--format", "markdown",
    )  # fmt: skip
    assert code == EXIT_OK
    assert "### Paired bootstrap: 1,000 resamples of the 12 images (seed 0)" in out
    assert "| recall | -0.3333 | [-0.4583, -0.2083] | 0.0000 |" in out


def test_scores_near_the_float_limit_are_binned_quietly(tmp_path: Path) -> None:
    """A prediction scored 1e308: --html and the JSON calibration end without a warning on
    stderr; the score sits in the last bin with its own mean, the one clipped score."""
    box = "<bndbox><xmin>0</xmin><ymin>0</ymin><xmax>10</xmax><ymax>10</ymax></bndbox>"
    for folder, score in (("gt", ""), ("pred", "<score>1e308</score>")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.xml").write_text(
            f"<annotation><object><name>car</name>{score}{box}</object></annotation>",
            encoding="utf-8",
        )
    gt, pred, html = str(tmp_path / "gt"), str(tmp_path / "pred"), tmp_path / "report.html"
    code, out, err = run(gt, pred, "--html", str(html), "--format", "json",
                         "--calibration-bins", "2")  # fmt: skip
    assert (code, err) == (EXIT_OK, "")
    data = json.loads(out)["calibration"]
    assert (data["clipped"], data["all"]["ece"], data["all"]["mce"]) == (1, 1e308, 1e308)
    assert data["all"]["bins"][1] == {
        "low": 0.5, "high": 1.0, "count": 1, "confidence": 1e308, "accuracy": 1.0,
    }  # fmt: skip
    assert 'aria-label="reliability plot of car"' in html.read_text(encoding="utf-8")

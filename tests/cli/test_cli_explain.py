"""``vocmatch explain``: the waterfall, its JSON and HTML, the target search, and bad input
as one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli

GT, PRED = str(FIXTURES / "demo" / "gt"), str(FIXTURES / "demo" / "pred")


def _eval_map(*protocol: str) -> float:
    code, out, _ = run_cli("eval", GT, PRED, "--format", "json", "--protocol", *protocol)
    assert code == 0
    value = json.loads(out)["summary"]["map"]
    assert isinstance(value, float)
    return value


@pytest.mark.parametrize(
    ("a", "b", "eval_a", "eval_b"),
    [
        pytest.param("voc07", "coco", ["voc07"], ["coco"], id="voc07-coco"),
        pytest.param("default", "voc12", ["default"], ["voc12"], id="default-voc12"),
        pytest.param(
            "coco",
            "coco --max-dets 1 --iou 0.6",
            ["coco"],
            ["coco", "--max-dets", "1", "--iou", "0.6"],
            id="overrides",
        ),
        pytest.param("coco", "ultralytics", ["coco"], ["ultralytics"], id="coco-ultralytics"),
        pytest.param(
            "ultralytics-8.4.36",
            "ultralytics --difficult ignore",
            ["ultralytics-8.4.36"],
            ["ultralytics", "--difficult", "ignore"],
            id="ultralytics-releases",
        ),
    ],
)
def test_json_steps_add_up_to_the_eval_runs(
    a: str, b: str, eval_a: list[str], eval_b: list[str]
) -> None:
    """from.map and to.map are eval's summary.map, and the steps' deltas sum to their
    difference."""
    code, out, err = run_cli("explain", GT, PRED, "--from", a, "--to", b, "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["from"]["map"] == _eval_map(*eval_a)
    assert data["to"]["map"] == _eval_map(*eval_b)
    assert data["from"]["name"] == a and data["to"]["name"] == b
    total = sum(step["delta"] for step in data["steps"])
    assert abs(data["from"]["map"] + total - data["to"]["map"]) <= 1e-12
    for step in data["steps"]:
        assert set(step) == {"convention", "from_value", "to_value", "map", "delta", "classes"}
    assert set(data["from"]["settings"]) >= {"match_rule", "interpolation", "max_dets", "summary"}


def test_json_of_overrides_names_the_changed_steps() -> None:
    code, out, _ = run_cli(
        "explain", GT, PRED, "--from", "coco", "--to", "coco --max-dets 1", "--format", "json"
    )
    assert code == 0
    steps = json.loads(out)["steps"]
    assert [(s["convention"], s["from_value"], s["to_value"]) for s in steps] == [
        ("maximum detections", "100", "1")
    ]


def test_terminal_shows_the_waterfall() -> None:
    code, out, err = run_cli("explain", GT, PRED, "--from", "voc07", "--to", "coco", columns=160)
    assert code == 0
    assert err == ""
    assert "mAP from voc07 to coco" in out
    for label in ("+1 pixel areas", "match rule", "AP IoU thresholds", "AP integration"):
        assert label in out
    assert "AP per class" in out


def test_shapley_attribution() -> None:
    code, out, _ = run_cli(
        "explain", GT, PRED, "--from", "voc07", "--to", "coco", "--attribution", "shapley",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["attribution"] == "shapley"
    total = sum(step["delta"] for step in data["steps"])
    assert abs(data["from"]["map"] + total - data["to"]["map"]) <= 1e-12


def test_html_draws_the_waterfall(tmp_path: Path) -> None:
    page = tmp_path / "explain.html"
    code, _, err = run_cli(
        "explain", GT, PRED, "--from", "voc07", "--to", "coco", "--html", str(page), "-q"
    )
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert "<svg" in text and "AP integration" in text
    assert "AP IoU thresholds: 0.50 → 0.50:0.95" in text


@pytest.mark.parametrize(
    ("target", "found"),
    [
        pytest.param("0.6250", "Settings whose mAP rounds to 0.6250", id="fraction"),
        pytest.param("62.5", "Settings whose mAP rounds to 0.625", id="percentage"),
        pytest.param("0.1234", "No setting gives 0.1234: the closest", id="none"),
    ],
)
def test_target_is_an_answer(target: str, found: str) -> None:
    """A target found or not is an answer: exit 0, with the count of settings tried."""
    code, out, err = run_cli("explain", GT, PRED, "--target", target, columns=160)
    assert code == 0, err
    assert found in out
    assert "settings tried" in out


def test_target_json() -> None:
    code, out, _ = run_cli("explain", GT, PRED, "--target", "0.625", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["reproduced"] is True
    assert data["candidates"][0] == {"protocol": "default", "options": {}, "map": 0.625}
    assert data["tried"] > 100


@pytest.mark.parametrize(
    ("args", "words"),
    [
        pytest.param(
            ["--from", "voc2012", "--to", "coco"],
            "--from 'voc2012': no such protocol 'voc2012' (known: coco, default, ultralytics, "
            "ultralytics-8.4.175, ultralytics-8.4.36, voc07, voc12)",
            id="unknown-protocol",
        ),
        pytest.param(
            ["--from", "coco --max-det 3", "--to", "voc07"],
            "no such option --max-det (known: --continuous, --difficult, ",
            id="unknown-option",
        ),
        pytest.param(
            ["--from", "--iou 0.6", "--to", "voc07"],
            "begin with a protocol's name",
            id="no-protocol",
        ),
        pytest.param(
            ["--from", "coco '--iou", "--to", "voc07"], "No closing quotation", id="bad-quote"
        ),
        pytest.param(
            ["--from", "coco --iou 2", "--to", "voc07"], "--iou", id="out-of-range-option"
        ),
        pytest.param(
            ["--from", "coco --max-dets 1_0", "--to", "voc07"],
            "--from 'coco --max-dets 1_0': Invalid value for '--max-dets': '1_0'",
            id="count-inside-a-setting",
        ),
        pytest.param(["--from", "coco"], "give --from and --to, or --target", id="one-end"),
        pytest.param(["--target", "61"], "--target '61': expected an mAP in [0, 1]", id="61"),
        pytest.param(["--target", "-0.1"], "--target '-0.1'", id="negative-target"),
        pytest.param(["--target", "abc"], "written with digits", id="no-digits"),
        pytest.param(
            ["--target", "0.5", "--from", "coco"], "--target is searched for alone", id="both"
        ),
        pytest.param(
            [
                "--from",
                "voc07 --iou 0.6 --strict-threshold",
                "--to",
                "coco",
                "--attribution",
                "shapley",
            ],
            "--attribution shapley: Shapley values over 9 differing conventions",
            id="shapley-cap",
        ),
        pytest.param(
            ["--target", "0.5", "--html", "x.html"], "--html draws the steps", id="html-target"
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], words: str) -> None:
    code, out, err = run_cli("explain", GT, PRED, *args)
    assert code == 2
    assert out == ""
    assert words in err
    assert "Traceback" not in err


def test_nothing_pairs_is_said_as_eval_says(tmp_path: Path) -> None:
    (tmp_path / "other.xml").write_text((Path(PRED) / "street_01.xml").read_text())
    code, out, err = run_cli("explain", GT, str(tmp_path), "--from", "voc07", "--to", "coco")
    eval_code, _, eval_err = run_cli("eval", GT, str(tmp_path))
    assert (code, out) == (eval_code, "")
    assert err == eval_err
    assert "no ground-truth image pairs" in err


@pytest.mark.parametrize(
    ("from_text", "to_text"),
    [
        pytest.param("voc07", "coco --nms 0.7 --min-score 0.001", id="voc07-coco-nms"),
        pytest.param("coco --max-per-image 5", "voc12 --nms 0.5", id="cap-to-nms"),
        pytest.param("default --nms 0.7 --nms-agnostic", "default", id="agnostic-to-none"),
    ],
)
def test_the_preparation_of_predictions_is_a_step(raw: Path, from_text: str, to_text: str) -> None:
    """A setting's --min-score, --nms, --nms-agnostic and --max-per-image are the step
    "prediction pre-processing", first in the order; the ends are the two eval runs with
    those options, and the steps add up to their difference."""
    gt, pred = str(raw / "gt"), str(raw / "pred")
    code, out, err = run_cli(
        "explain", gt, pred, "--from", from_text, "--to", to_text, "--format", "json"
    )
    assert (code, err) == (0, ""), err
    found = json.loads(out)
    ends = []
    for text in (from_text, to_text):
        words = text.split()
        single = run_cli("eval", gt, pred, "--protocol", words[0], *words[1:], "--format", "json")
        ends.append(json.loads(single[1])["summary"]["map"])
    assert [found["from"]["map"], found["to"]["map"]] == ends
    assert found["steps"][0]["convention"] == "prediction pre-processing"
    assert abs(found["from"]["map"] + sum(s["delta"] for s in found["steps"]) - ends[1]) <= 1e-12
    prepared = found["to"]["settings"]["preparation"]
    assert (prepared is None) == ("--" not in to_text.replace("--max-dets", ""))

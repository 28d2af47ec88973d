"""``vocmatch eval --protocol ultralytics``: the JSON block, the report header, gates on its
metrics, shards merged, and the options that only it reads; exit code, stdout and stderr
apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.conftest import run_cli as run
from vocmatch.cli import EXIT_GATE, EXIT_OK, EXIT_USAGE

REFERENCE = ROOT / "fixtures" / "reference" / "ultralytics"
DENSE = (str(REFERENCE / "dense" / "gt"), str(REFERENCE / "dense" / "pred"))
EXPECTED: dict[str, Any] = json.loads(
    (REFERENCE / "numbers-8.4.190.json").read_text(encoding="utf-8")
)
MISSING = "".join(
    f"vocmatch: warning: no prediction file for '{key}': its objects count as missed\n"
    for key in ("img_005", "img_018", "img_031")
)
NUMBERS = ("P", "R", "mAP50", "mAP50-95")


def test_json_has_the_ultralytics_block_and_map_is_map50_95() -> None:
    code, out, err = run(*DENSE, "--protocol", "ultralytics", "--format", "json")
    assert code == EXIT_OK
    assert err == MISSING
    data = json.loads(out)
    assert sorted(data["ultralytics"]) == sorted(NUMBERS)
    for name in NUMBERS:
        assert data["ultralytics"][name] == pytest.approx(EXPECTED["dense"][name], abs=1e-9)
    assert data["summary"]["map"] == data["ultralytics"]["mAP50-95"]
    assert data["conventions"]["iou_arithmetic"] == "float32"
    assert data["conventions"]["operating_point"] == "max-f1"
    assert data["conventions"]["difficult"] == "drop"


def test_other_protocols_have_no_ultralytics_block() -> None:
    code, out, _ = run(*DENSE, "--format", "json")
    assert code == EXIT_OK
    data = json.loads(out)
    assert "ultralytics" not in data
    assert "iou_arithmetic" not in data["conventions"]


def test_the_header_states_each_convention() -> None:
    code, out, err = run(*DENSE, "--protocol", "ultralytics", columns=120)
    assert code == EXIT_OK
    assert err == MISSING
    header = [" ".join(line.split()) for line in out.splitlines()[:10]]
    assert header == [
        "protocol ultralytics",
        "match IoU >= 0.5",
        "areas continuous",
        "match rule best unmatched GT, the first on ties",
        "difficult drop",
        "AP 101-point-trapezoid, mean over IoU 0.50:0.05:0.95",
        "max dets all",
        "IoU arithmetic float32",
        "classes averaged those with ground truth",
        "P/R at the confidence of the highest smoothed mean F1",
    ]
    assert "│ 0.6444 │ 0.7139 │ 0.5562 │   0.3121 │" in out


@pytest.mark.parametrize(
    ("gate", "code", "err"),
    [
        pytest.param("mAP50-95=0.3", EXIT_OK, "", id="map50-95-passes"),
        pytest.param(
            "mAP50=0.6", EXIT_GATE, "vocmatch: gate failed: ap50 0.5562 < 0.6000\n",
            id="map50-fails",
        ),
        pytest.param(
            "P=0.65", EXIT_GATE, "vocmatch: gate failed: p 0.6444 < 0.6500\n", id="p-fails"
        ),
        pytest.param(
            "R=0.72", EXIT_GATE, "vocmatch: gate failed: r 0.7139 < 0.7200\n", id="r-fails"
        ),
        pytest.param(
            "car:P=0.5", EXIT_USAGE,
            "vocmatch: error: gate 'car:p': P is the dataset's, measured under --protocol "
            "ultralytics; elsewhere, and for a class, gate precision or recall\n",
            id="p-of-a-class-refused",
        ),
    ],
)  # fmt: skip
def test_gates_name_its_metrics(gate: str, code: int, err: str) -> None:
    got, out, stderr = run(*DENSE, "--protocol", "ultralytics", "--fail-under", gate)
    assert got == code
    assert stderr == MISSING + err
    assert (out == "") == (code == EXIT_USAGE)


@pytest.mark.parametrize(
    ("args", "err"),
    [
        pytest.param(
            ("--fail-under", "P=0.5"),
            "vocmatch: error: gate 'p': P is the dataset's, measured under --protocol "
            "ultralytics; elsewhere, and for a class, gate precision or recall\n",
            id="p-gate-under-default",
        ),
        pytest.param(
            ("--fail-under", "map50-95=0.5"),
            "vocmatch: error: gate 'map50-95': map50-95 is measured under --protocol coco or "
            "--protocol ultralytics; elsewhere gate map at --iou\n",
            id="map50-95-gate-under-default",
        ),
        pytest.param(
            ("--operating-point", "max-f1"),
            "vocmatch: error: --operating-point 'max-f1': 'max-f1' is read by the ultralytics "
            "summary only\n",
            id="max-f1-without-its-summary",
        ),
    ],
)
def test_its_options_elsewhere_are_one_line(args: tuple[str, ...], err: str) -> None:
    code, out, stderr = run(*DENSE, *args)
    assert code == EXIT_USAGE
    assert out == ""
    assert stderr.endswith(err)
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("preset", "name"),
    [
        pytest.param("ultralytics", "dense", id="ultralytics-dense"),
        pytest.param("ultralytics-8.4.175", "crowded", id="ultralytics-8.4.175-crowded"),
        pytest.param("ultralytics-8.4.36", "crowded", id="ultralytics-8.4.36-crowded"),
    ],
)
def test_shards_merged_give_the_whole_runs_numbers(tmp_path: Path, preset: str, name: str) -> None:
    inputs = (str(REFERENCE / name / "gt"), str(REFERENCE / name / "pred"))
    for k in (1, 2, 3):
        code, _, _ = run(
            *inputs, "--protocol", preset, "--shard", f"{k}/3",
            "--save-state", str(tmp_path / f"s{k}.vms"),
        )  # fmt: skip
        assert code == EXIT_OK
    code, out, _ = run(
        "merge", *(str(tmp_path / f"s{k}.vms") for k in (1, 2, 3)), "--format", "json"
    )
    assert code == EXIT_OK
    merged = json.loads(out)
    _, whole_out, _ = run(*inputs, "--protocol", preset, "--format", "json")
    whole = json.loads(whole_out)
    assert merged["ultralytics"] == whole["ultralytics"]
    assert merged["conventions"] == whole["conventions"]
    assert merged["classes"] == whole["classes"]


def test_jobs_give_the_one_process_report() -> None:
    single = run(*DENSE, "--protocol", "ultralytics", "--format", "json")
    assert single[0] == EXIT_OK
    assert "ultralytics" in json.loads(single[1])
    assert run(*DENSE, "--protocol", "ultralytics", "--format", "json", "--jobs", "2") == single


@pytest.mark.parametrize(
    "args",
    [
        pytest.param((*DENSE, "--bootstrap", "20"), id="eval"),
        pytest.param((*DENSE, "--count", "--bootstrap", "20"), id="eval-count"),
        pytest.param(("diff", DENSE[0], DENSE[1], DENSE[1], "--bootstrap", "20"), id="diff"),
    ],
)
def test_the_bootstrap_is_refused_in_one_line(args: tuple[str, ...]) -> None:
    """The bootstrap does not resample AP by the package's interpolation: one line, exit 2,
    no traceback."""
    code, out, err = run(*args, "--protocol", "ultralytics")
    assert code == EXIT_USAGE
    assert out == ""
    assert err.splitlines()[-1] == (
        "vocmatch: error: --bootstrap: intervals are not computed for AP by "
        "101-point-trapezoid (the ultralytics package's): evaluate without them"
    )

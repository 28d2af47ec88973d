"""The command line of the evidence beside the numbers: bootstrap intervals, paired bootstrap
regressions, slices, label-error suspects and calibration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from tests.test_bootstrap import EXPECTED_DEMO
from vocmatch.cli import EXIT_OK, EXIT_USAGE, main

DEMO = ("fixtures/demo/gt", "fixtures/demo/pred")


@pytest.fixture(autouse=True)
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the repository root so paths in the output match the expected text."""
    monkeypatch.chdir(ROOT)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


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
        pytest.param(("--bootstrap", "many"), "'many' is not a valid integer", id="word"),
        pytest.param(("--seed", "-1"), "-1 is not in the range x>=0", id="negative-seed"),
    ],
)
def test_bootstrap_options_are_checked(args: tuple[str, ...], message: str) -> None:
    """A resample count below 1 or a negative seed is a usage error (exit 2)."""
    code, out, err = run(*DEMO, *args)
    assert code == EXIT_USAGE
    assert out == ""
    assert message in err

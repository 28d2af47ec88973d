"""The HTML report in a real browser: Debian's headless Chromium, driven through chromedriver.

Nothing is downloaded: the browser and the driver are the system's (``apt-get install
chromium chromium-driver``, done by ``.ci/run``). Without them the tests skip, except where
the ``CI`` environment variable is set, where they fail. Screenshots are kept in
``tests/artifacts/`` (not committed).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.bench_scripts import bench
from tests.conftest import ROOT
from vocmatch.evaluation.scoring import Evaluation, evaluate, read_pair
from vocmatch.render.html import html_report
from vocmatch.render.terminal import worst_first

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = ROOT / "tests" / "artifacts"
EVIL = "<script>alert(1)</script>"

# No first-run work, no background traffic of the browser's own: whatever reaches the
# network log comes from the page.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {reason}")
    pytest.skip(reason)


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A fresh headless Chromium with its console and network logs recorded."""
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        unavailable(
            f"{', '.join(missing)} not installed "
            "(apt-get install chromium chromium-driver; .ci/run installs them)"
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed (pip install -e '.[test]')")
    # The driver is given by path, so Selenium Manager has nothing to fetch; offline anyway.
    monkeypatch.setenv("SE_OFFLINE", "true")
    monkeypatch.setenv("SE_AVOID_STATS", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    with tempfile.TemporaryDirectory(prefix="vocmatch-chromium-") as profile:
        options.add_argument(f"--user-data-dir={profile}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        try:
            yield driver
        finally:
            driver.quit()


def load(driver: Any, page: Path) -> str:
    """Open ``page`` from disk after a blank page, with the logs emptied in between."""
    driver.get("about:blank")
    driver.get_log("browser")
    driver.get_log("performance")
    url = page.resolve().as_uri()
    driver.get(url)
    return url


def requests_made(driver: Any) -> list[str]:
    """URLs of every request the browser sent since the logs were last read."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def console_problems(driver: Any) -> list[dict[str, Any]]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def table_keys(driver: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    cells = driver.find_elements(By.CSS_SELECTOR, "#image-table tbody td.key")
    return [cell.text for cell in cells]


def rect_counts(driver: Any) -> Counter[tuple[str, str]]:
    from selenium.webdriver.common.by import By

    rects = driver.find_elements(By.CSS_SELECTOR, "#overlay-canvas svg rect.box")
    return Counter((r.get_attribute("data-kind"), r.get_attribute("data-outcome")) for r in rects)


def expected_counts(evaluation: Evaluation, key: str) -> Counter[tuple[str, str]]:
    """Boxes per (kind, outcome) of one image, from the evaluation's matches."""
    image = next(i for i in evaluation.images if i.key == key)
    counts: Counter[tuple[str, str]] = Counter()
    for match in image.matches:
        if match.pred_index is not None:
            counts["pred", match.outcome] += 1
        if match.gt_index is not None:
            counts["gt", "tp" if match.outcome == "tp" else match.outcome] += 1
    counts["gt", "ignored"] += image.gt_ignored - counts["gt", "ignored"]
    return +counts


def open_image(driver: Any, key: str) -> None:
    from selenium.webdriver.common.by import By

    for row in driver.find_elements(By.CSS_SELECTOR, "#image-table tbody tr"):
        if row.find_element(By.CSS_SELECTOR, "td.key").text == key:
            row.click()
            return
    raise AssertionError(f"{key} is not in the table")


def test_report_in_chromium(browser: Any, demo: tuple[Path, Path], tmp_path: Path) -> None:
    """The demo report loads from disk with no console error and no request but its own
    file; its table sorts and filters; an overlay draws each box with its outcome."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    gt, pred = read_pair(*demo)
    evaluation = evaluate(gt, pred)
    page = tmp_path / "report.html"
    page.write_text(html_report(evaluation, gt, pred), encoding="utf-8")
    url = load(browser, page)

    assert browser.title == f"vocmatch report: {gt.root} vs {pred.root}"
    worst = [i.key for i in worst_first(evaluation.images)]
    assert table_keys(browser) == worst
    assert browser.find_element(By.ID, "filter-count").text == "6 of 6 images"

    # Sorting: by name, then by name descending, then by FP (most first, ties worst first).
    browser.find_element(By.CSS_SELECTOR, 'th[data-sort="key"] button').click()
    by_name = table_keys(browser)
    assert by_name == sorted(worst) and by_name != worst
    header = browser.find_element(By.CSS_SELECTOR, 'th[data-sort="key"]')
    assert header.get_attribute("aria-sort") == "ascending"
    browser.find_element(By.CSS_SELECTOR, 'th[data-sort="key"] button').click()
    assert table_keys(browser) == sorted(worst, reverse=True)
    browser.find_element(By.CSS_SELECTOR, 'th[data-sort="fp"] button').click()
    assert table_keys(browser) == [
        "street_01", "street_03", "street_04", "street_06", "street_05", "street_02",
    ]  # fmt: skip

    # Filtering: images with an FN, then only those whose FN is a bicycle.
    browser.find_element(By.ID, "filter-fn").click()
    assert table_keys(browser) == ["street_01", "street_03", "street_05"]
    Select(browser.find_element(By.ID, "filter-class")).select_by_visible_text("bicycle")
    assert table_keys(browser) == ["street_01"]
    assert browser.find_element(By.ID, "filter-count").text == "1 of 6 images"
    browser.find_element(By.ID, "filter-fn").click()
    assert table_keys(browser) == ["street_01", "street_06"]
    Select(browser.find_element(By.ID, "filter-class")).select_by_visible_text("all classes")
    browser.find_element(By.CSS_SELECTOR, 'th[data-sort="rank"] button').click()
    assert table_keys(browser) == worst

    # The overlay of street_01: 3 TP and 2 FP predictions, 3 matched and 1 missed object.
    open_image(browser, "street_01")
    assert browser.find_element(By.ID, "overlay").is_displayed()
    assert browser.find_element(By.ID, "overlay-title").text == "street_01"
    counts = rect_counts(browser)
    assert counts == expected_counts(evaluation, "street_01")
    assert counts == Counter(
        {("pred", "tp"): 3, ("pred", "fp"): 2, ("gt", "tp"): 3, ("gt", "fn"): 1}
    )
    duplicate = browser.find_element(By.CSS_SELECTOR, '#overlay-canvas rect[data-box="pred-3"]')
    title = duplicate.find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert title == "pred · person · FP · score 0.450 · best IoU 1.000 · [130, 118, 190, 325]"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.find_element(By.ID, "overlay").screenshot(str(ARTIFACTS / "html_overlay_street_01.png"))

    # street_02: the difficult person and the prediction on it are drawn as ignored.
    browser.find_element(By.ID, "overlay-next").click()
    assert browser.find_element(By.ID, "overlay-title").text == "street_05"
    open_image(browser, "street_02")
    counts = rect_counts(browser)
    assert counts == expected_counts(evaluation, "street_02")
    assert counts == Counter(
        {("pred", "tp"): 2, ("pred", "ignored"): 1, ("gt", "tp"): 2, ("gt", "ignored"): 1}
    )

    # A score floor hides the predictions below it, and only those.
    browser.execute_script(
        "var s = document.getElementById('overlay-score'); s.value = '0.6';"
        "s.dispatchEvent(new Event('input'));"
    )
    assert rect_counts(browser) == Counter(
        {("pred", "tp"): 2, ("gt", "tp"): 2, ("gt", "ignored"): 1}
    )

    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, height + 100)
    browser.save_screenshot(str(ARTIFACTS / "html_report_demo.png"))

    assert console_problems(browser) == []
    requests = requests_made(browser)
    assert requests[0] == url
    assert [r for r in requests if r != url and not r.startswith("data:")] == []


def test_markup_in_names_stays_text(browser: Any, tmp_path: Path) -> None:
    """A class name holding a script element is shown as text and never runs."""
    from selenium.webdriver.common.by import By

    for side, score in (("gt", ""), ("pred", "<score>0.9</score>")):
        folder = tmp_path / side
        folder.mkdir()
        (folder / "a.xml").write_text(
            "<annotation><size><width>100</width><height>80</height></size><object>"
            f"<name>&lt;script&gt;alert(1)&lt;/script&gt;</name>{score}<bndbox><xmin>10</xmin>"
            "<ymin>10</ymin><xmax>50</xmax><ymax>50</ymax></bndbox></object></annotation>",
            encoding="utf-8",
        )
    gt, pred = read_pair(tmp_path / "gt", tmp_path / "pred")
    page = tmp_path / "report.html"
    page.write_text(html_report(evaluate(gt, pred), gt, pred), encoding="utf-8")
    load(browser, page)
    # An alert would make every later command fail with "unexpected alert open".
    assert browser.execute_script("return document.scripts.length") == 2
    cell = browser.find_element(By.CSS_SELECTOR, "#class-table tbody td.name")
    assert cell.text == EVIL
    open_image(browser, "a")
    labels = browser.find_elements(By.CSS_SELECTOR, "#overlay-canvas text.label")
    assert [label.get_attribute("textContent") for label in labels] == [EVIL, f"{EVIL} 0.90"]
    assert console_problems(browser) == []


def raccoon_report(tmp_path: Path) -> Path:
    """The raccoon set (200 images) against predictions derived from it, as HTML."""
    from tests.conftest import datasets_or_skip

    gt_dir = datasets_or_skip("raccoon")
    bench("derive_predictions").derive(gt_dir, tmp_path / "pred", seed=0)
    gt, pred = read_pair(gt_dir, tmp_path / "pred")
    page = tmp_path / "raccoon.html"
    page.write_text(html_report(evaluate(gt, pred), gt, pred), encoding="utf-8")
    return page


def test_a_row_click_brings_the_box_view_into_sight(browser: Any, tmp_path: Path) -> None:
    """The view opens below a 50-row table: clicking the first row scrolls it into sight."""
    from selenium.webdriver.common.by import By

    browser.set_window_size(1400, 700)
    load(browser, raccoon_report(tmp_path))
    rows = browser.find_elements(By.CSS_SELECTOR, "#image-table tbody tr")
    assert len(rows) == 50
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", rows[0])
    rows[0].click()
    top, bottom, height = browser.execute_script(
        "var r = document.getElementById('overlay').getBoundingClientRect();"
        "return [r.top, r.bottom, window.innerHeight];"
    )
    assert browser.find_element(By.ID, "overlay").is_displayed()
    # Its top in sight (the view may be taller than the window).
    assert 0 <= top < height
    assert bottom > top
    assert console_problems(browser) == []


def test_the_page_does_not_scroll_sideways_at_800_px(browser: Any, tmp_path: Path) -> None:
    """The cards set with its intervals (a table 980 px wide), slices and calibration: at
    800 px the wide table scrolls inside its section, the page does not."""
    from click.testing import CliRunner
    from selenium.webdriver.common.by import By

    from tests.conftest import datasets_or_skip
    from vocmatch.cli import main

    gt_dir = datasets_or_skip("cards") / "test"
    bench("derive_predictions").derive(gt_dir, tmp_path / "pred", seed=0)
    page = tmp_path / "cards.html"
    result = CliRunner().invoke(
        main,
        ["eval", str(gt_dir), str(tmp_path / "pred"), "--html", str(page), "--bootstrap", "20",
         "--slice", "size", "--calibration-bins", "10", "--protocol", "coco", "-q"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    browser.set_window_size(800, 900)
    load(browser, page)
    browser.find_elements(By.CSS_SELECTOR, "#image-table tbody tr")[0].click()
    scroll, client, table = browser.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
        " document.getElementById('interval-table').getBoundingClientRect().width];"
    )
    assert table > client  # the case: a table wider than the window
    assert scroll == client

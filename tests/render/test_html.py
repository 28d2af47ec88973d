"""The HTML report: self-contained, escaped, deterministic, with the data its script draws."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import warnings
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from vocmatch.cli import EXIT_USAGE, main
from vocmatch.core.model import Box, ImageAnnotation, ImageSize
from vocmatch.core.protocol import protocol
from vocmatch.errors import InputError, VocmatchWarning
from vocmatch.escapes import printable
from vocmatch.evaluation.matched import evaluate_matched
from vocmatch.evaluation.scoring import evaluate, read_pair
from vocmatch.evidence.calibration import calibration
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations
from vocmatch.render import html
from vocmatch.render.html import CURVE_MAX_POINTS, html_report, read_pictures, report_data
from vocmatch.render.terminal import worst_first

EVIL = "<script>alert(1)</script>"


def demo_html(demo: tuple[Path, Path]) -> str:
    """The demo's page as the CLI writes it: with the scores' reliability plot (10 bins)."""
    gt, pred = read_pair(*demo)
    done = evaluate_matched(columns_from_annotations(gt), columns_from_annotations(pred))
    evaluation = done.evaluation
    calibrated = calibration(done.records, protocol("default"))
    return html_report(evaluation, gt, pred, calibration=calibrated)


def embedded_data(page: str) -> dict[str, object]:
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page)
    assert match is not None
    data: dict[str, object] = json.loads(match.group(1))
    return data


class Attributes(HTMLParser):
    """Every tag and attribute of a page, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Attributes()
    parser.feed(page)
    return parser.tags


def write_voc(path: Path, name: str, boxes: list[tuple[int, int, int, int]], score: bool) -> None:
    objects = "".join(
        "<object><name>{}</name>{}<bndbox><xmin>{}</xmin><ymin>{}</ymin><xmax>{}</xmax>"
        "<ymax>{}</ymax></bndbox></object>".format(
            name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"),
            "<score>0.9</score>" if score else "",
            *box,
        )
        for box in boxes
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "<annotation><filename>a.jpg</filename><size><width>100</width><height>80</height>"
        f"<depth>3</depth></size>{objects}</annotation>",
        encoding="utf-8",
    )


@pytest.fixture
def evil_set(tmp_path: Path) -> tuple[Path, Path]:
    """One image whose only class name is a script element."""
    write_voc(tmp_path / "gt" / "a.xml", EVIL, [(10, 10, 50, 50)], score=False)
    write_voc(tmp_path / "pred" / "a.xml", EVIL, [(12, 10, 50, 50), (60, 20, 90, 70)], score=True)
    return tmp_path / "gt", tmp_path / "pred"


def test_page_makes_no_network_reference(demo: tuple[Path, Path]) -> None:
    """No URL with a scheme that fetches: links are in-page anchors, the icon a data: URI."""
    page = demo_html(demo)
    assert "http://" not in page and "https://" not in page
    assert "file://" not in page
    assert "url(" not in page and "@import" not in page
    for tag, attrs in tags_of(page):
        for name in ("href", "src", "action", "srcset", "poster"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith(("#", "data:")), (tag, name, value)
    # Only inline scripts and data blocks: no <script src>, <link rel=stylesheet>, <iframe>.
    assert {tag for tag, _ in tags_of(page)} & {"iframe", "object", "embed", "img"} == set()
    assert [attrs for tag, attrs in tags_of(page) if tag == "link"] == [
        {"rel": "icon", "href": "data:,"}
    ]


def test_content_security_policy_allows_exactly_the_inline_script(
    demo: tuple[Path, Path],
) -> None:
    """The CSP forbids every fetch and allows the one inline script by its SHA-256 hash."""
    page = demo_html(demo)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert policy is not None
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode("utf-8")).digest()).decode()
    assert policy.group(1) == (
        f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def test_report_is_deterministic(demo: tuple[Path, Path]) -> None:
    """The same inputs give the same page, byte for byte."""
    assert demo_html(demo) == demo_html(demo)


def test_embedded_data_of_the_demo_set(demo: tuple[Path, Path]) -> None:
    """The blob lists images worst first, each box with its class, outcome, IoU and score."""
    gt, pred = read_pair(*demo)
    evaluation = evaluate(gt, pred)
    data = embedded_data(html_report(evaluation, gt, pred))
    assert data == report_data(evaluation, gt, pred)
    assert data["classes"] == ["bicycle", "bus", "car", "cat", "dog", "person", "truck"]
    assert data["outcomes"] == ["tp", "fp", "fn", "ignored"]
    images = data["images"]
    assert isinstance(images, list)
    assert [i["key"] for i in images] == [i.key for i in worst_first(evaluation.images)]
    street_01, street_05 = images[0], images[1]
    assert street_01 == {
        "key": "street_01", "file": "street_01.jpg", "w": 640, "h": 480, "sized": True,
        "gt": 4, "gt_ignored": 0, "pred": 5, "tp": 3, "fp": 2, "fn": 1, "miou": 0.8916,
        "missing": False, "pic": False,
        "g": [
            [5, 48, 120, 110, 330, 0, 0.9202],
            [5, 130, 118, 190, 325, 0, 0.875],  # 11480 / 13120, see below
            [2, 300, 200, 560, 380, 0, 0.8795],
            [0, 20, 260, 140, 400, 2, 0.0],  # the bicycle nobody predicted: FN
        ],
        "p": [
            [5, 50, 122, 112, 328, 0, 0.9202, 0.96, 0],
            [5, 128, 120, 186, 330, 0, 0.875, 0.91, 1],
            [2, 305, 210, 550, 378, 0, 0.8795, 0.88, 2],
            [5, 130, 118, 190, 325, 1, 1.0, 0.45],  # the duplicate: FP, best IoU 1
            [4, 400, 50, 470, 120, 1, 0.0, 0.3],  # a dog where there is none
        ],
    }  # fmt: skip
    # The second person: intersection 56 x 205, union 60 x 207 + 58 x 210 - 11480.
    assert 11480 / (60 * 207 + 58 * 210 - 11480) == 0.875
    assert street_05["missing"] is True and street_05["p"] == []
    assert street_05["g"] == [[3, 120, 200, 260, 330, 2, 0.0], [4, 300, 210, 470, 400, 2, 0.0]]
    street_02 = images[5]
    assert street_02["key"] == "street_02"
    # The difficult person and the prediction on it are both ignored, paired with each other.
    assert street_02["g"][2] == [5, 600, 300, 630, 360, 3, 0.8272]
    assert street_02["p"][2] == [5, 598, 298, 632, 362, 3, 0.8272, 0.55, 2]


def test_names_from_the_xml_are_escaped(evil_set: tuple[Path, Path]) -> None:
    """A class name holding markup is text in the tables and inert in the JSON blob."""
    gt, pred = read_pair(*evil_set)
    page = html_report(evaluate(gt, pred), gt, pred)
    assert EVIL not in page
    assert "alert(1)</" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in page
    # Exactly the page's own elements: the data blob and the script.
    assert page.count("<script") == 2
    assert embedded_data(page)["classes"] == [EVIL]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("</script><script>alert(1)</script>", id="closing-tag"),
        pytest.param("<!--", id="comment-open"),
        pytest.param("a&b\u2028c", id="ampersand-line-separator"),
    ],
)
def test_embedded_json_cannot_leave_its_script_element(text: str, tmp_path: Path) -> None:
    """Whatever a key holds, the blob has no '<' and reads back to the key as shown (a line
    separator as an escape, like every character a terminal or a page could act on)."""
    gt = AnnotationSet(str(tmp_path), (ImageAnnotation(text, "gt.xml", ()),), ())
    pred = AnnotationSet(str(tmp_path), (), ())
    page = html_report(evaluate(gt, pred), gt, pred)
    blob = page.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in blob and ">" not in blob and "&" not in blob
    images = embedded_data(page)["images"]
    assert isinstance(images, list)
    assert images[0]["key"] == printable(text)


def test_canvas_without_size_fits_the_boxes(tmp_path: Path) -> None:
    """Without <size> the canvas is the boxes' extent and a tenth more, and says so."""
    box = Box("car", 10.0, 20.0, 200.0, 99.5)
    gt = AnnotationSet(str(tmp_path), (ImageAnnotation("a", "a.xml", (box,)),), ())
    pred = AnnotationSet(str(tmp_path), (), ())
    image = report_data(evaluate(gt, pred), gt, pred)["images"][0]
    assert (image["w"], image["h"], image["sized"]) == (220, 110, False)


def test_long_curves_are_thinned(tmp_path: Path) -> None:
    """A curve of 3,000 predictions is drawn with at most CURVE_MAX_POINTS points, from its
    first to its last."""
    n = 3000
    gt_boxes = tuple(Box("car", float(i), 0.0, i + 1.0, 1.0) for i in range(0, 2 * n, 2))
    pred_boxes = tuple(
        Box("car", b.x1 + (0.0 if i % 3 else 0.7), 0.0, b.x2, 1.0, score=1.0 - i / n)
        for i, b in enumerate(gt_boxes)
    )
    size = ImageSize(6000.0, 10.0)
    gt = AnnotationSet(str(tmp_path), (ImageAnnotation("a", "gt", gt_boxes, size),), ())
    pred = AnnotationSet(str(tmp_path), (ImageAnnotation("a", "pred", pred_boxes, size),), ())
    evaluation = evaluate(gt, pred)
    curve = evaluation.classes[0].curve
    assert curve is not None and curve.recall.size == n
    page = html_report(evaluation, gt, pred)
    lines = re.findall(r'<polyline class="line" points="([^"]*)"', page)
    assert len(lines) == 2  # the overlay of all classes and the class's own plot
    points = lines[1].split()
    assert 4 < len(points) <= CURVE_MAX_POINTS
    # Plot x = 34 + 200 * recall, y = 10 + 200 * (1 - precision).
    first_x = 34 + 200 * curve.recall[0]
    first_y = 10 + 200 * (1 - curve.precision[0])
    last_x = 34 + 200 * curve.recall[-1]
    last_y = 10 + 200 * (1 - curve.precision[-1])
    assert points[0] == f"{first_x:.1f},{first_y:.1f}"
    assert points[-1] == f"{last_x:.1f},{last_y:.1f}"


def test_unscored_predictions_have_no_curve(tmp_path: Path) -> None:
    """Without scores there is no ranking: the page says so and draws no curve."""
    write_voc(tmp_path / "gt" / "a.xml", "car", [(10, 10, 50, 50)], score=False)
    write_voc(tmp_path / "pred" / "a.xml", "car", [(10, 10, 50, 50)], score=False)
    gt, pred = read_pair(tmp_path / "gt", tmp_path / "pred")
    page = html_report(evaluate(gt, pred), gt, pred)
    assert "The predictions carry no scores" in page
    assert "<polyline" not in page


def test_class_without_ground_truth_draws_no_curve(demo: tuple[Path, Path]) -> None:
    """truck is only predicted: recall is undefined, so its plot says so and no curve is
    drawn for it, in its own plot or the overlay (which drew it at recall 0)."""
    page = demo_html(demo)
    start = page.index('aria-label="precision/recall curve of truck"')
    plot = page[start : page.index("</svg>", start)]
    assert (
        '<text x="134.0" y="110.0" text-anchor="middle">no ground truth: recall undefined</text>'
        in plot
    )
    assert "<polyline" not in plot and "<polygon" not in plot
    assert "<title>truck: AP" not in page
    assert page.count('<polyline class="line"') == 2 * 5  # overlay and own plot of the others


def test_confusion_matrix_heat_map(demo: tuple[Path, Path]) -> None:
    """The heat map has a row and a column per class and background; cells say their share."""
    page = demo_html(demo)
    table = page.split('id="confusion-matrix">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 1 + 8
    assert table.count('<th class="col">') == 8
    assert 'title="GT car → predicted truck: 1 (25.0% of the row)"' in table
    assert 'title="GT person → predicted person: 4 (100.0% of the row)"' in table
    assert 'title="GT cat → predicted background: 1 (100.0% of the row)"' in table


def test_heat_map_of_many_classes_draws_the_most_confused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond HEAT_MAP_MAX_CLASSES the heat map draws the classes most confused with others,
    then with background, and says how many it leaves out; shares stay of the whole row."""
    monkeypatch.setattr(html, "HEAT_MAP_MAX_CLASSES", 3)
    gt_boxes = [Box(f"c{k}", 20.0 * k, 0.0, 20.0 * k + 10, 10.0) for k in range(8)]
    pred_boxes = [Box(f"c{k}", 20.0 * k, 0.0, 20.0 * k + 10, 10.0, score=0.9) for k in range(8)]
    # c5 and c6 confused with each other; c2 found twice more (TP + FP); c7 missed twice.
    gt_boxes += [Box("c5", 500.0, 0.0, 510.0, 10.0), Box("c6", 600.0, 0.0, 610.0, 10.0)]
    gt_boxes += [Box("c7", 700.0, 0.0, 710.0, 10.0), Box("c7", 800.0, 0.0, 810.0, 10.0)]
    pred_boxes += [
        Box("c6", 500.0, 0.0, 510.0, 10.0, score=0.8),
        Box("c5", 600.0, 0.0, 610.0, 10.0, score=0.8),
    ]
    pred_boxes += [
        Box("c2", 900.0, 0.0, 910.0, 10.0, score=0.7),
        Box("c2", 950.0, 0.0, 960.0, 10.0, score=0.7),
    ]
    gt = AnnotationSet("gt", (ImageAnnotation("a", "gt/a.xml", tuple(gt_boxes)),), ())
    pred = AnnotationSet("pred", (ImageAnnotation("a", "pred/a.xml", tuple(pred_boxes)),), ())
    page = html_report(evaluate(gt, pred), gt, pred)
    table = page.split('id="confusion-matrix">', 1)[1].split("</table>", 1)[0]
    columns = re.findall(r'<th class="col">([^<]*)</th>', table)
    assert columns == ["c2", "c5", "c6", "background"]
    assert 'title="GT c5 → predicted c6: 1 (50.0% of the row)"' in table
    assert 'title="GT background → predicted c2: 2 (100.0% of the row)"' in table
    assert "3 of the 8 classes are drawn" in page


def test_summary_states_protocol_counts_and_missing_files(demo: tuple[Path, Path]) -> None:
    """The top of the page names the conventions, the headline numbers and what was left out."""
    page = demo_html(demo)
    summary = page.split('<section id="summary">', 1)[1].split("</section>", 1)[0]
    for name, value in (
        ("protocol", "default"),
        ("match", "IoU &gt;= 0.5"),
        ("AP", "all-point, at IoU &gt;= 0.5"),
    ):
        assert f"<tr><th>{name}</th><td>{value}</td></tr>" in summary
    assert '<div class="label">mAP</div><div class="value">0.6250</div>' in summary
    assert '<div class="label">F1</div><div class="value">0.6897</div>' in summary
    assert "<tr><th>TP / FP / FN</th><td>10 / 5 / 4 at IoU 0.5</td></tr>" in summary
    assert "<tr><th>skipped files</th><td>0</td></tr>" in summary
    assert "No prediction file for 1 image(s)" in summary


def png_bytes(width: int, height: int, colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_pictures_are_found_scaled_and_embedded(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """A picture named by key is scaled to 640 px; one named by <filename> is found too."""
    pictures_dir = tmp_path / "pictures"
    pictures_dir.mkdir()
    (pictures_dir / "street_01.png").write_bytes(png_bytes(1280, 960, (200, 30, 30)))
    (pictures_dir / "street_02.jpg").write_bytes(png_bytes(320, 240, (30, 200, 30)))
    gt, pred = read_pair(*demo)
    pictures = read_pictures(pictures_dir, gt)
    assert sorted(pictures.uris) == ["street_01", "street_02"]
    assert pictures.missing == ("street_03", "street_04", "street_05", "street_06")
    assert pictures.sizes == {"street_01": (1280, 960), "street_02": (320, 240)}
    uri = pictures.uris["street_01"]
    assert uri.startswith("data:image/jpeg;base64,")
    with Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))) as image:
        assert image.size == (640, 480)
    page = html_report(evaluate(gt, pred), gt, pred, pictures)
    images = embedded_data(page)["images"]
    assert isinstance(images, list)
    position = [i["key"] for i in images].index("street_01")
    assert images[position]["pic"] is True
    assert f'<script type="text/plain" id="pic-{position}">{uri}</script>' in page
    assert "No picture found for 4 image(s)" in page


def test_pictures_outside_the_directory_are_not_read(tmp_path: Path) -> None:
    """A <filename> that climbs out of DIR is not followed."""
    (tmp_path / "secret.png").write_bytes(png_bytes(8, 8, (0, 0, 0)))
    (tmp_path / "pictures").mkdir()
    annotation = ImageAnnotation("a", "a.xml", (), filename="../secret.png")
    gt = AnnotationSet(str(tmp_path), (annotation,), ())
    pictures = read_pictures(tmp_path / "pictures", gt)
    assert pictures.uris == {} and pictures.missing == ("a",)


def test_unreadable_picture_warns_and_is_drawn_blank(tmp_path: Path) -> None:
    """A file that is not an image gives a warning naming it, not an error."""
    (tmp_path / "a.jpg").write_bytes(b"not a picture")
    gt = AnnotationSet(str(tmp_path), (ImageAnnotation("a", "a.xml", ()),), ())
    with pytest.warns(VocmatchWarning, match=r"a\.jpg: cannot read the picture"):
        pictures = read_pictures(tmp_path, gt)
    assert pictures.missing == ("a",)


def test_a_picture_over_the_pixel_limit_is_refused_from_its_header(tmp_path: Path) -> None:
    """A 100-megapixel PNG: one warning in vocmatch's words with the path and size, none of
    Pillow's (its image data is empty, so nothing was decoded); drawn blank."""
    from tests.evaluation.test_seg import png_header

    (tmp_path / "a.png").write_bytes(png_header(10_000, 10_000))
    gt = AnnotationSet(str(tmp_path), (ImageAnnotation("a", "a.xml", ()),), ())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pictures = read_pictures(tmp_path, gt)
    assert [(w.category, str(w.message)) for w in caught] == [
        (
            VocmatchWarning,
            f"{tmp_path / 'a.png'}: cannot read the picture (10,000x10,000 pixels, over the "
            "89,478,485-pixel limit); its overlay is drawn blank",
        )
    ]
    assert pictures.missing == ("a",)


def test_the_limit_counts_a_jpeg_as_drafted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit is on what is decoded: a JPEG over it that the decoder scales down (1/8 of
    each side here) is embedded; a PNG of the same size, decoded whole, is refused."""
    monkeypatch.setattr(html, "PICTURE_MAX_PIXELS", 10_000)
    Image.new("RGB", (200, 200), (1, 2, 3)).save(tmp_path / "a.jpg", format="JPEG")
    (tmp_path / "b.png").write_bytes(png_bytes(200, 200, (1, 2, 3)))
    annotations = (ImageAnnotation("a", "a.xml", ()), ImageAnnotation("b", "b.xml", ()))
    with pytest.warns(VocmatchWarning) as caught:
        pictures = read_pictures(
            tmp_path, AnnotationSet(str(tmp_path), annotations, ()), max_side=16
        )
    assert [str(w.message) for w in caught] == [
        f"{tmp_path / 'b.png'}: cannot read the picture (200x200 pixels, over the 10,000-pixel"
        " limit); its overlay is drawn blank"
    ]
    assert (sorted(pictures.uris), pictures.sizes, pictures.missing) == (
        ["a"], {"a": (200, 200)}, ("b",),
    )  # fmt: skip


def test_pictures_directory_must_exist(tmp_path: Path) -> None:
    """A missing directory is an input error."""
    gt = AnnotationSet(str(tmp_path), (), ())
    with pytest.raises(InputError, match="not a directory"):
        read_pictures(tmp_path / "absent", gt)


def test_cli_writes_the_html_report(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """--html FILE writes the page beside the usual report, the same as the library's."""
    target = tmp_path / "report.html"
    result = CliRunner().invoke(
        main, [str(demo[0]), str(demo[1]), "--html", str(target)], catch_exceptions=False
    )
    assert result.exit_code == 0
    assert "Summary" in result.stdout
    assert target.read_text(encoding="utf-8") == demo_html(demo)


def test_cli_images_with_pictures(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """--images DIR embeds the pictures it finds and names an unreadable one on stderr."""
    pictures_dir = tmp_path / "pictures"
    pictures_dir.mkdir()
    (pictures_dir / "street_01.png").write_bytes(png_bytes(64, 48, (10, 10, 10)))
    (pictures_dir / "street_02.jpg").write_bytes(b"broken")
    target = tmp_path / "report.html"
    args = [str(demo[0]), str(demo[1]), "--html", str(target), "--images", str(pictures_dir)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0
    page = target.read_text(encoding="utf-8")
    assert page.count('<script type="text/plain" id="pic-') == 1
    assert f"vocmatch: warning: {pictures_dir / 'street_02.jpg'}: cannot read the picture" in (
        result.stderr
    )


def test_cli_images_with_a_picture_over_the_limit(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """--images: a 100-megapixel PNG is one warning line with its path and size; the report
    is written and exit 0."""
    from tests.evaluation.test_seg import png_header

    pictures_dir = tmp_path / "pictures"
    pictures_dir.mkdir()
    (pictures_dir / "street_01.png").write_bytes(png_header(10_000, 10_000))
    target = tmp_path / "report.html"
    args = [str(demo[0]), str(demo[1]), "--html", str(target), "--images", str(pictures_dir)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        "vocmatch: warning: no prediction file for 'street_05': its objects count as missed",
        f"vocmatch: warning: {pictures_dir / 'street_01.png'}: cannot read the picture "
        "(10,000x10,000 pixels, over the 89,478,485-pixel limit); its overlay is drawn blank",
    ]
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_cli_images_needs_html(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """--images alone is a usage error: there is no overlay to draw on."""
    result = CliRunner().invoke(main, [str(demo[0]), str(demo[1]), "--images", str(tmp_path)])
    assert result.exit_code == EXIT_USAGE
    assert "give --html FILE too" in result.stderr

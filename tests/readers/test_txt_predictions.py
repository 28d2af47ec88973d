"""Class-named boxes in pixels, one txt file per image (``--pred-format txt``): the same boxes
as XML give the XML run's JSON, in both box forms; every bad line is named as path:line and
skips its file; a folder of txt files read as XML names the format its first line has."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import vocmatch
from tests.bench_scripts import bench
from tests.conftest import ROOT, datasets_or_skip
from tests.conftest import run_cli as run
from vocmatch.errors import Message, Option, RequestError
from vocmatch.readers.pred_formats import read_detections
from vocmatch.readers.scan import read_columns
from vocmatch.readers.unpaired import no_pairs_reason

DEMO_GT = ROOT / "fixtures" / "demo" / "gt"
DEMO_PRED = ROOT / "fixtures" / "demo" / "pred"
GT_LINE = "<object><name>{name}</name><bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin>"


def write_gt(folder: Path, images: dict[str, list[tuple[str, int, int, int, int]]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for key, boxes in images.items():
        parts = ["<annotation>", "<size><width>640</width><height>480</height></size>"]
        for name, x1, y1, x2, y2 in boxes:
            parts.append(
                f"<object><name>{name}</name><bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin>"
                f"<xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox></object>"
            )
        parts.append("</annotation>")
        (folder / f"{key}.xml").write_text("\n".join(parts), encoding="utf-8")


GT = {"a": [("car", 240, 120, 400, 360)], "b": [("traffic light", 0, 0, 64, 48)]}


def without_paths(value: Any) -> Any:
    """A JSON report without the prediction files' paths (the one thing the formats change)."""
    if isinstance(value, dict):
        return {k: without_paths(v) for k, v in value.items() if k != "pred_path"}
    if isinstance(value, list):
        return [without_paths(v) for v in value]
    return value


def json_run(gt: Path, *args: str) -> Any:
    code, out, err = run(str(gt), *args, "--format", "json")
    assert code == 0, err
    return without_paths(json.loads(out))


def assert_same_numbers_as_xml(gt: Path, xml_pred: Path, out: Path) -> None:
    for protocol_name in ("default", "coco"):
        xml = json_run(gt, str(xml_pred), "--protocol", protocol_name)
        xyxy = json_run(gt, str(out / "txt"), "--pred-format", "txt", "--protocol", protocol_name)
        xywh = json_run(
            gt, str(out / "txt-xywh"), "--pred-format", "txt", "--box-format", "xywh",
            "--protocol", protocol_name,
        )  # fmt: skip
        assert xyxy == xml
        assert xywh == xml


def test_the_demo_predictions_as_txt_give_the_xml_numbers(tmp_path: Path) -> None:
    bench("convert").convert(DEMO_GT, DEMO_PRED, tmp_path / "out")
    assert_same_numbers_as_xml(DEMO_GT, DEMO_PRED, tmp_path / "out")


def test_a_real_set_as_txt_gives_the_xml_numbers(tmp_path: Path) -> None:
    """40 images of BCCD (3 classes, dense), predictions jittered from the ground truth with
    a seeded generator, written as txt in both box forms."""
    source = datasets_or_skip("bccd")
    gt = tmp_path / "gt"
    gt.mkdir()
    for path in sorted(source.glob("*.xml"))[:40]:
        shutil.copy(path, gt / path.name)
    bench("derive_predictions").derive(gt, tmp_path / "pred", seed=7)
    counts = bench("convert").convert(gt, tmp_path / "pred", tmp_path / "out")
    assert counts["txt"] > 400
    assert_same_numbers_as_xml(gt, tmp_path / "pred", tmp_path / "out")


def test_a_class_name_with_spaces_and_the_line_forms(tmp_path: Path) -> None:
    """The class is everything before the last five fields; CRLF, a byte-order mark, blank
    lines and tabs are read."""
    write_gt(tmp_path / "gt", GT)
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "a.txt").write_bytes(b"\xef\xbb\xbfcar 0.9 240 120 400 360\r\n\r\n  \r\n")
    (pred / "b.txt").write_text("traffic light\t0.87  0 0 64 48\n\n", encoding="utf-8")
    columns = read_detections("txt", pred, read_columns(tmp_path / "gt"))
    assert not columns.skipped
    boxes = {
        a.key: [(b.name, b.x1, b.y1, b.x2, b.y2, b.score) for b in a.boxes]
        for a in columns.to_annotations().annotations
    }
    assert boxes == {
        "a": [("car", 240, 120, 400, 360, 0.9)],
        "b": [("traffic light", 0, 0, 64, 48, 0.87)],
    }
    code, out, err = run(str(tmp_path / "gt"), str(pred), "--pred-format", "txt")
    assert (code, err) == (0, "")
    assert "traffic light" in out


XYXY = "expected 'class score x1 y1 x2 y2'"
XYWH = "expected 'class score x y w h'"


@pytest.mark.parametrize(
    ("box_format", "line", "message"),
    [
        pytest.param("xyxy", "car 240 120 400 360", f"{XYXY}, got 5 fields (a score is required)", id="no-score"),
        pytest.param("xyxy", "car 0.9 240 120 400", f"{XYXY}, got 5 fields (a score is required)", id="short"),
        pytest.param("xyxy", "car 0.9", f"{XYXY}, got 2 fields", id="two-fields"),
        pytest.param("xyxy", "car 0.9 240 120 400 360 7", f"{XYXY}, got 7 fields", id="extra-column"),
        pytest.param("xywh", "car 0.9 240 120 400 360 7", f"{XYWH}, got 7 fields", id="extra-column-xywh"),
        pytest.param("xyxy", "car high 240 120 400 360", "score is not a number: 'high'", id="score-word"),
        pytest.param("xyxy", "car nan 240 120 400 360", "score is not finite: 'nan'", id="score-nan"),
        pytest.param("xyxy", "car 0.9 240 1_20 400 360", "y1 is not a number: '1_20'", id="grammar"),
        pytest.param("xyxy", "car 0.9 240 120 inf 360", "x2 is not finite: 'inf'", id="infinite"),
        pytest.param("xyxy", "car 0.9 240 120 1e400 360", "x2 is not finite: '1e400'", id="overflow"),
        pytest.param("xyxy", "car 0.9 240 120 1e17 360", "x2 1e+17 is out of range (the limit is ±2^53)", id="range"),
        pytest.param("xyxy", "car 0.9 400 120 240 360", "x2 240 is less than x1 400", id="inverted-x"),
        pytest.param("xyxy", "car 0.9 240 360 400 120", "y2 120 is less than y1 360", id="inverted-y"),
        pytest.param("xywh", "car 0.9 240 120 -5 10", "w -5 is negative", id="negative-w"),
        pytest.param("xywh", "car 0.9 240 120 5 -10", "h -10 is negative", id="negative-h"),
        pytest.param("xywh", "car 0.9 240 120 9.1e15 10", "x2 9.1e+15 is out of range (the limit is ±2^53)", id="range-xywh"),
    ],
)  # fmt: skip
def test_a_bad_line_skips_its_file_as_path_line(
    tmp_path: Path, box_format: str, line: str, message: str
) -> None:
    """A bad line skips its file's image, named as path:line on stderr; the run goes on
    (exit 3, as for a damaged XML file)."""
    write_gt(tmp_path / "gt", GT)
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "a.txt").write_text(f"car 0.9 240 120 400 360\n\n{line}\n", encoding="utf-8")
    (pred / "b.txt").write_text("traffic light 0.8 0 0 64 48\n", encoding="utf-8")
    columns = read_detections(
        "txt",
        pred,
        read_columns(tmp_path / "gt"),
        box_format=box_format,  # type: ignore[arg-type]
    )
    assert [str(s) for s in columns.skipped] == [f"{pred / 'a.txt'}:3: {message}"]
    assert columns.skipped[0].key == "a"
    code, out, err = run(
        str(tmp_path / "gt"), str(pred), "--pred-format", "txt", "--box-format", box_format,
        "--format", "json",
    )  # fmt: skip
    assert code == 3
    assert f"vocmatch: skipped {pred / 'a.txt'}:3: {message}\n" in err
    assert json.loads(out)["summary"]["images"] == 1


def test_a_file_that_is_not_utf8_or_too_large_is_skipped(tmp_path: Path) -> None:
    write_gt(tmp_path / "gt", GT)
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "a.txt").write_bytes(b"car 0.9 240 120 400 360\ncar\xff 0.9 1 2 3 4\n")
    (pred / "b.txt").write_text("traffic light 0.8 0 0 64 48\n" * 10, encoding="utf-8")
    columns = read_detections("txt", pred, read_columns(tmp_path / "gt"), max_bytes=200)
    assert sorted(str(s) for s in columns.skipped) == [
        f"{pred / 'a.txt'}:2: not UTF-8 text",
        f"{pred / 'b.txt'}: file is larger than the 200-byte limit (280 bytes)",
    ]


def test_box_format_is_a_checked_request_field(tmp_path: Path) -> None:
    with pytest.raises(RequestError) as caught:
        vocmatch.EvalRequest(gt="gt", pred="pred", pred_format="txt", box_format="cxcywh")  # type: ignore[arg-type]
    assert caught.value.field == "box_format"
    assert str(caught.value) == ("box_format 'cxcywh': no such box format (known: xywh, xyxy)")


def test_box_format_with_another_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RequestError, match="a box form is read for txt predictions only"):
        vocmatch.evaluate(DEMO_GT, DEMO_PRED, box_format="xywh")
    code, out, err = run(str(DEMO_GT), str(DEMO_PRED), "--box-format", "xywh")
    assert (code, out) == (2, "")
    assert (
        err == "vocmatch: error: --box-format 'xywh': a box form is read for txt predictions only\n"
    )


@pytest.mark.filterwarnings("ignore::vocmatch.MissingPredictionWarning")
def test_the_library_reads_txt_as_the_command_line_does(tmp_path: Path) -> None:
    bench("convert").convert(DEMO_GT, DEMO_PRED, tmp_path / "out")
    xml = vocmatch.evaluate(DEMO_GT, DEMO_PRED)
    txt = vocmatch.evaluate(
        DEMO_GT, tmp_path / "out" / "txt-xywh", pred_format="txt", box_format="xywh"
    )
    assert txt.evaluation.summary == xml.evaluation.summary
    assert [(c.name, c.ap, c.tp, c.fp) for c in txt.evaluation.classes] == [
        (c.name, c.ap, c.tp, c.fp) for c in xml.evaluation.classes
    ]


@pytest.mark.parametrize(
    ("first_line", "formats"),
    [
        pytest.param("car 0.9 240 120 400 360", ["txt"], id="txt"),
        pytest.param("traffic light 0.87 10 20 30 40", ["txt"], id="txt-spaced-class"),
        pytest.param("3 0.9 240 120 400 360", ["txt"], id="txt-numeric-class"),
        pytest.param("0 0.5 0.5 0.25 0.5 0.91", ["yolo"], id="yolo-conf"),
        pytest.param("0 0.5 0.5 0.25 0.5", ["yolo"], id="yolo"),
        pytest.param("", ["yolo", "txt"], id="empty-file"),
        pytest.param("something else", ["yolo", "txt"], id="neither"),
    ],
)
def test_a_txt_folder_read_as_xml_names_the_format_of_its_first_line(
    tmp_path: Path, first_line: str, formats: list[str]
) -> None:
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "a.txt").write_text(f"\n{first_line}\n", encoding="utf-8")
    reason = no_pairs_reason(["a"], [], str(pred), ["a.txt"])
    assert isinstance(reason, Message)
    named = [p.value for p in reason.parts if isinstance(p, Option) and p.field == "pred_format"]
    assert named == formats


def test_the_txt_hint_on_the_command_line(tmp_path: Path) -> None:
    bench("convert").convert(DEMO_GT, DEMO_PRED, tmp_path / "out")
    pred = tmp_path / "out" / "txt"
    code, out, err = run(str(DEMO_GT), str(pred))
    assert (code, out) == (2, "")
    assert err == (
        f"vocmatch: error: no ground-truth image pairs with a prediction: {pred} holds .txt "
        "files ('street_01.txt', 'street_02.txt', 'street_03.txt', ...), not XML: class-named "
        "boxes in pixels? use --pred-format txt\n"
    )


@pytest.mark.parametrize(
    ("where", "message"),
    [
        pytest.param("dask", "is not available on a Dask cluster", id="dask"),
        pytest.param("url", "is not available for inputs given as URLs", id="url"),
    ],
)
def test_box_format_is_refused_where_predictions_are_read_as_xml_only(
    where: str, message: str
) -> None:
    """A Dask run and URL inputs read XML only: a box form given there is refused, never
    silently left unread."""
    gt, pred = (DEMO_GT, DEMO_PRED) if where == "dask" else (DEMO_GT.as_uri(), DEMO_PRED.as_uri())
    dask = {"dask": "local:1"} if where == "dask" else {}
    with pytest.raises(RequestError, match=message) as caught:
        vocmatch.evaluate(gt, pred, box_format="xywh", **dask)  # type: ignore[arg-type]
    assert caught.value.field == "box_format"
    extra = ["--dask", "local:1"] if where == "dask" else []
    code, out, err = run(str(gt), str(pred), "--box-format", "xywh", *extra)
    assert (code, out) == (2, "")
    flag = "--dask" if where == "dask" else "inputs given as URLs"
    assert err.endswith(f"Error: --box-format is not available with {flag}\n")

"""The benchmark dataset generator and the peer runners in ``bench/``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from lxml import etree

from tests.bench_scripts import bench

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"
IMAGES = 20
PRED_PER_IMAGE = 100


generate = bench("generate")
peers = bench("peers")

SAFE_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out_dir = tmp_path_factory.mktemp("bench") / "small"
    generate.generate(out_dir, images=IMAGES, pred_per_image=PRED_PER_IMAGE, seed=0)
    return out_dir


def _xml_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.xml"))


def _all_files(directory: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def _xml_records(path: Path) -> list[tuple[Any, ...]]:
    """(name, COCO bbox, difficult, score or None) of each object, in file order."""
    records = []
    for obj in etree.parse(str(path), SAFE_PARSER).getroot().iterfind("object"):
        xmin, ymin, xmax, ymax = (
            int(obj.findtext(f"bndbox/{key}", "")) for key in ("xmin", "ymin", "xmax", "ymax")
        )
        score = obj.findtext("score")
        records.append(
            (
                obj.findtext("name"),
                [xmin, ymin, xmax - xmin, ymax - ymin],
                int(obj.findtext("difficult", "")),
                None if score is None else float(score),
            )
        )
    return records


def _assert_coco_matches_xml(out_dir: Path) -> None:
    """Every XML object appears in the COCO files with the same numbers, in the same order."""
    gt_data = json.loads((out_dir / "coco" / "gt.json").read_text("utf-8"))
    pred_data = json.loads((out_dir / "coco" / "pred.json").read_text("utf-8"))
    names = [path.stem for path in _xml_files(out_dir / "gt")]

    categories = gt_data["categories"]
    assert [category["id"] for category in categories] == list(range(1, len(categories) + 1))
    category_names = [category["name"] for category in categories]
    assert category_names == sorted(category_names)
    name_of = {category["id"]: category["name"] for category in categories}

    assert [image["id"] for image in gt_data["images"]] == list(range(1, len(names) + 1))
    assert [image["file_name"] for image in gt_data["images"]] == [f"{n}.jpg" for n in names]
    for image, name in zip(gt_data["images"], names, strict=True):
        root = etree.parse(str(out_dir / "gt" / f"{name}.xml"), SAFE_PARSER).getroot()
        assert [image["width"], image["height"]] == [
            int(root.findtext("size/width", "")),
            int(root.findtext("size/height", "")),
        ]

    annotations = gt_data["annotations"]
    assert [annotation["id"] for annotation in annotations] == list(range(1, len(annotations) + 1))
    gt_from_json = [
        (
            annotation["image_id"],
            name_of[annotation["category_id"]],
            annotation["bbox"],
            annotation["iscrowd"],
            None,
        )
        for annotation in annotations
    ]
    pred_from_json = [
        (result["image_id"], name_of[result["category_id"]], result["bbox"], 0, result["score"])
        for result in pred_data
    ]
    gt_from_xml = []
    pred_from_xml = []
    for image_id, name in enumerate(names, start=1):
        gt_from_xml += [
            (image_id, *record) for record in _xml_records(out_dir / "gt" / f"{name}.xml")
        ]
        pred_from_xml += [
            (image_id, *record) for record in _xml_records(out_dir / "pred" / f"{name}.xml")
        ]
    assert gt_from_json == gt_from_xml
    assert pred_from_json == pred_from_xml
    for annotation in annotations:
        assert annotation["area"] == annotation["bbox"][2] * annotation["bbox"][3]
    used_names = {record[1] for record in gt_from_xml + pred_from_xml}
    assert category_names == sorted(used_names)


def test_every_xml_file_parses_and_gt_and_pred_pair_up(dataset: Path) -> None:
    """Each image has one GT and one prediction file, and lxml parses all of them."""
    gt_names = [path.name for path in _xml_files(dataset / "gt")]
    pred_names = [path.name for path in _xml_files(dataset / "pred")]
    assert gt_names == [f"img_{index:06d}.xml" for index in range(IMAGES)]
    assert pred_names == gt_names
    for path in _xml_files(dataset / "gt") + _xml_files(dataset / "pred"):
        root = etree.parse(str(path), SAFE_PARSER).getroot()
        assert root.tag == "annotation"
        assert root.findtext("filename") == f"{path.stem}.jpg"


def test_xml_is_laid_out_as_labelimg_writes_it(dataset: Path) -> None:
    """Re-serialising through LabelImg's pipeline (ElementTree, lxml pretty print, two
    spaces to a tab) gives back the same bytes."""
    for path in _xml_files(dataset / "gt") + _xml_files(dataset / "pred"):
        content = path.read_bytes()
        compact = etree.fromstring(content, etree.XMLParser(remove_blank_text=True))
        rough = ElementTree.tostring(ElementTree.fromstring(etree.tostring(compact)), "utf8")
        pretty = etree.tostring(etree.fromstring(rough), pretty_print=True, encoding="utf-8")
        assert pretty.replace(b"  ", b"\t") == content


def test_each_image_has_exactly_the_requested_predictions(dataset: Path) -> None:
    """Every prediction file holds ``pred_per_image`` objects, each with a score."""
    for path in _xml_files(dataset / "pred"):
        objects = etree.parse(str(path), SAFE_PARSER).getroot().findall("object")
        assert len(objects) == PRED_PER_IMAGE
        assert all(obj.find("score") is not None for obj in objects)


def test_seed_zero_set_covers_the_cases_a_benchmark_needs(dataset: Path) -> None:
    """The seed-0 set has boxes in all three COCO area ranges, difficult objects and tied
    scores."""
    gt_data = json.loads((dataset / "coco" / "gt.json").read_text("utf-8"))
    pred_data = json.loads((dataset / "coco" / "pred.json").read_text("utf-8"))
    areas = [annotation["area"] for annotation in gt_data["annotations"]]
    assert any(area < 32**2 for area in areas)
    assert any(32**2 <= area < 96**2 for area in areas)
    assert any(area >= 96**2 for area in areas)
    assert any(annotation["iscrowd"] == 1 for annotation in gt_data["annotations"])
    scores = [result["score"] for result in pred_data]
    assert len(set(scores)) < len(scores)


@pytest.mark.parametrize(
    ("classes", "images", "gt_per_image", "pred_per_image"),
    [
        pytest.param(20, IMAGES, 7, PRED_PER_IMAGE, id="default-shape"),
        pytest.param(50, 2, 1, 3, id="classes-missing-renumbered"),
        pytest.param(3, 4, 0, 2, id="no-ground-truth"),
    ],
)
def test_coco_json_holds_the_same_boxes_as_the_xml(
    tmp_path: Path, classes: int, images: int, gt_per_image: float, pred_per_image: int
) -> None:
    """Image, category and annotation ids follow the documented order and every box, flag
    and score equals its XML counterpart."""
    generate.generate(
        tmp_path,
        images=images,
        classes=classes,
        gt_per_image=gt_per_image,
        pred_per_image=pred_per_image,
        seed=3,
    )
    _assert_coco_matches_xml(tmp_path)


def test_known_boxes_of_seed_zero(dataset: Path) -> None:
    """The first ground-truth box and first prediction of seed 0 are pinned down."""
    gt_data = json.loads((dataset / "coco" / "gt.json").read_text("utf-8"))
    pred_data = json.loads((dataset / "coco" / "pred.json").read_text("utf-8"))
    assert gt_data["annotations"][0] == {
        "id": 1,
        "image_id": 1,
        "category_id": 10,
        "bbox": [339, 293, 117, 266],
        "area": 117 * 266,
        "iscrowd": 0,
    }
    assert _xml_records(dataset / "gt" / "img_000000.xml")[0] == (
        "class09",
        [339, 293, 117, 266],
        0,
        None,
    )
    first_pred = _xml_records(dataset / "pred" / "img_000000.xml")[0]
    assert first_pred[1:] == (pred_data[0]["bbox"], 0, pred_data[0]["score"])


def test_generation_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    """The library call and the command line with the same seed write byte-identical files,
    and another seed writes different ones."""
    generate.generate(tmp_path / "first", images=5, seed=7)
    generate.main([str(tmp_path / "second"), "--images", "5", "--seed", "7"])
    generate.generate(tmp_path / "other", images=5, seed=8)
    first = _all_files(tmp_path / "first")
    assert len(first) == 2 * 5 + 2
    assert _all_files(tmp_path / "second") == first
    assert _all_files(tmp_path / "other") != first


@pytest.mark.parametrize(
    "peer", ["faster-coco-eval", "hotcoco", "vernier", "ultrafast-pycocotools"]
)
def test_peers_agree_with_each_other(dataset: Path, peer: str) -> None:
    """faster-coco-eval, hotcoco, vernier and ultrafast-pycocotools give pycocotools' 12
    numbers on the generated set."""
    gt_json, pred_json = dataset / "coco" / "gt.json", dataset / "coco" / "pred.json"
    reference = peers.run_pycocotools(gt_json, pred_json)
    assert len(reference) == 12
    assert peers.PEERS[peer](gt_json, pred_json) == pytest.approx(reference, abs=1e-12)


@pytest.mark.parametrize("jobs", [pytest.param(1, id="in-process"), pytest.param(2, id="pool")])
def test_lxml_parse_floor_parses_every_object(dataset: Path, jobs: int) -> None:
    """The parsing floor visits every object of every file, with or without a pool."""
    paths = _xml_files(dataset / "gt") + _xml_files(dataset / "pred")
    gt_data = json.loads((dataset / "coco" / "gt.json").read_text("utf-8"))
    expected = len(gt_data["annotations"]) + IMAGES * PRED_PER_IMAGE
    assert peers.lxml_parse_floor(paths, jobs) == expected


def _digest(directory: Path) -> str:
    """SHA-256 over the relative names and bytes of every file under ``directory``."""
    digest = hashlib.sha256()
    for name, content in _all_files(directory).items():
        digest.update(name.encode() + b"\0" + content)
    return digest.hexdigest()


def test_default_set_keeps_its_bytes(tmp_path: Path) -> None:
    """The default set of 30 images, seed 0, has the bytes it had before shapes existed, from
    the library and from ``--shape default``."""
    expected = "e06f8e3d6682bbaaf592dd77bf4b005e2ca37a08ffab6c317dae03c10d4db45a"
    generate.generate(tmp_path / "library", images=30, seed=0)
    generate.main([str(tmp_path / "cli"), "--shape", "default", "--images", "30"])
    assert _digest(tmp_path / "library") == expected
    assert _digest(tmp_path / "cli") == expected


def test_objects365_shape_is_deterministic_and_shaped(tmp_path: Path) -> None:
    """``--shape objects365`` writes 365 classes, 14 predictions an image and about 15
    ground-truth boxes, byte-identical for the same seed."""
    for name in ("first", "second"):
        generate.main([str(tmp_path / name), "--shape", "objects365", "--images", "40"])
    assert _digest(tmp_path / "first") == _digest(tmp_path / "second")
    gt_data = json.loads((tmp_path / "first" / "coco" / "gt.json").read_text("utf-8"))
    pred_data = json.loads((tmp_path / "first" / "coco" / "pred.json").read_text("utf-8"))
    assert generate.SHAPES["objects365"] == generate.Shape(
        images=80_000, classes=365, gt_per_image=15, pred_per_image=14
    )
    assert len(pred_data) == 40 * 14
    assert 12 <= len(gt_data["annotations"]) / 40 <= 18
    assert all(len(c["name"]) == len("class364") for c in gt_data["categories"])
    _assert_coco_matches_xml(tmp_path / "first")

"""The product path (columns read by vocmatch.readers.scan, evaluated by vocmatch.evaluation.engine) gives
results bit-identical to the reference path (vocmatch.readers.parse + the per-image evaluator of
tests/reference.py)."""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.bench_scripts import bench
from tests.conftest import ROOT, datasets_or_skip
from tests.oracle import (
    dense_dataset,
    random_dataset,
    with_shapes,
    without_scores,
    write_voc,
)
from tests.reference import evaluate
from tests.reference import match_class as reference_match_class
from vocmatch.core import match
from vocmatch.core.match import match_class
from vocmatch.core.protocol import protocol
from vocmatch.evaluation import candidates
from vocmatch.evaluation import pair_space as pairs
from vocmatch.evaluation.accumulate import _rankings
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.stages import _cell_score_order
from vocmatch.readers import scan
from vocmatch.readers.parse import parse_annotation, read_directory
from vocmatch.readers.scan import ColumnSet, columns_from_annotations, read_columns


def assert_identical(a: Any, b: Any, path: str = "evaluation") -> None:
    """Equal field by field, floats to the bit (NaN equal to NaN)."""
    assert type(a) is type(b), path
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), path
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_identical(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_identical(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert a == b or (a != a and b != b), f"{path}: {a!r} != {b!r}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


VARIANTS = {
    "default": protocol("default"),
    "voc12": protocol("voc12"),
    "voc07": protocol("voc07"),
    "coco": protocol("coco"),
    "voc12-strict": replace(protocol("voc12"), strict_threshold=True),
    "coco-devkit-rule": replace(protocol("coco"), match_rule="devkit"),
    "default-count-difficult": replace(protocol("default"), difficult="count"),
    "default-crowd-iou75": replace(protocol("default").with_threshold(0.75), difficult="crowd"),
    "coco-max-dets-2": replace(protocol("coco"), max_dets=2),
    # AP over ten thresholds computed per threshold, not read from pycocotools' numbers.
    "coco-all-point": replace(protocol("coco"), interpolation="all-point"),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("seed", range(6))
def test_batch_equals_reference_on_random_data(name: str, seed: int) -> None:
    """Every number, every per-box record, under every convention."""
    gt, pred = random_dataset(seed, images=15)
    conventions = VARIANTS[name]
    expected = evaluate(gt, pred, conventions)
    actual = evaluate_columns(
        columns_from_annotations(gt), columns_from_annotations(pred), conventions
    )
    assert_identical(expected, actual)


def same_as_reference(gt: Any, pred: Any, conventions: Any, fold_case: bool = False) -> None:
    assert_identical(
        evaluate(gt, pred, conventions, fold_case=fold_case),
        evaluate_columns(
            columns_from_annotations(gt),
            columns_from_annotations(pred),
            conventions,
            fold_case=fold_case,
        ),
    )


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("seed", range(6))
def test_unscored_predictions_equal_the_reference(name: str, seed: int) -> None:
    """Predictions without scores (paired highest IoU first, counted objects before ignored
    ones) give the reference's counts and per-box records under every convention."""
    gt, pred = random_dataset(seed, images=15)
    same_as_reference(gt, without_scores(pred), VARIANTS[name])


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("seed", range(3))
def test_partly_scored_predictions_equal_the_reference(name: str, seed: int) -> None:
    """A scored set where a fifth of the predictions have no score (they rank last)."""
    gt, pred = random_dataset(seed, images=12)
    same_as_reference(gt, without_scores(pred, share=0.2, seed=seed), VARIANTS[name])


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("scored", [True, False], ids=["scored", "unscored"])
def test_rotated_boxes_and_polygons_equal_the_reference(name: str, seed: int, scored: bool) -> None:
    """Half the boxes on both sides turned into rotated boxes at any angle and convex
    polygons: exact region overlaps, matched and counted as the reference does."""
    gt, pred = random_dataset(seed, images=10)
    gt, pred = with_shapes(gt, seed), with_shapes(pred, seed + 100)
    same_as_reference(gt, pred if scored else without_scores(pred), VARIANTS[name])


@pytest.fixture(
    params=[
        pytest.param((64, 0), id="blocks-nothing-kept"),
        pytest.param((64, 300), id="blocks-some-kept"),
        pytest.param((400, 1 << 24), id="tiles-all-kept"),
        pytest.param((400, 0), id="tiles-scored-again"),
    ]
)
def small_pieces(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Pairs scored in pieces of a few dozen: every image-class of the dense sets is "large"
    (scored in blocks, matched rank by rank on blocks or, without scores, by the heap), and
    few or no pairs that can match are kept between matchings. Counts the paths taken."""
    tile, budget = request.param
    monkeypatch.setattr(pairs, "TILE_PAIRS", tile)
    monkeypatch.setattr(candidates, "CANDIDATE_BUDGET", budget)
    calls: dict[str, int] = {}
    for module, name in [
        (match.RankedMatcher, "add_block"),
        (match.RankedMatcher, "add"),
        (candidates, "match_unscored_rows"),
        (candidates, "match_unscored"),
        (pairs.BoxTree, "query"),
    ]:
        original = getattr(module, name)

        def spy(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            calls[_name] = calls.get(_name, 0) + 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize(
    "kind", ["scored", "unscored", "shapes", "shapes-unscored", "sparse", "sparse-unscored"]
)
def test_large_image_classes_in_pieces_equal_the_reference(
    name: str, kind: str, small_pieces: dict[str, int]
) -> None:
    """Image-classes whose pairs are scored and matched in bounded pieces (blocks of
    predictions against all ground truth, an STR tree for the pairs that meet, a heap for
    unscored pairing) give the reference's evaluation to the bit: heavily overlapping boxes
    with exact copies (ties), difficult and crowd objects, shapes, and sparse random sets."""
    seed = sorted(VARIANTS).index(name)
    if kind.startswith("sparse"):
        gt, pred = random_dataset(seed, images=6)
    else:
        gt, pred = dense_dataset(seed)
    if kind.startswith("shapes"):
        gt, pred = with_shapes(gt, seed), with_shapes(pred, seed + 1)
    if kind.endswith("unscored"):
        pred = without_scores(pred)
    same_as_reference(gt, pred, VARIANTS[name])


def test_every_piece_path_is_taken(small_pieces: dict[str, int]) -> None:
    """Across the dense and sparse sets, each way of scoring and matching pieces is used
    under these piece sizes (so the comparisons above test them)."""
    for scored in (True, False):
        for gt, pred in (dense_dataset(1), random_dataset(2, images=6)):
            same_as_reference(gt, pred if scored else without_scores(pred), protocol("default"))
    config = (pairs.TILE_PAIRS, candidates.CANDIDATE_BUDGET)
    if config == (64, 0):
        assert small_pieces.get("add_block", 0) > 0  # blocks where most pairs meet
        assert small_pieces.get("add", 0) > 0  # pairs that meet, where few do
        assert small_pieces.get("match_unscored_rows", 0) > 0
        assert small_pieces.get("query", 0) > 0
    else:
        assert small_pieces.get("add", 0) > 0
        assert small_pieces.get("match_unscored", 0) > 0


@st.composite
def image_classes(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """An IoU matrix of few distinct values (many ties), scores or none, ignored and crowd
    ground truth."""
    n = draw(st.integers(0, 7))
    m = draw(st.integers(0, 8))
    values = st.sampled_from([0.0, 0.3, 0.5, 0.5, 0.75, 0.9, 1.0, 0.5000000000000001])
    iou = np.array(draw(st.lists(values, min_size=n * m, max_size=n * m)), dtype=float)
    scores = None
    if draw(st.booleans()):
        scores = np.array(draw(st.lists(st.sampled_from([0.1, 0.5, 0.9]), min_size=m, max_size=m)))
    ignore = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    crowd = ignore & np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return iou.reshape(n, m), scores, ignore, crowd


@given(image_classes(), st.sampled_from(["unmatched", "devkit"]), st.booleans())
def test_match_class_equals_the_reference_loops(
    case: tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray], rule: str, strict: bool
) -> None:
    """One image-class through the vectorised matchers equals the reference's loops, at
    several thresholds, with many ties, with and without scores."""
    iou, scores, ignore, crowd = case
    thresholds = [0.0, 0.3, 0.5, 0.75, 1.0]
    args = (iou, scores, thresholds, ignore, crowd, rule, strict)
    expected = reference_match_class(*args)
    actual = match_class(*args)
    assert_identical(expected.pred_matched, actual.pred_matched)
    assert_identical(expected.gt_matched, actual.gt_matched)
    assert_identical(expected.pred_ignored, actual.pred_ignored)
    assert_identical(
        np.where(expected.pred_matched, expected.pred_gt, -1),
        np.where(actual.pred_matched, actual.pred_gt, -1),
    )


@pytest.mark.parametrize("seed", range(3))
def test_batch_folds_case_as_the_reference_does(seed: int) -> None:
    """--fold-case merges Car and car identically on both paths, with the same note."""
    gt, pred = random_dataset(seed, images=10, classes=("Cat", "cat", "DOG", "dog"))
    for fold in (False, True):
        assert_identical(
            evaluate(gt, pred, protocol("coco"), fold_case=fold),
            evaluate_columns(
                columns_from_annotations(gt),
                columns_from_annotations(pred),
                protocol("coco"),
                fold_case=fold,
            ),
        )


def assert_same_columns(a: ColumnSet, b: ColumnSet) -> None:
    assert_identical(replace(a, root="", skipped=()), replace(b, root="", skipped=()))
    assert [(s.path, s.message, s.line, s.key) for s in a.skipped] == [
        (s.path, s.message, s.line, s.key) for s in b.skipped
    ]


@pytest.mark.parametrize("name", ["raccoon", "bccd", "cards"])
def test_scan_reads_real_sets_as_the_parser_does(name: str) -> None:
    """The fast reader gives the parser's objects on the real LabelImg sets."""
    folder = datasets_or_skip(name)
    assert_same_columns(columns_from_annotations(read_directory(folder)), read_columns(folder))


@pytest.mark.parametrize("name", ["raccoon", "bccd", "cards", "generated"])
def test_labelimg_files_never_need_the_parser(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files as LabelImg writes them (real sets, and the benchmark's) are read by the fast
    path; only files without objects go to the parser, which reads those as fast."""
    if name == "generated":
        bench("generate").generate(tmp_path, images=40, classes=5, pred_per_image=20, seed=1)
        folders = [tmp_path / "gt", tmp_path / "pred"]
    else:
        folders = [datasets_or_skip(name)]
    handed_over: list[bytes] = []

    def parse(data: bytes, path: str, key: str) -> Any:
        handed_over.append(data)
        return parse_annotation(data, path, key)

    monkeypatch.setattr(scan, "parse_annotation", parse)
    for folder in folders:
        read_columns(folder)
    assert [data for data in handed_over if b"<object>" in data] == []


def second_pass(annotations: Any, seed: int, scored: bool) -> Any:
    """Another labelling of the same images: boxes moved by a few pixels, some dropped, some
    relabelled, some added; with scores (a detector) or without (a second annotator)."""
    rng = random.Random(seed)
    names = sorted({b.name for a in annotations.annotations for b in a.boxes})
    images = []
    for a in annotations.annotations:
        boxes = []
        for b in a.boxes:
            if rng.random() < 0.1:
                continue
            d = [rng.uniform(-6, 6) for _ in range(4)]
            name = b.name if rng.random() > 0.05 else rng.choice(names)
            boxes.append(
                replace(
                    b,
                    name=name,
                    x1=b.x1 + d[0],
                    y1=b.y1 + d[1],
                    x2=max(b.x2 + d[2], b.x1 + d[0] + 1),
                    y2=max(b.y2 + d[3], b.y1 + d[1] + 1),
                    difficult=False,
                    score=round(rng.random(), 2) if scored else None,
                )
            )
        if boxes and rng.random() < 0.3:
            boxes.append(replace(boxes[0], x1=boxes[0].x1 + 3, score=boxes[0].score))
        images.append(replace(a, path=a.path.replace(".xml", ".pred.xml"), boxes=tuple(boxes)))
    return replace(annotations, annotations=tuple(images))


@pytest.mark.parametrize("name", ["raccoon", "bccd", "cards"])
@pytest.mark.parametrize("scored", [True, False], ids=["scored", "unscored"])
def test_real_sets_equal_the_reference(name: str, scored: bool) -> None:
    """The real LabelImg sets against a second pass over them, scored and unscored, under
    the named protocols and crowd difficult objects."""
    gt = read_directory(datasets_or_skip(name))
    pred = second_pass(gt, seed=len(name), scored=scored)
    for variant in ("coco", "voc12", "voc07", "default-crowd-iou75"):
        same_as_reference(gt, pred, VARIANTS[variant])


@pytest.mark.parametrize("jobs", [1, 2])
def test_scan_and_batch_on_a_generated_benchmark_set(tmp_path: Path, jobs: int) -> None:
    """On the benchmark's LabelImg files (read by the fast reader, also in parallel) the
    whole fast path equals the reference path."""
    bench("generate").generate(tmp_path, images=80, classes=5, pred_per_image=30, seed=3)
    gt_ref = read_directory(tmp_path / "gt")
    pred_ref = read_directory(tmp_path / "pred")
    gt_cols = read_columns(tmp_path / "gt", jobs=jobs)
    pred_cols = read_columns(tmp_path / "pred", jobs=jobs)
    assert_same_columns(columns_from_annotations(gt_ref), gt_cols)
    assert_same_columns(columns_from_annotations(pred_ref), pred_cols)
    for name in ("coco", "voc12"):
        assert_identical(
            evaluate(gt_ref, pred_ref, protocol(name)),
            evaluate_columns(gt_cols, pred_cols, protocol(name)),
        )


def labelimg(root: str, filename: str, width: str, depth: str) -> bytes:
    """A file laid out as LabelImg writes it, with the given root tag and header values."""
    return (
        f"{root}\n\t<folder>f</folder>\n\t<filename>{filename}</filename>\n"
        "\t<path>/p/x.jpg</path>\n\t<source>\n\t\t<database>Unknown</database>\n\t</source>\n"
        f"\t<size>\n\t\t<width>{width}</width>\n\t\t<height>20</height>\n"
        f"\t\t<depth>{depth}</depth>\n\t</size>\n\t<segmented>0</segmented>\n"
        "\t<object>\n\t\t<name>a</name>\n\t\t<pose>Unspecified</pose>\n"
        "\t\t<truncated>0</truncated>\n\t\t<difficult>0</difficult>\n\t\t<bndbox>\n"
        "\t\t\t<xmin>1</xmin>\n\t\t\t<ymin>2</ymin>\n\t\t\t<xmax>5</xmax>\n\t\t\t<ymax>6</ymax>\n"
        "\t\t</bndbox>\n\t</object>\n</annotation>\n"
    ).encode()


ODD_FILES = {
    "score-nan": b"<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><score>nan</score></object></annotation>",
    "score-inf": b"<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><score>-inf</score></object></annotation>",
    "score-and-missing": b"<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><score>0.5</score></object><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "score-empty-confidence": b"<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><confidence></confidence></object></annotation>",
    "pi-in-object": b"<annotation><object><name>a</name><?pi x?><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "comment-in-object": b"<annotation><object><name>a</name><!-- c --><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "comment-in-value": b"<annotation><object><name>a</name><bndbox><xmin>1<!-- c -->2</xmin><ymin>1</ymin><xmax>50</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "cdata-name": b"<annotation><object><name><![CDATA[a b]]></name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "doctype": b'<?xml version="1.0"?><!DOCTYPE annotation><annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>',
    "two-declarations": b'<?xml version="1.0"?><?xml version="1.0"?><annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>',
    "part-in-object": b"<annotation><object><name>person</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><part><name>hand</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></part></object></annotation>",
    "polygon-in-object": b"<annotation><object><name>a</name><polygon><x1>1</x1></polygon><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "namespace": b'<annotation xmlns="http://example.invalid/voc"><filename>n</filename><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>',
    "object-after-other": b"<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object><note>x</note><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "text-mixed": b"<annotation>t<object>t<name>a</name>t<bndbox>t<xmin>1</xmin>t<ymin>1</ymin><xmax>5</xmax><ymax>5</ymax>t</bndbox>t</object>t</annotation>",
    "size-plain-newline": b'<?xml version="1.0" encoding="utf-8"?>\n<annotation><folder>f</folder><filename> x.jpg </filename><size><width>10</width><height>20.5</height><depth>3</depth></size><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>',
    "text-before-root": b'<?xml version="1.0" encoding="utf-8"?>\\n<annotation><folder>f</folder><filename> x.jpg </filename><size><width>10</width><height>20.5</height><depth>3</depth></size><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>',
    "size-two": b"<annotation><size><width>10</width><height>20</height></size><size><width>1</width><height>2</height></size><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "size-nested-width": b"<annotation><size><width><v>10</v></width><height>20</height></size><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "size-no-height": b"<annotation><size><width>10</width></size><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "size-empty-depth": b"<annotation><size><width>10</width><height>20</height><depth> </depth></size><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "size-bad-depth": b"<annotation><size><width>10</width><height>20</height><depth>x</depth></size><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "size-two-widths": b"<annotation><size><width>10</width><width>11</width><height>20</height></size><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "filename-nested": b"<annotation><filename><a>x</a></filename><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "filename-two": b"<annotation><filename>a</filename><filename>b</filename><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "header-attribute": b'<annotation verified="yes"><filename>a</filename><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>',
    "header-mismatch": b"<annotation><folder>a</fold><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "root-other": b"<voc><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></voc>",
    "nested-source": b"<annotation><source><database>d</database><annotation>PASCAL</annotation></source><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "comment": b"<annotation><!-- c --><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "entity": b"<annotation><object><name>a&amp;b</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "attribute": b'<annotation><object id="1"><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>',
    "wrapped": b"<annotation><objects><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></objects></annotation>",
    "malformed": b"<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>",
    "bad-number": b"<annotation><object><name>a</name><bndbox><xmin>x</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "inverted": b"<annotation><object><name>a</name><bndbox><xmin>9</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "empty-score": b"<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><score></score></object></annotation>",
    "flag-2": b"<annotation><object><name>a</name><difficult>2</difficult><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "latin1": '<?xml version="1.0" encoding="ISO-8859-1"?><annotation><object><name>caf\xe9</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>'.encode(
        "latin-1"
    ),
    "bom": b"\xef\xbb\xbf<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "trailing-element": b"<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object><note>x</note></annotation>",
    "spaces": b"<annotation>\r\n <object>\r\n <name> a </name><bndbox><xmin> 1 </xmin><ymin>+1</ymin><xmax>5e0</xmax><ymax>5.</ymax></bndbox><confidence>0.5</confidence></object></annotation>",
    "unicode-space": "<annotation><object><name>a</name><bndbox><xmin>1\u00a0</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>".encode(),
    "cdata-end": b"<annotation><object><name>a]]>b</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    # LabelImg's own header, and variants of it the fast reader must leave to the parser.
    "labelimg-verified": labelimg('<annotation verified="yes">', " x.jpg ", "10", "3"),
    "labelimg-verified-other": labelimg('<annotation verified="maybe">', "x.jpg", "10", "3"),
    "labelimg-width-text": labelimg("<annotation>", "x.jpg", "ten", "3"),
    "labelimg-width-float": labelimg("<annotation>", "x.jpg", " 1e1 ", "3"),
    "labelimg-depth-empty": labelimg("<annotation>", "x.jpg", "10", " "),
    "labelimg-depth-bad": labelimg("<annotation>", "x.jpg", "10", "x"),
    "labelimg-depth-float": labelimg("<annotation>", "x.jpg", "10", "3.7"),
    # Objects of one layout, and of layouts that differ from the first object's.
    "layout-confidence": b"<annotation>"
    + (
        b"<object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><confidence>0.25</confidence></object>"
        * 3
    )
    + b"</annotation>",
    "layout-mixed": b"<annotation><object><name>a</name><pose>p</pose><truncated>1</truncated><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><score>0.5</score></object><object><name>b</name><difficult>1</difficult><bndbox><xmin>2</xmin><ymin>2</ymin><xmax>6</xmax><ymax>7</ymax></bndbox><confidence>0.75</confidence></object><object><name>a</name><pose>p</pose><truncated>0</truncated><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><score>0.5</score></object></annotation>",
    "layout-score-then-confidence": b"<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><score>0.5</score></object><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox><confidence>0.25</confidence></object></annotation>",
    "layout-later-object-bad": b"<annotation><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax><zmax>1</zmax></bndbox></object></annotation>",
    "layout-flag-words": b"<annotation><object><name>a</name><truncated> 1 </truncated><difficult></difficult><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    # Poses of one layout (the fast path), poses mixed with absent ones, and <occluded>
    # (the parser): the same pose and occluded columns either way.
    "pose-fixed": b"<annotation>"
    + b"".join(
        b"<object><name>a</name><pose>%s</pose><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>"
        % pose
        for pose in (b"Left", b" Frontal ", b"", b"Left")
    )
    + b"</annotation>",
    "pose-mixed": b"<annotation><object><name>a</name><pose>Rear</pose><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object><object><name>a</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "occluded": b"<annotation><object><name>a</name><pose>Left</pose><occluded>1</occluded><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object><object><name>a</name><occluded>false</occluded><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
    "layout-name-space": b"<annotation><object><name> </name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>",
}


def test_scan_falls_back_to_the_parser_on_anything_unusual(tmp_path: Path) -> None:
    """Odd, broken or hostile files give exactly the parser's objects and errors."""
    for name, data in ODD_FILES.items():
        (tmp_path / f"{name}.xml").write_bytes(data)
    assert_same_columns(columns_from_annotations(read_directory(tmp_path)), read_columns(tmp_path))


def test_batch_on_xml_files_equals_the_reference(tmp_path: Path) -> None:
    """End to end from files written by the oracle helper."""
    gt, pred = random_dataset(7, images=25)
    write_voc(gt, tmp_path / "gt")
    write_voc(pred, tmp_path / "pred")
    for name in ("coco", "voc07", "default"):
        assert_identical(
            evaluate(
                read_directory(tmp_path / "gt"), read_directory(tmp_path / "pred"), protocol(name)
            ),
            evaluate_columns(
                read_columns(tmp_path / "gt"), read_columns(tmp_path / "pred"), protocol(name)
            ),
        )


SHAPES = ROOT / "fixtures" / "shapes"


@pytest.mark.parametrize("name", ["default", "voc07", "coco", "voc12-strict"])
@pytest.mark.parametrize("fold_case", [False, True])
def test_batch_on_rotated_boxes_and_polygons_equals_the_reference(
    name: str, fold_case: bool
) -> None:
    """Columns keep the shapes of fixtures/shapes, and evaluate exactly as the reference."""
    gt_ref, pred_ref = read_directory(SHAPES / "gt"), read_directory(SHAPES / "pred")
    gt_cols, pred_cols = read_columns(SHAPES / "gt"), read_columns(SHAPES / "pred")
    assert [row for row, _ in gt_cols.shapes] == [0, 1, 3]
    assert [row for row, _ in pred_cols.shapes] == [2]
    assert_same_columns(columns_from_annotations(gt_ref), gt_cols)
    conventions = {**VARIANTS, "voc07": protocol("voc07")}[name]
    assert_identical(
        evaluate(gt_ref, pred_ref, conventions, fold_case=fold_case),
        evaluate_columns(gt_cols, pred_cols, conventions, fold_case=fold_case),
    )


@pytest.mark.parametrize("jobs", [1, 2])
def test_shapes_keep_their_rows_across_chunks(tmp_path: Path, jobs: int) -> None:
    """In a set of many files, read in chunks and in worker processes, every shape comes back
    on its own object."""
    plain = (SHAPES / "gt" / "street.xml").read_bytes()
    shaped = (SHAPES / "gt" / "field.xml").read_bytes()
    for i in range(70):
        (tmp_path / f"{i:03d}.xml").write_bytes(shaped if i % 3 == 0 else plain)
    reference = read_directory(tmp_path)
    columns = read_columns(tmp_path, jobs=jobs)
    assert_same_columns(columns_from_annotations(reference), columns)
    assert len(columns.shapes) == 3 * 24
    restored = columns.to_annotations()
    assert [replace(b, line=None) for a in restored.annotations for b in a.boxes] == [
        replace(b, line=None) for a in reference.annotations for b in a.boxes
    ]


def test_batch_notes_suspicious_values_as_the_reference_does() -> None:
    """Negative and enormous coordinates and scores outside [0, 1] give the same notes."""
    gt, pred = random_dataset(4, images=8)
    first_gt = gt.annotations[1]
    odd_gt = replace(
        first_gt,
        boxes=tuple(replace(b, x1=b.x1 - 500, x2=b.x2 + 2e6) for b in first_gt.boxes[:2])
        + first_gt.boxes[2:],
    )
    gt = replace(gt, annotations=(gt.annotations[0], odd_gt, *gt.annotations[2:]))
    first_pred = pred.annotations[0]
    odd_pred = replace(
        first_pred,
        boxes=tuple(replace(b, score=1.5) for b in first_pred.boxes[:3]) + first_pred.boxes[3:],
    )
    pred = replace(pred, annotations=(odd_pred, *pred.annotations[1:]))
    expected = evaluate(gt, pred, protocol("coco"))
    assert len(expected.notes) >= 2
    assert_identical(
        expected,
        evaluate_columns(
            columns_from_annotations(gt), columns_from_annotations(pred), protocol("coco")
        ),
    )


@given(
    st.lists(
        st.tuples(
            st.integers(0, 6),
            st.sampled_from([0.0, 0.25, 0.5, 1.0, -math.inf, 5e-324, 0.5000000000000001]),
        ),
        max_size=60,
    )
)
def test_cell_score_order_is_lexsort(rows: list[tuple[int, float]]) -> None:
    """The packed-key sort orders exactly as lexsort by cell, then descending score, ties in
    array order (many ties here)."""
    cell = np.array([c for c, _ in rows], dtype=np.int64)
    scores = np.array([s for _, s in rows], dtype=np.float64)
    by_score = np.argsort(-scores, kind="stable")
    assert np.array_equal(_cell_score_order(cell, scores, by_score), np.lexsort((-scores, cell)))


@given(
    st.lists(
        st.tuples(
            st.integers(0, 4), st.sampled_from([0.0, 0.3, 0.3000000000000001, 1.0, -math.inf])
        ),
        max_size=80,
    )
)
def test_rankings_from_one_score_order_equal_a_sort_per_class(
    rows: list[tuple[int, float]],
) -> None:
    """Every class's ranking, cut from one stable order of all scores, equals a stable sort
    of that class's scores alone (many ties here)."""
    p_class = np.array([c for c, _ in rows], dtype=np.int32)
    scores = np.array([s for _, s in rows], dtype=np.float64)
    class_order = np.argsort(p_class, kind="stable")
    class_starts = np.searchsorted(p_class[class_order], np.arange(6))
    by_score = np.argsort(-scores, kind="stable")
    rankings = _rankings(by_score, p_class, class_order, class_starts)
    for k, ranking in enumerate(rankings):
        members = class_order[class_starts[k] : class_starts[k + 1]]
        expected = np.argsort(-scores[members], kind="mergesort")  # stable, per class
        assert np.array_equal(ranking.order, expected)

"""Fuzzing: valid VOC files with elements and bytes deleted, duplicated and corrupted.

Whatever the damage, nothing raises but a typed error, every file is evaluated or accounted
for as skipped, and the command exits with the documented code. Each test is bounded by
``max_examples`` and a per-example ``deadline``.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from tests.evaluation.test_batch import assert_identical
from tests.reference import evaluate as reference_evaluate
from vocmatch.cli import EXIT_OK, EXIT_SKIPPED, main
from vocmatch.cli.console import evaluation_in_cli_words
from vocmatch.core.protocol import PROTOCOLS, protocol
from vocmatch.errors import AnnotationError
from vocmatch.evaluation.scoring import Evaluation, evaluate, read_pair
from vocmatch.readers.parse import MAX_COORDINATE, parse_annotation

NAMES = ["cat", "Cat", "dog", " dog ", "ü", "a&b"]
NASTY_TEXT = [
    "", " ", "nan", "NaN", "inf", "-Infinity", "1e400", "1e300", "-1e300", "-5", "1e7", "+5",
    "1e2", " 7 ", "0x10", "1,5", "١٢", "1_000", "9" * 400, "Cat", "  cat\n", "\u00a0", "2",
    "0", "1", "0.5", "-0.5", "3.5", "x", "&", "<",
]  # fmt: skip
SNIPPETS = [
    b"<!DOCTYPE a [<!ENTITY x 'y'>]>", b"&x;", b"<![CDATA[", b"]]>", b"\x00", b"\xff\xfe",
    b"\xef\xbb\xbf", b"<!--", b"-->", b"<object>", b"</object>", b"<part>", b"</part>",
    b"<?xml version='1.0' encoding='latin-1'?>", b"\r\n", b"<", b">", b"&", b"&#0;",
    b"&#x1F600;", b"\xc3", b"<score>2</score>", b"<bndbox>", b"xmlns='urn:x'",
]  # fmt: skip
TAGS = ["object", "part", "name", "bndbox", "xmin", "ymin", "xmax", "ymax", "score", "size", "x"]
#: The strategies the generators draw from, built once: building one (its validation, its
#: emptiness check) in every draw cost more than drawing from it.
OBJECT_COUNTS = st.integers(0, 3)
CORNERS = st.integers(0, 90)
SIDES = st.integers(0, 40)
BOOLEANS = st.booleans()
DIFFICULT = st.sampled_from(["0", "1"])
SCORED = st.integers(0, 9)
SCORES = st.floats(0, 1)
REGIONS = st.sampled_from(["box"] * 6 + ["robndbox", "polygon"])
ANGLES = st.sampled_from([0.0, 0.5, 1.5707963])
NAMES_DRAWN = st.sampled_from(NAMES)
ELEMENT_OPERATIONS = st.sampled_from(["delete", "duplicate", "rename", "text", "wrap"])
TAGS_DRAWN = st.sampled_from(TAGS)
NASTY_TEXT_DRAWN = st.sampled_from(NASTY_TEXT)
SNIPPETS_DRAWN = st.sampled_from(SNIPPETS)
BYTE_OPERATIONS = st.sampled_from(["delete", "duplicate", "overwrite", "insert", "truncate"])
OVERWRITES = st.binary(min_size=1, max_size=8)
MUTATION_COUNTS = st.integers(0, 4)
PRED_KEPT = st.integers(0, 4)  # a damaged GT file has its prediction four times in five
KEYS = st.lists(
    st.sampled_from(["a", "A", "b", "sub/a", "Sub/a", "c.XML", "c"]),
    min_size=1,
    max_size=5,
    unique=True,
)
FUZZ = settings(
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def voc_file(draw: st.DrawFn, scored: bool) -> bytes:
    """A valid VOC file: a few objects, optional size, scores for predictions."""
    objects = []
    for _ in range(draw(OBJECT_COUNTS)):
        x1, y1 = draw(CORNERS), draw(CORNERS)
        x2, y2 = x1 + draw(SIDES), y1 + draw(SIDES)
        extra = ""
        if draw(BOOLEANS):
            extra += f"<difficult>{draw(DIFFICULT)}</difficult>"
        if scored and draw(SCORED):
            extra += f"<score>{draw(SCORES):.4f}</score>"
        # Now and then a rotated box or a triangle instead of a box: exact region overlap.
        region = draw(REGIONS)
        if region == "robndbox":
            angle = draw(ANGLES)
            geometry = (
                f"<robndbox><cx>{x1 + 20}</cx><cy>{y1 + 20}</cy><w>{x2 - x1}</w>"
                f"<h>{y2 - y1}</h><angle>{angle}</angle></robndbox>"
            )
        elif region == "polygon":
            geometry = (
                f"<polygon><x1>{x1}</x1><y1>{y1}</y1><x2>{x1 + 30}</x2><y2>{y1}</y2>"
                f"<x3>{x1}</x3><y3>{y2 + 1}</y3></polygon>"
            )
        else:
            geometry = (
                f"<bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax>"
                "</bndbox>"
            )
        objects.append(
            f"<object><name>{draw(NAMES_DRAWN).replace('&', '&amp;')}</name>{extra}"
            f"{geometry}</object>"
        )
    size = "<size><width>100</width><height>100</height><depth>3</depth></size>"
    header = size if draw(BOOLEANS) else ""
    return f"<annotation><filename>a.jpg</filename>{header}{''.join(objects)}</annotation>".encode()


def element_mutation(data: bytes, draw: st.DrawFn) -> bytes:
    """Delete, duplicate, rename, re-text or wrap one element of a well-formed file."""
    try:
        root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError:
        return data
    elements = [e for e in root.iter() if isinstance(e.tag, str)]
    element = elements[draw(st.integers(0, len(elements) - 1))]
    parent = element.getparent()
    operation = draw(ELEMENT_OPERATIONS)
    if operation == "delete" and parent is not None:
        parent.remove(element)
    elif operation == "duplicate" and parent is not None:
        # Without its tail: text after the element is not part of it (and need not be XML).
        copy = etree.fromstring(etree.tostring(element, with_tail=False))
        parent.insert(parent.index(element), copy)
    elif operation == "rename":
        element.tag = draw(TAGS_DRAWN)
    elif operation == "text":
        element.text = draw(NASTY_TEXT_DRAWN)
    elif operation == "wrap" and parent is not None:
        wrapper = etree.Element(draw(TAGS_DRAWN))
        parent.replace(element, wrapper)
        wrapper.append(element)
    return bytes(etree.tostring(root))


def byte_mutation(data: bytes, draw: st.DrawFn) -> bytes:
    """Delete, duplicate or overwrite a byte range, insert a snippet, or truncate."""
    if not data:
        return draw(SNIPPETS_DRAWN)
    start = draw(st.integers(0, len(data) - 1))
    end = draw(st.integers(start, min(len(data), start + 40)))
    operation = draw(BYTE_OPERATIONS)
    if operation == "delete":
        return data[:start] + data[end:]
    if operation == "duplicate":
        return data[:end] + data[start:end] + data[end:]
    if operation == "overwrite":
        return data[:start] + draw(OVERWRITES) + data[start + 1 :]
    if operation == "insert":
        return data[:start] + draw(SNIPPETS_DRAWN) + data[start:]
    return data[:start]


@st.composite
def mutated_file(draw: st.DrawFn, scored: bool = False) -> bytes:
    """A valid VOC file damaged by zero to four element or byte mutations."""
    data = draw(VOC_FILES[scored])
    for _ in range(draw(MUTATION_COUNTS)):
        mutation = element_mutation if draw(BOOLEANS) else byte_mutation
        data = mutation(data, draw)
    return data


#: Both kinds of file, built once (see OBJECT_COUNTS).
VOC_FILES = {scored: voc_file(scored) for scored in (False, True)}
MUTATED_FILES = {scored: mutated_file(scored) for scored in (False, True)}


@st.composite
def folders(draw: st.DrawFn) -> dict[str, dict[str, bytes]]:
    """Ground truth and predictions: a pristine image plus damaged ones, some with colliding
    names (same stem in another case, in a subfolder, or with an upper-case extension)."""
    keys = draw(KEYS)
    gt = {"ok.xml": draw(VOC_FILES[False])}
    pred: dict[str, bytes] = {"ok.xml": draw(VOC_FILES[True])}
    for key in keys:
        name = key if key.endswith(".XML") else f"{key}.xml"
        gt[name] = draw(MUTATED_FILES[False])
        if draw(PRED_KEPT):
            pred[name] = draw(MUTATED_FILES[True])
    if draw(BOOLEANS):
        pred["orphan.xml"] = draw(MUTATED_FILES[True])
    return {"gt": gt, "pred": pred}


def write(root: Path, files: dict[str, dict[str, bytes]]) -> tuple[Path, Path]:
    for folder, contents in files.items():
        for name, data in contents.items():
            path = root / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return root / "gt", root / "pred"


def xml_files(folder: Path) -> list[tuple[str, str]]:
    """``(key, path)`` of every regular ``*.xml`` file, listed independently of vocmatch."""
    found = []
    for directory, _, names in os.walk(folder):
        for name in names:
            if name.lower().endswith(".xml"):
                path = os.path.join(directory, name)
                key = os.path.splitext(os.path.relpath(path, folder))[0].replace(os.sep, "/")
                found.append((key, path))
    return found


def assert_every_file_is_accounted_for(evaluation: Evaluation, gt: Path, pred: Path) -> None:
    """Each file is evaluated, an orphan, skipped, or the pair of a skipped file."""
    skipped_paths = {s.path for s in evaluation.skipped}
    skipped_keys = {s.key for s in evaluation.skipped if s.key is not None}
    evaluated_gt = {i.gt_path for i in evaluation.images}
    evaluated_pred = {i.pred_path for i in evaluation.images if i.pred_path is not None}
    for key, path in xml_files(gt):
        assert path in evaluated_gt or path in skipped_paths or key in skipped_keys, path
    for key, path in xml_files(pred):
        assert (
            path in evaluated_pred
            or path in evaluation.orphan_pred
            or path in skipped_paths
            or key in skipped_keys
        ), path


@settings(FUZZ, max_examples=1000)
@given(mutated_file(scored=True))
def test_parsing_damaged_files_raises_only_annotation_errors(data: bytes) -> None:
    """parse_annotation returns valid boxes or raises AnnotationError, nothing else."""
    try:
        annotation = parse_annotation(data, "a.xml", "a")
    except AnnotationError as error:
        assert error.path == "a.xml"
        assert error.message and "\n" not in error.message
        return
    for box in annotation.boxes:
        assert box.name == box.name.strip() and box.name
        corners = (box.x1, box.y1, box.x2, box.y2)
        assert all(math.isfinite(v) and abs(v) <= MAX_COORDINATE for v in corners)
        assert box.x1 <= box.x2 and box.y1 <= box.y2
        assert box.score is None or math.isfinite(box.score)


@settings(FUZZ, max_examples=300)
@given(folders(), st.sampled_from(sorted(PROTOCOLS)), st.booleans())
def test_damaged_folders_are_evaluated_and_nothing_is_lost(
    files: dict[str, dict[str, bytes]], protocol_name: str, fold_case: bool
) -> None:
    """evaluate() runs on any damage, every file is evaluated or accounted as skipped, and
    the result is the reference evaluator's to the bit."""
    with tempfile.TemporaryDirectory() as folder:
        gt_dir, pred_dir = write(Path(folder), files)
        gt, pred = read_pair(gt_dir, pred_dir)
        evaluation = evaluate(gt, pred, protocol(protocol_name), fold_case=fold_case)
        # The reference evaluator reads the VOC and COCO conventions; the ultralytics presets
        # are checked against the package itself (tests/evaluation/test_ultralytics_protocol.py).
        if protocol(protocol_name).summary != "ultralytics":
            assert_identical(
                reference_evaluate(gt, pred, protocol(protocol_name), fold_case=fold_case),
                evaluation,
            )
        assert_every_file_is_accounted_for(evaluation, gt_dir, pred_dir)
        assert "ok" in [i.key for i in evaluation.images]
        summary = evaluation.summary
        assert summary.tp + summary.fn == summary.gt
        for result in evaluation.classes:
            assert result.ap is None or 0.0 <= result.ap <= 1.0


@settings(FUZZ, max_examples=100)
@given(folders(), st.sampled_from(["table", "json", "csv", "markdown", "junit"]), st.booleans())
def test_the_command_exits_0_or_3_and_names_every_skipped_file(
    files: dict[str, dict[str, bytes]], output_format: str, fold_case: bool
) -> None:
    """Through the CLI: no exception, exit 3 exactly when a file was skipped, each named."""
    with tempfile.TemporaryDirectory() as folder:
        gt_dir, pred_dir = write(Path(folder), files)
        args = [str(gt_dir), str(pred_dir), "--format", output_format, "--errors", "--tightness"]
        args += ["--fold-case"] if fold_case else []
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        # The library's notes name its options; the command line words them as its flags.
        evaluation = evaluation_in_cli_words(
            evaluate(*read_pair(gt_dir, pred_dir), fold_case=fold_case)
        )
        assert result.exit_code == (EXIT_SKIPPED if evaluation.skipped else EXIT_OK)
        for skipped in evaluation.skipped:
            assert f"vocmatch: skipped {skipped}\n" in result.stderr
        assert "Traceback" not in result.stderr
        if output_format == "json":
            data = json.loads(result.stdout)
            assert data["summary"]["skipped"] == len(evaluation.skipped)
            assert data["summary"]["images"] == len(evaluation.images)
            assert data["notes"] == list(evaluation.notes)

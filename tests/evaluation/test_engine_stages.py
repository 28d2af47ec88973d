"""Each stage of the column evaluator (vocmatch.evaluation.stages, the per-image stage, and
the route's match records and their accumulation), called alone on one small hand-made input whose every number can be
worked out by hand.

The input: ground truth ``a`` holds cat ``(0, 0, 10, 10)``, a difficult dog ``(20, 20, 30,
30)`` and cat ``(50, 50, 60, 60)``; ``b`` holds cat ``(0, 0, 10, 10)``. Predictions for ``a``
in file order: cat ``(0, 0, 10, 5)`` at 0.8 (IoU 0.5 with the first cat), the dog exactly at
0.7, the first cat exactly at 0.9, and cat ``(52, 50, 62, 60)`` at 0.95 (IoU 2/3 with the
second cat); predictions for ``c``, which has no ground truth, hold one cat.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vocmatch.core.model import Box, ImageAnnotation, SkippedFile
from vocmatch.core.protocol import SWEEP_THRESHOLDS, Conventions, protocol
from vocmatch.evaluation import engine, from_records, per_image, stage_inputs, stages, to_records
from vocmatch.evaluation.result import Evaluation
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import ColumnSet, columns_from_annotations


def columns() -> tuple[ColumnSet, ColumnSet]:
    gt = AnnotationSet(
        "gt",
        (
            ImageAnnotation(
                "a",
                "gt/a.xml",
                (
                    Box("cat", 0, 0, 10, 10),
                    Box("dog", 20, 20, 30, 30, difficult=True),
                    Box("cat", 50, 50, 60, 60),
                ),
            ),
            ImageAnnotation("b", "gt/b.xml", (Box("cat", 0, 0, 10, 10),)),
        ),
        (),
    )
    pred = AnnotationSet(
        "pred",
        (
            ImageAnnotation(
                "a",
                "pred/a.xml",
                (
                    Box("cat", 0, 0, 10, 5, score=0.8),
                    Box("dog", 20, 20, 30, 30, score=0.7),
                    Box("cat", 0, 0, 10, 10, score=0.9),
                    Box("cat", 52, 50, 62, 60, score=0.95),
                ),
            ),
            ImageAnnotation("c", "pred/c.xml", (Box("cat", 0, 0, 1, 1, score=0.5),)),
        ),
        (),
    )
    return columns_from_annotations(gt), columns_from_annotations(pred)


def prepared(
    conv: Conventions,
) -> tuple[stage_inputs.Prepared, stage_inputs.Selection, stage_inputs.Paired]:
    gt, pred = columns()
    selection = stages.select_images(gt, pred)
    prepared, by_score = stages.prepare_cells(gt, pred, selection, conv)
    paired = stages.pair_and_match(prepared, by_score, lambda name: None)
    return prepared, selection, paired


def test_select_pairs_images_by_key_and_sets_orphans_and_missing_apart() -> None:
    """Every image with ground truth is evaluated; prediction files without one are orphans."""
    gt, pred = columns()
    selection = stages.select_images(gt, pred)
    assert selection.images == (0, 1)
    assert selection.pred_of_image == (0, None)
    assert selection.missing == ("b",)
    assert selection.orphan == ("pred/c.xml",)
    assert selection.gt_rows.tolist() == [0, 1, 2, 3]
    assert selection.gt_image.tolist() == [0, 0, 0, 1]
    assert selection.pred_rows.tolist() == [0, 1, 2, 3]  # c's cat is not evaluated
    assert selection.pred_image.tolist() == [0, 0, 0, 0]
    assert selection.scored


def _files(side: str, keys: str, unreadable: str) -> ColumnSet:
    """Columns of one file per key (one cat each, difficult in ``d``), the keys of
    ``unreadable`` skipped as unreadable."""
    images = tuple(
        ImageAnnotation(k, f"{side}/{k}.xml", (Box("cat", 0, 0, 9, 9, difficult=k == "d"),))
        for k in keys
        if k not in unreadable
    )
    skipped = tuple(SkippedFile(f"{side}/{k}.xml", "bad", 2, k) for k in unreadable)
    return columns_from_annotations(AnnotationSet(side, images, skipped))


@pytest.mark.parametrize(
    ("gt_keys", "pred_keys", "unreadable", "images", "pred_of_image", "missing", "orphan"),
    [
        pytest.param("abc", "abc", ("", ""), (0, 1, 2), (0, 1, 2), (), (), id="same-keys"),
        pytest.param(
            "abd",
            "bcde",
            ("", ""),
            (0, 1, 2),
            (None, 0, 2),
            ("a",),
            ("pred/c.xml", "pred/e.xml"),
            id="missing-and-orphans",
        ),
        pytest.param("abcd", "abcd", ("b", ""), (0, 1, 2), (0, 2, 3), (), (), id="gt-unreadable"),
        pytest.param(
            "abcd",
            "abce",
            ("", "c"),
            (0, 1, 3),
            (0, 1, None),
            ("d",),
            ("pred/e.xml",),
            id="pred-unreadable",
        ),
        pytest.param("ab", "abx", ("b", "x"), (0,), (0,), (), (), id="unreadable-orphan"),
        pytest.param(
            "", "ab", ("", ""), (), (), (), ("pred/a.xml", "pred/b.xml"), id="no-ground-truth"
        ),
    ],
)
def test_select_pairs_files_by_key_around_unreadable_ones(
    gt_keys: str,
    pred_keys: str,
    unreadable: tuple[str, str],
    images: tuple[int, ...],
    pred_of_image: tuple[int | None, ...],
    missing: tuple[str, ...],
    orphan: tuple[str, ...],
) -> None:
    """Each readable ground-truth file is an image, paired with the prediction file of its
    key; an unreadable file on either side takes its key out (neither missing nor orphan);
    the orphans are those :func:`stages.orphan_files` lists, in the predictions' order."""
    gt = _files("gt", gt_keys, unreadable[0])
    pred = _files("pred", pred_keys, unreadable[1])
    selection = stages.select_images(gt, pred)
    assert selection.images == images
    assert selection.pred_of_image == pred_of_image
    assert (selection.missing, selection.orphan) == (missing, orphan)
    assert selection.orphan == tuple(path for _, path in stages.orphan_files(gt, pred))
    # Each evaluated box is its file's, in column order, with its image's index.
    evaluated = [images.index(i) for i in gt.image.tolist() if i in images]
    assert selection.gt_image.tolist() == evaluated
    assert selection.gt_image.dtype == np.int64
    paired = [pred_of_image.index(i) for i in pred.image.tolist() if i in pred_of_image]
    assert selection.pred_image.tolist() == paired
    dropped = stages.select_images(gt, pred, drop_difficult=True)
    assert gt.difficult[dropped.gt_rows].tolist() == [False] * dropped.gt_rows.size


def test_an_evaluation_finds_its_orphan_files_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The prediction files without ground truth are found by the selection alone (not
    again for the report), and reported."""

    def refuse(*args: object) -> None:
        raise AssertionError("orphan files listed again")

    monkeypatch.setattr(stages, "orphan_files", refuse)
    gt, pred = columns()
    evaluation = engine.evaluate_columns(gt, pred, protocol("coco"))
    assert evaluation.orphan_pred == ("pred/c.xml",)


def test_prepare_sorts_ground_truth_by_cell_and_predictions_by_descending_score() -> None:
    """Ground truth by (image, class, file order); predictions by (image, class, score)."""
    gt, pred = columns()
    prepared, by_score = stages.prepare_cells(
        gt, pred, stages.select_images(gt, pred), protocol("default")
    )
    assert prepared.class_names == ("cat", "dog")
    assert prepared.gt.rows.tolist() == [0, 2, 1, 3]
    assert prepared.gt.image.tolist() == [0, 0, 0, 1]
    assert prepared.gt.label.tolist() == [0, 0, 1, 0]
    assert prepared.gt.ignore.tolist() == [False, False, True, False]
    assert prepared.gt.crowd.tolist() == [False, False, False, False]
    assert prepared.pred.rows.tolist() == [3, 2, 0, 1]
    assert prepared.pred.label.tolist() == [0, 0, 0, 1]
    assert prepared.pred.rank.tolist() == [0, 1, 2, 0]
    assert prepared.pred.kept.all() and prepared.pred.rows is prepared.pred.rows_all
    assert by_score.tolist() == [0, 1, 2, 3]
    assert prepared.levels.thresholds.tolist() == sorted({0.5, *SWEEP_THRESHOLDS})
    assert prepared.levels.evaluation == prepared.levels.index[0.5]


def test_prepare_sets_predictions_beyond_max_dets_apart() -> None:
    """pycocotools' maxDets keeps the highest-scored of each image-class."""
    gt, pred = columns()
    conv = replace(protocol("coco"), max_dets=1)
    prepared, by_score = stages.prepare_cells(gt, pred, stages.select_images(gt, pred), conv)
    assert prepared.pred.kept.tolist() == [True, False, False, True]
    assert prepared.pred.rows_all.tolist() == [3, 2, 0, 1]
    assert prepared.pred.rows.tolist() == [3, 1]
    assert prepared.pred.rank.tolist() == [0, 0]
    assert by_score.tolist() == [0, 1]  # among the kept ones
    assert prepared.gt.crowd.tolist() == [False, False, True, False]  # --difficult crowd


def test_pair_and_match_takes_the_best_free_object_in_score_order() -> None:
    """0.95 takes the second cat, 0.9 the first; 0.8 finds its object taken; the dog matches
    the difficult dog."""
    p, _, paired = prepared(protocol("default"))
    matched, ignored = paired.matching.pred_flags(p.levels.evaluation)
    assert matched.tolist() == [True, True, False, True]
    assert ignored.tolist() == [False, False, False, True]
    assert paired.matching.gt_matched[p.levels.evaluation].tolist() == [True, True, True, False]
    gt, iou = paired.matching.of(p.levels.evaluation, np.array([0, 1, 3]))
    assert gt.tolist() == [1, 0, 2]
    assert iou.tolist() == pytest.approx([2 / 3, 1.0, 1.0])
    assert paired.scan.pred_best_iou.tolist() == pytest.approx([2 / 3, 1.0, 0.5, 1.0])
    assert paired.ranking.members(0).tolist() == [0, 1, 2]
    assert paired.ranking.ranked(1).tolist() == [3]


def test_pair_and_match_under_the_devkit_rule() -> None:
    """The same matches under the devkit's rule here (0.8's best object is taken)."""
    p, _, paired = prepared(protocol("voc12"))
    matched, ignored = paired.matching.pred_flags(p.levels.evaluation)
    assert matched.tolist() == [True, True, False, True]
    assert ignored.tolist() == [False, False, False, True]


def test_counted_flags_and_missed_ground_truth() -> None:
    """Two TPs, one FP, the dog ignored; b's cat is missed."""
    p, _, paired = prepared(protocol("default"))
    scores = stage_inputs.RankingScores.of(p)
    counted = stages.count_outcomes(p, paired.matching, scores)
    assert counted.counted.tolist() == [True, True, False, False]
    assert counted.ignored_counted.tolist() == [False, False, False, True]
    assert counted.missed[p.levels.evaluation].tolist() == [False, False, False, True]
    assert counted.passing is None and counted.passing_all is None
    assert scores.kept.tolist() == [0.95, 0.9, 0.8, 0.7]


def test_image_counts_at_every_threshold() -> None:
    """Per image: TP, FP, FN and the IoU of each TP in (class, file) order."""
    p, selection, paired = prepared(protocol("default"))
    counted = stages.count_outcomes(p, paired.matching, stage_inputs.RankingScores.of(p))
    counts = per_image.per_image_counts(p, paired.matching, counted, len(selection.images))
    t = p.levels.evaluation
    assert counts.tp.dtype == counts.fp.dtype == counts.fn.dtype == np.int64
    assert (counts.tp[t].tolist(), counts.fp[t].tolist(), counts.fn[t].tolist()) == (
        [2, 0], [1, 0], [0, 1],
    )  # fmt: skip
    top = p.levels.index[max(SWEEP_THRESHOLDS)]  # only the exact cat passes 0.95
    assert (counts.tp[top].tolist(), counts.fp[top].tolist(), counts.fn[top].tolist()) == (
        [1, 0], [2, 0], [1, 1],
    )  # fmt: skip
    assert counts.gt.tolist() == [2, 1]
    assert counts.gt_ignored.tolist() == [1, 0]
    assert counts.pred.tolist() == [4, 0]
    assert counts.pred_ignored.tolist() == [1, 0]
    assert counts.tp_iou.tolist() == pytest.approx([1.0, 2 / 3])  # file order: row 2, row 3
    assert counts.tp_bounds.tolist() == [0, 2, 2]


def whole_run(
    conv: Conventions, *, detail: bool = False, told: list[str] | None = None
) -> Evaluation:
    """The columns evaluated by the route's two steps, match records then accumulation."""
    gt, pred = columns()
    stage = None if told is None else told.append
    asked = to_records.Asked(whole_run=True, detail=detail, stage=stage)
    return from_records.evaluation_of(to_records.match_records(gt, pred, conv, asked=asked), conv)


def test_image_results_with_records() -> None:
    """One result per image, the per-box records in the reference's order."""
    a, b = whole_run(protocol("default"), detail=True).images
    assert (a.key, a.pred_path, a.tp, a.fp, a.fn) == ("a", "pred/a.xml", 2, 1, 0)
    assert a.mean_iou == pytest.approx(5 / 6)
    assert (b.key, b.pred_path, b.tp, b.fp, b.fn, b.mean_iou) == ("b", None, 0, 0, 1, None)
    assert [(m.name, m.outcome, m.gt_index, m.pred_index) for m in a.matches] == [
        ("cat", "fp", None, 0),
        ("cat", "tp", 0, 2),
        ("cat", "tp", 2, 3),
        ("dog", "ignored", 1, 1),
    ]
    assert [(m.name, m.outcome, m.gt_index, m.iou) for m in b.matches] == [("cat", "fn", 0, 0.0)]
    assert all(not i.matches for i in whole_run(protocol("default")).images)


def test_class_ap_and_results() -> None:
    """cat: 2 of 3 found at the top of the ranking, AP 2/3; dog: only ignored ground truth."""
    cat, dog = whole_run(protocol("default")).classes
    assert (cat.name, cat.gt, cat.pred, cat.tp, cat.fp, cat.fn) == ("cat", 3, 3, 2, 1, 1)
    assert cat.ap == pytest.approx(2 / 3)
    assert (dog.name, dog.gt, dog.gt_ignored, dog.tp, dog.fp, dog.ap) == (
        "dog", 0, 1, 0, 0, None
    )  # fmt: skip


def test_coco_stage_gives_pycocotools_numbers_per_area_range() -> None:
    """Under COCO, cat's two TPs (IoU 1 and 2/3) give 67 of 101 recall points at IoU up to
    0.65; above, 0.9's TP comes second: precision 1/2 on 34 points."""
    told: list[str] = []
    evaluation = whole_run(protocol("coco"), told=told)
    assert [t for t in told if t.startswith("COCO")] == [
        f"COCO area {name}" for name in ("all", "small", "medium", "large")
    ]
    high, low = 67 / (101 * (1 + np.spacing(1))), 34 * 0.5 / 101
    cat = evaluation.classes[0]
    assert (cat.ap50, cat.ap75) == (pytest.approx(high, rel=1e-12), pytest.approx(low, rel=1e-12))
    assert cat.ap == pytest.approx((4 * high + 6 * low) / 10, rel=1e-12)
    assert evaluation.coco is not None
    stats = evaluation.coco.as_list()
    assert stats[0] == pytest.approx((4 * high + 6 * low) / 10, rel=1e-12)
    assert stats[3] == stats[0]  # every box is small
    assert stats[4:6] == [-1.0, -1.0]  # no medium or large ground truth


def test_stages_tell_progress_in_order() -> None:
    """Each stage is told once, with the number done and in all."""
    told: list[tuple[str, int, int]] = []
    gt, pred = columns()
    engine.evaluate_columns(gt, pred, protocol("coco"), progress=lambda *a: told.append(a))
    assert told == [
        ("selecting boxes", 0, 10),
        ("sorting boxes", 1, 10),
        ("pairing boxes", 2, 10),
        ("matching", 3, 10),
        ("COCO area all", 4, 10),
        ("COCO area small", 5, 10),
        ("COCO area medium", 6, 10),
        ("COCO area large", 7, 10),
        ("per-image results", 8, 10),
        ("AP per class", 9, 10),
        ("done", 10, 10),
    ]


def test_evaluate_tells_the_files_read_then_each_stage() -> None:
    """vocmatch.evaluate tells a progress object the files read, up to all of them, then
    every stage of the evaluation, the first before any box is selected."""
    import vocmatch
    from tests.conftest import FIXTURES, street_05_unpredicted

    told: list[tuple[str, int, int]] = []

    class Told:
        def files(self, done: int, total: int) -> None:
            told.append(("files", done, total))

        def stages(self, stage: str, done: int, total: int) -> None:
            told.append((stage, done, total))

    with street_05_unpredicted():
        vocmatch.evaluate(FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred", progress=Told())
    files = [t for t in told if t[0] == "files"]
    assert files[-1] == ("files", 11, 11)
    stages = told[len(files) :]
    assert stages[0] == ("selecting boxes", 0, 6)
    assert stages[-1] == ("done", 6, 6)
    assert [s[1] for s in stages] == list(range(7))

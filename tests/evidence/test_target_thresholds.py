"""Score thresholds holding a target precision or recall (--target-precision,
--target-recall): against a loop over every candidate, on fixtures and real sets, written,
applied, gated, merged."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import vocmatch
from tests.conftest import ROOT, datasets_or_skip
from tests.conftest import run_cli as run
from tests.oracle import write_voc
from vocmatch.cli import EXIT_GATE, EXIT_OK, EXIT_USAGE
from vocmatch.core.model import Box
from vocmatch.errors import InputError, RequestError
from vocmatch.evidence.resampling import image_weights
from vocmatch.readers.parse import AnnotationSet, read_directory

pytestmark = pytest.mark.filterwarnings("ignore::vocmatch.errors.MissingPredictionWarning")


def detector(gt: AnnotationSet, seed: int, fp_rate: float = 0.6) -> AnnotationSet:
    """A detector whose scores mean something: most objects found with scores mostly high,
    some missed, false positives mostly low-scored, a few high."""
    rng = random.Random(seed)
    images = []
    for a in gt.annotations:
        boxes = []
        names = sorted({b.name for b in a.boxes}) or ["object"]
        for b in a.boxes:
            if rng.random() < 0.15:
                continue
            d = [rng.uniform(-3, 3) for _ in range(4)]
            boxes.append(replace(
                b, x1=b.x1 + d[0], y1=b.y1 + d[1], x2=max(b.x2 + d[2], b.x1 + d[0] + 1),
                y2=max(b.y2 + d[3], b.y1 + d[1] + 1), difficult=False,
                score=round(min(1.0, rng.betavariate(5, 1.5)), 3),
            ))  # fmt: skip
        while rng.random() < fp_rate:
            x, y = rng.uniform(0, 300), rng.uniform(0, 300)
            boxes.append(Box(rng.choice(names), x, y, x + rng.uniform(5, 60), y + rng.uniform(5, 60),
                             score=round(rng.betavariate(1.5, 4), 3)))  # fmt: skip
        images.append(replace(a, boxes=tuple(boxes)))
    return replace(gt, annotations=tuple(images))


def loop_thresholds(report: vocmatch.EvalReport, metric: str, value: float, resamples: int,
                    seed: int, confidence: float = 0.95) -> dict[str, tuple[float, float] | None]:  # fmt: skip
    """Each class's (threshold, bound), candidate by candidate from the box-by-box records."""
    images = sorted(report.evaluation.images, key=lambda i: i.key)
    weights = np.concatenate(list(image_weights(len(images), resamples, seed))).astype(float)
    found: dict[str, tuple[float, float] | None] = {}
    for cls in report.evaluation.classes:
        rows = [(i, m.score, m.outcome == "tp") for i, image in enumerate(images)
                for m in image.matches
                if m.name == cls.name and m.outcome in ("tp", "fp") and m.score is not None]  # fmt: skip
        gt = np.array([sum(1 for m in image.matches if m.name == cls.name
                           and m.outcome in ("tp", "fn") and m.gt_index is not None)
                       for image in images], dtype=float)  # fmt: skip
        if gt.sum() == 0 or not rows:
            found[cls.name] = None
            continue
        chosen = None
        for t in sorted({s for _, s, _ in rows}, reverse=True):
            kept = [(i, tp) for i, s, tp in rows if s >= t]
            tp_w = sum(weights[:, i] * tp for i, tp in kept)
            all_w = sum(weights[:, i] for i, _ in kept)
            with np.errstate(all="ignore"):
                values = tp_w / all_w if metric == "precision" else tp_w / (weights @ gt)
            values[~np.isfinite(values)] = np.nan
            bound = float(np.nanquantile(values, 1 - confidence))
            n_tp = sum(tp for _, tp in kept)
            own = n_tp / len(kept) if metric == "precision" else n_tp / gt.sum()
            holds = bound >= value and own >= value
            if metric == "precision":
                if not holds:
                    break
                chosen = (t, bound)
            elif holds:
                chosen = (t, bound)
                break
        found[cls.name] = chosen
    return found


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("metric", "value"), [("precision", 0.9), ("precision", 0.7),
                                               ("recall", 0.6), ("recall", 0.85)])  # fmt: skip
@pytest.mark.parametrize("protocol_name", ["default", "coco"])
def test_thresholds_equal_a_loop_over_every_candidate(
    tmp_path: Path, seed: int, metric: str, value: float, protocol_name: str
) -> None:
    gt = read_directory(ROOT / "fixtures/demo/gt")
    rng = random.Random(seed)
    big = replace(gt, annotations=tuple(
        replace(a, key=f"{a.key}_{k}", path=a.path.replace(".xml", f"_{k}.xml"))
        for k in range(8) for a in gt.annotations if rng.random() < 0.9
    ))  # fmt: skip
    write_voc(big, tmp_path / "gt")
    write_voc(detector(big, seed), tmp_path / "pred")
    report = vocmatch.evaluate(
        tmp_path / "gt", tmp_path / "pred", protocol=protocol_name, boxes=True,
        bootstrap=200, seed=seed, **{f"target_{metric}": value},
    )  # fmt: skip
    targets = report.evidence.targets
    assert targets is not None
    expected = loop_thresholds(report, metric, value, 200, seed)
    for cls in targets.classes:
        want = expected[cls.name]
        if want is None:
            assert cls.threshold is None and cls.reason, cls
        else:
            assert (cls.threshold, cls.bound) == pytest.approx(want, abs=1e-12), cls.name


def test_a_false_positive_on_top_stops_the_precision_sequence(tmp_path: Path) -> None:
    """The highest-scored prediction is wrong: no lower threshold may be chosen, however
    good the rest (that is what keeps the bound honest)."""
    gt = read_directory(ROOT / "fixtures/demo/gt")
    pred = detector(gt, 1, fp_rate=0.0)
    first = pred.annotations[0]
    wrong = Box(first.boxes[0].name if first.boxes else "car", 300, 300, 340, 340, score=1.0)
    pred = replace(pred, annotations=(replace(first, boxes=(*first.boxes, wrong)),
                                      *pred.annotations[1:]))  # fmt: skip
    write_voc(gt, tmp_path / "gt")
    write_voc(pred, tmp_path / "pred")
    targets = vocmatch.evaluate(
        tmp_path / "gt", tmp_path / "pred", target_precision=0.5
    ).evidence.targets
    assert targets is not None
    (hit,) = [c for c in targets.classes if c.name == wrong.name]
    assert hit.threshold is None
    assert hit.reason is not None and hit.reason.startswith(
        "the highest-scored 1 prediction (score >= 1) already misses the target"
    )


def precision_when_applied(tmp_path: Path, gt: Path, pred: Path, target: float) -> None:
    """Write the thresholds for a target precision, apply them, check every class that got one."""
    thresholds = tmp_path / "t.csv"
    code, _, _ = run("eval", str(gt), str(pred), "--target-precision", str(target),
                     "--write-thresholds", str(thresholds))  # fmt: skip
    assert code == EXIT_OK
    text = thresholds.read_text()
    assert text.startswith(f"class,threshold\n# thresholds holding precision >= {target:g}")
    written = [line.split(",")[0] for line in text.splitlines()[1:] if not line.startswith("#")]
    assert written, "no class reached the target"
    code, out, _ = run("eval", str(gt), str(pred), "--score-thresholds", str(thresholds),
                       "--format", "json")  # fmt: skip
    classes = {c["name"]: c for c in json.loads(out)["classes"]}
    for name in written:
        assert classes[name]["precision"] >= target, name


def test_written_thresholds_hold_their_precision_when_applied(tmp_path: Path) -> None:
    gt = read_directory(ROOT / "fixtures/demo/gt")
    big = replace(gt, annotations=tuple(
        replace(a, key=f"{a.key}_{k}", path=a.path.replace(".xml", f"_{k}.xml"))
        for k in range(10) for a in gt.annotations
    ))  # fmt: skip
    write_voc(big, tmp_path / "gt")
    write_voc(detector(big, 3), tmp_path / "pred")
    precision_when_applied(tmp_path, tmp_path / "gt", tmp_path / "pred", 0.9)


@pytest.mark.parametrize("name", ["bccd", "raccoon", "cards"])
def test_on_a_real_set_every_class_given_a_threshold_holds_it(tmp_path: Path, name: str) -> None:
    folder = datasets_or_skip(name)
    gt = read_directory(folder)
    for a in gt.annotations:  # the cards set keeps train/ and test/ folders
        (tmp_path / "pred" / a.key).parent.mkdir(parents=True, exist_ok=True)
    write_voc(detector(gt, len(name)), tmp_path / "pred")
    precision_when_applied(tmp_path, folder, tmp_path / "pred", 0.9)


def test_classes_without_a_threshold_are_listed_with_why(tmp_path: Path) -> None:
    thresholds = tmp_path / "t.csv"
    code, out, _ = run("eval", "fixtures/demo/gt", "fixtures/demo/pred", "--target-precision",
                       "0.8", "--write-thresholds", str(thresholds), columns=200)  # fmt: skip
    assert code == EXIT_OK
    assert "cat: no threshold: no scored prediction" in out
    assert "truck: no threshold: no ground truth" in out
    assert thresholds.read_text() == (
        "class,threshold\n"
        "# thresholds holding precision >= 0.8 at the 95 % lower bound over 1,000 resamples (seed 0)\n"
        "# 'cat': no threshold (no scored prediction); every prediction of it counts\n"
        "# 'truck': no threshold (no ground truth); every prediction of it counts\n"
        "bicycle,0.81\nbus,0.99\ncar,0.77\ndog,0.84\nperson,0.62\n"
    )


def test_reached_gate(tmp_path: Path) -> None:
    args = ("eval", "fixtures/demo/gt", "fixtures/demo/pred", "--target-precision", "0.8")
    code, _, err = run(*args, "--fail-under", "reached=1")
    assert code == EXIT_GATE
    assert "vocmatch: gate failed: reached 0.8333 < 1.0000" in err
    assert run(*args, "--fail-under", "reached=0.8")[0] == EXIT_OK
    assert run(*args, "--fail-under", "person:reached=1")[0] == EXIT_OK
    code, _, err = run(*args, "--fail-under", "cat:reached=1")
    assert code == EXIT_GATE and "no scored prediction" in err
    code, _, err = run(
        "eval", "fixtures/demo/gt", "fixtures/demo/pred", "--fail-under", "reached=1"
    )
    assert code == EXIT_USAGE
    assert "--target-precision" in err and "--target-recall" in err


def test_json_carries_every_class() -> None:
    code, out, _ = run("eval", "fixtures/demo/gt", "fixtures/demo/pred", "--target-recall", "0.7",
                       "--bootstrap", "300", "--seed", "2", "--format", "json")  # fmt: skip
    assert code == EXIT_OK
    data = json.loads(out)["target_thresholds"]
    assert (data["metric"], data["target"], data["resamples"], data["seed"]) == (
        "recall",
        0.7,
        300,
        2,
    )
    person = next(c for c in data["classes"] if c["name"] == "person")
    assert (person["threshold"], person["recall"], person["reason"]) == (0.62, 1.0, None)


def test_one_target_at_a_time() -> None:
    with pytest.raises(RequestError) as raised:
        vocmatch.EvalRequest(gt="g", pred="p", target_precision=0.9, target_recall=0.5)
    assert raised.value.field == "target_recall"
    code, out, err = run("eval", "fixtures/demo/gt", "fixtures/demo/pred",
                         "--target-precision", "0.9", "--target-recall", "0.5")  # fmt: skip
    assert (code, out) == (EXIT_USAGE, "")
    assert "--target-recall" in err


@pytest.mark.parametrize("value", ["0", "1.5", "nan", "-0.1"])
def test_targets_out_of_range_are_refused(value: str) -> None:
    code, _, err = run(
        "eval", "fixtures/demo/gt", "fixtures/demo/pred", "--target-precision", value
    )
    assert code == EXIT_USAGE and "--target-precision" in err
    with pytest.raises(RequestError):
        vocmatch.EvalRequest(gt="g", pred="p", target_precision=float(value))


def test_records_without_ground_truth_cells_are_refused() -> None:
    from vocmatch.core.protocol import protocol
    from vocmatch.evidence.target_thresholds import Target, target_thresholds
    from vocmatch.run.evaluate import EvalRequest
    from vocmatch.run.shard_states import shard_state

    state = shard_state(EvalRequest(gt="fixtures/demo/gt", pred="fixtures/demo/pred"))
    records = replace(state.evaluator.records(), gt_cells=None)
    with pytest.raises(InputError, match="no per-image ground-truth counts"):
        target_thresholds(records, protocol("default"), Target("precision", 0.9))


@pytest.mark.parametrize("target", [["--target-precision", "0.8"], ["--target-recall", "0.6"]])
def test_merged_shards_give_one_runs_thresholds(tmp_path: Path, target: list[str]) -> None:
    gt, pred = "fixtures/demo/gt", "fixtures/demo/pred"
    states = []
    for k in (2, 1):
        state = str(tmp_path / f"s{k}.vms")
        assert run("eval", gt, pred, "--shard", f"{k}/2", "--save-state", state)[0] == EXIT_OK
        states.append(state)
    for output in ("json", "table", "markdown"):
        extras = [*target, "--bootstrap", "100", "--seed", "5", "--format", output]
        assert (
            run("merge", *states, *extras, columns=200)[1]
            == run("eval", gt, pred, *extras, columns=200)[1]
        )

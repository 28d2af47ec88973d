"""States know which shard of which run they hold: a merge checks that the states are every
shard of one run, each once (:func:`vocmatch.read_states`, its ``partial`` keyword), and the
merged report gives the gates and outputs of one run."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import FIXTURES, street_05_unpredicted
from tests.evaluation.test_batch import assert_identical
from vocmatch.errors import StateError
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.shards.shard_origin import ShardCheck, ShardOrigin, check_shards
from vocmatch.evaluation.shards.state import read_state, write_state
from vocmatch.render.outputs import FORMATS, render_text
from vocmatch.run.evaluate import EvalRequest, evaluate, read_states, shard_state
from vocmatch.run.shard_states import run_digest

DEMO = FIXTURES / "demo"
RUN = "0" * 64
OTHER = "f" * 64


def origins(*shards: tuple[int, int], run: str = RUN) -> list[tuple[str, ShardOrigin]]:
    return [(f"{k}.vms", ShardOrigin(k, n, run)) for k, n in shards]


@pytest.mark.parametrize(
    ("states", "message"),
    [
        pytest.param(
            origins((1, 3), (3, 3)),
            "cannot merge: shard 2 of 3 is missing (1.vms is shard 1/3, 3.vms is shard 3/3); "
            "give every shard, or ask for a partial merge (partial)",
            id="one-missing",
        ),
        pytest.param(
            origins((2, 9)),
            "cannot merge: shards 1, 3, 4 and 5 more of 9 are missing (2.vms is shard 2/9); "
            "give every shard, or ask for a partial merge (partial)",
            id="many-missing",
        ),
        pytest.param(
            origins((1, 6), (2, 6), (3, 6)),
            "cannot merge: shards 4, 5 and 6 of 6 are missing (1.vms is shard 1/6, 2.vms is "
            "shard 2/6, 3.vms is shard 3/6); give every shard, or ask for a partial merge "
            "(partial)",
            id="three-missing-three-named",
        ),
        pytest.param(
            origins((1, 9), (2, 9), (3, 9), (4, 9)),
            "cannot merge: shards 5, 6, 7 and 2 more of 9 are missing (1.vms is shard 1/9, "
            "2.vms is shard 2/9, 3.vms is shard 3/9 and 1 more); give every shard, or ask for "
            "a partial merge (partial)",
            id="four-states-three-named",
        ),
        pytest.param(
            [*origins((1, 2), (2, 2)), ("again.vms", ShardOrigin(2, 2, RUN))],
            "cannot merge: shard 2 of 2 is given more than once (2.vms and again.vms)",
            id="repeated",
        ),
        pytest.param(
            [(f"{c}.vms", ShardOrigin(1, 1, RUN)) for c in "abc"],
            "cannot merge: shard 1 of 1 is given more than once (a.vms, b.vms and c.vms)",
            id="repeated-three-named",
        ),
        pytest.param(
            [
                (f"{c}.vms", ShardOrigin(k, 2, RUN))
                for c, k in zip("abcd", (1, 1, 2, 2), strict=True)
            ],
            "cannot merge: shard 1 of 2 is given more than once (a.vms and b.vms)",
            id="two-repeated-first-named",
        ),
        pytest.param(
            [(f"{c}.vms", ShardOrigin(1, 1, RUN)) for c in "abcd"],
            "cannot merge: shard 1 of 1 is given more than once (a.vms, b.vms, c.vms and 1 "
            "more state)",
            id="repeated-four",
        ),
        pytest.param(
            [(f"{c}.vms", ShardOrigin(1, 1, RUN)) for c in "abcde"],
            "cannot merge: shard 1 of 1 is given more than once (a.vms, b.vms, c.vms and 2 "
            "more states)",
            id="repeated-five",
        ),
        pytest.param(
            [("a.vms", ShardOrigin(1, 2, RUN, "model-a")), ("b.vms", ShardOrigin(2, 2, RUN))],
            "cannot merge states of different runs: a.vms is of run 'model-a', b.vms of run "
            "(no run id)",
            id="run-id",
        ),
        pytest.param(
            [("a.vms", ShardOrigin(1, 2, RUN)), ("b.vms", ShardOrigin(2, 2, OTHER))],
            "cannot merge states of different runs: a.vms and b.vms were made from other "
            "ground truth, predictions or options",
            id="other-files",
        ),
        pytest.param(
            origins((1, 2), (2, 3)),
            "cannot merge states of different runs: 1.vms is shard 1/2, 2.vms shard 2/3",
            id="other-split",
        ),
    ],
)
def test_check_shards_refuses_what_is_not_one_whole_run(
    states: list[tuple[str, ShardOrigin | None]], message: str
) -> None:
    with pytest.raises(StateError) as caught:
        check_shards(states)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("states", "partial", "expected", "notes"),
    [
        pytest.param(
            origins((2, 2), (1, 2)),
            False,
            ShardCheck(False, 2, (1, 2), (), (), 1, ()),
            (),
            id="complete",
        ),
        pytest.param(
            origins((2, 2), (1, 2)),
            True,
            ShardCheck(True, 2, (1, 2), (), (), 1, ()),
            (),
            id="complete-partial-asked",
        ),
        pytest.param(
            origins((1, 3), (1, 3)),
            True,
            ShardCheck(True, 3, (1,), (2, 3), (1,), 1, ()),
            (
                "partial merge: shards 2 and 3 of 3 missing; shard 1 of 3 given more than once: "
                "the numbers are not those of the whole run",
            ),
            id="partial",
        ),
        pytest.param(
            [*origins((1, 2)), ("b.vms", ShardOrigin(2, 2, OTHER))],
            True,
            ShardCheck(True, 2, (1, 2), (), (), 2, ()),
            ("partial merge: states of 2 runs merged: the numbers are not those of the whole run",),
            id="partial-two-runs",
        ),
        pytest.param(
            [("a.vms", None), ("b.vms", None)],
            False,
            ShardCheck(False, None, (), (), (), 0, ("a.vms", "b.vms")),
            (
                "completeness of the merge not checked: a.vms and b.vms record no shard of a "
                "run (made from arrays, or saved by an earlier vocmatch)",
            ),
            id="unchecked",
        ),
        pytest.param(
            [*origins((1, 2)), ("x.vms", None)],
            True,
            ShardCheck(True, 2, (1,), (2,), (), 1, ("x.vms",)),
            (
                "partial merge: shard 2 of 2 missing: the numbers are not those of the whole run",
                "completeness of the merge not checked: x.vms records no shard of a run (made "
                "from arrays, or saved by an earlier vocmatch)",
            ),
            id="partial-one-unchecked",
        ),
        pytest.param(
            [(f"{c}.vms", None) for c in "abcd"],
            True,
            ShardCheck(True, None, (), (), (), 0, ("a.vms", "b.vms", "c.vms", "d.vms")),
            (
                "completeness of the merge not checked: a.vms, b.vms, c.vms and 1 more state "
                "record no shard of a run (made from arrays, or saved by an earlier vocmatch)",
            ),
            id="partial-none-checked",
        ),
        pytest.param(
            origins((1, 2), (1, 3)),
            True,
            ShardCheck(True, None, (1,), (), (1,), 2, ()),
            (
                "partial merge: shard 1 given more than once; states of 2 runs merged: the "
                "numbers are not those of the whole run",
            ),
            id="partial-other-splits",
        ),
    ],
)
def test_check_shards_finds_what_the_report_says(
    states: list[tuple[str, ShardOrigin | None]],
    partial: bool,
    expected: ShardCheck,
    notes: tuple[str, ...],
) -> None:
    check = check_shards(states, partial=partial)
    assert check == expected
    assert check.notes() == notes
    assert check.complete == (not notes and not check.unchecked)


def test_the_origin_travels_in_the_state(tmp_path: Path) -> None:
    """A shard's state records its shard, run and run id (format version 4, and 5 with the
    ground-truth cells every state of this vocmatch keeps); read back, the evaluator holds
    them."""
    request = EvalRequest(gt=DEMO / "gt", pred=DEMO / "pred")
    evaluator = shard_state(request, shard=(2, 3), run_id="model-a").evaluator
    data = evaluator.to_bytes()
    assert int.from_bytes(data[8:12], "little") == 5
    header = read_state(data).header["shard"]
    reading = header.pop("reading")
    assert header == {
        "shard": 2, "shards": 3, "run": run_digest(request), "run_id": "model-a",
    }  # fmt: skip
    # What the reading's notes are worded from: the shard's own counts, as read.
    assert reading["gt_classes"] == [["cat", 1], ["dog", 2], ["person", 2]]
    assert Evaluator.from_bytes(data).origin == evaluator.origin
    whole = shard_state(request).evaluator.origin
    assert whole is not None and (whole.shard, whole.shards) == (1, 1)


@pytest.mark.parametrize(
    "shard",
    [
        pytest.param({"shard": 3, "shards": 2, "run": RUN, "run_id": None}, id="k-over-n"),
        pytest.param({"shard": 1, "shards": 2, "run": "x", "run_id": None}, id="run"),
        pytest.param({"shard": 1, "shards": 2, "run": RUN, "run_id": 7}, id="run-id"),
        pytest.param({"shard": True, "shards": 2, "run": RUN, "run_id": None}, id="bool"),
        pytest.param([1, 2], id="not-an-object"),
        pytest.param({"shard": 0, "shards": 2, "run": RUN, "run_id": None}, id="k-0"),
        pytest.param({"shard": 1, "shards": True, "run": RUN, "run_id": None}, id="n-bool"),
        pytest.param({"shard": 1, "shards": 2, "run": "0" * 65, "run_id": None}, id="run-65"),
        pytest.param({"shard": 1, "shards": 2, "run": "A" * 64, "run_id": None}, id="run-upper"),
        pytest.param({"shard": 1, "shards": 2, "run": 7, "run_id": None}, id="run-number"),
    ],
)
def test_a_corrupted_shard_header_is_refused(shard: object, tmp_path: Path) -> None:
    request = EvalRequest(gt=DEMO / "gt", pred=DEMO / "pred")
    raw = read_state(shard_state(request, shard=(1, 2)).evaluator.to_bytes())
    path = tmp_path / "bad.vms"
    path.write_bytes(write_state(dataclasses.replace(raw, header={**raw.header, "shard": shard})))
    with pytest.raises(StateError) as caught:
        Evaluator.load(path)
    assert str(caught.value) == f"{path}: corrupted header (shard)"


def _reading(**changed: object) -> dict[str, object]:
    """A shard header's ``reading`` object of the demo's first shard, with fields changed."""
    request = EvalRequest(gt=DEMO / "gt", pred=DEMO / "pred", class_map="coco-to-voc")
    raw = read_state(shard_state(request, shard=(1, 2)).evaluator.to_bytes())
    return {**raw.header["shard"]["reading"], **changed}


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param({"gt_classes": [["car", -1]]}, id="negative-count"),
        pytest.param({"gt_classes": [["car", 1], ["car", 2]]}, id="name-twice"),
        pytest.param({"gt_classes": [["car", True]]}, id="bool-count"),
        pytest.param({"pred_classes": {"car": 1}}, id="classes-object"),
        pytest.param({"gt_shapes": [1]}, id="shapes-one"),
        pytest.param({"pred_shapes": [1, 2.0]}, id="shapes-float"),
        pytest.param({"fold_case": 1}, id="fold-case-int"),
        pytest.param({"geometry": "polygon"}, id="geometry"),
        pytest.param({"gt_listing": "a note"}, id="listing-text"),
        pytest.param({"pred_listing": [7]}, id="listing-number"),
        pytest.param({"split": ["val.txt", 3]}, id="split-short"),
        pytest.param({"split": ["val.txt", 3, -1]}, id="split-negative"),
        pytest.param({"class_choice": []}, id="choice-list"),
        pytest.param({"class_choice": {"classes": [], "agnostic": 0}}, id="agnostic-int"),
        pytest.param(
            {"class_choice": {"classes": [1], "agnostic": False, "class_map": None}},
            id="classes-number",
        ),
        pytest.param(
            {"class_choice": {"classes": [], "agnostic": False, "class_map": {"source": "m"}}},
            id="map-without-entries",
        ),
        pytest.param(
            {
                "class_choice": {
                    "classes": [],
                    "agnostic": False,
                    "class_map": {"source": "m", "entries": [["a", 3]], "lines": []},
                }
            },
            id="map-entry-number",
        ),
    ],
)
def test_a_corrupted_shard_reading_is_refused(changed: dict[str, object], tmp_path: Path) -> None:
    """What the notes of a shard's reading are worded from is checked field by field: a
    state made otherwise is refused in one line, never worded into a report."""
    request = EvalRequest(gt=DEMO / "gt", pred=DEMO / "pred")
    raw = read_state(shard_state(request, shard=(1, 2)).evaluator.to_bytes())
    shard = {**raw.header["shard"], "reading": _reading(**changed)}
    path = tmp_path / "bad.vms"
    path.write_bytes(write_state(dataclasses.replace(raw, header={**raw.header, "shard": shard})))
    with pytest.raises(StateError) as caught:
        Evaluator.load(path)
    assert str(caught.value) == f"{path}: corrupted header (shard reading)"


def test_a_shard_reading_reads_back_with_its_class_map() -> None:
    request = EvalRequest(gt=DEMO / "gt", pred=DEMO / "pred", class_map="coco-to-voc")
    origin = shard_state(request, shard=(1, 2)).evaluator.origin
    assert origin is not None and origin.reading is not None
    assert origin.reading.class_choice == request.class_selection()
    assert ShardOrigin.of_header(origin.to_header(), "s.vms") == origin


def test_every_shard_of_a_run_has_one_digest_and_another_run_another(tmp_path: Path) -> None:
    """The digest covers the options and the listings of both sides (names and sizes)."""
    data = tmp_path / "data"
    shutil.copytree(DEMO, data)
    request = EvalRequest(gt=data / "gt", pred=data / "pred")
    found = [shard_state(request, shard=(k, 3)).evaluator.origin for k in (1, 2, 3)]
    assert {origin.run for origin in found if origin is not None} == {run_digest(request)}
    assert run_digest(dataclasses.replace(request, jobs=1)) == run_digest(request)
    others = [
        dataclasses.replace(request, iou=0.7),
        dataclasses.replace(request, fold_case=True),
        dataclasses.replace(request, score_threshold=0.5),
        dataclasses.replace(request, geometry="box"),
    ]
    assert len({run_digest(r) for r in [request, *others]}) == 5
    before = run_digest(request)
    (data / "pred" / "street_01.xml").write_text("<annotation/>")
    changed = run_digest(request)
    (data / "pred" / "extra.xml").write_text("<annotation/>")
    added = run_digest(request)
    assert len({before, changed, added}) == 3
    # A file of no prediction format (not read) does not make another run.
    (data / "pred" / "notes.txt").write_text("not a prediction file")
    assert run_digest(request) == added
    # The split's list is part of the run.
    ids = tmp_path / "ids.txt"
    ids.write_text("street_01\nstreet_02\n")
    listed = dataclasses.replace(request, split=str(ids))
    first = run_digest(listed)
    ids.write_text("street_01\n")
    assert len({added, first, run_digest(listed)}) == 3


def save(request: EvalRequest, folder: Path, shards: list[int], n: int, **kw: str) -> list[Path]:
    paths = []
    for k in shards:
        paths.append(folder / f"{k}-{len(paths)}.vms")
        shard_state(request, shard=(k, n), **kw).evaluator.save(paths[-1])
    return paths


def test_read_states_refuses_an_incomplete_set_unless_partial(tmp_path: Path) -> None:
    request = EvalRequest(gt=DEMO / "gt", pred=DEMO / "pred")
    paths = save(request, tmp_path, [1, 3], 3)
    with pytest.raises(StateError, match=r"^cannot merge: shard 2 of 3 is missing"):
        read_states(paths)
    merged = read_states(paths, partial=True)
    assert merged.check == ShardCheck(True, 3, (1, 3), (2,), (), 1, ())
    assert merged.evaluator.keys == ["street_01", "street_03", "street_04", "street_06"]
    assert merged.evaluation.notes[-1] == (
        "partial merge: shard 2 of 3 missing: the numbers are not those of the whole run"
    )
    report = json.loads(render_text(merged.report(), "json"))
    assert report["merge"]["missing"] == [2]


def test_read_states_refuses_two_models_shards_named_alike(tmp_path: Path) -> None:
    """Model A's shard 1 of 2 and model B's 2 of 2, same file names and sizes: told apart by
    their run ids."""
    request = EvalRequest(gt=DEMO / "gt", pred=DEMO / "pred")
    paths = [
        *save(request, tmp_path, [1], 2, run_id="model-a"),
        *save(request, tmp_path, [2], 2, run_id="model-b"),
    ]
    with pytest.raises(StateError, match=r"^cannot merge states of different runs: .* 'model-b'$"):
        read_states(paths)


def test_states_of_arrays_merge_unchecked_with_a_note(tmp_path: Path) -> None:
    """Evaluators fed arrays record no shard: they merge as before, with the note."""
    box = np.array([[0.0, 0, 10, 10]])
    paths = []
    for key in ("a", "b"):
        evaluator = Evaluator("voc12")
        evaluator.add(key, box, ["cat"], box, [0.9], ["cat"])
        paths.append(tmp_path / f"{key}.vms")
        evaluator.save(paths[-1])
        assert "shard" not in read_state(paths[-1].read_bytes()).header
    merged = read_states(paths)
    assert merged.evaluation.summary.map == 1.0
    assert merged.check.unchecked == tuple(str(p) for p in paths)
    assert merged.evaluation.notes[-1].startswith("completeness of the merge not checked: ")


@pytest.mark.parametrize("output_format", [pytest.param(f, id=f) for f in FORMATS])
def test_the_merged_report_renders_as_the_single_run(tmp_path: Path, output_format: str) -> None:
    """MergedStates.report with gates: every text format as evaluate's report renders it."""
    request = EvalRequest(
        gt=DEMO / "gt", pred=DEMO / "pred", gates=("map=0.9", "person:recall=0.5")
    )
    merged = read_states(save(request, tmp_path, [3, 1, 2], 3))
    report = merged.report(request.gates)
    with street_05_unpredicted():
        single = evaluate(request)
    assert_identical(merged.evaluation, single.evaluation)
    assert report.passed is single.passed is False
    assert render_text(report, output_format) == render_text(single, output_format)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param({"shard": 2, "shards": 2, "run": RUN, "run_id": "m"},
                     ShardOrigin(2, 2, RUN, "m"), id="last-of-two-named"),
        pytest.param({"shard": 1, "shards": 1, "run": OTHER}, ShardOrigin(1, 1, OTHER),
                     id="whole-run-no-run-id"),
    ],
)  # fmt: skip
def test_a_shard_header_reads_back(header: object, expected: ShardOrigin) -> None:
    assert ShardOrigin.of_header(header, "s.vms") == expected


def test_a_check_of_no_states_found_no_run() -> None:
    """The defaults: no state, no run, so not complete, and nothing to say."""
    check = ShardCheck()
    assert check == ShardCheck(False, None, (), (), (), 0, ())
    assert (check.runs, check.complete, check.notes()) == (0, False, ())


def test_runs_choosing_other_classes_have_other_digests() -> None:
    """The classes chosen are part of what a run is: each choice, and none, its digest."""
    from vocmatch.evaluation.class_map import ClassChoice

    request = EvalRequest(gt=DEMO / "gt", pred=DEMO / "pred")
    digests = {
        run_digest(dataclasses.replace(request, class_choice=choice))
        for choice in (None, ClassChoice(classes=("person",)), ClassChoice(classes=("car",)))
    }
    assert len(digests) == 3

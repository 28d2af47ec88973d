"""``vocmatch eval --dask`` and :func:`evaluate_on_dask`: workers read shards of the files, the
client merges their states; the report is that of one process, also when a worker is lost
mid-run, and a run that cannot finish says so in one line instead of reporting part of it."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from vocmatch.cli import EXIT_DISTRIBUTED, EXIT_USAGE, main
from vocmatch.core.protocol import protocol
from vocmatch.errors import DistributedError
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.shards.on_dask import dask_client, evaluate_on_dask, split_parts
from vocmatch.readers.scan import read_column_pair
from vocmatch.render.json_report import to_json

distributed = pytest.importorskip(
    "distributed", reason="dask.distributed (the dask extra, part of the test extra) is missing"
)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A cluster of two worker processes of one thread (processes, so that one can die)."""
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


# The tasks' function is looked up by name when a worker unpickles a task, so replacing it
# in the workers' module changes what the next tasks run. These run on the workers.
def _replace_task(make: Callable[[Any], Any], marker: str) -> None:
    import vocmatch.evaluation.shards.parts as module

    original = getattr(module, "_original_part_state", module.part_state)
    module._original_part_state = original  # type: ignore[attr-defined]
    module.part_state = make(original, marker)  # type: ignore[assignment]


def _restore_task() -> None:
    import vocmatch.evaluation.shards.parts as module

    module.part_state = getattr(module, "_original_part_state", module.part_state)


def _killing_once(original: Callable[..., Any], marker: str) -> Callable[..., Any]:
    def task(*args: Any, **kwargs: Any) -> Any:
        try:
            # The first task anywhere to get here creates the marker and ends its worker
            # process as the kernel's OOM killer would: at once, without cleaning up.
            with open(marker, "x"):
                pass
        except FileExistsError:
            return original(*args, **kwargs)
        os._exit(1)

    return task


def _failing(original: Callable[..., Any], marker: str) -> Callable[..., Any]:
    def task(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    return task


def _dropping(original: Callable[..., Any], marker: str) -> Callable[..., Any]:
    def task(part: Any, options: Any) -> Any:
        if part.index != 1:
            return original(part, options)
        # A part that comes back without its images, as a faulty task might send it.
        import dataclasses

        return original(dataclasses.replace(part, gt_files=(), pred_files=()), options)

    return task


@pytest.fixture
def patched(client: Any) -> Iterator[Callable[[Callable[[Any, str], Any], str], None]]:
    """Replace the workers' task for one test (a restarted worker has the original)."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    def replace(make: Callable[[Any, str], Any], marker: str) -> None:
        client.run(_replace_task, make, marker)

    yield replace
    client.run(_restore_task)
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.mark.parametrize("name", ["coco", "voc12", "ultralytics"])
def test_a_local_cluster_reports_as_one_process(demo: tuple[Path, Path], name: str) -> None:
    """`--dask local:2` starts two worker processes, stops them, and prints the same bytes."""
    gt, pred = map(str, demo)
    single = run("eval", gt, pred, "--protocol", name, "--format", "json")
    on_dask = run("eval", gt, pred, "--protocol", name, "--format", "json", "--dask", "local:2")
    assert on_dask == single


def test_a_local_cluster_reports_oce_and_d_ece_as_one_process(demo: tuple[Path, Path]) -> None:
    """`--dask local:2 --calibration-bins 10`: the workers' records keep what OCE and D-ECE
    read (image sizes too), and the report is one process's, byte for byte."""
    gt, pred = map(str, demo)
    args = ["--calibration-bins", "10", "--format", "json"]
    single = run("eval", gt, pred, *args)
    assert json.loads(single[1])["calibration"]["all"]["d_ece"] is not None
    assert run("eval", gt, pred, *args, "--dask", "local:2") == single


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("this route was not to be taken")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--format", "json"], id="json"),
        pytest.param(["--protocol", "coco"], id="table-coco"),
        pytest.param(["--score-threshold", "0.5", "--format", "json"], id="score-threshold"),
        pytest.param(["--fail-under", "map=0.9", "--max-fn", "0"], id="gates"),
        pytest.param(["--format", "csv", "--fold-case"], id="csv"),
        pytest.param(["--bootstrap", "20", "--seed", "4", "--format", "json"], id="bootstrap"),
        pytest.param(
            ["--protocol", "coco", "--bootstrap", "20", "--format", "json"], id="bootstrap-coco"
        ),
        pytest.param(["--calibration-bins", "5", "--format", "json"], id="calibration"),
        pytest.param(["--calibration-bins", "10"], id="calibration-oce-d-ece-table"),
        pytest.param(
            ["--calibration-bins", "10", "--protocol", "voc07", "--score-threshold", "0.5"],
            id="calibration-voc07-thresholds",
        ),
        pytest.param(["--count", "--bootstrap", "20", "--format", "json"], id="count"),
        pytest.param(["--slice", "size", "--slice", "street_0[12]"], id="slices"),
        pytest.param(
            ["--protocol", "coco", "--slice", "size", "--format", "json"], id="slices-coco"
        ),
        pytest.param(["--slice", "size", "--fail-under", "size=small:map=0.9"], id="slice-gate"),
    ],
)
def test_a_report_without_boxes_travels_as_match_records(
    client: Any, demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """No option draws or re-reads boxes: the workers send match records, and the report,
    warnings and exit code are one process's; the bootstrap and the calibration read the
    merged records."""
    gt, pred = map(str, demo)
    single = run("eval", gt, pred, *args)
    assert single[0] in (0, 1) and single[1]
    assert run("eval", gt, pred, *args, "--dask", client.scheduler.address) == single


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--errors", "--format", "json"], id="errors"),
        pytest.param(["--format", "junit", "--max-fp", "0", "--max-fn", "0"], id="junit"),
        pytest.param(["--html", "HTML", "--format", "junit", "--errors"], id="html-junit-errors"),
        pytest.param(["--tightness", "--errors", "--protocol", "coco"], id="tightness-coco"),
        pytest.param(["--html", "HTML", "--protocol", "voc07", "--fold-case"], id="html-voc07"),
        # D-ECE reads each image's <size>, which the states' boxes carry too.
        pytest.param(
            ["--errors", "--calibration-bins", "10", "--format", "json"], id="errors-calibration"
        ),
    ],
)
def test_a_report_of_boxes_travels_in_the_states(
    client: Any, demo: tuple[Path, Path], tmp_path: Path, args: list[str]
) -> None:
    """An output that lists, draws or re-reads boxes: the workers' states carry each image's
    per-box records and boxes, and the report (and the HTML file) is one process's, byte
    for byte."""
    gt, pred = map(str, demo)
    single = run("eval", gt, pred, *(str(tmp_path / "a.html") if a == "HTML" else a for a in args))
    assert single[0] in (0, 1) and single[1]
    on_dask = run(
        "eval", gt, pred, *(str(tmp_path / "b.html") if a == "HTML" else a for a in args),
        "--dask", client.scheduler.address,
    )  # fmt: skip
    assert on_dask == single
    if "HTML" in args:
        assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()


def test_html_on_pictures_from_a_cluster_is_one_process_s(
    client: Any, demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """--images draws the boxes the workers kept on the pictures found by <filename> or
    key, as one process does."""
    from PIL import Image

    pictures = tmp_path / "pictures"
    pictures.mkdir()
    for key in ("street_01", "street_03"):
        Image.new("RGB", (80, 60), (10, 120, 10)).save(pictures / f"{key}.png")
    gt, pred = map(str, demo)
    single = run("eval", gt, pred, "--html", str(tmp_path / "a.html"), "--images", str(pictures))
    on_dask = run(
        "eval", gt, pred, "--html", str(tmp_path / "b.html"), "--images", str(pictures),
        "--dask", client.scheduler.address,
    )  # fmt: skip
    assert on_dask == single
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()


def test_a_shard_saved_from_a_cluster_merges_as_one_process_s(
    client: Any, demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """--dask with --shard and --save-state: the shard's files are read on the cluster, its
    state (boxes kept) merges with shards saved here into the report of one run."""
    gt, pred = map(str, demo)
    states = [str(tmp_path / f"s{k}.vms") for k in (1, 2, 3)]
    for k, state in enumerate(states, 1):
        where = ["--dask", client.scheduler.address] if k != 2 else []
        code, out, err = run(
            "eval", gt, pred, "--shard", f"{k}/3", "--save-state", state, "--keep-boxes", *where
        )
        assert (code, out) == (0, ""), err
    args = ["--format", "junit", "--max-fp", "0", "--html", "HTML"]
    single = run("eval", gt, pred, *(str(tmp_path / "a.html") if a == "HTML" else a for a in args))
    merged = run("merge", *states, *(str(tmp_path / "b.html") if a == "HTML" else a for a in args))
    assert merged == single
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()


@pytest.mark.parametrize("output_format", ["table", "json", "markdown", "csv"])
@pytest.mark.parametrize("name", ["default", "coco", "voc07"])
def test_slices_on_a_cluster_are_matched_by_the_workers(
    client: Any, name: str, output_format: str
) -> None:
    """Every kind of slice, on images whose poses differ from part to part: the workers
    match the slices and send match records, and the report is one process's, byte for
    byte."""
    slices = ROOT / "fixtures" / "slices"
    args = [
        str(slices / "gt"), str(slices / "pred"), "--protocol", name, "--format",
        output_format, "--slice", "size", "--slice", "pose", "--slice", "occluded",
        "--slice", "truncated", "--slice", "night_*",
    ]  # fmt: skip
    single = run("eval", *args)
    assert single[0] == 0 and single[1]
    assert run("eval", *args, "--dask", client.scheduler.address) == single


def test_size_and_file_slices_with_a_report_of_boxes(client: Any) -> None:
    """A report that lists boxes: the workers keep their boxes in their states, and slices
    by size, by file and by difficult are one process's."""
    slices = ROOT / "fixtures" / "slices"
    args = [
        str(slices / "gt"), str(slices / "pred"), "--errors", "--format", "json", "--slice",
        "size", "--slice", "difficult", "--slice", "night*",
    ]  # fmt: skip
    single = run("eval", *args)
    assert single[0] == 0 and single[1]
    assert run("eval", *args, "--dask", client.scheduler.address) == single


@pytest.mark.parametrize("attribute", ["pose", "truncated", "occluded"])
def test_attribute_slices_with_a_report_of_boxes(client: Any, attribute: str) -> None:
    """The workers match a truncated, occluded or pose slice from the files they read, also
    when the report lists boxes: one process's report, byte for byte."""
    slices = ROOT / "fixtures" / "slices"
    args = [str(slices / "gt"), str(slices / "pred"), "--slice", attribute, "--errors"]
    single = run("eval", *args)
    assert single[0] == 0 and single[1]
    assert run("eval", *args, "--dask", client.scheduler.address) == single


@pytest.mark.parametrize("attribute", ["pose", "truncated", "occluded"])
def test_attribute_slices_of_a_shard_saved_on_a_cluster(
    client: Any, tmp_path: Path, attribute: str
) -> None:
    """A shard saved from a cluster keeps the slices its workers matched: merged with a
    shard saved here, the report is one run's."""
    slices = ROOT / "fixtures" / "slices"
    inputs = [str(slices / "gt"), str(slices / "pred"), "--slice", attribute]
    states = [str(tmp_path / "s1.vms"), str(tmp_path / "s2.vms")]
    where = ["--dask", client.scheduler.address]
    assert run("eval", *inputs, "--shard", "1/2", "--save-state", states[0], *where)[0] == 0
    assert run("eval", *inputs, "--shard", "2/2", "--save-state", states[1])[0] == 0
    single = run("eval", *inputs, "--format", "json")
    assert run("merge", *states, "--format", "json")[1] == single[1]


#: Options that change the classes or the boxes evaluated, each with a report that shows
#: the change (the client applies them to the columns, as one process does after reading).
CHOSEN = [
    pytest.param(["--classes", "car,dog"], id="classes"),
    pytest.param(["--class-map", "coco-to-voc"], id="class-map-builtin"),
    pytest.param(["--class-map", "MAP", "--classes", "car"], id="class-map-file"),
    pytest.param(["--agnostic"], id="agnostic"),
]


def _chosen_args(args: list[str], tmp_path: Path) -> list[str]:
    """``args`` with ``MAP`` replaced by a class map that renames truck to car."""
    mapping = tmp_path / "map.csv"
    mapping.write_text("truck,car\n")
    return [str(mapping) if arg == "MAP" else arg for arg in args]


@pytest.mark.parametrize("args", CHOSEN)
def test_classes_chosen_on_a_cluster_are_one_process_s(
    client: Any, demo: tuple[Path, Path], tmp_path: Path, args: list[str]
) -> None:
    """--classes, --class-map and --agnostic apply on a cluster as in one
    process (they were once left out there: every class was reported)."""
    gt, pred = map(str, demo)
    args = [*_chosen_args(args, tmp_path), "--format", "json"]
    single = run("eval", gt, pred, *args)
    assert single[0] == 0 and single[1] != run("eval", gt, pred, "--format", "json")[1]
    assert run("eval", gt, pred, *args, "--dask", client.scheduler.address) == single


def test_shapes_scored_as_boxes_on_a_cluster_are_one_process_s(client: Any) -> None:
    """--geometry box: the workers score polygons and rotated boxes as boxes, and the note
    of how many changed counts every part's, as one process words it."""
    shapes = ROOT / "fixtures" / "shapes"
    args = [str(shapes / "gt"), str(shapes / "pred"), "--geometry", "box", "--format", "json"]
    single = run("eval", *args)
    assert single[0] == 0 and "geometry" in single[1]
    assert run("eval", *args, "--dask", client.scheduler.address) == single


def test_unreadable_files_read_on_a_cluster_are_reported_as_in_one_process(
    client: Any, demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """Broken files on both sides, through match records: the same warnings and exit 3."""
    data = tmp_path / "data"
    for side, folder in zip(("gt", "pred"), demo, strict=True):
        (data / side).mkdir(parents=True)
        for path in folder.iterdir():
            (data / side / path.name).write_bytes(path.read_bytes())
    (data / "gt" / "street_02.xml").write_text("garbage")
    (data / "pred" / "street_04.xml").write_text("<annotation>")
    args = [str(data / "gt"), str(data / "pred"), "--format", "json"]
    single = run("eval", *args)
    assert single[0] == 3 and single[1]
    assert run("eval", *args, "--dask", client.scheduler.address) == single


@pytest.mark.parametrize("output_format", ["json", "table"])
def test_orphan_prediction_files_on_a_cluster_are_reported_as_in_one_process(
    client: Any, demo: tuple[Path, Path], tmp_path: Path, output_format: str
) -> None:
    """A prediction file of no ground-truth image and a damaged one: the same report, the
    same warnings and exit 3."""
    data = tmp_path / "data"
    shutil.copytree(demo[0].parent, data)
    shutil.copy(data / "pred" / "street_01.xml", data / "pred" / "extra.xml")
    (data / "pred" / "broken.xml").write_text("garbage")
    args = [str(data / "gt"), str(data / "pred"), "--format", output_format]
    single = run("eval", *args)
    orphan = f"vocmatch: warning: {data}/pred/extra.xml has no ground-truth file: not evaluated\n"
    assert (single[0], single[2].endswith(orphan)) == (3, True)
    assert run("eval", *args, "--dask", client.scheduler.address) == single


@pytest.mark.parametrize("taken", ["STREET_01.xml", "street_01.XML"], ids=["upper", "suffix"])
def test_a_prediction_whose_key_the_listing_skipped_is_no_orphan_on_a_cluster(
    client: Any, demo: tuple[Path, Path], tmp_path: Path, taken: str
) -> None:
    """A ground-truth file whose name differs from another's only in case is skipped when
    listed; the prediction of that key is then neither evaluated nor an orphan, as in one
    process."""
    data = tmp_path / "data"
    shutil.copytree(demo[0].parent, data)
    shutil.copy(data / "gt" / "street_01.xml", data / "gt" / taken)
    args = [str(data / "gt"), str(data / "pred"), "--format", "json"]
    single = run("eval", *args)
    assert single[0] == 3 and '"orphan_pred": []' in single[1]
    assert run("eval", *args, "--dask", client.scheduler.address) == single


def test_a_busy_dashboard_port_costs_a_local_cluster_nothing(demo: tuple[Path, Path]) -> None:
    """Another cluster on 8787 (the scheduler's default HTTP port): `local:N` serves its
    HTTP on a port of its own on loopback, with no warning (warnings are errors here)."""
    import socket

    with socket.socket() as taken:
        try:
            taken.bind(("0.0.0.0", 8787))
            taken.listen()
        except OSError:
            pass  # already busy: the case itself
        gt, pred = map(str, demo)
        on_dask = run("eval", gt, pred, "--format", "json", "--dask", "local:1")
    assert on_dask == run("eval", gt, pred, "--format", "json")


@pytest.mark.parametrize("parts", [1, 2, 3, 7, 50])
def test_any_number_of_parts_gives_the_single_evaluation(
    client: Any, demo: tuple[Path, Path], parts: int
) -> None:
    gt_columns, pred_columns = read_column_pair(*demo)
    single = evaluate_columns(gt_columns, pred_columns, protocol("coco"), keep_matches=False)
    evaluation = evaluate_on_dask(*demo, "coco", client=client, parts=parts)
    assert to_json(evaluation) == to_json(single)


def test_a_prepared_evaluation_on_dask_is_the_single_one(
    client: Any, demo: tuple[Path, Path]
) -> None:
    """The tasks prepare their images' predictions: the one run's numbers and counts."""
    from vocmatch.core.preparation import Preparation

    preparation = Preparation(min_score=0.5, nms=0.3, max_per_image=2)
    gt_columns, pred_columns = read_column_pair(*demo)
    single = evaluate_columns(gt_columns, pred_columns, protocol("coco"), keep_matches=False,
                              preparation=preparation)  # fmt: skip
    evaluation = evaluate_on_dask(*demo, "coco", client=client, parts=3, preparation=preparation)
    assert to_json(evaluation) == to_json(single)
    assert evaluation.removed == single.removed
    assert single.removed is not None and sum(single.removed.by_step().values()) == 8


def test_parts_take_every_key_once_in_key_order() -> None:
    gt = [("a", "g/a"), ("b", "g/b"), ("c", "g/c"), ("e", "g/e")]
    pred = [("a", "p/a"), ("d", "p/d"), ("e", "p/e")]
    parts = split_parts(gt, pred, 2)
    assert [(p.gt_files, p.pred_files) for p in parts] == [
        ((("a", "g/a"), ("c", "g/c"), ("e", "g/e")), (("a", "p/a"), ("e", "p/e"))),
        ((("b", "g/b"),), (("d", "p/d"),)),
    ]


def test_a_lost_worker_s_part_is_run_again(
    client: Any, patched: Any, demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """A task ends its worker process once: Dask runs it again elsewhere; the report is
    whole and the same as one process's."""
    marker = tmp_path / "killed"
    patched(_killing_once, str(marker))
    gt, pred = map(str, demo)
    address = client.scheduler.address
    code, out, err = run("eval", gt, pred, "--format", "json", "--dask", address)
    assert marker.exists()
    assert (code, out, err) == run("eval", gt, pred, "--format", "json")


def test_a_task_failing_every_time_fails_the_run_in_one_line(
    client: Any, patched: Any, demo: tuple[Path, Path], tmp_path: Path
) -> None:
    patched(_failing, str(tmp_path / "unused"))
    gt, pred = map(str, demo)
    code, out, err = run("eval", gt, pred, "--dask", client.scheduler.address)
    assert (code, out) == (EXIT_DISTRIBUTED, "")
    assert err.count("\n") == 1
    assert err.startswith("vocmatch: error: part ")
    assert err.endswith(
        " failed on every try (3; a lost worker's tasks are retried by Dask): "
        "RuntimeError: disk on fire\n"
    )


def test_a_part_back_without_its_images_is_never_reported(
    client: Any, patched: Any, demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """The client checks the merged images against the listing before any report."""
    patched(_dropping, str(tmp_path / "unused"))
    gt, pred = map(str, demo)
    code, out, err = run("eval", gt, pred, "--dask", client.scheduler.address)
    assert (code, out) == (EXIT_DISTRIBUTED, "")
    # How many parts (so images) part 1 held depends on the workers up at the start.
    assert re.fullmatch(
        r"vocmatch: error: the merged states hold ([1-5]) images, not the 6 listed "
        r"\(([1-5]) missing, 0 not listed\); nothing reported\n",
        err,
    )


def test_without_dask_the_option_says_what_to_install(
    demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, out, err = run("eval", *map(str, demo), "--dask", "local:2")
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        "vocmatch: error: --dask needs dask.distributed (the dask extra):"
        " pip install 'dask[distributed]'\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--split", "val"], "--split is not available with --dask", id="split"),
    ],
)
def test_options_a_cluster_run_cannot_honour_are_refused(
    demo: tuple[Path, Path], args: list[str], message: str
) -> None:
    code, out, err = run("eval", *map(str, demo), "--dask", "local:2", *args)
    assert (code, out) == (EXIT_USAGE, "")
    assert message in err


@pytest.mark.parametrize(
    "scheduler", ["local:0", "local", "nowhere", ""], ids=["zero", "no-count", "no-port", "empty"]
)
def test_a_scheduler_that_is_no_address_is_a_usage_error(
    demo: tuple[Path, Path], scheduler: str
) -> None:
    code, out, err = run("eval", *map(str, demo), "--dask", scheduler)
    assert (code, out) == (EXIT_USAGE, "")
    assert f"{scheduler!r} is neither local:N (N >= 1) nor a scheduler address" in err


def closed_port() -> int:
    """A loopback port nothing listens on (bound by the system, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_an_unreachable_scheduler_fails_within_the_connect_timeout() -> None:
    """The library's connect timeout bounds the wait: DistributedError after about a second."""
    address = f"tcp://127.0.0.1:{closed_port()}"
    start = time.monotonic()
    with pytest.raises(DistributedError) as caught, dask_client(address, connect_timeout=1.0):
        pass
    assert time.monotonic() - start < 10
    assert str(caught.value) == (
        f"cannot reach the Dask scheduler {address}: "
        f"Timed out trying to connect to {address} after 1 s"
    )


@pytest.mark.parametrize(
    "form", [pytest.param("tcp://", id="url"), pytest.param("", id="host-port")]
)
def test_an_unreachable_scheduler_is_one_line_and_exit_5(
    demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """`--dask ADDRESS` where nothing listens: one line on stderr, no report, exit 5."""
    import vocmatch.evaluation.shards.on_dask as module

    monkeypatch.setattr(module, "DEFAULT_CONNECT_TIMEOUT", 1.0)
    port = closed_port()
    start = time.monotonic()
    code, out, err = run("eval", *map(str, demo), "--dask", f"{form}127.0.0.1:{port}")
    assert time.monotonic() - start < 10
    assert (code, out) == (EXIT_DISTRIBUTED, "")
    assert err == (
        f"vocmatch: error: cannot reach the Dask scheduler {form}127.0.0.1:{port}: "
        f"Timed out trying to connect to tcp://127.0.0.1:{port} after 1 s\n"
    )


def test_nothing_paired_is_refused_as_in_one_process(
    client: Any, demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """A prediction folder of other images: the same line and exit 2 as without --dask."""
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "other.xml").write_bytes((demo[1] / "street_01.xml").read_bytes())
    single = run("eval", str(demo[0]), str(pred))
    assert single[0] == EXIT_USAGE
    assert run("eval", str(demo[0]), str(pred), "--dask", client.scheduler.address) == single


def test_a_plain_run_never_imports_dask_nor_fsspec(demo: tuple[Path, Path]) -> None:
    script = (
        "import sys\n"
        "from vocmatch.cli import main\n"
        f"main(['eval', {str(demo[0])!r}, {str(demo[1])!r}, '--format', 'json', '-q'],"
        " standalone_mode=False)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('dask', 'distributed', 'fsspec', 's3fs')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.splitlines()[-1] == "[]"


@pytest.fixture
def silent_scheduler() -> Iterator[str]:
    """A loopback address that accepts connections and never answers (a scheduler hung, or
    something else on its port): each connection is held open until the test ends."""
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.1)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():  # bounded by the test: the fixture sets done
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        done.set()
        thread.join(5)
        for connection in held:
            connection.close()
        server.close()


def test_a_scheduler_that_never_answers_fails_within_the_connect_timeout(
    silent_scheduler: str,
) -> None:
    """The connection is accepted and the handshake never comes: DistributedError after
    about the timeout (Dask's client alone would wait for ever)."""
    address = f"tcp://{silent_scheduler}"
    start = time.monotonic()
    with pytest.raises(DistributedError) as caught, dask_client(address, connect_timeout=1.0):
        pass
    assert time.monotonic() - start < 10
    assert str(caught.value) == f"cannot reach the Dask scheduler {address}: no answer within 1 s"


@pytest.mark.parametrize(
    "form", [pytest.param("tcp://", id="url"), pytest.param("", id="host-port")]
)
def test_a_scheduler_that_never_answers_is_one_line_and_exit_5(
    demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, silent_scheduler: str, form: str
) -> None:
    """`--dask ADDRESS` of a silent server: one line naming the address, exit 5, within the
    connect timeout (the run's setting, made short here)."""
    import vocmatch.evaluation.shards.on_dask as module

    monkeypatch.setattr(module, "DEFAULT_CONNECT_TIMEOUT", 1.0)
    start = time.monotonic()
    code, out, err = run("eval", *map(str, demo), "--dask", f"{form}{silent_scheduler}")
    assert time.monotonic() - start < 10
    assert (code, out) == (EXIT_DISTRIBUTED, "")
    assert err == (
        f"vocmatch: error: cannot reach the Dask scheduler {form}{silent_scheduler}: "
        "no answer within 1 s\n"
    )


def test_the_connect_timeout_is_30_s_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented default: a scheduler's address is given 30 s to answer."""
    import vocmatch.evaluation.shards.on_dask as module

    waits: list[float] = []

    def record(scheduler: str, wait: float) -> Any:
        waits.append(wait)
        raise DistributedError("not connected")

    monkeypatch.setattr(module, "_connected_client", record)
    for timeout in (None, 2.5):
        with (
            pytest.raises(DistributedError),
            dask_client("tcp://127.0.0.1:1", connect_timeout=timeout),
        ):
            pass
    assert module.DEFAULT_CONNECT_TIMEOUT == 30.0
    assert waits == [30.0, 2.5]


_KILLED_RUN = """
import sys
from vocmatch.cli import main
main(["eval", sys.argv[1], sys.argv[2], "--format", "json", "-q", "--dask", sys.argv[3]])
"""


def test_a_scheduler_killed_mid_run_is_one_line_naming_it_and_exit_5(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """A scheduler (without workers, so that the run waits on it) killed while the run's
    tasks are on it: exit 5 and vocmatch's one line naming the scheduler lost, without
    Dask's log lines nor tracebacks."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    scheduler_file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", "0", "--dashboard-address", "127.0.0.1:0",
         "--scheduler-file", str(scheduler_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        for _ in range(300):  # up to 30 s for the scheduler to start
            if scheduler_file.exists() and scheduler_file.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        evaluation = subprocess.Popen(
            [sys.executable, "-c", _KILLED_RUN, *map(str, demo), address],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        try:
            with distributed.Client(address, timeout=10) as watcher:
                for _ in range(300):  # until the run's tasks are on the scheduler
                    if watcher.run_on_scheduler(_task_count):
                        break
                    time.sleep(0.1)
                else:
                    pytest.fail("the run's tasks never reached the scheduler")
            scheduler.kill()
            out, err = evaluation.communicate(timeout=60)
        finally:
            evaluation.kill()
    finally:
        scheduler.kill()
        scheduler.wait(10)
    assert (evaluation.returncode, out) == (EXIT_DISTRIBUTED, "")
    assert re.fullmatch(
        f"vocmatch: error: lost the Dask scheduler {re.escape(address)} with 0 of [0-9]+ "
        r"parts done; nothing reported\n",
        err,
    ), err


def _task_count(dask_scheduler: Any) -> int:
    return len(dask_scheduler.tasks)


def test_a_closed_client_is_a_distributed_error(demo: tuple[Path, Path]) -> None:
    """The library's door: a client closed before the run gives DistributedError, not one
    of Dask's exceptions."""
    with distributed.LocalCluster(
        n_workers=1, processes=False, threads_per_worker=1, dashboard_address="127.0.0.1:0"
    ) as cluster:
        closed = distributed.Client(cluster)
        closed.close()
        with pytest.raises(DistributedError) as caught:
            evaluate_on_dask(*demo, client=closed)
    assert str(caught.value) == "the Dask client is closed, not running; nothing reported"


@pytest.mark.parametrize(
    "scheduler",
    [
        pytest.param("local:0", id="zero"),
        pytest.param("local:", id="empty"),
        pytest.param("local:+2", id="sign"),
        pytest.param("local:\u0662", id="arabic-indic"),
        pytest.param("local:" + "9" * 5000, id="5000-digits"),
    ],
)
def test_a_local_scheduler_that_is_not_local_n_is_a_request_error(scheduler: str) -> None:
    """The library's door: ``local:`` and something other than a count is refused before
    any cluster starts (int() took other scripts' digits, and raised ValueError past 4,300
    digits)."""
    from vocmatch.errors import RequestError

    with pytest.raises(RequestError, match="is not local:N") as caught, dask_client(scheduler):
        pass
    assert caught.value.field == "scheduler"
    assert len(str(caught.value)) < 200


def test_dask_s_logging_is_set_back_after_a_run(client: Any, demo: tuple[Path, Path]) -> None:
    """The run silences Dask's log lines while it lasts, and only then."""
    import logging

    names = ("distributed", "distributed.client", "dask", "tornado", "asyncio")
    loggers = [logging.getLogger(name) for name in names]
    before = [(x.level, [h.level for h in x.handlers]) for x in loggers]
    assert run("eval", *map(str, demo), "-q", "--dask", client.scheduler.address)[0] == 0
    assert [(x.level, [h.level for h in x.handlers]) for x in loggers] == before


def test_a_local_cluster_that_cannot_start_is_a_distributed_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The library's door: Dask's or the system's exception while a local cluster starts
    (no process, no port) becomes DistributedError in one line."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError("[Errno 24] Too many open files")

    import vocmatch.evaluation.shards.on_dask as module

    monkeypatch.setattr(module, "available_cores", lambda: 4)
    monkeypatch.setattr(distributed, "LocalCluster", refuse)
    with pytest.raises(DistributedError) as caught, dask_client("local:3"):
        pass
    assert str(caught.value) == (
        "cannot start a local Dask cluster of 3 workers: OSError: [Errno 24] Too many open files"
    )


def test_the_package_names_the_cluster_s_error() -> None:
    """`vocmatch.DistributedError` is the one type a Dask run fails with."""
    import vocmatch

    assert vocmatch.DistributedError is DistributedError
    assert issubclass(DistributedError, vocmatch.VocmatchError)


@pytest.mark.parametrize("timeout", [0.0, -1.0, float("nan"), float("inf")])
def test_a_connect_timeout_that_is_no_duration_is_a_request_error(timeout: float) -> None:
    """The library's door: a wait of no time, or for ever, is refused before connecting."""
    from vocmatch.errors import RequestError

    with (
        pytest.raises(RequestError, match="is not a number of seconds above 0") as caught,
        dask_client("tcp://127.0.0.1:1", connect_timeout=timeout),
    ):
        pass
    assert caught.value.field == "connect_timeout"


@pytest.mark.parametrize(
    ("asked", "cores", "started"),
    [
        pytest.param(100_000, 2, 2, id="capped-at-the-cores"),
        pytest.param(1, 2, 1, id="fewer-than-the-cores"),
        pytest.param(3, 3, 3, id="as-many-as-the-cores"),
    ],
)
def test_a_local_cluster_has_at_most_one_worker_a_core(
    monkeypatch: pytest.MonkeyPatch, asked: int, cores: int, started: int
) -> None:
    """local:N starts N workers but never more than the cores this process may use, as
    --jobs: local:100000 would otherwise start a hundred thousand processes."""
    import vocmatch.evaluation.shards.on_dask as module

    asked_for: list[int] = []

    def refuse(*args: Any, n_workers: int, **kwargs: Any) -> Any:
        asked_for.append(n_workers)
        raise OSError("not started in this test")

    monkeypatch.setattr(module, "available_cores", lambda: cores)
    monkeypatch.setattr(distributed, "LocalCluster", refuse)
    with pytest.raises(DistributedError) as caught, dask_client(f"local:{asked}"):
        pass
    assert asked_for == [started]
    workers = "1 worker" if started == 1 else f"{started} workers"
    assert str(caught.value).startswith(f"cannot start a local Dask cluster of {workers}:")


@pytest.mark.parametrize("name", ["default", "coco"])
def test_rotated_boxes_and_polygons_on_a_cluster(client: Any, name: str) -> None:
    """The workers match rotated boxes and polygons by their regions: one process's report."""
    shapes = ROOT / "fixtures" / "shapes"
    args = [str(shapes / "gt"), str(shapes / "pred"), "--protocol", name, "--format", "json"]
    single = run("eval", *args)
    assert single[0] == 0 and single[1]
    assert run("eval", *args, "--dask", client.scheduler.address) == single

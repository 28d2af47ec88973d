"""``vocmatch eval --dask`` and :func:`evaluate_on_dask`: workers read shards of the files, the
client merges their states; the report is that of one process, also when a worker is lost
mid-run, and a run that cannot finish says so in one line instead of reporting part of it."""

from __future__ import annotations

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
from vocmatch.evaluation.distributed import dask_client, evaluate_on_dask, split_parts
from vocmatch.evaluation.engine import evaluate_columns
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
    import vocmatch.evaluation.distributed as module

    original = getattr(module, "_original_part_state", module.part_state)
    module._original_part_state = original  # type: ignore[attr-defined]
    module.part_state = make(original, marker)  # type: ignore[assignment]


def _restore_task() -> None:
    import vocmatch.evaluation.distributed as module

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


@pytest.mark.parametrize("name", ["coco", "voc12"])
def test_a_local_cluster_reports_as_one_process(demo: tuple[Path, Path], name: str) -> None:
    """`--dask local:2` starts two worker processes, stops them, and prints the same bytes."""
    gt, pred = map(str, demo)
    single = run("eval", gt, pred, "--protocol", name, "--format", "json")
    on_dask = run("eval", gt, pred, "--protocol", name, "--format", "json", "--dask", "local:2")
    assert on_dask == single


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
    ],
)
def test_a_report_without_boxes_travels_as_match_records(
    client: Any, demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """No option draws or re-reads boxes: the workers send match records (the columns route
    is never taken), and the report, warnings and exit code are one process's."""
    import vocmatch.evaluation.distributed as module

    gt, pred = map(str, demo)
    single = run("eval", gt, pred, *args)
    assert single[0] in (0, 1) and single[1]
    monkeypatch.setattr(module, "columns_on_dask", _never)
    assert run("eval", gt, pred, *args, "--dask", client.scheduler.address) == single


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--errors", "--format", "json"], id="errors"),
        pytest.param(["--format", "junit"], id="junit"),
        pytest.param(["--bootstrap", "20", "--format", "json"], id="bootstrap"),
        pytest.param(["--calibration-bins", "5", "--format", "json"], id="calibration"),
    ],
)
def test_a_report_that_needs_boxes_gets_the_columns(
    client: Any, demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """An output that draws or re-reads boxes: the workers send their columns, and the report
    is one process's."""
    import vocmatch.evaluation.distributed as module

    gt, pred = map(str, demo)
    single = run("eval", gt, pred, *args)
    assert single[0] == 0 and single[1]
    monkeypatch.setattr(module, "records_on_dask", _never)
    assert run("eval", gt, pred, *args, "--dask", client.scheduler.address) == single


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
        pytest.param(["--slice", "pose"], "--slice is not available with --dask", id="slice"),
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
    import vocmatch.evaluation.distributed as module

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

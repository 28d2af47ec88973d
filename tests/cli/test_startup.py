"""`vocmatch --version` starts without the heavy libraries (nor rich-click), `--help` without
the numerical ones, and the defaults the command line shows in its help stay equal to the
library's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import vocmatch
import vocmatch.cli.options as cli
from tests.conftest import ROOT, run_cli

HEAVY = ("numpy", "lxml", "rich", "rich_click", "shapely", "PIL", "jinja2")
#: What drawing the help may load: rich-click and rich, nothing that computes.
HELP_MAY_LOAD = {"rich", "rich_click"}

# Runs the command line in a fresh interpreter and prints which heavy modules were loaded.
PROBE = """
import json, sys
from vocmatch.__main__ import main
sys.argv = ["vocmatch", *{args!r}]
try:
    main()
except SystemExit as exit_:
    code = exit_.code
sys.stdout.flush()
loaded = [m for m in {heavy!r} if m in sys.modules]
sys.stderr.write("\\nLOADED " + json.dumps({{"code": code, "loaded": loaded}}) + "\\n")
"""


def loaded_by(args: list[str]) -> tuple[int, list[str], str]:
    return loaded_by_names(args, HEAVY)


def loaded_by_names(args: list[str], names: tuple[str, ...]) -> tuple[int, list[str], str]:
    """Run the command line in a fresh interpreter: its exit code, which of ``names`` it
    loaded, and its stdout."""
    process = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args, heavy=names)],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in process.stderr.splitlines() if x.startswith("LOADED "))
    result = json.loads(line.removeprefix("LOADED "))
    return result["code"], result["loaded"], process.stdout


def test_version_imports_no_heavy_library() -> None:
    """--version answers without importing numpy, lxml, rich, rich-click or the others."""
    code, loaded, stdout = loaded_by(["--version"])
    assert code == 0
    assert loaded == []
    assert stdout.strip()


def test_version_is_answered_before_click() -> None:
    """--version alone is answered without importing click, with the very line click's
    version option prints."""
    code, loaded, stdout = loaded_by_names(["--version"], ("click", *HEAVY))
    assert code == 0
    assert loaded == []
    assert stdout == run_cli("--version")[1]


@pytest.mark.parametrize(
    ("given", "expected"),
    [pytest.param(None, "1", id="unset"), pytest.param("2", "2", id="set-by-the-user")],
)
def test_openblas_starts_one_thread_unless_told(given: str | None, expected: str) -> None:
    """The command line asks numpy's OpenBLAS for one thread (it runs its own workers),
    and keeps a value the user set."""
    probe = PROBE.replace(
        "loaded = [m for m in {heavy!r} if m in sys.modules]",
        'import os; loaded = [os.environ.get("OPENBLAS_NUM_THREADS")]',
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    process = subprocess.run(
        [sys.executable, "-c", probe.format(args=["iou", "0,0,10,10", "5,5,15,15"])],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    line = next(x for x in process.stderr.splitlines() if x.startswith("LOADED "))
    assert json.loads(line.removeprefix("LOADED "))["loaded"] == [expected]


def test_version_to_a_full_disk_fails_as_any_output() -> None:
    """--version into a stdout that cannot take it goes the whole way and fails as any
    output does: exit 4 and the reason on stderr."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "wb") as full:
        process = subprocess.run(
            [sys.executable, "-m", "vocmatch", "--version"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            cwd=str(ROOT),
        )
    assert process.returncode == 4
    assert process.stderr == "vocmatch: error: cannot write to stdout: No space left on device\n"


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--help"], id="help"),
        pytest.param(["eval", "--help"], id="eval-help"),
        pytest.param(["lint", "--help"], id="lint-help"),
        pytest.param(["fixtures/demo/gt", "--help"], id="default-command-help"),
    ],
)
def test_help_imports_nothing_that_computes(args: list[str]) -> None:
    """--help draws with rich-click and rich, and loads no numpy, lxml, shapely, PIL or
    jinja2."""
    code, loaded, stdout = loaded_by(args)
    assert code == 0
    assert set(loaded) <= HELP_MAY_LOAD
    assert "rich_click" in loaded  # the probe can tell: the help is rich-click's
    assert stdout.strip()


def test_version_prints_the_version() -> None:
    """The light path still prints the package's version."""
    code, _, stdout = loaded_by(["--version"])
    assert code == 0
    assert stdout.strip() == f"vocmatch, version {vocmatch.__version__}"


def test_a_command_still_imports_what_it_needs() -> None:
    """The probe can fail: a command that evaluates does load numpy."""
    code, loaded, _ = loaded_by(["iou", "0,0,10,10", "5,5,15,15", "--format", "json"])
    assert code == 0
    assert "numpy" in loaded


def test_help_defaults_equal_the_library() -> None:
    """The defaults the command line keeps for its help text are the library's own."""
    from vocmatch.core.protocol import PROTOCOLS
    from vocmatch.evidence.error_types import DEFAULT_BACKGROUND_IOU
    from vocmatch.readers.lint import DEFAULT_DUPLICATE_IOU
    from vocmatch.readers.parse import DEFAULT_MAX_BYTES
    from vocmatch.render.diff_tables import DIFF_MAX_ROWS

    assert tuple(sorted(PROTOCOLS)) == cli.PROTOCOL_NAMES
    assert cli.DEFAULT_MAX_BYTES == DEFAULT_MAX_BYTES
    assert cli.DEFAULT_BACKGROUND_IOU == DEFAULT_BACKGROUND_IOU
    assert cli.DIFF_MAX_ROWS == DIFF_MAX_ROWS
    assert cli.DEFAULT_DUPLICATE_IOU == DEFAULT_DUPLICATE_IOU


#: The terminal tables of the parts a plain evaluation does not show.
TABLE_MODULES = (
    "vocmatch.render.analysis_tables",
    "vocmatch.render.diff_tables",
    "vocmatch.render.evidence_tables",
    "vocmatch.render.label_tables",
)

# Modules the demo report must not load: each belongs to an option the run was not given,
# or to another command.
UNUSED_ON_EVAL = (
    "vocmatch.evidence.suspects",
    "vocmatch.evidence.analysis",
    "vocmatch.evidence.annotated",
    "vocmatch.evidence.error_types",
    "vocmatch.evidence.error_cost",
    "vocmatch.evidence.confusion",
    "vocmatch.evidence.tightness",
    "vocmatch.evidence.bootstrap",
    "vocmatch.evidence.resampling",
    "vocmatch.evidence.paired",
    "vocmatch.evidence.diff",
    "vocmatch.evidence.calibration",
    "vocmatch.evidence.slices",
    "vocmatch.evaluation.labels_and_masks.seg",
    "vocmatch.evaluation.labels_and_masks.labels",
    "vocmatch.evaluation.shards.incremental",
    "vocmatch.evaluation.shards.on_dask",
    # Six files are read here: the parts' machinery is not imported to count them.
    "vocmatch.evaluation.shards.parts",
    "vocmatch.evaluation.shards.reading_notes",
    "vocmatch.readers.shards",
    "vocmatch.readers.lint",
    "vocmatch.readers.pred_formats",
    "vocmatch.render.html",
    "vocmatch.render.diagram",
    "vocmatch.render.analysis_tables",
    "vocmatch.render.evidence_tables",
    "vocmatch.run.compare",
    "vocmatch.run.find_suspects",
    # Folders read here: neither URLs nor a cluster, nor a reader of URLs' bytes.
    "vocmatch.run.remote_inputs",
    "vocmatch.readers.byte_sources",
    # No preparation of the predictions asked for: no table or JSON of what it removed.
    "vocmatch.evaluation.preparation",
    "vocmatch.render.preparation_report",
    # No per-image limit given: no image's check made.
    "vocmatch.evidence.image_checks",
    # No cache of results kept: no reader that hashes what it reads, nor hashlib.
    "vocmatch.readers.hashed_reads",
    "hashlib",
    # No comparison: no correction of many gates' p-values to check; the gates' module
    # reads the evaluation's records from where they live, not from the library's hub.
    "vocmatch.evidence.multiple_testing",
    "vocmatch.evaluation.scoring",
    # The other protocols' and match rules' stages.
    "vocmatch.evaluation.ultralytics_summary",
    "vocmatch.evaluation.iou_order",
    "vocmatch.evaluation.range_flags",
    # Neither slices nor calibration asked for; np.unique would bring numpy.ma.
    "vocmatch.evaluation.slice_records",
    "vocmatch.evaluation.calibration_inputs",
    "numpy.ma",
    "vocmatch.cli.merge_cmd",
    "vocmatch.cli.help",
    "rich_click",
    "shapely",
    "jinja2",
    "PIL",
    "dask",
    "fsspec",
    "urllib.request",
    "multiprocessing",
    "concurrent.futures",
    # Only a run on a Dask cluster quiets loggers.
    "logging",
)


def modules_loaded_by(args: list[str], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` a command line run loads, in a fresh interpreter."""
    probe = PROBE.replace("{heavy!r}", repr(names))
    process = subprocess.run(
        [sys.executable, "-c", probe.format(args=args)],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(ROOT),
    )
    line = next(x for x in process.stderr.splitlines() if x.startswith("LOADED "))
    return list(json.loads(line.removeprefix("LOADED "))["loaded"])


@pytest.mark.parametrize(
    ("extra", "also_unused"),
    [
        pytest.param([], (), id="table"),
        pytest.param(
            ["--format", "json"],
            ("rich", "vocmatch.render.terminal", *TABLE_MODULES),
            id="json",
        ),
    ],
)
def test_eval_loads_only_what_the_run_needs(extra: list[str], also_unused: tuple[str, ...]) -> None:
    """The demo report loads no suspects, analysis, bootstrap, diff, labels or HTML module,
    no module of another command, no shapely for boxes without shapes, no worker pool for
    six files, and JSON output no rich."""
    demo = ["fixtures/demo/gt", "fixtures/demo/pred", *extra]
    assert modules_loaded_by(demo, UNUSED_ON_EVAL + also_unused) == []


@pytest.mark.parametrize(
    "extra", [pytest.param([], id="table"), pytest.param(["--format", "json"], id="json")]
)
def test_eval_reads_the_demo_with_the_compiled_reader_alone(extra: list[str]) -> None:
    """With the compiled reader, the demo's plain files, the one without objects too, are
    read without the parser and without the pure-Python reader: neither lxml nor
    vocmatch.readers.scan_pure is imported."""
    from vocmatch.readers import scan

    if scan.active_reader() != "compiled":
        pytest.skip("the compiled reader is not built")
    demo = ["fixtures/demo/gt", "fixtures/demo/pred", *extra]
    unused = ("lxml", "vocmatch.readers.scan_pure")
    assert modules_loaded_by(demo, unused) == []


def test_the_module_probe_can_fail() -> None:
    """The same probe sees the analysis module when --errors asks for it."""
    demo = ["fixtures/demo/gt", "fixtures/demo/pred", "--errors"]
    assert modules_loaded_by(demo, ("vocmatch.evidence.analysis",)) == [
        "vocmatch.evidence.analysis"
    ]


# Runs the command line with every dataclass built recorded, and prints their names.
BUILT_PROBE = """
import dataclasses, json, sys
built = []
process_class = dataclasses._process_class
def recorded(cls, *args, **kwargs):
    built.append(cls.__qualname__)
    return process_class(cls, *args, **kwargs)
dataclasses._process_class = recorded
from vocmatch.__main__ import main
sys.argv = ["vocmatch", *{args!r}]
try:
    main()
except SystemExit:
    pass
sys.stdout.flush()
sys.stderr.write("\\nBUILT " + json.dumps(built) + "\\n")
"""

#: Records the demo report never makes: each class is built only where it is used.
NOT_BUILT_ON_EVAL = (
    # The arrays of a matching, for what inspects the stages; a run keeps its records.
    "MatchedColumns",
    "Evaluated",
    # pycocotools' accumulation: only the coco summary reports it.
    "CocoHits",
    "CocoTables",
    # No gate given: neither a gate, its text nor its result.
    "Gate",
    "GateText",
    "GateResult",
    # No per-image limit given: no image's check.
    "ImageCheck",
    # Boxes, not label sets, nor the overlap of two regions told.
    "LabelOverlap",
    "PairOverlap",
    # No per-box records kept, and neither the coco nor the ultralytics summary.
    "Match",
    "CocoStats",
    "UltralyticsStats",
    # No state saved.
    "SavedShard",
    # No built-in class map renames the prediction-only class (truck): no hint.
    "MapHint",
    # Six files are read here, not in parts.
    "EvaluatedInParts",
    # No split asked for.
    "Split",
    # No per-class thresholds given.
    "ClassThresholds",
    # Local folders, read by read_bytes itself: no reader of URLs' bytes.
    "LocalOrElsewhere",
    # Every image-class matched at once: no one image-class's matching record.
    "ClassMatch",
)


def dataclasses_built_by(args: list[str]) -> list[str]:
    """The names of the dataclasses a command line run builds, in a fresh interpreter."""
    process = subprocess.run(
        [sys.executable, "-c", BUILT_PROBE.format(args=args)],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(ROOT),
    )
    line = next(x for x in process.stderr.splitlines() if x.startswith("BUILT "))
    return list(json.loads(line.removeprefix("BUILT ")))


@pytest.mark.parametrize(
    "extra", [pytest.param([], id="table"), pytest.param(["--format", "json"], id="json")]
)
def test_eval_builds_only_the_records_it_uses(extra: list[str]) -> None:
    """The demo report builds no record class that only another option, another command or
    the stages' inspection makes: a frozen dataclass costs about half a millisecond to
    build."""
    built = dataclasses_built_by(["fixtures/demo/gt", "fixtures/demo/pred", *extra])
    assert "EvalRequest" in built  # the probe sees what the run builds
    assert [name for name in NOT_BUILT_ON_EVAL if name in built] == []


#: Records a ``coco`` run never makes: the compiled kernel accumulates every class at once,
#: and the summary is pycocotools', not the ultralytics package's.
NOT_BUILT_ON_COCO = ("PairOverlap", "CocoHits", "UltralyticsStats", "Match", "Gate")


@pytest.mark.parametrize(
    "extra", [pytest.param([], id="table"), pytest.param(["--format", "json"], id="json")]
)
def test_coco_run_builds_only_the_records_it_uses(extra: list[str]) -> None:
    """A ``coco`` run builds its tables and its 12 numbers, and neither a class's sparse
    accumulation, the ultralytics numbers, nor the overlap of two regions."""
    from vocmatch.compiled import kernels

    if kernels("vocmatch.evaluation.fastaccumulate") is None:
        pytest.skip("the compiled accumulation is not built")
    demo = ["fixtures/demo/gt", "fixtures/demo/pred", "--protocol", "coco", *extra]
    built = dataclasses_built_by(demo)
    assert "CocoTables" in built  # the probe sees what the run builds
    assert [name for name in NOT_BUILT_ON_COCO if name in built] == []


# Runs the command line and prints whether the cycle collector ran, and was on, in the command.
COLLECTOR_PROBE = """
import gc, json, sys
import vocmatch.cli.app as app
seen = []
collections = []
gc.callbacks.append(lambda phase, info: collections.append(info["generation"]))
command = app.main.main
def spy(*args, **kwargs):
    seen.append(gc.isenabled())
    del collections[:]
    return command(*args, **kwargs)
app.main.main = spy
from vocmatch.__main__ import main
sys.argv = ["vocmatch", *{args!r}]
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nCOLLECTOR " + json.dumps({{"on": seen, "runs": len(collections)}}) + "\\n")
"""


def test_a_command_runs_without_the_cycle_collector(generated: Path) -> None:
    """The command line turns the cycle collector off for the run (its objects have no
    cycles, and the process ends with the run): no collection walks the listing's or the
    records' objects, however many the run builds."""
    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json", "--jobs", "1"]
    process = subprocess.run(
        [sys.executable, "-c", COLLECTOR_PROBE.format(args=args)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    line = next(x for x in process.stderr.splitlines() if x.startswith("COLLECTOR "))
    assert json.loads(line.removeprefix("COLLECTOR ")) == {"on": [False], "runs": 0}

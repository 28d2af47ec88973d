"""``vocmatch eval`` of two local folders of XML files starts reading them on threads as
soon as it has parsed its arguments (:mod:`vocmatch.readers.read_ahead`), before numpy and
the run's modules are imported: the same report, exit code and messages as a run that
reads later, and no reading thread left when the command ends, however it ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.bench_scripts import bench
from tests.conftest import ROOT, run_cli
from vocmatch.readers import scan, workers

pytestmark = [
    pytest.mark.skipif(
        scan._compiled is None or os.name != "posix",
        reason="the compiled chunk reader is built on POSIX systems with a C compiler",
    ),
    pytest.mark.skipif(workers.available_cores() < 2, reason="one core: nothing read early"),
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """300 images of the benchmark's generator: 600 files, several chunks."""
    root = tmp_path_factory.mktemp("early")
    bench("generate").generate(root, images=300, classes=12, pred_per_image=15, seed=5)
    return str(root / "gt"), str(root / "pred")


PROBE = """
import json, sys
from vocmatch.readers import fastxml
read_chunk = fastxml.read_chunk
seen = []
def probe(*args):
    if not seen:
        seen.append([m in sys.modules for m in ("numpy", "vocmatch.run.evaluate")])
    return read_chunk(*args)
fastxml.read_chunk = probe
from vocmatch.__main__ import main
sys.argv = ["vocmatch", *sys.argv[1:]]
try:
    main()
finally:
    sys.stderr.write("\\nLOADED " + json.dumps(seen) + "\\n")
"""


def test_the_command_line_reads_before_it_imports_numpy_and_the_run(
    folders: tuple[str, str],
) -> None:
    """``vocmatch eval GT PRED``: the first chunk is read before numpy and the run's modules
    are imported, and the report is the one read by one thread."""
    args = [*folders, "--protocol", "coco", "--format", "json"]
    run = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, check=False
    )
    one = subprocess.run(
        [sys.executable, "-m", "vocmatch", *args, "--jobs", "1"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    line = next(x for x in run.stderr.decode().splitlines() if x.startswith("LOADED "))
    assert json.loads(line.removeprefix("LOADED ")) == [[False, False]]
    assert (run.returncode, run.stdout) == (one.returncode, one.stdout)


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(["--score-thresholds", "{bad}"], id="refused-thresholds-file"),
        pytest.param(["--classes", "nothing-of-the-sort"], id="no-class-chosen"),
        pytest.param(["--format", "junit"], id="report-keeps-boxes"),
    ],
)
def test_a_run_reading_early_says_what_a_late_one_says(
    folders: tuple[str, str], tmp_path: Path, extra: list[str]
) -> None:
    """A run refused before it reads (a bad thresholds file) or after (no class chosen),
    and one whose report keeps boxes: the exit code, stdout and stderr of the run with one
    job (which reads nothing early), and no reading thread left after either."""
    bad = tmp_path / "thresholds.csv"
    bad.write_text("cat,not-a-number\n")
    args = [*folders, *(part.format(bad=bad) for part in extra)]
    early = run_cli(*args)
    assert [t.name for t in threading.enumerate() if t.name.startswith("vocmatch-read")] == []
    assert early == run_cli(*args, "--jobs", "1")

"""`vocmatch --version` starts without the heavy libraries (nor rich-click), `--help` without
the numerical ones, and the defaults the command line shows in its help stay equal to the
library's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import vocmatch
import vocmatch.cli.options as cli

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
    process = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args, heavy=HEAVY)],
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
    from vocmatch.evidence.analysis import DEFAULT_BACKGROUND_IOU
    from vocmatch.readers.lint import DEFAULT_DUPLICATE_IOU
    from vocmatch.readers.parse import DEFAULT_MAX_BYTES
    from vocmatch.render.terminal import DIFF_MAX_ROWS

    assert tuple(sorted(PROTOCOLS)) == cli.PROTOCOL_NAMES
    assert cli.DEFAULT_MAX_BYTES == DEFAULT_MAX_BYTES
    assert cli.DEFAULT_BACKGROUND_IOU == DEFAULT_BACKGROUND_IOU
    assert cli.DIFF_MAX_ROWS == DIFF_MAX_ROWS
    assert cli.DEFAULT_DUPLICATE_IOU == DEFAULT_DUPLICATE_IOU

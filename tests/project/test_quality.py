"""The code (package, tests, benchmark scripts) stays ruff-clean and formatted, and the package
and benchmark scripts mypy --strict clean (configuration in pyproject)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(
            [sys.executable, "-m", "ruff", "check", "vocmatch", "tests", "bench"], id="ruff-check"
        ),
        pytest.param(
            [sys.executable, "-m", "ruff", "format", "--check", "vocmatch", "tests", "bench"],
            id="ruff-format",
        ),
        # One run for the package and the benchmark scripts: mypy's start-up is most of it.
        pytest.param([sys.executable, "-m", "mypy", "vocmatch", "bench"], id="mypy-strict"),
    ],
)
def test_tool_is_clean(command: list[str]) -> None:
    """The linter, the formatter and the type checker find nothing."""
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_shows_the_current_demo_report() -> None:
    """The README's first run is the golden demo report, so it cannot drift."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    golden = (ROOT / "tests" / "golden" / "demo_report.txt").read_text(encoding="utf-8")
    assert golden in readme

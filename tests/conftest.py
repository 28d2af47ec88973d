"""Shared test fixtures: paths, and the golden-file helper with its refresh switch.

Run ``pytest --update-goldens`` (or set ``VOCMATCH_UPDATE_GOLDENS=1``) to rewrite the golden
files from the current output; review the diff before committing it.

``pytest --hypothesis-profile=mutation`` (as ``bench/mutate.py`` runs the tests) gives every
property test no deadline, no example database and derandomised examples: the same examples
on every run, however loaded the machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

from vocmatch.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
GOLDEN = Path(__file__).resolve().parent / "golden"
DATASETS = ROOT.parent / "shared" / "datasets"

settings.register_profile("mutation", deadline=None, database=None, derandomize=True)


def street_05_unpredicted() -> pytest.WarningsRecorder:
    """``pytest.warns`` for the warning a library run on the demo set gives: its image
    street_05 has no prediction file (the command line says so in a note)."""
    from vocmatch.errors import MissingPredictionWarning

    return pytest.warns(MissingPredictionWarning, match="no prediction file for 'street_05'")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="Rewrite tests/golden/* from the current output instead of comparing.",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """Compare text with ``tests/golden/<name>``, or rewrite it when refreshing."""
    update = request.config.getoption("--update-goldens") or bool(
        os.environ.get("VOCMATCH_UPDATE_GOLDENS")
    )

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        assert path.exists(), f"missing golden file {path}; run pytest --update-goldens"
        assert text == path.read_text(encoding="utf-8")

    return check


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """150 images of ``bench/generate.py`` (``gt/``, ``pred/``, ``coco/``), ten predictions
    each, with the other prediction formats written by ``bench/convert.py``
    (``converted/``). One set for the whole session, read only: a test that changes files
    changes a copy."""
    from tests.bench_scripts import bench

    folder = tmp_path_factory.mktemp("generated")
    bench("generate").generate(folder, 150, pred_per_image=10)
    bench("convert").convert(folder / "gt", folder / "pred", folder / "converted")
    return folder


@pytest.fixture
def demo() -> tuple[Path, Path]:
    """The bundled demo set: (gt_dir, pred_dir)."""
    return FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred"


def run_cli(
    *args: str, env: Mapping[str, str | None] | None = None, columns: int | None = None
) -> tuple[int, str, str]:
    """Run the command line in-process: (exit code, stdout, stderr), each kept apart.

    Args:
        *args: The arguments after ``vocmatch``.
        env: Environment variables set for the run (None unsets one).
        columns: The terminal width the run sees (``COLUMNS``).
    """
    if columns is not None:
        env = {**(env or {}), "COLUMNS": str(columns)}
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def datasets_or_skip(name: str) -> Path:
    """A real annotation set from ../shared/datasets, or skip when it is not beside the repo."""
    path = DATASETS / name
    if not path.is_dir():
        pytest.skip(f"{path} not present (the real datasets sit beside the repository)")
    return path

"""The README stays a short first read whose commands and example work, and the docs site
builds with `mkdocs build --strict` (every page in the nav, every link and anchor found, the
API pages generated from the docstrings without a warning)."""

from __future__ import annotations

import contextlib
import doctest
import importlib.util
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.conftest import ROOT, street_05_unpredicted

README = ROOT / "README.md"
DOCS = ROOT / "docs"


def test_readme_is_short() -> None:
    """The README is a first read of at most 400 lines; reference material is in docs/."""
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 400


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(
            "$ python3 -m pip install . && vocmatch fixtures/demo/gt fixtures/demo/pred",
            id="try-it",
        ),
        pytest.param('$ python3 -m pip install -e ".[test]" && python3 -m pytest', id="test-suite"),
    ],
)
def test_readme_keeps_its_two_commands(command: str) -> None:
    """The first run and the test command are in the README exactly as written (CI runs the
    second verbatim, .ci/run)."""
    assert command + "\n" in README.read_text(encoding="utf-8")


def test_readme_python_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each Python block of the README runs as written, from the repository's root, and the
    numbers its comments give are the ones it computes."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks
    monkeypatch.chdir(ROOT)
    for block in blocks:
        namespace: dict[str, object] = {}
        # The demo's street_05 has no prediction file: the library warns, as the README says.
        with street_05_unpredicted() if "fixtures/demo" in block else contextlib.nullcontext():
            exec(compile(block, "README.md", "exec"), namespace)
        for expression, expected in re.findall(
            r"^(?:print\()?(.+?)\)?\s+# (\d[\d.]*)$", block, re.M
        ):
            assert str(eval(expression, namespace)) == expected


def test_readme_links_resolve() -> None:
    """Every relative link of the README names a file of the repository."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
    assert targets
    assert [t for t in targets if not (ROOT / t).exists()] == []


EXIT_ORDER = re.compile(r"first in this order wins: ([0-9/, ]+?)\.?\s*(?:\(|A failed|$)", re.M)


def test_exit_code_precedence_is_stated_one_way() -> None:
    """The README and the gates page give the same order of exit codes, the one the command
    line applies (lost output, 4, is checked before the command's own code, so it wins over
    5, 1 and 3), and no other page states an order of its own."""
    pages = [README, *sorted(DOCS.glob("*.md"))]
    stated = {
        page.name: [" ".join(m.split()) for m in EXIT_ORDER.findall(page.read_text("utf-8"))]
        for page in pages
    }
    assert stated.pop("README.md") == stated.pop("gates.md") == ["129/130/143, 2, 4, 5, 1, 3, 0"]
    assert not any(stated.values())
    others = [p.name for p in pages if re.search(r"first of [0-9]+", p.read_text("utf-8"))]
    assert others == []


def test_library_page_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``>>>`` example of docs/library.md gives the output written under it, through
    the public names only (the page says a test runs them)."""
    monkeypatch.chdir(ROOT)
    text = (DOCS / "library.md").read_text(encoding="utf-8")
    assert "```python" not in text  # every example is a doctest, so that it is run
    assert not re.search(r"^(from|import) vocmatch\.", text, re.M)
    # A fence ends an example's expected output as a blank line would.
    examples = re.sub(r"^```.*$", "", text, flags=re.M)
    test = doctest.DocTestParser().get_doctest(examples, {}, "library.md", str(DOCS), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    with warnings.catch_warnings():
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0 and attempted >= 15


def test_license_is_the_projects() -> None:
    """LICENSE is the MIT text pyproject.toml declares."""
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Copyright (c) vocmatch contributors" in text
    assert 'license = "MIT"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_doctest_examples_extension() -> None:
    """The API pages' Griffe extension moves bare doctests under Examples (its doctest)."""
    spec = importlib.util.spec_from_file_location("doctest_examples", DOCS / "doctest_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    failed, attempted = doctest.testmod(module)
    assert failed == 0 and attempted > 0


def test_docs_build_strict(tmp_path: Path) -> None:
    """`mkdocs build --strict` succeeds: no page outside the nav, no broken link or anchor,
    no docstring the API pages cannot render. CI always runs it."""
    if importlib.util.find_spec("mkdocs") is None and not os.environ.get("CI"):
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    api = (tmp_path / "site" / "reference" / "api" / "core" / "index.html").read_text()
    assert "iou_matrix" in api

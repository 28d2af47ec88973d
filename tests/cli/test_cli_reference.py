"""The command reference in the docs (docs/reference/cli.md) is the help text: every command's
`--help` as it prints at 80 columns without colour; and the snippets the docs give for
pre-commit and CI work from a clone."""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from tests.conftest import FIXTURES, ROOT
from vocmatch.cli import main
from vocmatch.cli.help import render_help

DOCS = ROOT / "docs"
CLI_REFERENCE = DOCS / "reference" / "cli.md"
START = (
    "<!-- command reference: generated from the help text by tests/cli/test_cli_reference.py -->"
)
END = "<!-- end of command reference -->"


def help_text(ctx: click.Context) -> str:
    """A command's help as `vocmatch ... --help` prints it at 80 columns, without colour."""
    return render_help(ctx.command, ctx, width=80, color=False)


def reference() -> str:
    """The command reference: `vocmatch --help`, then each command's help, by name."""
    root = click.Context(main, info_name="vocmatch")
    lines = [START, "", "## `vocmatch`", "", "```text", help_text(root), "```", ""]
    for name in sorted(main.commands):
        ctx = click.Context(main.commands[name], info_name=name, parent=root)
        lines += [f"## `vocmatch {name}`", "", "```text", help_text(ctx), "```", ""]
    lines.append(END)
    return "\n".join(lines)


def test_command_reference_is_the_help(request: pytest.FixtureRequest) -> None:
    """Every command's help is in docs/reference/cli.md as it prints;
    `pytest --update-goldens` rewrites the section from the help."""
    text = CLI_REFERENCE.read_text(encoding="utf-8")
    assert START in text and END in text, "docs/reference/cli.md lacks the generated section"
    start, end = text.index(START), text.index(END) + len(END)
    expected = reference()
    update = request.config.getoption("--update-goldens") or bool(
        os.environ.get("VOCMATCH_UPDATE_GOLDENS")
    )
    if update:
        CLI_REFERENCE.write_text(text[:start] + expected + text[end:], encoding="utf-8")
        return
    assert text[start:end] == expected, (
        "docs/reference/cli.md differs from the help text: review the change and run "
        "pytest --update-goldens"
    )


def test_command_reference_names_every_option() -> None:
    """Every option of every command appears in the reference, under its command."""
    text = CLI_REFERENCE.read_text(encoding="utf-8")
    for name in sorted(main.commands):
        command = main.commands[name]
        section = text.split(f"## `vocmatch {name}`", 1)[1].split("\n## ", 1)[0]
        for param in command.get_params(click.Context(command)):
            if isinstance(param, click.Option) and not param.hidden:
                assert param.opts[0] in section, (name, param.opts[0])


# Skipped tests say why ----------------------------------------------------------------


def test_every_skip_gives_a_reason() -> None:
    """pytest.skip(...) has a message, skipif and importorskip a reason= (pytest -rs shows
    one for each skipped test)."""
    problems = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            keywords = {k.arg for k in node.keywords}
            if name == "pytest.skip" and not node.args and "reason" not in keywords:
                problems.append(f"{path.name}:{node.lineno}")
            if name in ("pytest.mark.skipif", "pytest.importorskip") and "reason" not in keywords:
                problems.append(f"{path.name}:{node.lineno}")
            if name == "pytest.mark.skip" and not node.args and "reason" not in keywords:
                problems.append(f"{path.name}:{node.lineno}")
    assert problems == []


# The pre-commit hook and the CI recipe, from a clone ------------------------------------


def yaml_blocks(language: str) -> list[str]:
    """The code blocks in `language` of the docs pages on linting and on CI."""
    text = "".join((DOCS / page).read_text(encoding="utf-8") for page in ("lint.md", "gates.md"))
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_pre_commit_hook_runs_as_pre_commit_would(tmp_path: Path) -> None:
    """The docs' .pre-commit-config.yaml names the repository's hook; running the hook's
    entry with the config's args on staged files, as pre-commit does, lints them."""
    yaml = pytest.importorskip("yaml", reason="pyyaml is a test dependency")
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    configs = [yaml.safe_load(b) for b in yaml_blocks("yaml") if "repos:" in b]
    assert len(configs) == 1
    hook_ref = configs[0]["repos"][0]["hooks"][0]
    (hook,) = [h for h in hooks if h["id"] == hook_ref["id"]]
    assert hook["language"] == "python"
    # The entry is a console script the package installs.
    entry = shlex.split(hook["entry"])
    assert entry[0] in {"vocmatch"}
    assert 'vocmatch = "vocmatch.__main__:main"' in (ROOT / "pyproject.toml").read_text()
    files = [
        p
        for p in sorted((FIXTURES / "demo" / "gt").glob("*.xml"))
        if re.search(hook["files"], p.name)
    ]
    (tmp_path / "classes.txt").write_text("bicycle\nbus\ncar\ncat\ndog\nperson\n")
    args = [a if a != "classes.txt" else str(tmp_path / "classes.txt") for a in hook_ref["args"]]
    script = shutil.which("vocmatch", path=str(Path(sys.executable).parent))
    assert script is not None
    result = subprocess.run(
        [script, *entry[1:], *args, *map(str, files)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"All checks passed ({len(files)} files checked).\n"


def test_ci_recipe_commands_work_from_a_clone(tmp_path: Path) -> None:
    """The GitHub Actions recipe: its install line names the repository by URL and a rev
    (no PyPI release needed), and its vocmatch commands, run in a labels/ predictions/
    checkout, lint, gate and write the report the summary step appends."""
    yaml = pytest.importorskip("yaml", reason="pyyaml is a test dependency")
    (block,) = [b for b in yaml_blocks("yaml") if "jobs:" in b]
    workflow = yaml.safe_load(block)
    runs = [
        step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step
    ]
    installs = [r for r in runs if "pip install" in r]
    assert installs and all(re.search(r"vocmatch @ git\+https://\S+@\S+", r) for r in installs)
    shutil.copytree(FIXTURES / "demo" / "gt", tmp_path / "labels")
    shutil.copytree(FIXTURES / "demo" / "pred", tmp_path / "predictions")
    (tmp_path / "classes.txt").write_text("bicycle\nbus\ncar\ncat\ndog\nperson\n")
    summary = tmp_path / "summary.md"
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           "GITHUB_STEP_SUMMARY": str(summary)}  # fmt: skip
    results = []
    for command in runs:
        if "pip install" in command:
            continue
        result = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
            check=False,
        )  # fmt: skip
        results.append((command.split()[:2], result.returncode))
    # The demo's labels lint clean but for the one image without objects (V011, exit 1); the
    # demo's mAP 0.625 passes the 0.5 gate; the summary step appends the report.
    assert results == [
        (["vocmatch", "lint"], 1),
        (["vocmatch", "labels/"], 0),
        (["cat", "report.md"], 0),
    ]
    assert (tmp_path / "report.md").read_text().startswith("## vocmatch evaluation\n")
    assert summary.read_text() == (tmp_path / "report.md").read_text()


# Installing ------------------------------------------------------------------------------


@pytest.mark.parametrize("hook", ["build_wheel", "build_editable"])
def test_building_the_package_warns_of_nothing(tmp_path: Path, hook: str) -> None:
    """`pip install .` and `pip install -e .` run these build hooks: our pyproject.toml gives
    setuptools nothing to warn about (no deprecated license table, no editable import hook)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "vocmatch", source / "vocmatch", ignore=shutil.ignore_patterns("__pycache__")
    )
    out = tmp_path / "dist"
    out.mkdir()
    code = f"from setuptools import build_meta; print(build_meta.{hook}({str(out)!r}))"
    # Byte-compiling off in this environment would be a distutils warning of its own.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    result = subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        cwd=source, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert not re.search(r"warning|deprecat", output, flags=re.IGNORECASE), output
    assert result.stdout.strip().splitlines()[-1].endswith(".whl")

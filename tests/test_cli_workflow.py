"""The command line in a real detection workflow: mistyped commands, honest exits, output that
reads in CI logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vocmatch.cli import EXIT_USAGE, main


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("word", "command"),
    [
        pytest.param("lnit", "lint", id="swapped-letters"),
        pytest.param("evl", "eval", id="missing-letter"),
        pytest.param("dif", "diff", id="short"),
        pytest.param("sge", "seg", id="seg"),
    ],
)
def test_mistyped_command_gets_did_you_mean(word: str, command: str, demo: tuple[Path, Path]) -> None:
    """A first argument that is no path but nearly a command is a usage error naming it."""
    code, out, err = run(word, str(demo[0]))
    assert code == EXIT_USAGE
    assert out == ""
    assert f"no such command {word!r}; did you mean {command!r}?" in err


def test_existing_folder_named_like_a_command_is_still_a_folder(
    tmp_path: Path, demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder that happens to be called `lnit` is read as GT_DIR, not refused."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lnit").symlink_to(demo[0].resolve())
    code, _, err = run("lnit", str(demo[1].resolve()))
    assert code == 0, err

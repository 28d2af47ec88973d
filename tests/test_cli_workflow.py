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


def write_voc(
    path: Path,
    objects: list[tuple[str, float, float, float, float, float | None]],
    size: tuple[int, int] | None = (640, 480),
    difficult: tuple[int, ...] = (),
) -> None:
    """A LabelImg-style file: ``(name, x1, y1, x2, y2, score)`` per object."""
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = ["<annotation>", f"<filename>{path.stem}.jpg</filename>"]
    if size is not None:
        parts.append(f"<size><width>{size[0]}</width><height>{size[1]}</height><depth>3</depth></size>")
    for k, (name, x1, y1, x2, y2, score) in enumerate(objects):
        parts.append(f"<object><name>{name}</name>")
        parts.append(f"<difficult>{int(k in difficult)}</difficult>")
        parts.append(f"<bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox>")
        if score is not None:
            parts.append(f"<score>{score}</score>")
        parts.append("</object>")
    parts.append("</annotation>")
    path.write_text("\n".join(parts), encoding="utf-8")


LONG_NAMES = ("traffic_light_left_turn_arrow", "pedestrian crossing sign", "car")


def long_name_set(tmp_path: Path) -> tuple[Path, Path]:
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    for i, name in enumerate(LONG_NAMES):
        write_voc(gt / f"img{i}.xml", [(name, 10, 10, 50, 50, None)])
        write_voc(pred / f"img{i}.xml", [(name, 12, 10, 50, 50, 0.9)])
    return gt, pred


def table_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]


def test_report_in_a_pipe_is_not_wrapped_at_80_columns(tmp_path: Path) -> None:
    """Without a terminal or COLUMNS, tables take the content's width: one row per class."""
    gt, pred = long_name_set(tmp_path)
    code, out, _ = run(str(gt), str(pred), env={"COLUMNS": ""})
    assert code == 0
    classes = out[out.index("Classes") :]
    widths = {len(line) for line in table_lines(classes)[:6]}
    assert len(widths) == 1 and widths.pop() > 80
    for name in LONG_NAMES:
        assert sum(name in line for line in classes.splitlines()) == 1


@pytest.mark.parametrize("columns", ["40", "60", "100"])
def test_class_names_never_break_inside_a_word(tmp_path: Path, columns: str) -> None:
    """With COLUMNS narrower than the table, the table keeps its width rather than fold a
    class name; wider, the table is as wide as its content."""
    gt, pred = long_name_set(tmp_path)
    code, out, _ = run(str(gt), str(pred), "--errors", env={"COLUMNS": columns})
    assert code == 0
    for name in LONG_NAMES:
        # Each table with classes shows every name whole on one line.
        assert out.count(name) == 4  # classes, errors, confusion row and column
    assert "…" not in out

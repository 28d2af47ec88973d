"""Tables that fit: on real sets the default report fits 80 columns (COLUMNS=80, as an
80-column terminal), choosing narrower forms of the image and class tables; a pipe and
-o FILE get the full forms at the content's width; no line ends in spaces."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from tests.bench_scripts import bench
from tests.conftest import datasets_or_skip
from vocmatch.cli import main
from vocmatch.evaluation.scoring import evaluate_directories
from vocmatch.render.terminal import image_table


def report(args: list[str], columns: str | None) -> str:
    # None unsets COLUMNS (pytest-xdist's workers set it to 80).
    result = CliRunner(env={"COLUMNS": columns}).invoke(
        main, ["eval", *args], catch_exceptions=False
    )
    return result.stdout


@pytest.mark.parametrize("protocol_name", ["default", "coco"])
@pytest.mark.parametrize("name", ["cards/test", "bccd", "raccoon"])
def test_real_sets_fit_80_columns(tmp_path: Path, name: str, protocol_name: str) -> None:
    gt_dir = datasets_or_skip(name)
    bench("derive_predictions").derive(gt_dir, tmp_path / "pred", seed=0)
    args = [str(gt_dir), str(tmp_path / "pred"), "--protocol", protocol_name]
    out = report(args, "80")
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert [line for line in lines if line != line.rstrip()] == []
    # The box drawing is whole: every table row has as many cells as its header.
    assert "Classes (at IoU 0.5)" in lines
    full = report([*args, "-o", str(tmp_path / "report.txt")], None)
    written = (tmp_path / "report.txt").read_text(encoding="utf-8")
    assert [line for line in written.splitlines() if line != line.rstrip()] == []
    assert "┃ precision ┃ recall ┃" in written
    assert full.splitlines()[0].startswith("Summary")


def test_the_coco_class_table_keeps_its_padding_at_any_width(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """Full form on a pipe; at 80 columns P and R, three places, and AP50 and AP75 apart."""
    args = [*map(str, demo), "--protocol", "coco"]
    piped = report(args, None)
    assert (
        "┃ class   ┃     GT ┃   pred ┃ TP ┃ FP ┃ FN ┃ precision ┃ recall ┃     F1 ┃     AP ┃"
        "   AP50 ┃   AP75 ┃"
    ) in piped
    assert (
        "│ person  │ 4 (+1) │ 5 (+1) │  4 │  1 │  0 │    0.8000 │ 1.0000 │ 0.8889 │ 0.7929 │ 1.0000 │ 0.7525 │"
        in piped
    )
    narrow = report(args, "80").splitlines()
    at = narrow.index("Classes (at IoU 0.5)")
    assert (
        narrow[at + 2]
        == "┃ class   ┃     GT ┃   pred ┃ TP ┃ FP ┃ FN ┃     P ┃     R ┃    F1 ┃    AP ┃"
    )
    assert "│ person  │ 4 (+1) │ 5 (+1) │  4 │  1 │  0 │ 0.800 │ 1.000 │ 0.889 │ 0.793 │" in narrow
    at = narrow.index("COCO AP50, AP75")
    assert narrow[at + 2] == "┃ class   ┃  AP50 ┃  AP75 ┃"
    assert "│ person  │ 1.000 │ 0.752 │" in narrow


def test_the_narrow_image_table_leaves_out_the_sweep_column_that_repeats_tp_fp_fn(
    demo: tuple[Path, Path],
) -> None:
    """74 columns hold the full table; at 73 the @0.50 column (TP/FP/FN again) goes."""
    evaluation = evaluate_directories(*demo)

    def header(width: int) -> str:
        console = Console(file=io.StringIO(), width=width, color_system=None)
        console.print(image_table(evaluation))
        text = console.file.getvalue()  # type: ignore[attr-defined]
        return next(line for line in text.splitlines() if "mIoU" in line)

    assert header(74).endswith("┃  mIoU ┃ @0.50 ┃ @0.75 ┃ @0.95 ┃")
    assert len(header(74)) == 74
    assert header(73).endswith("┃  mIoU ┃ @0.75 ┃ @0.95 ┃")
    strict = replace(evaluation, conventions=replace(evaluation.conventions, strict_threshold=True))
    console = Console(file=io.StringIO(), width=73, color_system=None)
    console.print(image_table(strict))
    # At IoU > 0.5 the counts differ from the sweep's (IoU >= 0.5): the column is no repeat,
    # so it never goes alone; at 73 columns the table leaves out the whole sweep instead of
    # running past the width.
    strict_text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "@0.75" not in strict_text
    assert max(len(line) for line in strict_text.splitlines()) <= 73
    console = Console(file=io.StringIO(), width=74, color_system=None)
    console.print(image_table(strict))
    assert "┃  mIoU ┃ @0.50 ┃ @0.75 ┃ @0.95 ┃" in console.file.getvalue()  # type: ignore[attr-defined]

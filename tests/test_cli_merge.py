"""``vocmatch eval --shard K/N --save-state FILE`` and ``vocmatch merge FILE...``: the merged
shards report the numbers of one run on every image."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vocmatch.cli import EXIT_USAGE, main


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("name", ["voc12", "coco"])
def test_merged_shards_report_the_single_run(
    demo: tuple[Path, Path], tmp_path: Path, name: str
) -> None:
    """Three shards saved, merged in another order: the same summary, classes and images."""
    gt, pred = map(str, demo)
    states = []
    for k in (1, 2, 3):
        state = tmp_path / f"shard{k}.vms"
        code, out, err = run(
            "eval", gt, pred, "--protocol", name, "--shard", f"{k}/3", "--save-state", str(state)
        )
        assert (code, out, err) == (0, "", f"saved 2 images to {state}\n")
        states.append(str(state))
    code, merged, err = run("merge", states[2], states[0], states[1], "--format", "json")
    assert (code, err) == (0, "")
    code, single, _ = run("eval", gt, pred, "--protocol", name, "--format", "json")
    assert code == 0
    assert merged == single


def test_merge_refuses_overlapping_shards(demo: tuple[Path, Path], tmp_path: Path) -> None:
    gt, pred = map(str, demo)
    run("eval", gt, pred, "--shard", "1/2", "--save-state", str(tmp_path / "a.vms"))
    run("eval", gt, pred, "--save-state", str(tmp_path / "all.vms"))
    code, out, err = run("merge", str(tmp_path / "a.vms"), str(tmp_path / "all.vms"))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        "vocmatch: error: cannot merge states that share images: 'street_01', 'street_03', 'street_05'\n"
    )


def test_merge_refuses_a_damaged_state(demo: tuple[Path, Path], tmp_path: Path) -> None:
    state = tmp_path / "a.vms"
    run("eval", *map(str, demo), "--save-state", str(state))
    state.write_bytes(state.read_bytes()[:-1])
    code, out, err = run("merge", str(state))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == f"vocmatch: error: {state}: truncated or corrupted (checksum does not match)\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--shard", "1/2"], "--shard evaluates part of the images", id="no-state"),
        pytest.param(["--shard", "3/2", "--save-state", "x"], "'3/2' is not K/N", id="range"),
    ],
)
def test_shard_usage_errors(demo: tuple[Path, Path], args: list[str], message: str) -> None:
    code, out, err = run("eval", *map(str, demo), *args)
    assert (code, out) == (EXIT_USAGE, "")
    assert message in err

"""Shards saved with ``--keep-boxes`` (or with a report option that reads boxes) merge into
every report ``vocmatch eval`` writes on the whole set, byte for byte: JUnit's FP and FN
lines, ``--html`` (and ``--images``), ``--errors``, ``--tightness``, ``--background-iou``;
states without boxes are refused for those options in one line naming them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_scripts import bench
from tests.conftest import FIXTURES, datasets_or_skip, run_cli
from vocmatch.cli import EXIT_USAGE
from vocmatch.evaluation.shards.state import read_state
from vocmatch.render.junit import NO_BOXES

#: Each report of boxes, as eval and merge options; ``OUT`` is a file the report is written to.
REPORTS = [
    pytest.param(["--format", "junit", "--max-fp", "0", "--max-fn", "0"], id="junit-failing"),
    pytest.param(["--html", "OUT"], id="html"),
    pytest.param(["--errors", "--tightness"], id="errors-tightness-table"),
    pytest.param(["--errors", "--background-iou", "0.3", "--format", "json"], id="errors-json"),
    pytest.param(["--format", "markdown", "--tightness"], id="tightness-markdown"),
    pytest.param(["--format", "csv"], id="csv"),
]


def _save(gt: Path, pred: Path, folder: Path, protocol: str, *extra: str) -> list[str]:
    states = []
    for k in (1, 2, 3):
        state = str(folder / f"s{k}.vms")
        code, out, err = run_cli(
            "eval", str(gt), str(pred), "--protocol", protocol, "--shard", f"{k}/3",
            "--save-state", state, "--keep-boxes", *extra,
        )  # fmt: skip
        assert (code, out) == (0, ""), err
        states.append(state)
    return states


def _report(args: list[str], out: Path) -> tuple[list[str], Path | None]:
    written = out if "OUT" in args else None
    return [str(out) if a == "OUT" else a for a in args], written


def _same_reports(gt: Path, pred: Path, tmp_path: Path, protocol: str, args: list[str]) -> None:
    states = _save(gt, pred, tmp_path, protocol)
    single_args, single_file = _report(args, tmp_path / "single.out")
    single = run_cli("eval", str(gt), str(pred), "--protocol", protocol, *single_args)
    for order in ([2, 0, 1], [1, 2, 0]):
        merged_args, merged_file = _report(args, tmp_path / "merged.out")
        merged = run_cli("merge", *(states[k] for k in order), *merged_args)
        assert merged == single
        if single_file is not None and merged_file is not None:
            assert merged_file.read_bytes() == single_file.read_bytes()
            merged_file.unlink()


@pytest.mark.parametrize("protocol", ["default", "coco", "voc07"])
@pytest.mark.parametrize("args", REPORTS)
def test_shards_keeping_boxes_render_every_report_as_one_eval_run(
    demo: tuple[Path, Path], tmp_path: Path, protocol: str, args: list[str]
) -> None:
    """Three shards of the demo set, merged in two orders: exit code, stdout, stderr and
    the HTML file equal eval's on the whole set."""
    _same_reports(*demo, tmp_path, protocol, args)


@pytest.fixture(scope="module")
def bccd(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """BCCD's 364 ground-truth files and predictions derived from them (seed 0)."""
    gt = datasets_or_skip("bccd")
    pred = tmp_path_factory.mktemp("bccd") / "pred"
    bench("derive_predictions").derive(gt, pred, seed=0)
    return gt, pred


@pytest.mark.parametrize("protocol", ["default", "coco", "voc07"])
@pytest.mark.parametrize("args", REPORTS)
def test_shards_of_a_real_set_keeping_boxes_render_as_one_eval_run(
    bccd: tuple[Path, Path], tmp_path: Path, protocol: str, args: list[str]
) -> None:
    """The same on a real set (BCCD: dense images, two zero-area boxes)."""
    _same_reports(*bccd, tmp_path, protocol, args)


def test_html_with_pictures_from_shards_is_eval_s(tmp_path: Path) -> None:
    """--images draws the kept boxes on the pictures as eval does."""
    gt, pred = FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred"
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    from PIL import Image

    for key in ("street_01", "street_02"):
        Image.new("RGB", (64, 48), (200, 10, 10)).save(pictures / f"{key}.jpg")
    states = _save(gt, pred, tmp_path, "default")
    single = run_cli("eval", str(gt), str(pred), "--html", str(tmp_path / "a.html"),
                     "--images", str(pictures))  # fmt: skip
    merged = run_cli("merge", *states, "--html", str(tmp_path / "b.html"),
                     "--images", str(pictures))  # fmt: skip
    assert merged == single
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--html", "OUT"], id="html"),
        pytest.param(["--html", "OUT", "--images", "."], id="images"),
        pytest.param(["--errors"], id="errors"),
        pytest.param(["--tightness"], id="tightness"),
        pytest.param(["--errors", "--background-iou", "0.2"], id="background-iou"),
    ],
)
def test_merge_refuses_a_report_of_boxes_of_states_without_them(
    demo: tuple[Path, Path], tmp_path: Path, args: list[str]
) -> None:
    """One line (exit 2) naming the states that keep no boxes and how to keep them; no
    report and no file written."""
    gt, pred = map(str, demo)
    kept = _save(*demo, tmp_path, "default")
    plain = [str(tmp_path / f"p{k}.vms") for k in (1, 3)]
    for k, state in zip((1, 3), plain, strict=True):
        run_cli("eval", gt, pred, "--shard", f"{k}/3", "--save-state", state)
    out = tmp_path / "r.html"
    code, stdout, stderr = run_cli("merge", plain[0], kept[1], plain[1], *_report(args, out)[0])
    assert (code, stdout) == (EXIT_USAGE, "")
    assert stderr == (
        f"vocmatch: error: {plain[0]}, {plain[1]} keep no boxes, which the report asked for "
        "lists or draws: save the state of every shard with --keep-boxes\n"
    )
    assert not out.exists()


def test_junit_of_states_without_boxes_still_says_they_are_not_listed(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """--format junit was not an explicit ask for boxes: states without them give the
    NO_BOXES line; one state with boxes among them changes nothing."""
    gt, pred = map(str, demo)
    kept = _save(*demo, tmp_path, "default")
    plain = str(tmp_path / "p1.vms")
    run_cli("eval", gt, pred, "--shard", "1/3", "--save-state", plain)
    code, out, _ = run_cli("merge", plain, *kept[1:], "--format", "junit", "--max-fp", "0")
    assert code == 1
    assert NO_BOXES in out and "fp: " not in out


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        pytest.param(["--html", "OUT"], "--html", id="html"),
        pytest.param(["--errors"], "--errors", id="errors"),
        pytest.param(["--tightness"], "--tightness", id="tightness"),
        pytest.param(["--format", "junit"], "--format", id="junit"),
        pytest.param(["--keep-boxes"], None, id="keep-boxes"),
    ],
)
def test_a_shard_given_a_report_of_boxes_keeps_them_and_says_where_it_applies(
    demo: tuple[Path, Path], tmp_path: Path, args: list[str], flag: str | None
) -> None:
    """With --save-state, an option of a report that reads boxes keeps them in the state
    (format version 6) and warns that merge renders it; no report is written."""
    state = tmp_path / "s.vms"
    out = tmp_path / "r.html"
    code, stdout, stderr = run_cli(
        "eval", *map(str, demo), "--shard", "1/2", "--save-state", str(state),
        *_report(args, out)[0],
    )  # fmt: skip
    assert (code, stdout) == (0, "")
    warning = (
        f"vocmatch: warning: {flag} applies to the report, which a shard does not write: give "
        "it to `vocmatch merge` (the state keeps the boxes it reads)\n"
    )
    assert stderr == (warning if flag else "") + f"saved 3 images to {state}\n"
    assert not out.exists()
    data = state.read_bytes()
    assert int.from_bytes(data[8:12], "little") == 6
    assert "boxes" in read_state(data).header


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="plain"),
        pytest.param(["--format", "json"], id="json"),
        pytest.param(["--background-iou", "0.2"], id="background-iou-alone"),
    ],
)
def test_a_shard_without_a_report_of_boxes_keeps_none(
    demo: tuple[Path, Path], tmp_path: Path, args: list[str]
) -> None:
    """A --save-state without a report that reads boxes keeps none: the state is as before
    (--background-iou alone changes no report, --errors does)."""
    state = tmp_path / "s.vms"
    code, _, _ = run_cli(
        "eval", *map(str, demo), "--shard", "1/2", "--save-state", str(state), *args
    )
    assert code == 0
    assert "boxes" not in read_state(state.read_bytes()).header


def test_keep_boxes_without_a_state_is_a_usage_error(demo: tuple[Path, Path]) -> None:
    code, out, err = run_cli("eval", *map(str, demo), "--keep-boxes")
    assert (code, out) == (EXIT_USAGE, "")
    assert err.endswith(
        "Error: --keep-boxes keeps a saved state's boxes: give --save-state FILE too\n"
    )

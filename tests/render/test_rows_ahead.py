"""The JSON report's image rows made ahead (:mod:`vocmatch.render.rows_ahead`): a local run in
parts writing the JSON report makes each part's rows as the part comes back, and the report
writes them, the bytes of a run in one process; other outputs, the error analysis and the
library make none; rows that are not exactly the images' own are never written."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import vocmatch
import vocmatch.readers.workers as workers
import vocmatch.run.in_parts as in_parts
from tests.bench_scripts import changed_copy, unscored
from tests.conftest import run_cli
from vocmatch.evaluation.result import ImageResult, SweepResult
from vocmatch.render.json_report import ImageRows, dumps_indented


@pytest.fixture
def in_parts_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--jobs 2`` runs in parts on this small set."""
    monkeypatch.setattr(workers, "available_cores", lambda: 4)
    monkeypatch.setattr(in_parts, "THREADED_FILES", 0)


@pytest.fixture
def joined_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many images each call of ``ImageRows.joined`` wrote (in this process)."""
    sizes: list[int] = []
    joined = ImageRows.joined

    def spy(self: ImageRows, separator: str) -> bytes:
        sizes.append(len(self.images))
        return joined(self, separator)

    monkeypatch.setattr(ImageRows, "joined", spy)
    return sizes


@pytest.mark.usefixtures("in_parts_here")
@pytest.mark.parametrize(
    ("name", "change"),
    [
        pytest.param("coco", None, id="coco"),
        pytest.param("voc12", None, id="voc12"),
        pytest.param("voc07", unscored(4), id="voc07-some-unscored"),
        pytest.param("ultralytics", None, id="ultralytics"),
    ],
)
def test_a_run_in_parts_writes_the_rows_it_made_as_parts_came_back(
    generated: Path,
    tmp_path: Path,
    joined_sizes: list[int],
    name: str,
    change: Callable[[Path], None] | None,
) -> None:
    """Each part's rows made once, from that part's images only; none made again for the
    report; the report the bytes of ``--jobs 1``, on stdout and in a file."""
    folder = changed_copy(generated, tmp_path, change)
    gt, pred = str(folder / "gt"), str(folder / "pred")
    single = run_cli(gt, pred, "--protocol", name, "--format", "json", "--jobs", "1")
    assert single[0] == 0
    images = len(list(folder.joinpath("gt").glob("*.xml")))
    assert joined_sizes == [images]
    joined_sizes.clear()
    assert run_cli(gt, pred, "--protocol", name, "--format", "json", "--jobs", "2") == single
    assert len(joined_sizes) > 1
    assert sum(joined_sizes) == images
    output = tmp_path / "report.json"
    args = ("--protocol", name, "--format", "json", "--jobs", "2", "-o", str(output))
    assert run_cli(gt, pred, *args)[0] == 0
    assert output.read_text() == single[1]


@pytest.mark.usefixtures("in_parts_here")
def test_no_score_at_all_writes_the_rows_from_the_images(
    generated: Path, tmp_path: Path, joined_sizes: list[int]
) -> None:
    """No prediction scored: the parts' results (and rows) are not the evaluation's; the
    report writes its own rows, the bytes of ``--jobs 1``."""
    folder = changed_copy(generated, tmp_path, unscored(1))
    gt, pred = str(folder / "gt"), str(folder / "pred")
    single = run_cli(gt, pred, "--protocol", "voc12", "--format", "json", "--jobs", "1")
    joined_sizes.clear()
    assert run_cli(gt, pred, "--protocol", "voc12", "--format", "json", "--jobs", "2") == single
    assert joined_sizes[-1] == len(list(folder.joinpath("gt").glob("*.xml")))


@pytest.mark.usefixtures("in_parts_here")
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("--format", "csv"), id="csv"),
        pytest.param(("--format", "table"), id="table"),
        pytest.param(("--format", "json", "--errors"), id="json-with-the-error-analysis"),
    ],
)
def test_other_reports_make_no_rows_ahead(
    generated: Path, joined_sizes: list[int], args: tuple[str, ...]
) -> None:
    gt, pred = str(generated / "gt"), str(generated / "pred")
    assert run_cli(gt, pred, *args, "--jobs", "2")[0] == 0
    assert joined_sizes == []


@pytest.mark.usefixtures("in_parts_here")
def test_the_library_makes_no_rows_ahead(generated: Path, joined_sizes: list[int]) -> None:
    report = vocmatch.evaluate(generated / "gt", generated / "pred", protocol="coco", jobs=2)
    assert joined_sizes == []
    assert type(report.evaluation.images) is tuple


def _images(keys: Sequence[str]) -> tuple[ImageResult, ...]:
    sweep = (SweepResult(0.5, 1, 0, 0),)
    return tuple(
        ImageResult(k, f"gt/{k}.xml", f"pred/{k}.xml", 1, 0, 1, 1, 0, 0, 0.5, sweep) for k in keys
    )


def test_rows_are_written_only_for_the_very_images_they_were_made_of() -> None:
    from vocmatch.render.rows_ahead import ImagesWithRows, part_rows, with_rows

    images = _images(["a", "b", "c", "d", "e"])
    parts = [images[3:], images[:1], (), images[1:3]]  # in the order they came back
    made = [(p, part_rows(p)) for p in parts]
    carried = with_rows(images, made)
    assert isinstance(carried, ImagesWithRows)
    assert carried == images
    expected = ImageRows(images).joined(",\n    ")
    assert b"".join(ImageRows(carried).pieces(",\n    ")) == expected
    # Another separator (the images elsewhere than in the report's top-level mapping).
    assert ImageRows(carried).pieces(",\n      ") == [ImageRows(images).joined(",\n      ")]
    # Equal images that are not the same objects, a part lost, a part twice: not carried.
    assert type(with_rows(_images("abcde"), made)) is tuple
    assert type(with_rows(images, made[1:])) is tuple
    assert type(with_rows(images, [*made, made[1]])) is tuple


def test_images_with_rows_pickle_and_render_as_their_tuple() -> None:
    from vocmatch.render.rows_ahead import ImagesWithRows

    images = _images(["a", "b"])
    carried = ImagesWithRows(images, [b"wrong"])
    again = pickle.loads(pickle.dumps(carried))
    assert type(again) is tuple
    assert again == images
    # Nested deeper than the report's images list: written from the images themselves.
    assert dumps_indented({"x": {"images": ImageRows(carried)}}) == dumps_indented(
        {"x": {"images": ImageRows(images)}}
    )

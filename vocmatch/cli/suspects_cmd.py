"""``vocmatch suspects``: ground-truth objects that look mislabelled or missing."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vocmatch.cli.app import main
from vocmatch.cli.console import (
    echo_err,
    in_cli_words,
    library_errors,
    option_words,
    print_report,
    progress_display,
    reader_may_leave,
    save_text,
    stdout_console,
)
from vocmatch.cli.exits import EXIT_SKIPPED
from vocmatch.cli.options import (
    format_option,
    jobs_option,
    max_file_size_option,
    max_rows_option,
    pred_format_options,
    quiet_option,
)
from vocmatch.cli.params import FiniteFloatRange, InputPath
from vocmatch.cli.prepare_options import preparation_extras, preparation_options
from vocmatch.errors import OutputError
from vocmatch.files import check_output
from vocmatch.run.find_suspects import SuspectsRequest, find_suspects

if TYPE_CHECKING:
    from vocmatch.evidence.suspects import SuspectReport
    from vocmatch.readers.formats import BoxFormat
    from vocmatch.readers.parse import AnnotationSet
    from vocmatch.run.evaluate import Geometry, PredFormat


def prepare_output_folder(folder: Path, inputs: Sequence[Path]) -> list[Path]:
    """Check, before any work, a folder that ``suspects`` writes into, and create it.

    The folder may be new, empty, or a previous ``suspects`` output (it holds
    ``suspects.json``), whose LabelImg copies are returned so that those not written again
    can be removed; anything else is refused, as is a folder whose copies would land in an
    input folder (the next run would read them as annotations).

    Returns:
        The copies a previous run wrote there.
    """
    import json

    from vocmatch.evidence.suspects import COPIES_FOLDER

    name = os.fspath(folder)
    copies = os.path.realpath(folder / COPIES_FOLDER)
    with library_errors():
        if not name:
            raise OutputError(name, "the path is empty")
        if os.path.exists(name) and not os.path.isdir(name):
            raise OutputError(name, "it is not a folder")
        for source in inputs:
            real = os.path.realpath(source)
            if os.path.commonpath([copies, real]) in (copies, real):
                raise OutputError(
                    name, f"its copies would mix with the input folder {os.fspath(source)}"
                )
        previous: list[Path] = []
        occupied = False
        if os.path.isdir(name):
            with os.scandir(name) as entries:
                occupied = any(True for _ in entries)
        if occupied:
            record = folder / "suspects.json"
            try:
                listed = json.loads(record.read_text(encoding="utf-8")).get("copies", [])
            except (OSError, ValueError, AttributeError):
                raise OutputError(
                    name,
                    "it holds other files; give a new or empty folder, or one a previous "
                    "vocmatch suspects run wrote",
                ) from None
            previous = [
                folder / entry
                for entry in listed
                if isinstance(entry, str)
                and entry.endswith(".xml")
                and os.path.realpath(folder / entry).startswith(copies + os.sep)
            ]
        try:
            os.makedirs(name, exist_ok=True)
        except OSError as error:
            raise OutputError(name, error.strerror or str(error)) from None
        check_output(folder / "suspects.json")
    return previous


@main.command("suspects")
@click.argument("gt_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_dir", type=InputPath(path_type=Path))
@pred_format_options
@click.option(
    "--output",
    "-o",
    "output_dir",
    type=click.Path(path_type=Path),
    default=None,
    metavar="DIR",
    help="Write DIR/suspects.json, DIR/suspects.csv and, in DIR/annotations, a copy of each "
    "ground-truth file with suspects, each suggestion added as an object named "
    "suspect:<kind>:<class> (open them in LabelImg).",
)
@click.option(
    "--confidence",
    type=FiniteFloatRange.of_field("confidence"),
    default=0.5,
    show_default=True,
    help="A prediction at or above this score is confident (one without a score always is).",
)
@click.option(
    "--background-iou",
    type=FiniteFloatRange.of_field("background_iou"),
    default=0.1,
    show_default=True,
    help="At most this IoU with every object, a prediction overlaps nothing (missing box); "
    "above it with an object of its class, it is on that object (loose box).",
)
@click.option(
    "--match-iou",
    type=FiniteFloatRange.of_field("match_iou"),
    default=0.5,
    show_default=True,
    help="At or above this IoU a prediction is on an object: its own class agrees, another "
    "class is a wrong-class suspect.",
)
@click.option(
    "--duplicate-iou",
    type=FiniteFloatRange.of_field("duplicate_iou"),
    default=0.9,
    show_default=True,
    help="Two objects of one class at or above this IoU are a duplicate.",
)
@preparation_options
@format_option(
    ["table", "json", "csv"],
    "table: the ranked suspects; json and csv: every suspect, as written to --output.",
)
@max_rows_option(20, "Suspects shown in the table (most confident first); 0 shows all.")
@max_file_size_option
@jobs_option()
@quiet_option
def suspects_command(
    gt_dir: Path,
    pred_dir: Path,
    pred_format: PredFormat,
    box_format: BoxFormat,
    coco_gt: Path | None,
    names_file: Path | None,
    split: str | None,
    geometry: Geometry,
    output_dir: Path | None,
    confidence: float,
    background_iou: float,
    match_iou: float,
    duplicate_iou: float,
    output_format: str,
    max_rows: int,
    max_file_size: int,
    jobs: int,
    quiet: bool,
) -> None:
    """List likely annotation mistakes in GT_DIR from the confident predictions in PRED_DIR.

    Missing box (a confident prediction overlaps no object), wrong class (it lies on an
    object of another class, none of its own), loose box (its best IoU with its class lies
    between --background-iou and --match-iou) and duplicate (two objects of one class at
    --duplicate-iou), most confident first. Exit 0, or 3 when files were skipped.
    """
    with library_errors():  # the library's one check of the request
        request = SuspectsRequest(
            gt=gt_dir, pred=pred_dir, pred_format=pred_format, box_format=box_format,
            coco_gt=coco_gt, names=names_file,
            split=split, geometry=geometry, max_file_size=max_file_size, jobs=jobs,
            confidence=confidence, background_iou=background_iou, match_iou=match_iou,
            duplicate_iou=duplicate_iou, **preparation_extras(),
        )  # fmt: skip
    try:
        request.options()
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    previous = prepare_output_folder(output_dir, [gt_dir, pred_dir]) if output_dir else []
    with library_errors(), progress_display(quiet) as progress:
        found = find_suspects(request, progress=progress)
    for line in found.skipped:
        echo_err(f"vocmatch: skipped {in_cli_words(line)}")
    if output_dir is not None:
        write_copies(output_dir, found.report, found.gt, previous)
    if output_format == "json":
        from vocmatch.evidence.suspects import suspects_json

        with reader_may_leave():
            click.echo(suspects_json(found.report), nl=False)
    elif output_format == "csv":
        from vocmatch.evidence.suspects import suspects_csv

        with reader_may_leave():
            click.echo(suspects_csv(found.report), nl=False)
    else:
        from vocmatch.render.evidence_tables import suspects_report

        with reader_may_leave():
            print_report(stdout_console(), suspects_report(found.report, max_rows, option_words))
    if found.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)


def write_copies(
    output_dir: Path, report: SuspectReport, gt: AnnotationSet, previous: list[Path]
) -> None:
    """Write ``suspects.json``, ``suspects.csv`` and a LabelImg copy of each ground-truth
    file with suspects into ``output_dir``; remove a previous run's copies not written
    again."""
    from vocmatch.evidence.suspects import (
        COPIES_FOLDER,
        suspect_copy,
        suspects_csv,
        suspects_json,
    )
    from vocmatch.files import save_bytes
    from vocmatch.readers.regular_files import read_bytes

    by_image: dict[str, list[Any]] = {}
    for suspect in report.suspects:
        by_image.setdefault(suspect.image, []).append(suspect)
    written: list[str] = []
    paths = {a.key: a.path for a in gt.annotations}
    with library_errors():
        for key in sorted(by_image):
            relative = f"{COPIES_FOLDER}/{key}.xml"
            target = output_dir / relative
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except FileExistsError:
                raise OutputError(os.fspath(target), f"{target.parent} is not a folder") from None
            except OSError as error:
                raise OutputError(os.fspath(target), error.strerror or str(error)) from None
            try:
                copy = suspect_copy(read_bytes(paths[key]), by_image[key])
            except ValueError as error:
                echo_err(f"vocmatch: warning: {paths[key]}: no copy written: {error}")
                continue
            save_bytes(target, copy)
            written.append(relative)
        for old in previous:
            if os.fspath(old.relative_to(output_dir)).replace(os.sep, "/") not in written:
                with contextlib.suppress(FileNotFoundError):
                    old.unlink()
    save_text(output_dir / "suspects.json", suspects_json(report, written))
    save_text(output_dir / "suspects.csv", suspects_csv(report))

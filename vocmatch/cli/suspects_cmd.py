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
    library_errors,
    print_report,
    reader_may_leave,
    stdout_console,
    write_text,
)
from vocmatch.cli.exits import EXIT_SKIPPED
from vocmatch.cli.inputs import refuse_unpaired
from vocmatch.cli.options import format_option, max_rows_option
from vocmatch.cli.params import FiniteFloatRange, InputPath, WholeNumberRange
from vocmatch.render.files import OutputError, check_output

if TYPE_CHECKING:
    pass


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
@click.argument("pred_dir", type=InputPath(file_okay=False, path_type=Path))
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
    type=FiniteFloatRange(0.0, 1.0),
    default=0.5,
    show_default=True,
    help="A prediction at or above this score is confident (one without a score always is).",
)
@click.option(
    "--background-iou",
    type=FiniteFloatRange(0.0, 1.0),
    default=0.1,
    show_default=True,
    help="At most this IoU with every object, a prediction overlaps nothing (missing box); "
    "above it with an object of its class, it is on that object (loose box).",
)
@click.option(
    "--match-iou",
    type=FiniteFloatRange(0.0, 1.0),
    default=0.5,
    show_default=True,
    help="At or above this IoU a prediction is on an object: its own class agrees, another "
    "class is a wrong-class suspect.",
)
@click.option(
    "--duplicate-iou",
    type=FiniteFloatRange(0.0, 1.0),
    default=0.9,
    show_default=True,
    help="Two objects of one class at or above this IoU are a duplicate.",
)
@format_option(
    ["table", "json", "csv"],
    "table: the ranked suspects; json and csv: every suspect, as written to --output.",
)
@max_rows_option(20, "Suspects shown in the table (most confident first); 0 shows all.")
@click.option(
    "--jobs",
    "-j",
    type=WholeNumberRange(min=0),
    default=0,
    help="Processes that read files in parallel; 0 (the default) uses every core.",
)
def suspects_command(
    gt_dir: Path,
    pred_dir: Path,
    output_dir: Path | None,
    confidence: float,
    background_iou: float,
    match_iou: float,
    duplicate_iou: float,
    output_format: str,
    max_rows: int,
    jobs: int,
) -> None:
    """List likely annotation mistakes in GT_DIR from the confident predictions in PRED_DIR.

    Missing box (a confident prediction overlaps no object), wrong class (it lies on an
    object of another class, none of its own), loose box (its best IoU with its class lies
    between --background-iou and --match-iou) and duplicate (two objects of one class at
    --duplicate-iou), most confident first. Exit 0, or 3 when files were skipped.
    """
    from vocmatch.evidence.suspects import (
        COPIES_FOLDER,
        SuspectOptions,
        find_suspects,
        suspect_copy,
        suspects_csv,
        suspects_json,
    )
    from vocmatch.readers.parse import read_bytes
    from vocmatch.readers.scan import read_column_pair
    from vocmatch.render.files import write_bytes

    try:
        options = SuspectOptions(confidence, background_iou, match_iou, duplicate_iou)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    previous = prepare_output_folder(output_dir, [gt_dir, pred_dir]) if output_dir else []
    with library_errors():
        gt_columns, pred_columns = read_column_pair(gt_dir, pred_dir, jobs or os.cpu_count() or 1)
        refuse_unpaired(gt_columns, pred_columns, pred_dir)
        gt, pred = gt_columns.to_annotations(), pred_columns.to_annotations()
        del gt_columns, pred_columns
        report = find_suspects(gt, pred, options)
    skipped = [*gt.skipped, *pred.skipped]
    for found in skipped:
        echo_err(f"vocmatch: skipped {found}")
    if output_dir is not None:
        by_image: dict[str, list[Any]] = {}
        for suspect in report.suspects:
            by_image.setdefault(suspect.image, []).append(suspect)
        written: list[str] = []
        paths = {a.key: a.path for a in gt.annotations}
        with library_errors():
            for key in sorted(by_image):
                relative = f"{COPIES_FOLDER}/{key}.xml"
                target = output_dir / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    copy = suspect_copy(read_bytes(paths[key]), by_image[key])
                except ValueError as error:
                    echo_err(f"vocmatch: warning: {paths[key]}: no copy written: {error}")
                    continue
                write_bytes(target, copy)
                written.append(relative)
            for old in previous:
                if os.fspath(old.relative_to(output_dir)).replace(os.sep, "/") not in written:
                    with contextlib.suppress(FileNotFoundError):
                        old.unlink()
        write_text(output_dir / "suspects.json", suspects_json(report, written))
        write_text(output_dir / "suspects.csv", suspects_csv(report))
    if output_format == "json":
        with reader_may_leave():
            click.echo(suspects_json(report), nl=False)
    elif output_format == "csv":
        with reader_may_leave():
            click.echo(suspects_csv(report), nl=False)
    else:
        from vocmatch.render.terminal import suspects_report

        with reader_may_leave():
            print_report(stdout_console(), suspects_report(report, max_rows))
    if skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)

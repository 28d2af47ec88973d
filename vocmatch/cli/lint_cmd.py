"""``vocmatch lint``: check annotation files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vocmatch.cli.app import main
from vocmatch.cli.console import fail, in_cli_words, library_errors
from vocmatch.cli.exits import EXIT_GATE
from vocmatch.cli.options import DEFAULT_DUPLICATE_IOU
from vocmatch.cli.params import FiniteFloatRange, InputPath, WholeNumberRange

if TYPE_CHECKING:
    pass


@main.command("lint")
@click.argument("paths", nargs=-1, type=InputPath(exists=True, path_type=Path))
@click.option(
    "--select",
    multiple=True,
    metavar="CODES",
    help="Report only these rules: comma-separated codes or prefixes (V005,V006 or V00). "
    "[default: all]",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="CODES",
    help="Do not report these rules (codes or prefixes).",
)
@click.option(
    "--classes",
    "classes_file",
    type=InputPath(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Known class names, one per line; turns on V009 unknown-class.",
)
@click.option(
    "--tolerance",
    type=FiniteFloatRange(min=0.0),
    default=0.0,
    show_default=True,
    metavar="PIXELS",
    help="Pixels a box may extend outside the image before V006 reports it.",
)
@click.option(
    "--duplicate-iou",
    type=FiniteFloatRange(0.0, 1.0, min_open=True),
    default=DEFAULT_DUPLICATE_IOU,
    show_default=True,
    help="IoU at or above which two boxes of one class are a V010 duplicate.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "github", "json"]),
    default="text",
    show_default=True,
    help="text: path:line: CODE message; github: GitHub Actions ::error annotations; "
    "json: every finding, for scripts.",
)
@click.option(
    "--jobs",
    "-j",
    type=WholeNumberRange(min=0),
    default=0,
    help="Processes that lint files in parallel; 0 (the default) uses every core.",
)
@click.option("--list-rules", is_flag=True, help="Print the rules and exit.")
def lint_command(
    paths: tuple[Path, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    classes_file: Path | None,
    tolerance: float,
    duplicate_iou: float,
    output_format: str,
    jobs: int,
    list_rules: bool,
) -> None:
    """Check annotation files in PATHS (directories, searched recursively, or files).

    Prints one finding per line and a summary; exits 1 when there are findings.
    """
    from vocmatch.readers import lint

    if list_rules:
        width = max(len(r.name) for r in lint.RULES)
        for rule in lint.RULES:
            click.echo(f"{rule.code}  {rule.name:<{width}}  {in_cli_words(rule.description)}")
        return
    if not paths:
        raise click.UsageError("give at least one directory or file to lint")
    selected = {part.strip().upper() for item in select for part in item.split(",")}
    if "V009" in selected and classes_file is None:
        raise click.UsageError("V009 unknown-class needs --classes FILE")
    with library_errors():
        options = lint.LintOptions(
            codes=lint.select_codes(select, ignore),
            classes=lint.read_classes(classes_file) if classes_file is not None else None,
            tolerance=tolerance,
            duplicate_iou=duplicate_iou,
        )
        result = lint.lint_paths(paths, options, jobs or os.cpu_count() or 1)
    if result.files_checked == 0:
        names = ", ".join(str(p) for p in paths)
        raise fail(f"no .xml annotation files found in {names}")
    if output_format == "json":
        click.echo(lint.to_json(result), nl=False)
    elif output_format == "github":
        for finding in result.findings:
            click.echo(lint.github_annotation(finding))
        # stdout holds only workflow commands; the summary still shows in the job log.
        click.echo(lint.summary(result), err=True)
    else:
        for finding in result.findings:
            click.echo(lint.text_line(finding))
        click.echo(lint.summary(result))
    if result.findings:
        raise click.exceptions.Exit(EXIT_GATE)

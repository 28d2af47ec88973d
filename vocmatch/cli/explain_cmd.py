"""``vocmatch explain``: why two protocols' mAP differ, or which settings give a reported mAP."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vocmatch.cli.app import main
from vocmatch.cli.console import (
    check_outputs,
    library_errors,
    print_report,
    progress_display,
    reader_may_leave,
    report_text,
    save_text,
    stdout_console,
    xml_folders,
)
from vocmatch.cli.inputs import prediction_inputs
from vocmatch.cli.options import (
    convention_extras,
    convention_options,
    fold_case_option,
    format_option,
    jobs_option,
    max_file_size_option,
    output_option,
    pred_format_options,
    quiet_option,
)
from vocmatch.cli.params import InputPath, OutputPath
from vocmatch.cli.prepare_options import preparation_extras, preparation_options
from vocmatch.core.protocol import PROTOCOL_NAMES
from vocmatch.errors import RequestError
from vocmatch.readers.formats import prediction_format
from vocmatch.run.explain import (
    ATTRIBUTIONS,
    MAX_SHAPLEY_CONVENTIONS,
    ExplainRequest,
    explain,
    parse_target,
)

if TYPE_CHECKING:
    from vocmatch.core.preparation import Preparation
    from vocmatch.core.protocol import Conventions
    from vocmatch.evidence.explanation import Attribution, Explanation
    from vocmatch.readers.formats import BoxFormat
    from vocmatch.run.evaluate import Geometry, PredFormat


@click.command("setting", add_help_option=False)
@convention_options
@preparation_options
def _setting_options(**given: Any) -> None:
    """The options of a setting given to --from or --to: those of ``vocmatch eval``."""


def setting_conventions(flag: str, text: str) -> tuple[Conventions, Preparation | None]:
    """The conventions a setting written as on the command line stands for, and its
    preparation of the predictions: a protocol's name, then any of ``eval``'s convention
    and preparation options (``coco --max-dets 300``, ``ultralytics --nms 0.7``).

    Raises:
        click.UsageError: Not a protocol and options (the known ones listed).
    """
    from vocmatch.run.evaluate import ScoreOptions

    try:
        words = shlex.split(text)
    except ValueError as error:
        raise click.UsageError(f"{flag} {text!r}: {error}") from None
    if not words or words[0].startswith("-"):
        raise click.UsageError(
            f"{flag} {text!r}: begin with a protocol's name, as 'coco --max-dets 300'"
        )
    known = sorted(
        name
        for param in _setting_options.params
        for name in (*param.opts, *param.secondary_opts)
        if name != "--protocol"
    )
    try:
        ctx = _setting_options.make_context(flag, ["--protocol", *words])
    except click.NoSuchOption as error:
        raise click.UsageError(
            f"{flag} {text!r}: no such option {error.option_name} (known: {', '.join(known)})"
        ) from None
    except click.BadParameter as error:
        if error.param is not None and error.param.name == "protocol_name":
            raise click.UsageError(
                f"{flag} {text!r}: no such protocol {words[0]!r} "
                f"(known: {', '.join(PROTOCOL_NAMES)})"
            ) from None
        raise click.UsageError(f"{flag} {text!r}: {error.format_message()}") from None
    except click.ClickException as error:
        raise click.UsageError(f"{flag} {text!r}: {error.format_message()}") from None
    with ctx.scope(cleanup=False):
        extras = {**convention_extras(), **preparation_extras()}
    values = ctx.params
    try:
        options = ScoreOptions(
            protocol=values["protocol_name"], iou=values["iou"],
            strict_threshold=values["strict_threshold"],
            pixel_inclusive=values["pixel_inclusive"], match_rule=values["match_rule"],
            difficult=values["difficult"], interpolation=values["interpolation"], **extras,
        )  # fmt: skip
        return options.conventions(), options.preparation()
    except RequestError as error:
        raise click.UsageError(f"{flag} {text!r}: {error}") from None


@main.command("explain")
@click.argument("gt_dir", type=InputPath(file_okay=False, path_type=Path))
@click.argument("pred_dir", type=InputPath(path_type=Path))
@click.option(
    "--from",
    "from_text",
    default=None,
    metavar="SETTING",
    help="The first setting: a protocol, with any of eval's protocol options after it, "
    "quoted ('coco --max-dets 300').",
)
@click.option(
    "--to",
    "to_text",
    default=None,
    metavar="SETTING",
    help="The second setting, written as --from's.",
)
@click.option(
    "--target",
    default=None,
    metavar="MAP",
    help="Instead of two settings: an mAP reported elsewhere (0.6123, or 61.23 as a "
    "percentage); lists the presets and their one- and two-convention variants that give "
    "it to the digits given, or the closest.",
)
@click.option(
    "--attribution",
    type=click.Choice(ATTRIBUTIONS),
    default="steps",
    show_default=True,
    help="steps: change the conventions one at a time in the documented order; shapley: "
    "each convention's delta averaged over every order (2^k evaluations for k differing "
    f"conventions, at most {MAX_SHAPLEY_CONVENTIONS}).",
)
@pred_format_options
@format_option(["table", "json"], "table: the waterfall; json: every step, for scripts.")
@output_option("Write the report to FILE instead of stdout.")
@click.option(
    "--html",
    "html_file",
    type=OutputPath(),
    default=None,
    metavar="FILE",
    help="Also write an HTML page with the waterfall drawn to FILE.",
)
@fold_case_option("Lower-case class names before matching, so Car and car are one class.")
@max_file_size_option
@jobs_option()
@quiet_option
def explain_command(
    gt_dir: Path,
    pred_dir: Path,
    from_text: str | None,
    to_text: str | None,
    target: str | None,
    attribution: Attribution,
    pred_format: PredFormat,
    box_format: BoxFormat,
    coco_gt: Path | None,
    names_file: Path | None,
    split: str | None,
    geometry: Geometry,
    output_format: str,
    output: Path | None,
    html_file: Path | None,
    fold_case: bool,
    max_file_size: int,
    jobs: int,
    quiet: bool,
) -> None:
    """Explain why two settings' mAP on GT_DIR and PRED_DIR differ (--from A --to B), or
    find the settings that give a reported mAP (--target).

    With --from and --to, the conventions that differ are changed one at a time in a fixed
    order (+1 pixel areas, threshold comparison, match IoU threshold, match rule, difficult
    and crowd, maximum detections, AP IoU thresholds, AP integration, summary and area
    ranges); each step shows the mAP after it and its delta, and the deltas add up to the
    difference of the two settings' mAP, each as vocmatch eval reports it.
    """
    if target is not None and (from_text is not None or to_text is not None):
        raise click.UsageError("--target is searched for alone: give no --from or --to")
    if target is None and (from_text is None or to_text is None):
        raise click.UsageError("give --from and --to, or --target")
    if html_file is not None and target is not None:
        raise click.UsageError("--html draws the steps between --from and --to")
    if target is not None:
        try:
            parse_target(target)
        except RequestError as error:
            raise click.UsageError(f"--target {target!r}: {error.message}") from None
    ends: tuple[tuple[Conventions | None, Preparation | None], ...] = ((None, None), (None, None))
    if from_text is not None and to_text is not None:
        ends = (setting_conventions("--from", from_text), setting_conventions("--to", to_text))
    check_outputs(
        [output, html_file],
        files=[
            *([pred_dir] if prediction_format(pred_format).one_file else []),
            coco_gt,
            names_file,
        ],
        folders=xml_folders(gt_dir) + prediction_inputs(pred_dir, pred_format),
    )
    with library_errors():
        request = ExplainRequest(
            gt=gt_dir, pred=pred_dir, pred_format=pred_format, box_format=box_format,
            coco_gt=coco_gt, names=names_file, split=split, geometry=geometry,
            max_file_size=max_file_size, jobs=jobs, fold_case=fold_case,
            from_protocol=ends[0][0], to_protocol=ends[1][0], from_preparation=ends[0][1],
            to_preparation=ends[1][1], target=target, attribution=attribution,
            names_of=None if from_text is None or to_text is None else (from_text, to_text),
        )  # fmt: skip
    with library_errors(), progress_display(quiet) as progress:
        try:
            found = explain(request, progress=progress)
        except RequestError as error:
            if error.field != "attribution":
                raise
            raise click.UsageError(f"--attribution shapley: {error.message}") from None
    show_explanation(found, output_format, output, html_file)


def show_explanation(
    found: Explanation, output_format: str, output: Path | None, html_file: Path | None
) -> None:
    """The explanation on stdout or in ``output``, and the HTML page when asked for."""
    from vocmatch.render.explain_report import explain_html, explain_json, explain_table

    if html_file is not None:
        save_text(html_file, explain_html(found))
    if output_format == "json":
        text = explain_json(found)
        if output is None:
            click.echo(text, nl=False)
        else:
            save_text(output, text)
    elif output is None:
        with reader_may_leave():
            print_report(stdout_console(), explain_table(found))
    else:
        save_text(output, report_text(explain_table(found)))

"""How ``--help`` reads: options grouped by task, commands by purpose, examples at the end.

rich-click renders the help; it is imported only when help is asked for, so ``vocmatch
--version`` and every command that runs start without it (and without rich).
:func:`render_help` builds rich-click's twin of a command (same name, parameters and text)
and renders it, so the commands themselves stay plain click commands.

The groups are rich-click's ``OPTION_GROUPS`` and ``COMMAND_GROUPS``, keyed by command path
("vocmatch eval"). An option left out of every group still shows, under "Options";
``tests/cli/test_cli_help.py`` checks that every option is in exactly one group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich_click import RichHelpConfiguration
    from rich_click.utils import CommandGroupDict, OptionGroupDict

#: The widest the help is drawn on a wide terminal (a narrower one wraps at its width).
MAX_WIDTH = 100

_PROTOCOL = [
    "--protocol",
    "--iou",
    "--sweep",
    "--max-dets",
    "--strict-threshold",
    "--pixel-inclusive",
    "--match-rule",
    "--difficult",
    "--interpolation",
    "--iou-arithmetic",
    "--operating-point",
]

#: The report's outputs, alike for eval and merge (which renders through eval's renderer).
_REPORT_OUTPUT = ["--format", "--output", "--max-rows", "--only-failing", "--classes-csv", "--html"]
#: The gates of a report, alike for eval and merge.
_GATES: OptionGroupDict = {
    "name": "Gates (exit 1 when one fails)",
    "options": ["--fail-under", "--max-fp", "--max-fn"],
}

#: The preparation of the predictions before matching, for every command that scores them.
_PREPARATION: OptionGroupDict = {
    "name": "Preparation (before matching)",
    "options": ["--min-score", "--nms", "--nms-agnostic", "--max-per-image"],
}

#: How predictions and ground truth are read, for every command that reads both.
_INPUTS = ["--pred-format", "--box-format", "--coco-gt", "--names", "--split", "--geometry"]

#: The option panels of each command, in the order shown.
OPTION_GROUPS: dict[str, list[OptionGroupDict]] = {
    "vocmatch eval": [
        {
            "name": "Inputs",
            "options": [
                "--mode",
                "--pred-format",
                "--box-format",
                "--coco-gt",
                "--names",
                "--split",
                "--geometry",
                "--fold-case",
                "--max-file-size",
            ],
        },
        {
            "name": "Classes",
            "options": ["--class-map", "--classes", "--agnostic"],
        },
        {"name": "Protocol", "options": _PROTOCOL},
        _PREPARATION,
        {"name": "Output", "options": [*_REPORT_OUTPUT, "--images", "--quiet"]},
        _GATES,
        {
            "name": "Score thresholds",
            "options": ["--score-threshold", "--score-thresholds", "--beta", "--write-thresholds"],
        },
        {
            "name": "Evidence",
            "options": [
                "--errors",
                "--background-iou",
                "--tightness",
                "--bootstrap",
                "--seed",
                "--slice",
                "--calibration-bins",
                "--count",
                "--target-precision",
                "--target-recall",
                "--confidence-level",
            ],
        },
        {
            "name": "Shards and clusters",
            "options": ["--shard", "--save-state", "--run-id", "--keep-boxes", "--dask"],
        },
        {"name": "Performance", "options": ["--jobs", "--cache", "--cache-verify", "--help"]},
    ],
    "vocmatch diff": [
        {"name": "Inputs", "options": [*_INPUTS, "--fold-case", "--max-file-size"]},
        {"name": "Protocol", "options": _PROTOCOL},
        _PREPARATION,
        {"name": "Output", "options": ["--format", "--output", "--max-rows", "--quiet"]},
        {
            "name": "Gates (exit 1 when one fails)",
            "options": ["--fail-on-regression", "--score-threshold"],
        },
        {"name": "Evidence", "options": ["--bootstrap", "--seed", "--significant", "--correction"]},
        {"name": "Performance", "options": ["--jobs", "--help"]},
    ],
    "vocmatch explain": [
        {"name": "Settings", "options": ["--from", "--to", "--target", "--attribution"]},
        {"name": "Inputs", "options": [*_INPUTS, "--fold-case", "--max-file-size"]},
        {"name": "Output", "options": ["--format", "--output", "--html", "--quiet"]},
        {"name": "Performance", "options": ["--jobs", "--help"]},
    ],
    "vocmatch suspects": [
        {"name": "Inputs", "options": [*_INPUTS, "--max-file-size"]},
        {
            "name": "Thresholds",
            "options": ["--confidence", "--background-iou", "--match-iou", "--duplicate-iou"],
        },
        _PREPARATION,
        {"name": "Output", "options": ["--output", "--format", "--max-rows", "--quiet"]},
        {"name": "Performance", "options": ["--jobs", "--help"]},
    ],
    "vocmatch merge": [
        {"name": "States", "options": ["--partial", "--max-file-size"]},
        {"name": "Output", "options": [*_REPORT_OUTPUT, "--images"]},
        _GATES,
        {"name": "Score thresholds", "options": ["--beta", "--write-thresholds"]},
        {
            "name": "Evidence",
            "options": [
                "--errors",
                "--background-iou",
                "--tightness",
                "--bootstrap",
                "--seed",
                "--calibration-bins",
                "--count",
                "--target-precision",
                "--target-recall",
                "--confidence-level",
                "--help",
            ],
        },
    ],
    "vocmatch lint": [
        {
            "name": "Rules",
            "options": [
                "--select",
                "--ignore",
                "--classes",
                "--tolerance",
                "--duplicate-iou",
                "--list-rules",
            ],
        },
        {"name": "Output", "options": ["--format"]},
        {"name": "Performance", "options": ["--jobs", "--help"]},
    ],
    "vocmatch seg": [
        {"name": "Inputs", "options": ["--classes", "--pred-void"]},
        {"name": "Output", "options": ["--format", "--output", "--max-rows"]},
        {"name": "Performance", "options": ["--jobs", "--help"]},
    ],
    "vocmatch iou": [
        {
            "name": "What A and B are",
            "options": ["--labels", "--xywh", "--polygon", "--pixel-inclusive"],
        },
        {"name": "Verdict and output", "options": ["--threshold", "--format", "--help"]},
    ],
}

#: The command panels of ``vocmatch --help``.
COMMAND_GROUPS: dict[str, list[CommandGroupDict]] = {
    "vocmatch": [
        {"name": "Score predictions", "commands": ["eval", "diff", "merge", "seg"]},
        {"name": "Compare protocols", "commands": ["explain"]},
        {"name": "Check annotations", "commands": ["lint", "suspects"]},
        {"name": "One pair", "commands": ["iou"]},
    ],
}

#: Examples shown at the end of a command's help, line by line.
EPILOGS: dict[str, str] = {
    "vocmatch eval": (
        "Examples:\n"
        "  vocmatch gt/ pred/ --protocol voc07 --html report.html\n"
        "  vocmatch gt/ pred/ --fail-under map=0.5 --format junit -o report.xml\n"
        "  vocmatch gt/ detections.json --pred-format coco --coco-gt gt.json"
    ),
    "vocmatch diff": (
        "Example:\n"
        "  vocmatch diff gt/ run1/ run2/ --bootstrap 1000 \\\n"
        "      --fail-on-regression map=-0.01 --significant 0.05"
    ),
    "vocmatch merge": (
        "Examples:\n"
        "  vocmatch eval gt/ pred/ --shard 1/2 --save-state part1.vms\n"
        "  vocmatch eval gt/ pred/ --shard 2/2 --save-state part2.vms\n"
        "  vocmatch merge part1.vms part2.vms\n"
        "  vocmatch merge part*.vms --format json -o result.json"
    ),
    "vocmatch explain": (
        "Examples:\n"
        "  vocmatch explain gt/ pred/ --from voc07 --to coco\n"
        "  vocmatch explain gt/ pred/ --from coco --to 'coco --max-dets 300'\n"
        "  vocmatch explain gt/ pred/ --target 0.6123"
    ),
    "vocmatch lint": (
        "Examples:\n"
        "  vocmatch lint gt/\n"
        "  vocmatch lint gt/ --classes classes.txt --ignore V006 --format github\n"
        "  vocmatch lint --list-rules"
    ),
    "vocmatch suspects": (
        "Examples:\n"
        "  vocmatch suspects gt/ pred/\n"
        "  vocmatch suspects gt/ pred/ --confidence 0.8 -o suspects/\n"
        "  vocmatch suspects gt/ detections.json --pred-format coco --coco-gt gt.json"
    ),
    "vocmatch seg": (
        "Examples:\n"
        "  vocmatch seg VOC2012/SegmentationClass masks/\n"
        "  vocmatch seg gt_masks/ pred_masks/ --classes classes.txt --format json -o seg.json"
    ),
}


def help_config(width: int | None = None, color: bool = True) -> RichHelpConfiguration:
    """rich-click's settings for vocmatch's help.

    Args:
        width: Draw at this width; by default the terminal's, at most :data:`MAX_WIDTH`.
        color: False draws plain text (the command reference in the docs).
    """
    from rich_click import RichHelpConfiguration

    return RichHelpConfiguration(
        # Compact: option names beside their help, metavar and default after it.
        theme="default-nu",
        # One form for a default, as the help texts write the defaults rich-click cannot show
        # ("[default: 100 under coco, else all]"); the theme's own is "(Default: ...)".
        default_string="\\[default: {}]",
        # So a flag pair wraps between its two names, not inside one.
        delimiter_slash=" / ",
        option_groups=OPTION_GROUPS,
        command_groups=COMMAND_GROUPS,
        # Help texts hold brackets and angle brackets ([CLASS:]METRIC, <bndbox>): plain text.
        text_markup="ansi",
        text_paragraph_linebreaks="\n\n",
        padding_helptext_first_line=(0, 0, 1, 0),
        width=width,
        max_width=width or MAX_WIDTH,
        color_system="auto" if color else None,
        force_terminal=None if color else False,
    )


def command_path(ctx: click.Context) -> str:
    """The command's path by name ("vocmatch eval"), whatever the program was called."""
    names = []
    current: click.Context | None = ctx
    while current is not None:
        names.append(current.command.name or "")
        current = current.parent
    return " ".join(reversed(names))


def render_help(
    command: click.Command, ctx: click.Context, width: int | None = None, color: bool = True
) -> str:
    """The help of ``command`` as rich-click draws it.

    Args:
        command: A plain click command or group of vocmatch.
        ctx: The context the help was asked in (its parents give the command's path).
        width: As for :func:`help_config`.
        color: As for :func:`help_config`.

    Returns:
        The help text, with colour codes only where ``color`` is set and the output is a
        terminal.
    """
    import rich_click

    fields: dict[str, Any] = {
        "name": command.name,
        "params": command.params,
        "help": command.help,
        "epilog": command.epilog,
        "short_help": command.short_help,
        "options_metavar": command.options_metavar,
        "add_help_option": command.add_help_option,
        "context_settings": command.context_settings,
        "no_args_is_help": command.no_args_is_help,
        "hidden": command.hidden,
    }
    epilog = EPILOGS.get(command_path(ctx))
    if epilog is not None:
        from rich.text import Text

        # A Text is drawn as written: one example a line.
        fields["epilog"] = Text(epilog)
    twin: rich_click.RichCommand
    if isinstance(command, click.Group):
        twin = rich_click.RichGroup(commands=command.commands, **fields)
    else:
        twin = rich_click.RichCommand(**fields)
    rich_ctx = rich_click.RichContext(
        twin,
        info_name=ctx.info_name,
        parent=ctx.parent,
        rich_help_config=help_config(width, color),
    )
    # rich pads every line to the full width; the padding is noise in a pipe or a file.
    return "\n".join(line.rstrip() for line in twin.get_help(rich_ctx).splitlines())

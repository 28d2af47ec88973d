"""Which keyword of :func:`vocmatch.evaluate` each option of ``vocmatch eval`` is: the one
table of the command line's options and the library's names.

The command line reads it to word the library's messages with its flags
(:data:`OPTION_OF_FIELD`), and docs/library.md prints it (:func:`flag_table`; a test keeps
the two equal and holds every option of ``eval`` and every field of
:class:`~vocmatch.run.evaluate.EvalRequest` to it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EVAL_CALLS",
    "EVAL_KEYWORDS",
    "EVAL_OUTPUTS",
    "FIELDS_FROM_OUTPUTS",
    "OPTION_OF_FIELD",
    "FlagUse",
    "flag_table",
]


@dataclass(frozen=True, slots=True)
class FlagUse:
    """One option of ``vocmatch eval`` and what the library does with it.

    Attributes:
        option: The option as ``--help`` spells it (``--errors/--no-errors``; ``GT_DIR``
            for an argument).
        target: The keyword of :func:`vocmatch.evaluate` it sets (a field of
            :class:`~vocmatch.run.evaluate.EvalRequest`), or the library call or renderer's
            argument that does what it asks.
        note: How the value is carried over, when not as it is.
    """

    option: str
    target: str
    note: str = ""


#: The options of ``vocmatch eval`` that change what is computed, each with the keyword of
#: :func:`vocmatch.evaluate` (a field of ``EvalRequest``) it sets.
EVAL_KEYWORDS: tuple[FlagUse, ...] = (
    FlagUse("GT_DIR", "gt"),
    FlagUse("PRED_DIR", "pred"),
    FlagUse("--pred-format", "pred_format"),
    FlagUse("--box-format", "box_format"),
    FlagUse("--coco-gt", "coco_gt"),
    FlagUse("--geometry", "geometry"),
    FlagUse("--split", "split"),
    FlagUse("--names", "names"),
    FlagUse("--class-map", "class_map", "the command line reads it into `class_choice`"),
    FlagUse("--classes", "class_choice", "`ClassChoice(classes=...)`"),
    FlagUse("--agnostic", "class_choice", "`ClassChoice(agnostic=True)`"),
    FlagUse("--protocol", "protocol"),
    FlagUse("--iou", "iou"),
    FlagUse("--sweep", "sweep_thresholds", "a list or a range, as text or numbers"),
    FlagUse("--max-dets", "max_dets", "N, or the last of 1,10,N"),
    FlagUse("--min-score", "min_score"),
    FlagUse("--nms", "nms"),
    FlagUse("--nms-agnostic", "nms_agnostic"),
    FlagUse("--max-per-image", "max_per_image"),
    FlagUse("--strict-threshold/--inclusive-threshold", "strict_threshold"),
    FlagUse("--pixel-inclusive/--continuous", "pixel_inclusive"),
    FlagUse("--match-rule", "match_rule"),
    FlagUse("--difficult", "difficult"),
    FlagUse("--interpolation", "interpolation"),
    FlagUse("--iou-arithmetic", "iou_arithmetic"),
    FlagUse("--operating-point", "operating_point"),
    FlagUse("--beta", "beta"),
    FlagUse("--fail-under", "gates", "one text or `Gate` per gate"),
    FlagUse("--max-fp", "max_fp"),
    FlagUse("--max-fn", "max_fn"),
    FlagUse("--score-threshold", "score_threshold"),
    FlagUse("--score-thresholds", "score_thresholds", "a CSV file or a mapping"),
    FlagUse("--errors/--no-errors", "analysis", "and `TableOptions.errors`"),
    FlagUse("--background-iou", "background_iou"),
    FlagUse("--tightness", "analysis", "and `TableOptions.tightness`"),
    FlagUse("--fold-case", "fold_case"),
    FlagUse("--max-file-size", "max_file_size", "in bytes"),
    FlagUse("--jobs", "jobs"),
    FlagUse("--bootstrap", "bootstrap"),
    FlagUse("--seed", "seed"),
    FlagUse("--slice", "slices", "one text or `SliceSpec` per slice"),
    FlagUse("--calibration-bins", "calibration_bins"),
    FlagUse("--count", "count"),
    FlagUse("--target-precision", "target_precision"),
    FlagUse("--target-recall", "target_recall"),
    FlagUse("--confidence-level", "confidence_level"),
    FlagUse("--dask", "dask"),
    FlagUse("--cache", "cache"),
    FlagUse("--cache-verify", "cache_verify"),
)

#: The options of ``vocmatch eval`` that call another part of the library than
#: :func:`vocmatch.evaluate`'s keywords.
EVAL_CALLS: tuple[FlagUse, ...] = (
    FlagUse("--mode", "`evaluate_labels(LabelsRequest(...))`", "for `--mode labels`"),
    FlagUse("--save-state", "`shard_state(request, ...)`, then `.evaluator.save(path)`"),
    FlagUse("--shard", "`shard_state(request, shard=(k, n))`"),
    FlagUse("--run-id", "`shard_state(request, run_id=...)`"),
    FlagUse("--keep-boxes", "`shard_state(request, ...)` of a request with `boxes=True`"),
)

#: The options of ``vocmatch eval`` that change only what is shown or written, each with
#: the renderer (or its argument) that does it.
EVAL_OUTPUTS: tuple[FlagUse, ...] = (
    FlagUse("--format", "`render_text(report, format)`", "`render_table(report)` for table"),
    FlagUse("--output", "the text `render_text` gives, saved to a file"),
    FlagUse("--max-rows", "`TableOptions.max_rows`"),
    FlagUse("--only-failing", "`TableOptions.only_failing`"),
    FlagUse("--classes-csv", "`to_csv_classes(report.evaluation)`"),
    FlagUse("--html", "`render_html(report)`"),
    FlagUse("--images", "`render_html(report, pictures)`"),
    FlagUse("--write-thresholds", "`operating_thresholds(report)`"),
    FlagUse("--quiet", "`evaluate(..., progress=None)`", "no progress bar"),
)

#: Fields of ``EvalRequest`` the command line sets from the outputs asked for, not from a
#: flag of their own: the options that set each.
FIELDS_FROM_OUTPUTS: dict[str, tuple[str, ...]] = {
    "boxes": ("--html", "--format"),
    "reliability": ("--html",),
}

#: Where another command spells a field otherwise than ``eval`` (or names a field no request
#: has), for the messages about it.
_OTHER_SPELLINGS = {
    "pred": "PRED",
    "classes": "--classes",
    "operating_thresholds": "--write-thresholds",
    "alpha": "--significant",
    "correction": "--correction",
}


def _option_of_field() -> dict[str, str]:
    options: dict[str, str] = {}
    for use in EVAL_KEYWORDS:
        options.setdefault(use.target, use.option.split("/")[0])
    return options | _OTHER_SPELLINGS


#: The option that sets each field of a library request, for the messages about it: the
#: first ``eval`` option that sets it (``analysis`` is ``--errors``).
OPTION_OF_FIELD: dict[str, str] = _option_of_field()


def _row(use: FlagUse, target: str) -> str:
    note = f" {use.note} " if use.note else " "
    return f"| `{use.option}` | {target} |{note}|"


def flag_table() -> str:
    """The tables of docs/library.md's "Flags and keywords", in Markdown."""
    lines = ["| Option | Keyword | Note |", "| --- | --- | --- |"]
    lines += [_row(use, f"`{use.target}`") for use in EVAL_KEYWORDS]
    lines += ["", "| Option | Library call | Note |", "| --- | --- | --- |"]
    lines += [_row(use, use.target) for use in EVAL_CALLS]
    lines += ["", "| Output option | Renderer | Note |", "| --- | --- | --- |"]
    lines += [_row(use, use.target) for use in EVAL_OUTPUTS]
    lines += ["", "| Keyword | Set by the outputs asked for |", "| --- | --- |"]
    lines += [
        f"| `{field}` | {', '.join(f'`{option}`' for option in options)} |"
        for field, options in FIELDS_FROM_OUTPUTS.items()
    ]
    return "\n".join(lines)

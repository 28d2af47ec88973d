"""The evidence options of ``eval`` and ``diff``: error types, bootstrap, slices, calibration."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from vocmatch.cli.console import fail, library_errors

if TYPE_CHECKING:
    from rich.console import RenderableType

    from vocmatch.evaluation.engine import MatchedColumns
    from vocmatch.evaluation.evaluate import Evaluation
    from vocmatch.evidence.bootstrap import Bootstrap
    from vocmatch.evidence.calibration import Calibration
    from vocmatch.evidence.slices import Slice, SliceSpec


@dataclass(frozen=True, slots=True)
class Evidence:
    """What --bootstrap, --slice and their kin added to an evaluation, for every output."""

    bootstrap: Bootstrap | None = None
    slices: tuple[Slice, ...] = ()
    calibration: Calibration | None = None  # for every output (--calibration-bins)
    reliability: Calibration | None = None  # for the HTML report


def evidence_for(
    evaluation: Evaluation,
    matched: MatchedColumns | None,
    resamples: int | None,
    seed: int,
    slice_specs: tuple[SliceSpec, ...] = (),
    calibration_bins: int | None = None,
    html: bool = False,
) -> Evidence:
    """The analyses asked for beside the evaluation; the HTML report always draws the
    scores' calibration (with --calibration-bins bins, or 10)."""
    found = Evidence()
    with library_errors():
        if resamples is not None:
            from vocmatch.evidence.bootstrap import bootstrap, resampler

            sampler = resampler(evaluation, matched)
            found = replace(found, bootstrap=bootstrap(evaluation, sampler, resamples, seed))
        if slice_specs:
            from vocmatch.evidence.slices import slice_evaluation

            if matched is None:
                raise fail("--slice: no image was evaluated")
            found = replace(found, slices=slice_evaluation(evaluation, matched, slice_specs))
        if matched is not None and (calibration_bins is not None or html):
            from vocmatch.evidence.calibration import DEFAULT_BINS, calibration

            reliability = calibration(matched, calibration_bins or DEFAULT_BINS)
            found = replace(
                found,
                calibration=reliability if calibration_bins is not None else None,
                reliability=reliability,
            )
    return found


def evidence_report(evidence: Evidence, threshold: float) -> list[RenderableType]:
    """The terminal report's parts for the evidence, each after a blank line."""
    from rich.text import Text

    from vocmatch.render.terminal import bootstrap_table, slice_table

    parts: list[RenderableType] = []
    if evidence.bootstrap is not None:
        parts += [Text(), bootstrap_table(evidence.bootstrap)]
    for found in evidence.slices:
        parts += [Text(), slice_table(found, threshold)]
    if evidence.calibration is not None:
        from vocmatch.render.terminal import calibration_table

        parts += [Text(), calibration_table(evidence.calibration)]
    return parts


def operating_thresholds(evaluation: Evaluation, beta: float) -> str:
    """The ``--write-thresholds`` file: each class's operating point, class,threshold CSV."""
    from vocmatch.evaluation.thresholds import operating_point, thresholds_csv

    return thresholds_csv(
        [(c.name, operating_point(c.curve, c.gt, beta)) for c in evaluation.classes]
    )

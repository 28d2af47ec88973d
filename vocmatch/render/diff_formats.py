"""Run B against run A (``vocmatch diff``) as JSON and as Markdown.

Names are data: JSON is written with ``ensure_ascii``, Markdown names go through
:func:`~vocmatch.escapes.markdown_text`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from vocmatch.render.json_report import conventions_json
from vocmatch.render.markdown import MARKDOWN_MAX_IMAGES, md_number, md_table, md_text
from vocmatch.version import __version__

if TYPE_CHECKING:
    # Only for the annotations: a report imports the modules of the parts it writes.
    from vocmatch.evidence.diff import (
        Change,
        CountChange,
        EvaluationDiff,
        ImageDiff,
        ObjectRef,
    )
    from vocmatch.evidence.paired import DeltaInterval, PairedBootstrap
    from vocmatch.evidence.regression_gates import RegressionResult

__all__ = [
    "diff_to_json",
    "diff_to_json_dict",
    "diff_to_markdown",
    "paired_json",
]


# Rows of a diff, by JSON key, in the order every output lists them: the JSON and the
# Markdown take them from here, each writing its own cells.

_Value = TypeVar("_Value", covariant=True)


class _Rates(Protocol[_Value]):
    """The dataset's rates: of a diff's summary (changes) or of its paired bootstrap."""

    @property
    def map(self) -> _Value: ...
    @property
    def precision(self) -> _Value: ...
    @property
    def recall(self) -> _Value: ...
    @property
    def f1(self) -> _Value: ...


class _ClassRates(Protocol[_Value]):
    """A class's rates: of a diff's class (changes) or of its paired bootstrap."""

    @property
    def ap(self) -> _Value: ...
    @property
    def precision(self) -> _Value: ...
    @property
    def recall(self) -> _Value: ...
    @property
    def f1(self) -> _Value: ...


class _Counts(Protocol):
    """The counts of a diff's summary, class or image."""

    @property
    def tp(self) -> CountChange: ...
    @property
    def fp(self) -> CountChange: ...
    @property
    def fn(self) -> CountChange: ...


def _rates(values: _Rates[_Value]) -> tuple[tuple[str, _Value], ...]:
    return (
        ("map", values.map),
        ("precision", values.precision),
        ("recall", values.recall),
        ("f1", values.f1),
    )


def _class_rates(values: _ClassRates[_Value]) -> tuple[tuple[str, _Value], ...]:
    return (
        ("ap", values.ap),
        ("precision", values.precision),
        ("recall", values.recall),
        ("f1", values.f1),
    )


def _counts(values: _Counts) -> tuple[tuple[str, CountChange], ...]:
    return (("tp", values.tp), ("fp", values.fp), ("fn", values.fn))


def _objects(image: ImageDiff) -> tuple[tuple[str, tuple[ObjectRef, ...]], ...]:
    return (
        ("new_fn", image.new_fn),
        ("fixed_fn", image.fixed_fn),
        ("new_fp", image.new_fp),
        ("removed_fp", image.removed_fp),
    )


#: How the Markdown names each row (the mAP's name depends on the protocol).
_MD_LABELS = {
    "precision": "precision",
    "recall": "recall",
    "f1": "F1",
    "tp": "TP",
    "fp": "FP",
    "fn": "FN",
}


def _md_label(key: str, map_name: str) -> str:
    return map_name if key == "map" else _MD_LABELS[key]


def _change(change: Change) -> dict[str, float | None]:
    return {"a": change.a, "b": change.b, "delta": change.delta}


def _count_change(change: CountChange) -> dict[str, int]:
    return {"a": change.a, "b": change.b, "delta": change.delta}


def _image_diff(image: ImageDiff) -> dict[str, Any]:
    def objects(refs: Iterable[ObjectRef]) -> list[dict[str, Any]]:
        return [{"index": r.index, "name": r.name} for r in refs]

    return {
        "image": image.key,
        "net": image.net,
        **{key: objects(refs) for key, refs in _objects(image)},
        **{key: _count_change(change) for key, change in _counts(image)},
    }


def diff_to_json_dict(
    diff: EvaluationDiff,
    results: Sequence[RegressionResult] = (),
    evidence: PairedBootstrap | None = None,
) -> dict[str, Any]:
    """The diff as plain JSON-ready data (documented in docs/outputs.md).

    Every metric is ``{"a", "b", "delta"}``; images come worst regression first, each with
    its new and fixed FN and new and removed FP as ``{"index", "name"}`` objects (index from
    0 in file order: the ground-truth file for FN, run B's or run A's file for FP).
    """
    conv = diff.conventions
    s = diff.summary
    return {
        "vocmatch": __version__,
        "a": diff.a_name,
        "b": diff.b_name,
        "conventions": conventions_json(conv),
        "summary": {
            **{key: _change(change) for key, change in _rates(s)},
            **{key: _count_change(change) for key, change in _counts(s)},
            "images_changed": sum(1 for i in diff.images if i.changed),
            "worse": diff.worse,
            "better": diff.better,
        },
        "classes": [
            {
                "name": c.name,
                "gt": c.gt,
                **{key: _change(change) for key, change in _class_rates(c)},
                **{key: _count_change(change) for key, change in _counts(c)},
            }
            for c in diff.classes
        ],
        "images": [_image_diff(i) for i in diff.images],
        "only_a": list(diff.only_a),
        "only_b": list(diff.only_b),
        "gates": [
            {
                "gate": r.gate.label,
                "min_delta": r.gate.delta,
                "a": r.change.a,
                "b": r.change.b,
                "delta": r.change.delta,
                "passed": r.passed,
                "reason": r.reason,
                **(
                    {"p_value": r.p_value, "alpha": r.alpha, "below": r.below}
                    if evidence is not None
                    else {}
                ),
                **({"p_adjusted": r.p_adjusted} if r.correction is not None else {}),
            }
            for r in results
        ],
        **_correction_json(results, evidence),
        "passed": all(r.passed for r in results),
        **({"bootstrap": paired_json(evidence)} if evidence is not None else {}),
    }


def _correction_json(
    results: Sequence[RegressionResult], evidence: PairedBootstrap | None
) -> dict[str, Any]:
    """``{"correction": {"method", "alpha", "tests", "notes"}}`` when the gates were
    corrected for their number, else nothing."""
    from vocmatch.evidence.regression_gates import correction_lines

    corrected = [r for r in results if r.correction is not None]
    if not corrected:
        return {}
    lines = correction_lines(results, evidence.resamples if evidence is not None else None)
    return {
        "correction": {
            "method": corrected[0].correction,
            "alpha": corrected[0].alpha,
            "tests": len(corrected),
            "notes": list(lines[1:]),
        }
    }


def diff_to_json(
    diff: EvaluationDiff,
    results: Sequence[RegressionResult] = (),
    evidence: PairedBootstrap | None = None,
) -> str:
    """The diff as indented JSON text, ending in a newline."""
    return json.dumps(diff_to_json_dict(diff, results, evidence), indent=2, allow_nan=False) + "\n"


def _delta_interval(change: DeltaInterval) -> dict[str, Any]:
    return {
        "a": change.a,
        "b": change.b,
        "delta": change.delta,
        "low": change.low,
        "high": change.high,
        "p_value": change.p_value,
        "defined": change.defined,
    }


def paired_json(result: PairedBootstrap) -> dict[str, Any]:
    """The paired bootstrap of a diff as JSON-ready data: each change as ``{"a", "b",
    "delta", "low", "high", "p_value", "defined"}``."""
    return {
        "resamples": result.resamples,
        "seed": result.seed,
        "confidence": result.confidence,
        "images": result.images,
        "summary": {key: _delta_interval(change) for key, change in _rates(result)},
        "classes": [
            {
                "name": c.name,
                **{key: _delta_interval(change) for key, change in _class_rates(c)},
            }
            for c in result.classes
        ],
    }


def _md_interval(change: DeltaInterval) -> list[str]:
    if change.low is None or change.high is None:
        return ["—", "—"]
    p = "—" if change.p_value is None else f"{change.p_value:.4f}"
    return [f"[{change.low:+.4f}, {change.high:+.4f}]", p]


def _md_paired(evidence: PairedBootstrap, map_name: str) -> list[str]:
    """The paired bootstrap's interval and p-value of each change, dataset and classes."""
    coverage = f"{evidence.confidence * 100:g} %"
    lines = [
        "",
        f"### Paired bootstrap: {evidence.resamples:,} resamples of the {evidence.images:,} "
        f"images (seed {evidence.seed})",
        "",
    ]
    rows = [
        [_md_label(key, map_name), _md_signed(change.delta), *_md_interval(change)]
        for key, change in _rates(evidence)
    ]
    rows += [
        [f"{md_text(c.name)} AP", _md_signed(c.ap.delta), *_md_interval(c.ap)]
        for c in evidence.classes
    ]
    lines += md_table(("", "change", f"{coverage} interval", "p"), rows, "lrrr")
    lines += ["", "p: two-sided, of no change (the share of resamples on either side of 0)."]
    return lines


def _md_signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


def diff_to_markdown(
    diff: EvaluationDiff,
    results: Sequence[RegressionResult] = (),
    max_rows: int = MARKDOWN_MAX_IMAGES,
    evidence: PairedBootstrap | None = None,
) -> str:
    """Run B against run A as Markdown, for a pull-request comment or a CI job summary: the
    conventions, the summary (A, B, change), the classes, the images that changed (worst
    first, at most ``max_rows``; 0 lists all) and the regression gates; with ``evidence``,
    each change's paired-bootstrap interval and p-value.

    Objects are named ``class#n``, n counted from 0 in file order, as in every output.
    """
    s = diff.summary
    conventions = " · ".join(f"{name} {value}" for name, value in diff.conventions.describe())
    map_name = "mAP@[.50:.95]" if diff.conventions.summary == "coco" else "mAP"
    lines = [
        "## vocmatch diff",
        "",
        # Not in a code span, where backslash escapes do not work and a backtick ends it.
        f"A {md_text(diff.a_name)} · B {md_text(diff.b_name)}",
        "",
        md_text(conventions),
        "",
        "### Summary (B - A)",
        "",
    ]
    rows = [
        [_md_label(key, map_name), md_number(c.a), md_number(c.b), _md_signed(c.delta)]
        for key, c in _rates(s)
    ]
    rows += [
        [_md_label(key, map_name), str(c.a), str(c.b), f"{c.delta:+d}"] for key, c in _counts(s)
    ]
    lines += md_table(("", "A", "B", "change"), rows, "lrrr")
    if evidence is not None:
        lines += _md_paired(evidence, map_name)
    lines += ["", "### Classes (B - A)", ""]
    class_rows = [
        [
            md_text(c.name), str(c.gt), md_number(c.ap.a), md_number(c.ap.b),
            _md_signed(c.ap.delta), _md_signed(c.precision.delta), _md_signed(c.recall.delta),
            *(f"{change.delta:+d}" for _, change in _counts(c)),
        ]
        for c in diff.classes
    ]  # fmt: skip
    lines += md_table(
        ("class", "GT", "AP A", "AP B", "ΔAP", "Δprecision", "Δrecall", "ΔTP", "ΔFP", "ΔFN"),
        class_rows,
        "l" + "r" * 9,
    )
    changed = [i for i in diff.images if i.changed]
    shown = changed if max_rows == 0 else changed[:max_rows]
    lines += ["", "### Images that changed (worst first)", ""]
    if shown:
        image_rows = [
            [
                md_text(i.key), *(str(len(refs)) for _, refs in _objects(i)), f"{i.net:+d}",
                md_text(", ".join(
                    f"{label} {' '.join(str(r) for r in refs)}"
                    for label, refs in (
                        ("missed", i.new_fn), ("new FP", i.new_fp), ("found", i.fixed_fn),
                        ("FP gone", i.removed_fp),
                    )
                    if refs
                )),
            ]
            for i in shown
        ]  # fmt: skip
        lines += md_table(
            ("image", "new FN", "fixed FN", "new FP", "removed FP", "net", "objects"),
            image_rows,
            "lrrrrrl",
        )
    more = len(changed) - len(shown)
    unchanged = len(diff.images) - len(changed)
    tail = f"; {more:,} more changed images in the JSON" if more else ""
    lines += [
        "",
        f"{len(changed):,} images changed ({diff.worse:,} new errors, {diff.better:,} fixed), "
        f"{unchanged:,} unchanged{tail}. class#n is object n (from 0) of the ground-truth file "
        "for FN, of that run's file for FP.",
    ]
    if results:
        verdict = "passed" if all(r.passed for r in results) else "failed"
        lines += ["", f"### Regression gates: {verdict}", ""]
        lines += md_table(
            ("gate", "result", ""),
            [
                [md_text(str(r.gate)), md_text(str(r)), "pass" if r.passed else "**fail**"]
                for r in results
            ],
            "lll",
        )
        from vocmatch.evidence.regression_gates import correction_lines

        said = correction_lines(results, evidence.resamples if evidence is not None else None)
        for k, line in enumerate(said):
            lines += ["", f"{'' if k == 0 else 'Warning: '}{md_text(line)}."]
    return "\n".join(lines) + "\n"

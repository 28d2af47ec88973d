"""Each number option of the command line takes its range from the library's rule of its
field (vocmatch.checks.FIELD_BOUNDS), so that the two doors refuse the same
values: a value just outside the range is refused by both."""

from __future__ import annotations

from typing import Any

import click
import pytest
from click.testing import CliRunner

from vocmatch.checks import FIELD_BOUNDS, Bounds
from vocmatch.cli import main
from vocmatch.errors import RequestError
from vocmatch.run.compare import DiffRequest
from vocmatch.run.evaluate import EvalRequest
from vocmatch.run.find_suspects import SuspectsRequest

GT = "fixtures/demo/gt"
PRED = "fixtures/demo/pred"

#: Each number field, a request type that has it, and a command and option that set it.
NUMBER_OPTIONS = [
    pytest.param("iou", EvalRequest, "eval", "--iou", id="iou"),
    pytest.param("background_iou", EvalRequest, "eval", "--background-iou", id="background-iou"),
    pytest.param("background_iou", SuspectsRequest, "suspects", "--background-iou", id="suspects-background-iou"),
    pytest.param("beta", EvalRequest, "eval", "--beta", id="beta"),
    pytest.param("alpha", DiffRequest, "diff", "--significant", id="alpha"),
    pytest.param("confidence", SuspectsRequest, "suspects", "--confidence", id="confidence"),
    pytest.param("match_iou", SuspectsRequest, "suspects", "--match-iou", id="match-iou"),
    pytest.param("duplicate_iou", SuspectsRequest, "suspects", "--duplicate-iou", id="duplicate-iou"),
    pytest.param("jobs", EvalRequest, "eval", "--jobs", id="jobs"),
    pytest.param("max_fp", EvalRequest, "eval", "--max-fp", id="max-fp"),
    pytest.param("max_fn", EvalRequest, "eval", "--max-fn", id="max-fn"),
    pytest.param("bootstrap", EvalRequest, "eval", "--bootstrap", id="bootstrap"),
    pytest.param("seed", EvalRequest, "eval", "--seed", id="seed"),
    pytest.param("calibration_bins", EvalRequest, "eval", "--calibration-bins", id="calibration-bins"),
    pytest.param("max_dets", EvalRequest, "eval", "--max-dets", id="max-dets"),
    pytest.param("max_file_size", EvalRequest, "eval", "--max-file-size", id="max-file-size"),
    pytest.param("score_threshold", EvalRequest, "eval", "--score-threshold", id="score-threshold"),
    pytest.param("target_precision", EvalRequest, "eval", "--target-precision", id="target-precision"),
    pytest.param("target_recall", EvalRequest, "eval", "--target-recall", id="target-recall"),
    pytest.param("confidence_level", EvalRequest, "eval", "--confidence-level", id="confidence-level"),
    pytest.param("min_score", EvalRequest, "eval", "--min-score", id="min-score"),
    pytest.param("nms", EvalRequest, "eval", "--nms", id="nms"),
    pytest.param("max_per_image", EvalRequest, "eval", "--max-per-image", id="max-per-image"),
]  # fmt: skip


def _param(command: str, flag: str) -> click.Parameter:
    return next(p for p in main.commands[command].params if flag in p.opts)


def _cli_bounds(param: click.Parameter, field: str) -> Bounds:
    """The range the option's type accepts, as a :class:`Bounds`."""
    kind: Any = param.type
    if isinstance(kind, click.IntRange):
        return Bounds(kind.min, whole=True)
    if isinstance(kind, click.FloatRange):
        return Bounds(kind.min, kind.max, kind.min_open, kind.max_open)
    # Read by a callback (--max-dets, --max-file-size) or any finite number
    # (--score-threshold): the library's bounds are what the callback reads.
    return FIELD_BOUNDS[field]


def test_every_number_field_has_an_option() -> None:
    assert {p.values[0] for p in NUMBER_OPTIONS} == set(FIELD_BOUNDS)


@pytest.mark.parametrize(("field", "request_type", "command", "flag"), NUMBER_OPTIONS)
def test_the_options_range_is_the_librarys(
    field: str, request_type: type[Any], command: str, flag: str
) -> None:
    assert _cli_bounds(_param(command, flag), field) == FIELD_BOUNDS[field]


def _just_outside(bounds: Bounds) -> list[float | int]:
    """Values just outside the range: the bound itself when open, a step past it else."""
    outside: list[float | int] = []
    if bounds.low is not None:
        if bounds.whole:
            outside.append(int(bounds.low) - 1)
        else:
            outside.append(bounds.low if bounds.low_open else bounds.low - 1e-6)
    if bounds.high is not None:
        outside.append(bounds.high if bounds.high_open else bounds.high + 1e-6)
    return outside


CASES = [
    pytest.param(*case.values, value, id=f"{case.id}-{value!r}")
    for case in NUMBER_OPTIONS
    for value in _just_outside(FIELD_BOUNDS[str(case.values[0])])
    if not (value < 0 and FIELD_BOUNDS[str(case.values[0])].whole)  # see the next test
]


def _args(command: str, flag: str, value: str) -> list[str]:
    inputs = [GT, PRED, PRED] if command == "diff" else [GT, PRED]
    extra = ["--bootstrap", "10"] if flag == "--significant" else []
    return [command, *inputs, flag, value, *extra]


@pytest.mark.parametrize(("field", "request_type", "command", "flag", "value"), CASES)
def test_a_value_just_outside_is_refused_by_both_doors(
    field: str, request_type: type[Any], command: str, flag: str, value: float
) -> None:
    extra: dict[str, Any] = {"bootstrap": 10} if field == "alpha" else {}
    inputs: dict[str, Any] = (
        {"gt": GT, "pred_a": PRED, "pred_b": PRED} if request_type is DiffRequest
        else {"gt": GT, "pred": PRED}
    )  # fmt: skip
    with pytest.raises(RequestError) as caught:
        request_type(**inputs, **{field: value}, **extra)
    assert caught.value.field == field
    result = CliRunner().invoke(main, _args(command, flag, repr(value)))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert f"Invalid value for '{flag}'" in result.stderr


@pytest.mark.parametrize(
    ("field", "request_type", "command", "flag"),
    [p for p in NUMBER_OPTIONS if FIELD_BOUNDS[str(p.values[0])].whole],
)
def test_a_count_below_its_least_is_refused_by_both_doors(
    field: str, request_type: type[Any], command: str, flag: str
) -> None:
    """A count below 0 is refused by both (the command line takes no sign)."""
    least = int(FIELD_BOUNDS[field].low or 0)
    with pytest.raises(RequestError):
        request_type(gt=GT, pred=PRED, **{field: least - 1})
    result = CliRunner().invoke(main, _args(command, flag, str(least - 1)))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"Invalid value for '{flag}'" in result.stderr


def test_alpha_one_is_refused_by_the_library_as_by_the_command_line() -> None:
    """A significance level of 1 calls every change significant: both doors refuse it."""
    with pytest.raises(RequestError, match=r"alpha '1': expected a finite number in \(0, 1\)"):
        DiffRequest(gt=GT, pred_a=PRED, pred_b=PRED, bootstrap=10, alpha=1.0)


# One list of names per field ---------------------------------------------------------------

CHOICES = [
    pytest.param("match_rule", "--match-rule", id="match-rule"),
    pytest.param("difficult", "--difficult", id="difficult"),
    pytest.param("interpolation", "--interpolation", id="interpolation"),
    pytest.param("geometry", "--geometry", id="geometry"),
    pytest.param("pred_format", "--pred-format", id="pred-format"),
    pytest.param("protocol", "--protocol", id="protocol"),
]


def _known(field: str) -> tuple[str, ...]:
    """The names the library's rule of ``field`` takes, as its error lists them."""
    with pytest.raises(RequestError) as caught:
        EvalRequest(gt=GT, pred=PRED, **{field: "zzz"})
    assert caught.value.field == field
    listed = str(caught.value).split("(known: ")[1].rstrip(")")
    return tuple(listed.split(", "))


@pytest.mark.parametrize(("field", "flag"), CHOICES)
def test_the_options_choices_are_the_librarys(field: str, flag: str) -> None:
    """A name one door takes the other takes: the option's choices are the library's."""
    kind: Any = _param("eval", flag).type
    assert isinstance(kind, click.Choice)
    assert sorted(kind.choices) == sorted(_known(field))
    result = CliRunner().invoke(main, ["eval", GT, PRED, flag, "zzz"])
    assert result.exit_code == 2
    assert f"Invalid value for '{flag}'" in result.stderr


@pytest.mark.parametrize("value", _just_outside(FIELD_BOUNDS["iou"]))
def test_the_conventions_take_the_iou_range_too(value: float) -> None:
    """A protocol's IoU threshold and every threshold of a sweep follow ``iou``'s rule."""
    from dataclasses import replace

    from vocmatch.core.protocol import conventions_of, threshold_list

    with pytest.raises(RequestError, match="iou_threshold"):
        replace(conventions_of("default"), iou_threshold=value)
    with pytest.raises(RequestError, match="sweep_thresholds"):
        threshold_list("sweep_thresholds", [value])

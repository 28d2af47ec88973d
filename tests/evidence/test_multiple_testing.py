"""Corrections for many gates: Holm and Benjamini-Hochberg, against statsmodels and scipy,
and through `vocmatch diff --correction` on fixtures/regression."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from tests.conftest import run_cli as run
from vocmatch.cli import EXIT_GATE, EXIT_OK, EXIT_USAGE
from vocmatch.errors import RequestError
from vocmatch.evidence.multiple_testing import adjusted_p_values, describe, resolution_note
from vocmatch.run.compare import compare

ORACLE_METHOD = {"holm": "holm", "bh": "fdr_bh"}


@pytest.mark.parametrize(
    ("p_values", "correction", "expected"),
    [
        pytest.param([0.01, 0.04, 0.03], "holm", (0.03, 0.06, 0.06), id="holm-three"),
        pytest.param([0.01, 0.04, 0.03], "bh", (0.03, 0.04, 0.04), id="bh-three"),
        # Holm's step-down keeps the adjusted values non-decreasing in p order.
        pytest.param([0.001, 0.02, 0.019, 0.5], "holm", (0.004, 0.057, 0.057, 0.5), id="holm-hold"),
        # BH's step-up takes the smallest scaled value from above.
        pytest.param([0.01, 0.02, 0.03, 0.04], "bh", (0.04, 0.04, 0.04, 0.04), id="bh-step-up"),
        pytest.param([0.6, 0.9], "holm", (1.0, 1.0), id="holm-capped"),
        pytest.param([0.0, 0.0], "bh", (0.0, 0.0), id="zeros"),
        pytest.param([0.3], "holm", (0.3,), id="one-test-holm"),
        pytest.param([0.3], "bh", (0.3,), id="one-test-bh"),
        pytest.param([], "holm", (), id="none"),
    ],
)
def test_adjusted_values(
    p_values: list[float], correction: str, expected: tuple[float, ...]
) -> None:
    found = adjusted_p_values(p_values, correction)  # type: ignore[arg-type]
    assert found == pytest.approx(expected, rel=1e-12, abs=1e-15)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1.0, 0.05, 0.026, 0.5])),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from(["holm", "bh"]),
)
def test_adjusted_values_equal_statsmodels(p_values: list[float], correction: str) -> None:
    """Every family, ties and zeros included, adjusts as statsmodels' multipletests."""
    found = adjusted_p_values(p_values, correction)  # type: ignore[arg-type]
    _, oracle, _, _ = multipletests(p_values, method=ORACLE_METHOD[correction])
    assert found == pytest.approx(list(oracle), rel=1e-12, abs=1e-15)
    assert all(a >= p - 1e-15 for a, p in zip(found, p_values, strict=True))
    if correction == "bh":
        assert found == pytest.approx(
            list(scipy.stats.false_discovery_control(p_values, method="bh")), rel=1e-12, abs=1e-15
        )
        # BH bounds a share of errors, Holm any error: BH never adjusts more.
        holm = adjusted_p_values(p_values, "holm")
        assert all(b <= h + 1e-15 for b, h in zip(found, holm, strict=True))


@pytest.mark.parametrize(
    ("p_values", "correction", "message"),
    [
        pytest.param(
            [0.1], "bonferroni", "unknown correction 'bonferroni'; known: holm, bh", id="unknown"
        ),
        pytest.param([float("nan")], "holm", "p-values must lie within [0, 1]", id="nan"),
        pytest.param([1.5], "bh", "p-values must lie within [0, 1]", id="above-one"),
        pytest.param([-0.1], "holm", "p-values must lie within [0, 1]", id="negative"),
    ],
)
def test_refused_values(p_values: list[float], correction: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        adjusted_p_values(p_values, correction)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("correction", "tests", "alpha", "resamples", "needed"),
    [
        pytest.param("holm", 80, 0.05, 1000, "1,600", id="holm-80-classes"),
        pytest.param("bh", 80, 0.05, 1599, "1,600", id="one-short"),
        pytest.param("holm", 3, 0.01, 200, "300", id="three-at-0.01"),
    ],
)
def test_too_few_resamples_are_named(
    correction: str, tests: int, alpha: float, resamples: int, needed: str
) -> None:
    note = resolution_note(correction, tests, alpha, resamples)  # type: ignore[arg-type]
    assert note is not None
    assert note.endswith(f"use at least {needed} resamples")


@pytest.mark.parametrize(
    ("tests", "alpha", "resamples"),
    [
        pytest.param(80, 0.05, 1600, id="exactly-enough"),
        pytest.param(1, 0.05, 10, id="one-test-no-correction-needed"),
        pytest.param(3, 0.05, 1000, id="plenty"),
    ],
)
def test_enough_resamples_say_nothing(tests: int, alpha: float, resamples: int) -> None:
    assert resolution_note("holm", tests, alpha, resamples) is None


def test_describe_names_method_family_and_level() -> None:
    assert describe("bh", 1, 0.1) == (
        "p-values adjusted by Benjamini-Hochberg's method over 1 test (false discovery rate at 0.1)"
    )


REGRESSION = "fixtures/regression"
#: pred_b_three misses the person in three of twelve frames: recall falls in every resample
#: that draws one of them, p = 0.026 with 1,000 resamples of seed 0.
THREE = (
    "diff", f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/pred_b_three",
    "--bootstrap", "1000", "--seed", "0", "--significant", "0.05",
    "--fail-on-regression", "recall=-0.01", "--fail-on-regression", "*:recall=-0.01",
)  # fmt: skip


def gates_of(out: str) -> list[tuple[str, float, float | None, bool]]:
    data = json.loads(out)
    return [(g["gate"], g["p_value"], g.get("p_adjusted"), g["passed"]) for g in data["gates"]]


def test_without_correction_the_family_fails() -> None:
    code, out, err = run(*THREE, "--format", "json")
    assert code == EXIT_GATE
    assert gates_of(out) == [
        ("recall", 0.026, None, False),
        ("car:recall", 1.0, None, True),
        ("person:recall", 0.026, None, False),
    ]
    assert "correction" not in json.loads(out)
    assert err.count("vocmatch: regression:") == 2


def test_holm_turns_the_failing_gates_into_passing_ones() -> None:
    """Three tests: 0.026 x 3 = 0.078 > 0.05, so neither fall is significant for the family."""
    code, out, err = run(*THREE, "--format", "json", "--correction", "holm")
    assert code == EXIT_OK
    assert err == ""
    assert gates_of(out) == [
        ("recall", 0.026, pytest.approx(0.078), True),
        ("car:recall", 1.0, 1.0, True),
        ("person:recall", 0.026, pytest.approx(0.078), True),
    ]
    assert json.loads(out)["correction"] == {
        "method": "holm",
        "alpha": 0.05,
        "tests": 3,
        "notes": [],
    }


def test_bh_keeps_them_failing() -> None:
    """BH: 0.026 x 3 / 2 = 0.039 <= 0.05: both falls stay significant."""
    code, out, err = run(*THREE, "--format", "json", "--correction", "bh")
    assert code == EXIT_GATE
    assert gates_of(out) == [
        ("recall", 0.026, pytest.approx(0.039), False),
        ("car:recall", 1.0, 1.0, True),
        ("person:recall", 0.026, pytest.approx(0.039), False),
    ]
    assert "bh-adjusted 0.0390 <= 0.05: significant" in err


def test_identical_runs_pass_a_corrected_gate_on_every_class() -> None:
    code, out, err = run(
        "diff", f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/pred_a",
        "--bootstrap", "200", "--significant", "0.05", "--correction", "holm",
        "--fail-on-regression", "*:ap=-0.01",
    )  # fmt: skip
    assert code == EXIT_OK
    assert err == ""
    assert "car:ap change >= -0.01" in out and "person:ap change >= -0.01" in out
    assert "p-values adjusted by Holm's method over 2 tests" in out


def test_table_and_markdown_state_the_correction() -> None:
    _, table, _ = run(*THREE, "--correction", "holm", columns=200)
    assert "holm-adjusted 0.0780 > 0.05: not significant" in table
    assert (
        "note: p-values adjusted by Holm's method over 3 tests (family-wise error rate at 0.05)"
        in table
    )
    _, markdown, _ = run(*THREE, "--correction", "holm", "--format", "markdown")
    assert (
        "p-values adjusted by Holm's method over 3 tests (family-wise error rate at 0.05)."
        in markdown
    )


def test_too_few_resamples_warn_in_every_output() -> None:
    """Holm over 3 gates at 0.01 needs p <= 0.0033: 200 resamples resolve steps of 0.005."""
    args = [a if a != "0.05" else "0.01" for a in THREE]
    args[args.index("1000")] = "200"
    code, out, err = run(*args, "--correction", "holm", "--format", "json")
    assert code == EXIT_OK  # p = 0.045 for both falls: above 0.01 before any correction
    warning = (
        "Holm over 3 tests at 0.01 needs p <= 0.00333, finer than the 200 resamples resolve "
        "(steps of 0.005): only a p-value of 0 can pass it; use at least 300 resamples"
    )
    assert err.splitlines()[-1] == f"vocmatch: warning: {warning}"
    assert json.loads(out)["correction"]["notes"] == [warning]
    _, markdown, _ = run(*args, "--correction", "holm", "--format", "markdown")
    assert "Warning: Holm over 3 tests at 0.01 needs p" in markdown
    assert markdown.endswith("use at least 300 resamples.\n")


def test_a_gate_on_every_class_with_the_metric_nowhere_fails() -> None:
    """No prediction has a score, so no AP: the gate on every class fails with why, never
    passing for want of a class to test."""
    code, out, err = run(
        "diff", "fixtures/diff/gt", "fixtures/diff/gt", "fixtures/diff/gt",
        "--fail-on-regression", "*:ap=0", "--format", "json",
    )  # fmt: skip
    assert code == EXIT_GATE
    assert err == (
        "vocmatch: regression: *:ap change undefined, needs >= +0.0000 "
        "(ap undefined for every class)\n"
    )
    (gate,) = json.loads(out)["gates"]
    assert (gate["gate"], gate["passed"], gate["reason"]) == (
        "*:ap",
        False,
        "ap undefined for every class",
    )


def test_correction_needs_a_significance_level() -> None:
    code, out, err = run(
        "diff", f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/pred_a",
        "--bootstrap", "20", "--correction", "holm",
    )  # fmt: skip
    assert (code, out) == (EXIT_USAGE, "")
    assert err.startswith("vocmatch: error: --correction: ")
    with pytest.raises(RequestError) as raised:
        compare(f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/pred_a",
                bootstrap=20, correction="holm")  # fmt: skip
    assert raised.value.field == "correction"


def test_unknown_correction_is_refused_with_the_known_ones() -> None:
    with pytest.raises(RequestError) as raised:
        compare(f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/pred_a",
                bootstrap=20, alpha=0.05, correction="bonferroni")  # fmt: skip
    assert raised.value.field == "correction"
    assert "holm" in str(raised.value) and "bh" in str(raised.value)
    code, _, err = run(
        "diff", f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/pred_a",
        "--correction", "bonferroni",
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert "'bonferroni' is not one of 'holm', 'bh'" in err


def test_library_and_command_line_agree() -> None:
    found = compare(
        f"{REGRESSION}/gt", f"{REGRESSION}/pred_a", f"{REGRESSION}/pred_b_three",
        bootstrap=1000, seed=0, alpha=0.05, correction="holm",
        gates=["recall=-0.01", "*:recall=-0.01"],
    )  # fmt: skip
    assert found.passed
    assert [r.p_adjusted for r in found.results] == pytest.approx([0.078, 1.0, 0.078])
    assert np.isclose(found.results[0].p_value or 0.0, 0.026)

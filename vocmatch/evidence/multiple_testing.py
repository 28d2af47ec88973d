"""Corrections for testing many gates at once: Holm's step-down and Benjamini-Hochberg.

A regression gate over every class (``*:ap=-0.01``) is a family of one-sided tests, one per
class. Tested each at level ``alpha``, some class falls "significantly" by chance alone as
classes grow: over 80 classes with no change at all, about four. A correction adjusts each
p-value for the family:

* ``holm`` (Holm 1979) bounds the chance of *any* false failure at ``alpha`` (the
  family-wise error rate), under any dependence between the tests. The ``i``-th smallest of
  ``m`` p-values is multiplied by ``m - i + 1``, and the adjusted values are made
  non-decreasing in that order.
* ``bh`` (Benjamini and Hochberg 1995) bounds the expected *share* of false failures among
  the failures at ``alpha`` (the false discovery rate), for independent or positively
  dependent tests. The ``i``-th smallest is multiplied by ``m / i`` and the adjusted values
  are made non-decreasing from the largest down.

Both cap adjusted values at 1. A test is significant when its adjusted p-value is at most
``alpha``. The adjusted values are those of ``statsmodels``' ``multipletests`` (methods
``holm`` and ``fdr_bh``) and, for ``bh``, of ``scipy.stats.false_discovery_control``.

A p-value estimated from ``B`` resamples is a share, a multiple of ``1 / B``: when the
strictest level a correction asks for, ``alpha / m``, is below ``1 / B``, only a p-value of
0 can pass it, and :func:`resolution_note` says how many resamples would be needed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, get_args

__all__ = [
    "CORRECTIONS",
    "Correction",
    "adjusted_p_values",
    "describe",
    "resolution_note",
]

Correction = Literal["holm", "bh"]
#: The corrections known, in the order messages list them.
CORRECTIONS: tuple[Correction, ...] = get_args(Correction)
_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg"}
_BOUNDS = {"holm": "family-wise error rate", "bh": "false discovery rate"}


def describe(correction: Correction, tests: int, alpha: float) -> str:
    """The correction in words, for a report.

    >>> describe("holm", 12, 0.05)
    "p-values adjusted by Holm's method over 12 tests (family-wise error rate at 0.05)"
    """
    return (
        f"p-values adjusted by {_NAMES[correction]}'s method over {tests} "
        f"test{'' if tests == 1 else 's'} ({_BOUNDS[correction]} at {alpha:g})"
    )


def adjusted_p_values(p_values: Sequence[float], correction: Correction) -> tuple[float, ...]:
    """Each p-value adjusted for the family of all of them, in the order given.

    Args:
        p_values: The family's p-values, each in [0, 1].
        correction: ``"holm"`` or ``"bh"``.

    Returns:
        The adjusted p-values, each at least its p-value and at most 1.

    Raises:
        ValueError: An unknown correction, or a p-value outside [0, 1] (NaN included).

    >>> adjusted_p_values([0.01, 0.04, 0.03], "holm")
    (0.03, 0.06, 0.06)
    >>> adjusted_p_values([0.01, 0.04, 0.03], "bh")
    (0.03, 0.04, 0.04)
    """
    import numpy as np  # not at import: the command line's help reads CORRECTIONS

    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; known: {', '.join(CORRECTIONS)}")
    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        return ()
    if not bool(np.all((p >= 0.0) & (p <= 1.0))):
        raise ValueError("p-values must lie within [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if correction == "holm":
        scaled = ranked * (m - np.arange(m))  # the i-th smallest (from 0) times m - i
        adjusted = np.maximum.accumulate(scaled)
    else:
        scaled = ranked * m / np.arange(1, m + 1)
        adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m, dtype=np.float64)
    out[order] = np.minimum(adjusted, 1.0)
    return tuple(float(v) for v in out)


def resolution_note(correction: Correction, tests: int, alpha: float, resamples: int) -> str | None:
    """Why ``resamples`` are too few for the correction's strictest level, or None.

    The strictest level either correction applies is ``alpha / tests``; a p-value of
    ``resamples`` draws is a multiple of ``1 / resamples``, so below that resolution only a
    p-value of exactly 0 passes.

    >>> print(resolution_note("holm", 80, 0.05, 1000))  # doctest: +NORMALIZE_WHITESPACE
    Holm over 80 tests at 0.05 needs p <= 0.000625, finer than the 1,000 resamples
    resolve (steps of 0.001): only a p-value of 0 can pass it; use at least 1,600 resamples
    >>> resolution_note("holm", 2, 0.05, 1000) is None
    True
    """
    if tests < 2:
        return None
    level = alpha / tests
    if level * resamples >= 1.0 - 1e-12:
        return None
    needed = math.ceil(round(tests / alpha, 9))
    return (
        f"{_NAMES[correction]} over {tests} tests at {alpha:g} needs p <= {level:.3g}, finer "
        f"than the {resamples:,} resamples resolve (steps of {1.0 / resamples:.3g}): only a "
        f"p-value of 0 can pass it; use at least {needed:,} resamples"
    )

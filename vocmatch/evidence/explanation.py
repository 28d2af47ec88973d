"""What an explanation of two settings' mAP found (:func:`vocmatch.run.explain.explain`):
the two settings, the steps between them, or the settings that reproduce a reported mAP.
Records only: the run computes them, the renderers read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vocmatch.core.preparation import Preparation
from vocmatch.core.protocol import Conventions

__all__ = ["Attribution", "Candidate", "ExplainStep", "Explanation", "Setting", "Target"]

#: How the difference is attributed: one convention at a time, or Shapley values.
Attribution = Literal["steps", "shapley"]


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting evaluated: its conventions, its mAP and each class's AP.

    Attributes:
        name: The setting as given (a protocol's name, with its overrides).
        conventions: Its conventions.
        map: Its summary mAP, as ``vocmatch eval`` reports it (NaN where it reports none:
            no object counted).
        classes: Each class's AP (None for a class with no object counted).
        preparation: What was done to the predictions before matching (None: nothing).
    """

    name: str
    conventions: Conventions
    map: float
    classes: tuple[tuple[str, float | None], ...]
    preparation: Preparation | None = None


@dataclass(frozen=True, slots=True)
class ExplainStep:
    """One convention changed (steps), or one convention's share (Shapley).

    Attributes:
        convention: The convention's label (:data:`CONVENTION_ORDER`).
        from_value: Its value in the first setting, worded.
        to_value: Its value in the second, worded.
        map: The mAP once it is changed (steps); None for a Shapley value.
        delta: The change it accounts for.
        classes: Each class's AP after the step (None for a Shapley value or a class with
            no object) and its delta (None when either side has none).
    """

    convention: str
    from_value: str
    to_value: str
    map: float | None
    delta: float
    classes: tuple[tuple[str, float | None, float | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Candidate:
    """A setting tried by the target search.

    Attributes:
        protocol: The preset it starts from.
        options: The conventions changed from the preset, as ``(field, value)`` worded.
        map: Its summary mAP.
    """

    protocol: str
    options: tuple[tuple[str, str], ...]
    map: float


@dataclass(frozen=True, slots=True)
class Target:
    """A number reported elsewhere, to be reproduced to the digits it gives.

    Attributes:
        text: As given.
        value: As a fraction in [0, 1].
        decimals: The decimal places it gives (as a fraction).
        note: How it was read, when not as written (a percentage).
    """

    text: str
    value: float
    decimals: int
    note: str = ""

    def matches(self, value: float) -> bool:
        """``value`` rounds to the target at its decimals (half-way rounds either way)."""
        half = 0.5 * 10.0**-self.decimals
        return abs(value - self.value) <= half * (1 + 1e-9)


@dataclass(frozen=True, slots=True)
class Explanation:
    """What :func:`explain` found.

    Attributes:
        from_setting: The first setting (None for a target search).
        to_setting: The second setting (None for a target search).
        attribution: ``"steps"`` or ``"shapley"``.
        steps: The conventions that differ, in :data:`CONVENTION_ORDER`, with what each
            accounts for; their deltas add up to the difference of the two mAPs.
        target: The number searched for.
        candidates: Settings that reproduce the target, or the closest when none does.
        reproduced: Some candidate reproduces the target.
        tried: Distinct settings evaluated by the target search.
        evaluations: Settings evaluated in all.
        notes: How the target was read; what the inputs' reading noted.

    Example:
        >>> import vocmatch
        >>> found = vocmatch.explain("fixtures/demo/gt", "fixtures/demo/pred", "voc07", "coco")
        >>> total = sum(step.delta for step in found.steps)
        >>> abs(found.from_setting.map + total - found.to_setting.map) < 1e-12
        True
    """

    from_setting: Setting | None
    to_setting: Setting | None
    attribution: Attribution = "steps"
    steps: tuple[ExplainStep, ...] = ()
    target: Target | None = None
    candidates: tuple[Candidate, ...] = ()
    reproduced: bool = False
    tried: int = 0
    evaluations: int = 0
    notes: tuple[str, ...] = ()

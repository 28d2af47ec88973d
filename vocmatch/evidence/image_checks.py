"""One image against the per-image limits of the quality gates (``max_fp``, ``max_fn``):
the record :class:`vocmatch.evidence.gates.ImageChecks` makes for each image read."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ImageCheck"]


@dataclass(frozen=True, slots=True)
class ImageCheck:
    """One image against the per-image limits.

    Attributes:
        key: The image's key.
        fp: False positives at the evaluation threshold.
        fn: Missed ground truth at the evaluation threshold.
        max_fp: The false-positive limit, or None for no limit.
        max_fn: The missed-object limit, or None for no limit.
    """

    key: str
    fp: int
    fn: int
    max_fp: int | None
    max_fn: int | None

    @property
    def fp_failed(self) -> bool:
        """More false positives than ``max_fp`` allows."""
        return self.max_fp is not None and self.fp > self.max_fp

    @property
    def fn_failed(self) -> bool:
        """More missed objects than ``max_fn`` allows."""
        return self.max_fn is not None and self.fn > self.max_fn

    @property
    def passed(self) -> bool:
        """Within every limit."""
        return not (self.fp_failed or self.fn_failed)

    def failures(self) -> tuple[str, ...]:
        """One phrase per limit exceeded: ``fp 2 > max-fp 1``, ``fn 2 > max-fn 0``."""
        out = []
        if self.fp_failed:
            out.append(f"fp {self.fp} > max-fp {self.max_fp}")
        if self.fn_failed:
            out.append(f"fn {self.fn} > max-fn {self.max_fn}")
        return tuple(out)

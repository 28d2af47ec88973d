"""The compiled curves and AP of the devkit and ultralytics summaries (``fastsummary.c``),
used through :mod:`vocmatch.evaluation.summary_kernels`."""

from typing import Any

import numpy as np
import numpy.typing as npt

def class_curves(
    rows: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    score: npt.NDArray[np.floating[Any]],
    matched: npt.NDArray[np.integer[Any]],
    ignored: npt.NDArray[np.integer[Any]],
    level: int,
    n_gt: npt.NDArray[np.float64],
    guard: bool,
    eps: float,
    recall: npt.NDArray[np.float64],
    precision: npt.NDArray[np.float64],
    scores: npt.NDArray[np.float64],
    kept_starts: npt.NDArray[np.int64],
    threads: int = 1,
    /,
) -> None: ...
def curve_ap(
    recall: npt.NDArray[np.float64],
    precision: npt.NDArray[np.float64],
    code: int,
    points: npt.NDArray[np.float64],
    /,
) -> float: ...
def image_order(
    count: npt.NDArray[np.int64],
    conf: npt.NDArray[np.float32],
    within: npt.NDArray[np.int64],
    /,
) -> None: ...
def mean_f1(
    p_curve: npt.NDArray[np.float64],
    r_curve: npt.NDArray[np.float64],
    eps: float,
    out: npt.NDArray[np.float64],
    /,
) -> None: ...
def ultralytics_classes(
    order: npt.NDArray[np.int64],
    label: npt.NDArray[np.integer[Any]],
    matched: npt.NDArray[np.integer[Any]],
    ignored: npt.NDArray[np.integer[Any]],
    conf: npt.NDArray[np.float32],
    levels: npt.NDArray[np.int64],
    n_gt: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    code: int,
    points: npt.NDArray[np.float64],
    grid: npt.NDArray[np.float64],
    ap: npt.NDArray[np.float64],
    p_curve: npt.NDArray[np.float64],
    r_curve: npt.NDArray[np.float64],
    p_all: npt.NDArray[np.float64],
    r_all: npt.NDArray[np.float64],
    /,
) -> None: ...

"""The compiled accumulation (``fastaccumulate.c``), used by
:mod:`vocmatch.evaluation.accumulate`."""

from typing import Any

import numpy as np
import numpy.typing as npt

def coco_accumulate(
    rows: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    n_gt: npt.NDArray[np.int64],
    levels: npt.NDArray[np.float64],
    max_dets: npt.NDArray[np.int64],
    area: npt.NDArray[np.integer[Any]],
    matched: npt.NDArray[np.integer[Any]],
    ignored: npt.NDArray[np.integer[Any]],
    n_thresholds: int,
    n_areas: int,
    eps: float,
    precision: npt.NDArray[np.float64],
    recall: npt.NDArray[np.float64],
    /,
) -> None: ...

"""The compiled accumulation (``fastaccumulate.c``), used by
:mod:`vocmatch.evaluation.coco_tables`."""

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

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

_Result = TypeVar("_Result")
_Sweep = TypeVar("_Sweep")

def image_results(
    cls: type[_Result],
    names: tuple[str, ...],
    values: npt.NDArray[np.int64],
    mean_iou: npt.NDArray[np.float64],
    keys: Sequence[str],
    gt_paths: Sequence[str],
    pred_paths: Sequence[str | None],
    detail: Sequence[Any] | None,
    sweeps: dict[tuple[int, ...], _Sweep],
    make_sweep: Callable[[tuple[int, ...]], _Sweep],
    /,
) -> list[_Result]: ...

"""The compiled matching kernels (``fastmatch.c``), used through
:mod:`vocmatch.core.match_kernels`."""

from typing import Any

def set_bits(flags: Any, pred: Any, level: Any, /) -> None: ...
def ranked_pass(
    gt: Any,
    pred: Any,
    iou: Any,
    rank: Any,
    ignore: Any,
    crowd: Any,
    thresholds: Any,
    strict: bool,
    first: bool,
    taken: Any,
    ranges: tuple[Any, ...] | None,
    threads: int = 1,
    /,
) -> tuple[bytes, bytes, bytes, bytes]: ...
def devkit_flags(
    best_gt: Any,
    best_iou: Any,
    ignore: Any,
    thresholds: Any,
    strict: bool,
    matched: Any,
    ignored: Any,
    /,
) -> None: ...
def devkit_hits(
    best_gt: Any,
    best_iou: Any,
    rank: Any,
    ignore: Any,
    thresholds: Any,
    strict: bool,
    /,
) -> tuple[bytes, bytes, bytes, bytes]: ...
def score_cell_order(
    score: Any, cell: Any, by_score: Any, order: Any, threads: int = 1, /
) -> None: ...
def hit_counts(
    level: Any,
    pred: Any,
    gt: Any,
    image: Any,
    ignore: Any,
    passing: Any,
    counting: Any,
    every: Any,
    /,
) -> None: ...
def image_counts(flags: Any, image: Any, out: Any, /) -> None: ...
def alike_cells(ignore: Any, own: Any, cell: Any, alike: Any, /) -> None: ...
def cell_pairs(cells: Any, /) -> tuple[bytearray, bytearray]: ...
def sorted_cells(
    order: Any,
    by_score: Any,
    rows: Any,
    image: Any,
    label: Any,
    rows_out: Any,
    image_out: Any,
    label_out: Any,
    score_out: Any,
    rank_out: Any,
    threads: int = 1,
    /,
) -> None: ...
def mark_pairs(out: Any, row: Any, col: Any, /) -> None: ...
def class_order(
    label: Any, by_score: Any, order: Any, starts: Any, places: Any, threads: int = 1, /
) -> None: ...
def pair_iou(
    gt_boxes: Any,
    gt_area: Any,
    gt_crowd: Any,
    pred_boxes: Any,
    pred_rows: Any,
    gt: Any,
    pred: Any,
    extra: float,
    out: Any,
    threads: int = 1,
    /,
) -> None: ...
def run_means(values: Any, bounds: Any, out: Any, /) -> bool: ...
def box_areas(boxes: Any, rows: Any, extra: float, out: Any, threads: int = 1, /) -> None: ...

"""Inputs read elsewhere: ground truth and predictions given as URLs (``s3://bucket/gt``,
``file:///data/gt``), read through fsspec, or files read on a Dask cluster (the request's
``dask``). What ``vocmatch eval`` does with URLs and ``--dask``, for every caller of
:func:`vocmatch.evaluate`.

A URL run reads the files whole, in this process; a cluster run reads them on the workers,
which send back their match records (with each image's per-box records and boxes when the
report lists or draws boxes). Either way the report is that of folders read here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vocmatch.errors import RequestError
from vocmatch.run.read_stage import reads_elsewhere

if TYPE_CHECKING:
    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.evaluation.result import Evaluation
    from vocmatch.evaluation.shards.on_dask import DaskEvaluation
    from vocmatch.evaluation.shards.parts import PartOptions
    from vocmatch.readers.scan import ColumnSet
    from vocmatch.run.evaluate import EvalRequest

__all__ = [
    "MISSING_DASK",
    "NOT_ON_DASK",
    "NOT_WITH_URLS",
    "Elsewhere",
    "part_options",
    "read_elsewhere",
    "reads_elsewhere",
    "shard_on_dask",
]

#: What a cluster run needs installed.
MISSING_DASK = "needs dask.distributed: pip install 'vocmatch[dask]'"

#: Request fields a cluster run cannot honour: a split's list lies next to the data; the
#: other formats' readers run here only. (The slices are matched by the workers, with their
#: images: their states keep them.)
NOT_ON_DASK = ("split", "pred_format", "box_format", "coco_gt", "names")
#: The same for inputs given as URLs (read whole, in this process).
NOT_WITH_URLS = ("split", "pred_format", "box_format", "coco_gt", "names")


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """What was read elsewhere: the columns read from URLs, or the evaluation made on a
    cluster from its tasks' match records, with those records (merged) and the boxes.

    Attributes:
        columns: The ground truth and predictions read from URLs.
        evaluation: The evaluation made from the workers' match records.
        records: Those records, merged (the bootstrap and calibration read them).
        boxes: The boxes of the images evaluated on the cluster (ground truth, predictions),
            when the request keeps boxes.
    """

    columns: tuple[ColumnSet, ColumnSet] | None = None
    evaluation: Evaluation | None = None
    records: MatchRecords | None = None
    boxes: tuple[ColumnSet, ColumnSet] | None = None


def read_elsewhere(request: EvalRequest) -> Elsewhere | None:
    """The request's inputs read from URLs (the columns) or on its cluster (the evaluation
    made from the workers' match records, with the boxes when the request keeps them); None
    for folders read here without a cluster.

    Raises:
        RequestError: A field the run cannot honour is set (field named), or dask is not
            installed (field ``dask``).
        InputError: A location cannot be listed or holds no annotation file, or nothing
            pairs.
        DistributedError: The cluster cannot be reached, or a task failed on every try.
    """
    if not reads_elsewhere(request):
        return None
    from vocmatch.run.read_stage import refuse_unpaired, refuse_unpaired_keys

    if request.dask is None:
        _refuse_fields(request, NOT_WITH_URLS)
        from vocmatch.readers.remote import read_location_pair

        gt, pred = read_location_pair(request.gt, request.pred, request.max_file_size)
        refuse_unpaired(gt, pred, request.pred)
        return Elsewhere(columns=(gt, pred))
    found = shard_on_dask(request)
    refuse_unpaired_keys(found.gt_keys, found.pred_keys, request.pred)
    return Elsewhere(evaluation=found.evaluation, records=found.records, boxes=found.boxes)


def shard_on_dask(request: EvalRequest, shard: tuple[int, int] | None = None) -> DaskEvaluation:
    """The request's images (or the ``shard``-th part of them) read and matched on its
    cluster, the workers' states merged
    (:func:`~vocmatch.evaluation.shards.on_dask.records_on_dask`).

    Raises:
        RequestError: A field a cluster run cannot honour is set (field named), or dask is
            not installed (field ``dask``).
        InputError: A location cannot be listed or holds no annotation file.
        DistributedError: The cluster cannot be reached, or a task failed on every try.
    """
    scheduler = request.dask
    if scheduler is None:
        raise RequestError("dask", "no cluster named")
    _refuse_fields(request, NOT_ON_DASK)
    from vocmatch.evaluation.shards.on_dask import dask_client, dask_installed, records_on_dask

    if not dask_installed():
        raise RequestError("dask", MISSING_DASK, scheduler)
    with dask_client(scheduler) as client:
        return records_on_dask(
            _annotations(request.gt),
            request.pred,
            part_options(request),
            client=client,
            shard=shard,
        )


def _refuse_fields(request: EvalRequest, names: tuple[str, ...]) -> None:
    """A field set that this kind of run cannot honour (its default is fine)."""
    why = "on a Dask cluster" if request.dask is not None else "for inputs given as URLs"
    for name in names:
        value = getattr(request, name)
        if value in (None, (), "voc", "xyxy"):
            continue
        raise RequestError(name, f"is not available {why}", str(value))


def _annotations(gt: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """A local VOC folder's ``Annotations``; a URL as given."""
    from vocmatch.readers.remote import is_url
    from vocmatch.readers.voc_layout import annotation_folder

    return gt if is_url(gt) else annotation_folder(Path(gt))[0]


def part_options(request: EvalRequest, roots: tuple[str, str] = ("", "")) -> PartOptions:
    """What the tasks of a run in parts (on a cluster or in local worker processes) need of
    the request: its conventions, case folding, score thresholds, file size limit, slices,
    whether to keep boxes, class choice, geometry, calibration inputs and preparation.

    Args:
        request: The request.
        roots: The folders of both sides as listed (a cluster run sets them itself).
    """
    from vocmatch.evaluation.shards.parts import PartOptions
    from vocmatch.run.evaluate import score_thresholds_of, slice_specs

    return PartOptions(
        request.conventions(),
        request.fold_case,
        score_thresholds_of(request) or None,
        request.max_file_size,
        slices=slice_specs(request.slices),
        keep_boxes=request.keeps_boxes(),
        class_choice=request.class_selection(),
        geometry=request.geometry,
        roots=roots,
        calibration=request.calibration_bins is not None,
        preparation=request.preparation(),
    )

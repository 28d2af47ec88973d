"""Shards of a run: the evaluator of a part of the images, saved with what its reading
skipped (:func:`shard_state`, :func:`evaluator_for`), and saved states merged into the
report of one run on all the files (:func:`read_states`, also ``vocmatch.read_states``):
what ``vocmatch eval --shard K/N --save-state FILE`` and ``vocmatch merge`` do, as a library.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from vocmatch.errors import InputError
from vocmatch.pipeline import (
    EvalRequest,
    PathLike,
    Progress,
    chosen_columns,
    read_inputs,
    score_thresholds_of,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from vocmatch.core.model import SkippedFile
    from vocmatch.evaluation.evaluate import Evaluation
    from vocmatch.evaluation.incremental import Evaluator
    from vocmatch.readers.scan import ColumnSet

__all__ = ["MergedStates", "ShardState", "evaluator_for", "read_states", "shard_state"]


def evaluator_for(
    request: EvalRequest,
    *,
    shard: tuple[int, int] | None = None,
    progress: Progress | None = None,
    columns: tuple[ColumnSet, ColumnSet] | None = None,
) -> Evaluator:
    """An :class:`~vocmatch.evaluation.incremental.Evaluator` holding the request's images
    (or the ``shard``-th part of them), to be saved and merged with the other shards.

    Args:
        request: What to read and how to score it (its extras are not computed here; the
            merged report computes them).
        shard: ``(k, n)``: only the k-th of n deterministic parts of the images (1-based).
        progress: Told how many files are read, of how many.
        columns: The ground truth and predictions already read (as :func:`evaluate` takes).

    Returns:
        The evaluator, ready to save.

    Example:
        >>> from vocmatch.pipeline import evaluate
        >>> request = EvalRequest(gt="fixtures/demo/gt", pred="fixtures/demo/pred")
        >>> halves = [evaluator_for(request, shard=(k, 2)) for k in (1, 2)]
        >>> halves[0].merge(halves[1])
        >>> halves[0].result().summary.map == evaluate(request).evaluation.summary.map
        True
    """
    return shard_state(request, shard=shard, progress=progress, columns=columns).evaluator


@dataclass(frozen=True, slots=True)
class ShardState:
    """The evaluator of a shard's images, and what its reading skipped.

    Attributes:
        evaluator: The images of the shard, matched, with the files skipped recorded
            (:meth:`~vocmatch.evaluation.incremental.Evaluator.add_skipped`), and for the
            first shard (or a whole run) the prediction files without ground truth
            (:meth:`~vocmatch.evaluation.incremental.Evaluator.add_orphans`): its saved state
            carries them to the merge.
        skipped: The files of the shard's images that could not be read (those images are
            left out), files of no image (a duplicate), and for the first shard the
            prediction files of no ground-truth image that could not be read, sorted by path
            and line.
    """

    evaluator: Evaluator
    skipped: tuple[SkippedFile, ...]


def shard_state(
    request: EvalRequest,
    *,
    shard: tuple[int, int] | None = None,
    progress: Progress | None = None,
    columns: tuple[ColumnSet, ColumnSet] | None = None,
) -> ShardState:
    """As :func:`evaluator_for`, with the files the reading skipped (recorded in the
    evaluator too). Without ``columns``, only the shard's files are read
    (:func:`read_inputs`).

    Example:
        >>> request = EvalRequest(gt="fixtures/demo/gt", pred="fixtures/demo/pred")
        >>> state = shard_state(request, shard=(2, 3))
        >>> state.evaluator.keys, state.skipped
        (['street_02', 'street_05'], ())
    """
    from vocmatch.evaluation.engine import orphan_files
    from vocmatch.evaluation.incremental import Evaluator
    from vocmatch.readers.shards import column_keys, shard_keys

    thresholds = score_thresholds_of(request)
    files = progress.files if progress is not None else None
    # Read here, the columns hold the shard's images only; given, they hold every image.
    part = shard if columns is not None else None
    if columns is not None:
        gt, pred = chosen_columns(*columns, request)
    else:
        gt, pred = read_inputs(request.inputs(), files, shard=shard)
    evaluator = Evaluator(
        request.conventions(), fold_case=request.fold_case, score_thresholds=thresholds or None
    )
    evaluator.add_columns(gt, pred, shard=part)
    skipped = sorted((*gt.skipped, *pred.skipped), key=lambda s: (s.path, s.line or 0))
    if part is not None:
        gt_keys = column_keys(gt)
        chosen = shard_keys(gt_keys, part)
        # A file of no ground-truth image is the first shard's to report.
        first = part[0] == 1
        listed = set(gt_keys)
        skipped = [
            s
            for s in skipped
            if s.key is None or s.key in chosen or (first and s.key not in listed)
        ]
    # The first shard reports the prediction files without ground truth, once for the run
    # (all shards read them from a COCO or YOLO file, only the first from a folder of XML).
    if shard is None or shard[0] == 1:
        evaluator.add_orphans(orphan_files(gt, pred))
    evaluator.add_skipped(skipped)
    return ShardState(evaluator, tuple(skipped))


@dataclass(frozen=True, slots=True)
class MergedStates:
    """Evaluator states merged, and their evaluation.

    Attributes:
        evaluator: Every state's images, merged.
        evaluation: Their evaluation as one run on all the files reports it: the files the
            shards skipped, and the note of the score thresholds.
    """

    evaluator: Evaluator
    evaluation: Evaluation


def read_states(paths: Sequence[PathLike]) -> MergedStates:
    """Read evaluator states (saved by shards: :func:`shard_state`, then
    :meth:`~vocmatch.evaluation.incremental.Evaluator.save`) and merge them: all of
    ``vocmatch merge`` but the output. The order of ``paths`` does not change the result.

    Raises:
        InputError: ``paths`` is empty, is one path rather than a list, or holds something
            other than a path.
        StateError: A state cannot be read, or the states cannot be merged (other options,
            an image in two of them).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from vocmatch.pipeline import evaluate
        >>> request = EvalRequest(gt="fixtures/demo/gt", pred="fixtures/demo/pred")
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     paths = [Path(folder, f"{k}.vms") for k in (1, 2)]
        ...     for k, path in enumerate(paths, 1):
        ...         shard_state(request, shard=(k, 2)).evaluator.save(path)
        ...     merged = read_states(paths[::-1])
        >>> merged.evaluation.summary.map == evaluate(request).evaluation.summary.map
        True
    """
    from vocmatch.evaluation.incremental import Evaluator

    if isinstance(paths, (str, bytes, os.PathLike)):
        # A string is a sequence too: its characters would be read as file names.
        shown = os.fsdecode(paths)
        raise InputError(f"expected a list of state files, got one path: {shown!r}")
    if not paths:
        raise InputError("no evaluator state to merge")
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise InputError(f"expected a state file's path, got {type(path).__name__}")
    evaluator = Evaluator.load(paths[0])
    for path in paths[1:]:
        evaluator.merge(Evaluator.load(path))
    evaluation = evaluator.result()
    thresholds = evaluator.score_thresholds
    if thresholds:
        # The note a single run adds (evaluate); the records' own notes are worded already.
        evaluation = replace(evaluation, notes=(*evaluation.notes, thresholds.note()))
    return MergedStates(evaluator, evaluation)

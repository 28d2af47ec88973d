"""``eval --save-state FILE``: the saving of a shard's state that ``vocmatch merge``
reports (:func:`save_shard`), imported only when a state is to be saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vocmatch.cli.cluster import remote_run
from vocmatch.cli.console import (
    echo_err,
    in_cli_words,
    library_errors,
    progress_display,
    report_gates,
)
from vocmatch.cli.exits import EXIT_GATE, EXIT_SKIPPED

if TYPE_CHECKING:
    from vocmatch.run.evaluate import EvalRequest

__all__ = ["SavedShard", "save_shard"]


@dataclass(frozen=True, slots=True)
class SavedShard:
    """Where ``eval --save-state`` saves, and what.

    Attributes:
        path: The state file.
        shard: ``(k, n)``, or None for every image (shard 1 of 1).
        run_id: The run's name, recorded in the state.
    """

    path: Path
    shard: tuple[int, int] | None = None
    run_id: str | None = None


def save_shard(request: EvalRequest, saved: SavedShard, quiet: bool) -> None:
    """Save the evaluator state of a shard's images (``eval --save-state``); the files of
    those images that could not be read are reported, one line each, and exit 3 as a run
    reports them (the state holds the images that were read). The per-image limits
    (``--max-fp``, ``--max-fn``) are checked on the shard's images: exit 1 when one is
    over, once the state is saved."""
    from vocmatch.run.shard_states import shard_state

    with library_errors(), remote_run(request), progress_display(quiet) as progress:
        state = shard_state(request, shard=saved.shard, progress=progress, run_id=saved.run_id)
        progress.close()  # the warnings go below the finished bar, not through it
        for skipped in state.skipped:
            echo_err(f"vocmatch: skipped {in_cli_words(str(skipped))}")
        limits = state.image_gates(request.max_fp, request.max_fn)
        state.evaluator.save(saved.path)
    echo_err(f"saved {len(state.evaluator)} images to {saved.path}")
    if limits is not None:
        report_gates(limits)
        if not limits.passed:
            raise click.exceptions.Exit(EXIT_GATE)
    if state.skipped:
        raise click.exceptions.Exit(EXIT_SKIPPED)

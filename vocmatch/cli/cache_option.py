"""``eval --cache DIR`` and ``--cache-verify``: a run that matches again only the images
whose files changed (:mod:`vocmatch.run.cached`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

#: What ``eval --cache DIR`` does.
CACHE_HELP = (
    "Keep each image's match records in the folder DIR (made if missing), keyed by the "
    "content of its files and by the options: a run again reads and matches only the "
    "images whose files changed, and prints what a run without --cache prints. Files "
    "whose size and times are unchanged are not read again. For XML predictions in "
    "folders or a COCO results file (each image keyed by its records), the whole set, "
    "and a report that lists or draws no box; not with --dask, "
    "--shard or --save-state. A cache that cannot be read or written: one warning, and "
    "the run goes on without it."
)
#: What ``eval --cache-verify`` does.
CACHE_VERIFY_HELP = (
    "With --cache: hash every file, not only those whose size or times changed (files "
    "edited within one mtime tick, or whose times git checkout or rsync -t restored)."
)


def cache_options(function: F) -> F:
    """``--cache DIR`` and ``--cache-verify`` of ``eval``."""
    function = click.option("--cache-verify", is_flag=True, help=CACHE_VERIFY_HELP)(function)
    return click.option(
        "--cache",
        "cache_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        metavar="DIR",
        help=CACHE_HELP,
    )(function)

"""``eval --dask SCHEDULER``, and inputs given as URLs: the files read on a Dask cluster, or
through fsspec, before the evaluation goes on as in any run."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from vocmatch.cli.console import fail
from vocmatch.cli.exits import EXIT_DISTRIBUTED
from vocmatch.cli.params import InputPath, shown_value
from vocmatch.errors import DistributedError
from vocmatch.run.request_checks import SCHEDULER

if TYPE_CHECKING:
    from vocmatch.evaluation.result import Evaluation
    from vocmatch.readers.scan import ColumnSet
    from vocmatch.run.evaluate import EvalRequest

F = TypeVar("F", bound=Callable[..., Any])

#: The message when dask.distributed is missing.
MISSING_DASK = "--dask needs dask.distributed (the dask extra): pip install 'dask[distributed]'"
#: eval options that need what a Dask run does not bring back (``<size>``, ``<pose>``,
#: the other flags, the split files next to the data), or a reader of another format.
_NOT_ON_DASK = (
    "slice_specs",
    "images_dir",
    "split",
    "pred_format",
    "box_format",
    "coco_gt",
    "names_file",
)
#: The same for inputs given as URLs (read whole, in this process).
_NOT_WITH_URLS = ("images_dir", "split", "pred_format", "box_format", "coco_gt", "names_file")


class InputLocation(InputPath):
    """An input folder or an fsspec URL (``s3://bucket/gt``): a URL is kept as text (a
    ``Path`` would fold its ``//``), a folder checked as :class:`InputPath` checks it."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from vocmatch.readers.remote import is_url

        if isinstance(value, str) and is_url(value):
            return value
        return super().convert(value, param, ctx)


class SchedulerParam(click.ParamType):  # type: ignore[type-arg]
    """``local:N`` (N >= 1, a count in ASCII digits), or a scheduler's address:
    ``tcp://host:8786``, ``host:8786``."""

    name = "SCHEDULER"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if SCHEDULER.fullmatch(text):
            return text
        self.fail(
            f"{shown_value(text)} is neither local:N (N >= 1) nor a scheduler address such as "
            "tcp://host:8786",
            param,
            ctx,
        )


def dask_option(function: F) -> F:
    """``--dask SCHEDULER`` of ``eval``."""
    return click.option(
        "--dask",
        "dask_scheduler",
        type=SchedulerParam(),
        metavar="SCHEDULER",
        default=None,
        help="Read the files on a Dask cluster: a scheduler's address (tcp://host:8786), or "
        "local:N for N local worker processes started for the run. Workers read and match "
        "shards of the images and send back their match records (their boxes when the report "
        "draws or re-reads them: --errors, --html, --bootstrap...), merged here; the report is "
        "that of one process. Needs the dask extra (dask.distributed); URLs (s3://...) need "
        "the remote extra (fsspec, s3fs).",
    )(function)


def uses_remote_reading(
    scheduler: str | None, gt_dir: str | os.PathLike[str], pred_dir: str | os.PathLike[str]
) -> bool:
    """Whether the run reads through :func:`read_remote_inputs` (``--dask`` or a URL)."""
    from vocmatch.readers.remote import is_url

    return scheduler is not None or is_url(gt_dir) or is_url(pred_dir)


def read_remote_inputs(request: EvalRequest, scheduler: str | None) -> tuple[ColumnSet, ColumnSet]:
    """The request's ground truth and predictions, read on the cluster ``scheduler`` names,
    or read here through fsspec without one (the library's
    :func:`~vocmatch.run.remote_inputs.read_elsewhere`). Call inside :func:`library_errors`:
    exit 2 for bad input, :data:`EXIT_DISTRIBUTED` when the cluster run fails."""
    _refuse_options(_NOT_ON_DASK if scheduler is not None else _NOT_WITH_URLS, scheduler)
    from vocmatch.run.remote_inputs import read_elsewhere

    with _cluster_errors(scheduler):
        columns, _ = read_elsewhere(replace(request, dask=scheduler), records_may_do=False)
    assert columns is not None  # URLs or a cluster: read_elsewhere reads them
    return columns


def evaluate_on_cluster(request: EvalRequest, scheduler: str) -> Evaluation:
    """The evaluation made on the cluster ``scheduler`` names from its tasks' match records
    (no boxes travel), for a report that needs none. Call inside :func:`library_errors`."""
    _refuse_options(_NOT_ON_DASK, scheduler)
    from vocmatch.run.remote_inputs import read_elsewhere

    with _cluster_errors(scheduler):
        _, evaluation = read_elsewhere(replace(request, dask=scheduler))
    assert evaluation is not None  # a report that needs no box: the workers' records
    return evaluation


@contextmanager
def _cluster_errors(scheduler: str | None) -> Iterator[None]:
    """A missing dask.distributed in the command line's words; a cluster run that fails is
    one line and exit 5."""
    if scheduler is not None:
        try:
            import distributed  # noqa: F401  (only to say what is missing)
        except ImportError:
            raise fail(MISSING_DASK) from None
    try:
        with _dask_logs_silenced():
            yield
    except DistributedError as error:
        raise fail(str(error), EXIT_DISTRIBUTED) from None


#: Loggers whose lines a run on a cluster keeps off stderr: Dask's, and those of the event
#: loop its client runs on ("Task exception was never retrieved" after a lost scheduler).
_DASK_LOGGERS = ("distributed", "dask", "tornado", "asyncio")


@contextmanager
def _dask_logs_silenced() -> Iterator[None]:
    """Dask's log lines (a lost scheduler, the client closing, their tracebacks) kept off
    stderr for the run: its outcome is the one line vocmatch prints. Dask's loggers write
    through handlers of their own, which their children (``distributed.client``, at a
    level of its own) reach too: those handlers, and the loggers, are set above CRITICAL,
    and set back after the run."""
    silent = logging.CRITICAL + 1
    loggers = [logging.getLogger(name) for name in _DASK_LOGGERS]
    handlers = [handler for logger in loggers for handler in logger.handlers]
    logger_levels = [logger.level for logger in loggers]
    handler_levels = [handler.level for handler in handlers]
    for logger in loggers:
        logger.setLevel(silent)
    for handler in handlers:
        handler.setLevel(silent)
    try:
        yield
    finally:
        for logger, level in zip(loggers, logger_levels, strict=True):
            logger.setLevel(level)
        for handler, level in zip(handlers, handler_levels, strict=True):
            handler.setLevel(level)


def _refuse_options(names: tuple[str, ...], scheduler: str | None) -> None:
    """A usage error for an option given that this kind of run cannot honour."""
    ctx = click.get_current_context()
    why = "--dask" if scheduler is not None else "inputs given as URLs"
    for param in ctx.command.params:
        if param.name not in names:
            continue
        if ctx.get_parameter_source(param.name) in (ParameterSource.DEFAULT, None):
            continue
        if ctx.params.get(param.name) in ("voc", "xyxy"):
            continue  # --pred-format voc, --box-format xyxy: what such a run reads
        raise click.UsageError(f"{'/'.join(param.opts)} is not available with {why}", ctx=ctx)

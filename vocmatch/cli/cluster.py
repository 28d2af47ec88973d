"""``eval --dask SCHEDULER``, and inputs given as URLs: the files read on a Dask cluster, or
through fsspec, before the evaluation goes on as in any run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from vocmatch.cli.console import fail
from vocmatch.cli.exits import EXIT_DISTRIBUTED
from vocmatch.cli.params import InputPath, shown_value
from vocmatch.errors import DistributedError
from vocmatch.run.request_checks import SCHEDULER

if TYPE_CHECKING:
    from vocmatch.run.evaluate import EvalRequest

F = TypeVar("F", bound=Callable[..., Any])

#: The message when dask.distributed is missing.
MISSING_DASK = "--dask needs dask.distributed (the dask extra): pip install 'dask[distributed]'"
#: eval options that need what a Dask run does not bring back (the split files next to the
#: data), or a reader of another format. (Slices are matched by the workers; pictures are
#: read here.)
_NOT_ON_DASK = (
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
        "shards of the images and send back their match records (with their boxes when the "
        "report lists or draws them: --errors, --html, --format junit...), merged here; the "
        "report, its bootstrap and calibration included, is that of one process. Needs the "
        "dask extra (dask.distributed); URLs (s3://...) need the remote extra (fsspec, s3fs).",
    )(function)


@contextmanager
def remote_run(request: EvalRequest) -> Iterator[None]:
    """Around a run whose inputs are read on a Dask cluster or from URLs (the library reads
    them: :mod:`vocmatch.run.remote_inputs`): the options such a run cannot honour refused
    in the command line's words (exit 2), a missing dask.distributed said as a flag's
    error, a failed cluster run one line and exit 5, Dask's log lines kept off stderr.
    Nothing for folders read here."""
    from vocmatch.readers.remote import is_url

    scheduler = request.dask
    if scheduler is None and not is_url(request.gt) and not is_url(request.pred):
        yield
        return
    _refuse_options(_NOT_ON_DASK if scheduler is not None else _NOT_WITH_URLS, scheduler)
    with _cluster_errors(scheduler):
        yield


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
    # Only a run on a cluster needs logging (and the string module it imports): a local
    # run, the demo report in a pre-commit hook, starts without them.
    import logging

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

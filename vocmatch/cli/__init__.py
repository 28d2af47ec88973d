"""The ``vocmatch`` command line: the only package that knows click, argv, exit codes and the
Console. One module a command (``eval_cmd``, ``diff_cmd``, ...), over the shared parts
(``app``, ``exits``, ``params``, ``options``, ``console``, ``runtime``).

Exit codes:
    0: evaluated, every file read.
    1: a quality gate or a lint check failed.
    2: bad usage, input that could not be evaluated at all, or a report file that cannot
        be written (``vocmatch: error: cannot write PATH: reason``).
    3: evaluated, but some files were skipped (each named on stderr).
    4: something meant for stdout or stderr could not be written (a full disk, a closed
        descriptor); report files given with ``--output`` and the like are complete.
    5: a run on a Dask cluster (``eval --dask``) failed: a task failed on every try, the
        scheduler could not be reached (or never answered) or was lost mid-run, or the
        merged images were not the listed ones; no report is printed.
    129, 130, 143: ended by SIGHUP, Ctrl-C (SIGINT) or SIGTERM (128 + the signal number).

When several apply, the first in this order wins: 129/130/143, 2, 5, 4, 1, 3, 0. A failed
gate (1) wins over skipped files (3) because the gate is the verdict a CI job asks for; the
skipped files are still named on stderr. Lost output (4) wins over the verdict, which is
still printed where it can be, because a job reading the report must not take a partial
one for whole; a reader that goes away (``vocmatch ... | head``) loses nothing it wanted,
so the exit code stays the verdict.

Rules for a new option or output:
    - a threshold or measure: ``FiniteFloatRange`` (click's ``FloatRange`` lets NaN in), a
      count ``WholeNumberRange``; for a request's field, ``.of_field(field)``, its range
      that of the library's rule (``vocmatch.checks.FIELD_BOUNDS``), and a row in
      :mod:`vocmatch.cli.keywords` for an ``eval`` option;
    - a path read: ``InputPath`` (refuses ""); a report file: ``OutputPath``, checked with
      :func:`check_outputs` before any work and written with :func:`save_text`;
    - names in any text: :mod:`vocmatch.escapes`; stderr lines through :func:`echo_err`.
"""

from __future__ import annotations

# Each command module registers itself on the group when its command is first looked up
# (vocmatch.cli.app.COMMAND_MODULES): a run imports only the command it runs.
from vocmatch.cli.app import main, run
from vocmatch.cli.exits import (
    EXIT_DISTRIBUTED,
    EXIT_GATE,
    EXIT_HANGUP,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_SKIPPED,
    EXIT_TERMINATED,
    EXIT_USAGE,
)

__all__ = [
    "EXIT_DISTRIBUTED",
    "EXIT_GATE",
    "EXIT_HANGUP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OUTPUT",
    "EXIT_SKIPPED",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "main",
    "run",
]

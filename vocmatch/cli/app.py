"""The ``vocmatch`` command group, and :func:`run`, which runs it inside the signal and stream
guards."""

from __future__ import annotations

import gc
import importlib
import os
import signal
import sys
import warnings
from collections.abc import Iterator, MutableMapping
from typing import Any

import click

from vocmatch.cli.console import echo_err, show_usage_error, show_warning
from vocmatch.cli.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_OUTPUT, EXIT_USAGE
from vocmatch.cli.runtime import (
    STOP_SIGNALS,
    Interrupted,
    Stopped,
    guard_standard_streams,
    ignore_further_signals,
    install_signal_handlers,
)
from vocmatch.version import __version__


class RichHelpCommand(click.Command):
    """A command whose ``--help`` rich-click draws, grouped by task (:mod:`vocmatch.cli.help`,
    imported only when help is asked for)."""

    def get_help(self, ctx: click.Context) -> str:
        from vocmatch.cli.help import render_help

        return render_help(self, ctx)


#: Each command and the module that defines it (and registers it on the group when imported).
COMMAND_MODULES = {
    "diff": "vocmatch.cli.diff_cmd",
    "eval": "vocmatch.cli.eval_cmd",
    "explain": "vocmatch.cli.explain_cmd",
    "iou": "vocmatch.cli.iou_cmd",
    "lint": "vocmatch.cli.lint_cmd",
    "merge": "vocmatch.cli.merge_cmd",
    "seg": "vocmatch.cli.seg_cmd",
    "suspects": "vocmatch.cli.suspects_cmd",
}


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands by name, each module imported when its command is first looked
    up: ``vocmatch eval`` loads neither ``diff`` nor ``seg`` (nor what they import), while
    names are listed, tested with ``in`` and completed without importing anything."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._modules = modules
        self._commands: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._commands and name in self._modules:
            importlib.import_module(self._modules[name])  # its decorator sets the entry
        return self._commands[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]
        self._modules.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._commands or name in self._modules

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*self._modules, *self._commands}))

    def __len__(self) -> int:
        return len({*self._modules, *self._commands})


class DefaultGroup(RichHelpCommand, click.Group):
    """A group whose first argument, when it names no subcommand, belongs to ``eval``.

    So ``vocmatch GT_DIR PRED_DIR`` works as written beside ``vocmatch iou ...``. Its
    commands are :data:`COMMAND_MODULES`, each imported when first used.
    """

    default_command = "eval"
    command_class = RichHelpCommand

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(dict(COMMAND_MODULES))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            self.refuse_mistyped_command(ctx, args[0])
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)

    def refuse_mistyped_command(self, ctx: click.Context, word: str) -> None:
        """A usage error for a first argument that is no path but nearly a command's name
        (``vocmatch lnit gt/``): read as ``eval``'s GT_DIR it would only say that ``lnit``
        is not a directory."""
        if word.startswith("-") or os.path.exists(word):
            return
        import difflib

        close = difflib.get_close_matches(word, sorted(self.commands), n=1, cutoff=0.6)
        if close:
            raise click.UsageError(f"no such command {word!r}; did you mean {close[0]!r}?", ctx)


@click.group("vocmatch", cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vocmatch")
def main() -> None:
    """Score object-detection annotations in PASCAL VOC / LabelImg XML.

    vocmatch GT_DIR PRED_DIR evaluates predictions against ground truth (the `eval`
    command); the other commands are listed below.
    """


def run(handle_interrupt: bool | None = None) -> None:
    """Entry point that also turns signals and failed output into quiet, documented exits.

    Ctrl-C prints one line, ``vocmatch: interrupted``, and exits 130; SIGTERM and SIGHUP
    print ``vocmatch: terminated (SIGTERM)`` or ``vocmatch: hung up (SIGHUP)`` and exit 143
    or 129. Worker processes are ended at once and a report file being written is left as
    it was. When the reader of stdout goes away (``vocmatch ... | head``) the rest of the
    output is dropped and the command exits with its verdict. When stdout or stderr cannot
    be written (a full disk, a closed descriptor), the command still runs to its end, says
    so on stderr where it can, and exits 4.

    Args:
        handle_interrupt: Install the Ctrl-C handler; by default only where Python's own is
            in place (a SIGINT ignored by the parent, as for a background job of a script,
            stays ignored). :mod:`vocmatch.__main__` decides before its imports.
    """
    # A run builds hundreds of thousands of small objects with no reference cycles (the
    # listing's paths and stats, boxes, per-image results) and frees them when it ends: the
    # cycle collector would walk each of them at least once and find nothing (a third of the
    # HTML report's time on 5,000 images at the default thresholds; 0.1-0.25 s of processor
    # time on 80,000 images even at a threshold of 100,000). A command runs once and exits,
    # so it runs without the collector (its worker processes, forked, too); what the imports
    # left is frozen out of any collection asked for.
    gc.freeze()
    gc.disable()  # as vocmatch.__main__ does for the imports
    if handle_interrupt is None:
        handle_interrupt = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    install_signal_handlers(handle_interrupt)
    out, err = guard_standard_streams()
    warnings.showwarning = show_warning
    try:
        try:
            # Outside standalone mode click returns, not raises, the code of a command's Exit.
            code = main.main(standalone_mode=False)
        except click.exceptions.Exit as exit_:
            code = exit_.exit_code
        except click.ClickException as error:
            show_usage_error(error)
            code = EXIT_USAGE
    except (Interrupted, KeyboardInterrupt, click.exceptions.Abort):
        ignore_further_signals()
        # On a terminal the echoed ^C has no newline after it.
        start = "\n" if err.isatty() else ""
        click.echo(f"{start}vocmatch: interrupted", err=True)
        code = EXIT_INTERRUPTED
    except Stopped as stopped:
        name = signal.Signals(stopped.signum).name
        click.echo(f"vocmatch: {STOP_SIGNALS.get(name, name)}", err=True)
        code = 128 + stopped.signum
    code = code if isinstance(code, int) else EXIT_OK
    out.flush()
    if out.lost and out.error is not None:
        echo_err(f"vocmatch: error: cannot write to stdout: {out.error.strerror or out.error}")
    err.flush()
    if (out.lost or err.lost) and code not in (EXIT_USAGE, EXIT_INTERRUPTED) and code < 128:
        code = EXIT_OUTPUT
    if code >= 128:
        # Stopped by a signal: the workers are ended and any report file cleaned up; leave
        # now rather than in the interpreter's exit, which joins the pools' threads.
        os._exit(code)
    sys.exit(code)

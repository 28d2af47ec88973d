"""`--help` groups each command's options by task, ends eval's with examples, and reads at
80 columns."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from vocmatch.cli import main
from vocmatch.cli.help import COMMAND_GROUPS, EPILOGS, OPTION_GROUPS

ENV = {"COLUMNS": "80", "NO_COLOR": "1"}


def help_of(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--help"], env=ENV, prog_name="vocmatch")
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("name", sorted(main.commands))
def test_every_option_is_in_exactly_one_group(name: str) -> None:
    """Each option of each command sits in one panel of its command, and every name a panel
    gives is an option of that command."""
    command = main.commands[name]
    # An option by its long name: click keeps a command's help option once made, and made
    # under the group's context its first name is -h.
    options = {
        next(o for o in p.opts if o.startswith("--"))
        for p in command.get_params(click.Context(command))
        if isinstance(p, click.Option) and not p.hidden
    }
    grouped = [o for group in OPTION_GROUPS[f"vocmatch {name}"] for o in group["options"]]
    assert sorted(grouped) == sorted(options)


def test_every_command_is_in_a_group() -> None:
    """`vocmatch --help` lists every command under one heading."""
    grouped = [c for group in COMMAND_GROUPS["vocmatch"] for c in group["commands"]]
    assert sorted(grouped) == sorted(main.commands)


def test_eval_help_is_grouped_by_task_and_ends_with_examples() -> None:
    """eval --help shows its panels in order and three example command lines last."""
    text = help_of("eval")
    titles = [g["name"] for g in OPTION_GROUPS["vocmatch eval"]]
    positions = [text.index(f"═ {title} ═") for title in titles]
    assert positions == sorted(positions)
    tail = text.rstrip().splitlines()[-4:]
    assert tail[0].strip() == "Examples:"
    assert [line.split()[0] for line in tail[1:]] == ["vocmatch"] * 3
    assert EPILOGS["vocmatch eval"].splitlines()[1].strip() == tail[1].strip()


@pytest.mark.parametrize("args", [[], *[[name] for name in sorted(main.commands)]])
def test_help_fits_80_columns_without_colour(args: list[str]) -> None:
    """At 80 columns no line is wider, and with NO_COLOR there are no escape codes."""
    text = help_of(*args)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "\x1b[" not in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_help_of_the_default_command_is_eval_s() -> None:
    """`vocmatch GT_DIR --help` is eval's help: the group still hands a bare path to eval."""
    assert help_of("fixtures/demo/gt") == help_of("eval")


def test_default_command_still_runs_eval(demo: tuple[Path, Path]) -> None:
    """`vocmatch GT_DIR PRED_DIR` evaluates, as `vocmatch eval GT_DIR PRED_DIR` does."""
    gt, pred = (str(p) for p in demo)
    bare = CliRunner().invoke(main, [gt, pred, "--format", "json"], env=ENV)
    named = CliRunner().invoke(main, ["eval", gt, pred, "--format", "json"], env=ENV)
    assert bare.exit_code == named.exit_code == 0
    assert bare.stdout == named.stdout


@pytest.mark.parametrize("args", [[], *[[name] for name in sorted(main.commands)]])
def test_help_writes_every_default_one_way(args: list[str]) -> None:
    """A default reads ``[default: ...]`` in every command's help, whether rich-click shows
    it or the help text states it; never ``(Default: ...)``."""
    text = " ".join(help_of(*args).split())  # a default wrapped over two lines reads as one
    assert "(Default" not in text
    assert "default=" not in text
    if args:
        assert "[default: " in text


#: The commands that score or check a set: each help ends with examples to copy.
EXAMPLE_COMMANDS = ["eval", "diff", "merge", "lint", "suspects", "seg"]


@pytest.mark.parametrize("name", EXAMPLE_COMMANDS)
def test_help_ends_with_examples_that_use_real_options(name: str) -> None:
    """The help of each command that reads a set ends with example command lines, and every
    option an example gives is an option of the command it runs."""
    text = help_of(name).rstrip()
    heading = max(text.rfind("\n Examples:\n"), text.rfind("\n Example:\n"))
    assert heading > 0, f"{name} --help has no examples"
    examples = " ".join(text[heading:].split("\n")[2:]).replace("\\", " ").split("vocmatch ")
    commands = [e.split() for e in examples if e.strip()]
    assert commands
    for words in commands:
        command = main.commands[words[0] if words[0] in main.commands else "eval"]
        known = {
            opt for p in command.params for opt in (*p.opts, *getattr(p, "secondary_opts", []))
        }
        given = [w for w in words if w.startswith("-")]
        assert set(given) <= known | {"--help", "-h"}, (words, known)
    assert any(words[0] == name for words in commands) or name == "eval"

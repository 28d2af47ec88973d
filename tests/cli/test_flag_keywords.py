"""Each option of `vocmatch eval` is a keyword of `vocmatch.evaluate` or a renderer's, in one
table the command line uses (to word the library's messages) and docs/library.md prints."""

from __future__ import annotations

import dataclasses
import os

import click
import pytest

from tests.conftest import ROOT
from vocmatch.cli import main
from vocmatch.cli.keywords import (
    EVAL_CALLS,
    EVAL_KEYWORDS,
    EVAL_OUTPUTS,
    FIELDS_FROM_OUTPUTS,
    OPTION_OF_FIELD,
    flag_table,
)
from vocmatch.run.evaluate import EvalRequest

LIBRARY_DOCS = ROOT / "docs" / "library.md"
START = (
    "<!-- flags and keywords: generated from vocmatch/cli/keywords.py by "
    "tests/cli/test_flag_keywords.py -->"
)
END = "<!-- end of flags and keywords -->"


def _spelling(param: click.Parameter) -> str:
    """A parameter as the table spells it: its long flags, or an argument's metavar."""
    if isinstance(param, click.Argument):
        return (param.name or "").upper()
    longs = [opt for opt in param.opts if opt.startswith("--")]
    secondary = [opt for opt in getattr(param, "secondary_opts", []) if opt.startswith("--")]
    return "/".join(longs + secondary)


def test_every_eval_option_is_in_the_table() -> None:
    """Every option of eval is a keyword, another library call or an output option, once."""
    listed = [use.option for use in (*EVAL_KEYWORDS, *EVAL_CALLS, *EVAL_OUTPUTS)]
    assert len(listed) == len(set(listed))
    options = [_spelling(param) for param in main.commands["eval"].params]
    assert sorted(options) == sorted(listed)


def test_every_request_field_has_a_flag() -> None:
    """Every field of EvalRequest is set by an eval option, or from the outputs asked for."""
    fields = {field.name for field in dataclasses.fields(EvalRequest)}
    keywords = {use.target for use in EVAL_KEYWORDS}
    assert keywords <= fields, keywords - fields
    assert set(FIELDS_FROM_OUTPUTS) <= fields
    assert fields == keywords | set(FIELDS_FROM_OUTPUTS)
    assert not keywords & set(FIELDS_FROM_OUTPUTS)


@pytest.mark.parametrize(
    ("field", "flag"),
    [
        pytest.param("iou", "--iou", id="iou"),
        pytest.param("sweep_thresholds", "--sweep", id="sweep"),
        pytest.param("analysis", "--errors", id="errors"),
        pytest.param("gates", "--fail-under", id="gates"),
        pytest.param("dask", "--dask", id="dask"),
        pytest.param("jobs", "--jobs", id="jobs"),
        pytest.param("class_map", "--class-map", id="class-map"),
        pytest.param("class_choice", "--classes", id="class-choice"),
        pytest.param("strict_threshold", "--strict-threshold", id="strict-threshold"),
        pytest.param("gt", "GT_DIR", id="gt"),
        pytest.param("pred", "PRED", id="pred-as-every-command-names-it"),
        pytest.param("alpha", "--significant", id="alpha-is-diffs"),
    ],
)  # fmt: skip
def test_messages_name_the_flag_of_the_table(field: str, flag: str) -> None:
    assert OPTION_OF_FIELD[field] == flag


def test_the_docs_table_is_the_mapping(request: pytest.FixtureRequest) -> None:
    """docs/library.md's "Flags and keywords" is :func:`flag_table`;
    `pytest --update-goldens` rewrites it."""
    text = LIBRARY_DOCS.read_text(encoding="utf-8")
    assert START in text and END in text, "docs/library.md lacks the generated table"
    start, end = text.index(START), text.index(END) + len(END)
    expected = f"{START}\n\n{flag_table()}\n\n{END}"
    update = request.config.getoption("--update-goldens") or bool(
        os.environ.get("VOCMATCH_UPDATE_GOLDENS")
    )
    if update:
        LIBRARY_DOCS.write_text(text[:start] + expected + text[end:], encoding="utf-8")
        return
    assert text[start:end] == expected, (
        "docs/library.md's flags and keywords differ from vocmatch/cli/keywords.py: review "
        "and run pytest --update-goldens"
    )

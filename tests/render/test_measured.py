"""MeasuredTable prints what a rich Table of the same cells prints, byte for byte."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from vocmatch.render.measured import MeasuredTable

#: A row: an image name, counts, a styled count, a number or a dash, and a sweep cell.
Row = tuple[str, int, int, float | None, str]


def _rows(count: int) -> list[Row]:
    return [
        (f"img_{n:05d}", n % 9, n % 4, None if n % 7 == 0 else (n % 1000) / 1000, f"{n % 3}/1/2")
        for n in range(count)
    ]


def _fill(table: Table, rows: list[Row]) -> Table:
    table.add_column("image", overflow="fold")
    table.add_column("GT", justify="right")
    table.add_column("FP", justify="right")
    table.add_column("mIoU", justify="right")
    table.add_column("@0.50", justify="center", no_wrap=True)
    for name, gt, fp, iou, sweep in rows:
        label = Text(name)
        if gt == 0:
            label.append(" †", style="yellow")
        table.add_row(
            label,
            Text(str(gt)),
            Text(str(fp), style="red" if fp else ""),
            Text("—" if iou is None else f"{iou:.3f}"),
            Text(sweep, style="green" if sweep.startswith("0") else "red"),
        )
    return table


def _both(rows: list[Row]) -> tuple[Table, Table]:
    """The same table as rich draws it and as a MeasuredTable."""
    return (
        _fill(Table(title="Images", title_justify="left"), rows),
        _fill(MeasuredTable("Images"), rows),
    )


def _console(width: int, color: bool) -> Console:
    return Console(
        file=io.StringIO(),
        width=width,
        color_system="truecolor" if color else None,
        force_terminal=color,
    )


def _printed(table: Table, width: int, color: bool) -> str:
    console = _console(width, color)
    console.print(table)
    console.print(table)  # again: what was kept from the first print draws the same
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize("color", [pytest.param(False, id="plain"), pytest.param(True, id="color")])
@pytest.mark.parametrize(
    "width",
    [
        pytest.param(200, id="fits"),
        pytest.param(50, id="fits-exactly"),
        pytest.param(40, id="folds-names"),
        pytest.param(12, id="squeezed"),
    ],
)
def test_prints_as_rich_does(width: int, color: bool) -> None:
    """At any width, with colour or without, the table prints as a rich Table does: at its
    measured widths when it fits, laid out by rich when it does not."""
    rich_table, measured = _both(_rows(250))
    assert _printed(measured, width, color) == _printed(rich_table, width, color)


@pytest.mark.parametrize("width", [pytest.param(1_000, id="wide"), pytest.param(30, id="narrow")])
def test_measures_as_rich_does(width: int) -> None:
    """Its measure, narrowest and widest, is rich's measure of the same table."""
    rich_table, measured = _both(_rows(40))
    console = _console(width, False)
    assert Measurement.get(console, console.options, measured) == Measurement.get(
        console, console.options, rich_table
    )


def test_strings_are_plain_text() -> None:
    """A string cell prints as written, never read as markup."""
    table = MeasuredTable("t")
    table.add_column("[b]name[/b]")
    table.add_row("[red]x[/red]")
    assert "[red]x[/red]" in _printed(table, 40, False)
    assert "[b]name[/b]" in _printed(table, 40, False)


def test_missing_cells_are_empty_and_padded() -> None:
    """A row with fewer cells than columns prints as rich prints it with empty cells."""
    rich_table = Table(title="t", title_justify="left")
    table = MeasuredTable("t")
    for each in (rich_table, table):
        each.add_column("a")
        each.add_column("b")
        each.add_row("x")
        each.add_row("y", "zz")
    assert _printed(table, 40, False) == _printed(rich_table, 40, False)


@settings(max_examples=40, deadline=None)
@given(
    names=st.lists(
        st.text(alphabet=st.sampled_from("ab é漢 -_.x"), max_size=14), min_size=0, max_size=12
    ),
    width=st.integers(min_value=8, max_value=60),
)
def test_any_names_print_as_rich_does(names: list[str], width: int) -> None:
    """Names of any length, with spaces and wide characters, at any width: as rich prints."""
    rows = [(name, len(name), 1, 0.5, "1/0/0") for name in names]
    rich_table, measured = _both(rows)
    assert _printed(measured, width, True) == _printed(rich_table, width, True)

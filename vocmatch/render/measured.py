"""A rich table for reports of thousands of rows: the same text as a rich ``Table``, drawn
in a fraction of the time.

A rich ``Table`` measures every cell three times to print once (twice when measured, once
more when drawn) and draws a cell with the same content and width anew in each row.
:class:`MeasuredTable` draws and measures each distinct cell once, measures itself once per
width, and when it fits the width it is printed at, draws its columns at the widths it
measured (which are those rich would choose: every column at its widest cell) instead of
measuring them again. A table too wide for the width is laid out by rich.

Only the table's work is saved: the text, colours and layout are rich's own, byte for byte.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.style import StyleType
from rich.table import Column, Table
from rich.text import Text

__all__ = ["MeasuredTable"]

#: Wider than any report line: the width the table's natural column widths are measured at.
_UNBOUNDED = 1_000_000

#: Each cell's padding: rich's default for a table, one space either side.
_PADDING = (0, 1)

_Cache = dict[tuple[object, ...], Any]


def _layout(options: ConsoleOptions) -> tuple[object, ...]:
    """Every field of ``options``, the key of what a renderable draws under them."""
    o = options
    return (
        o.size, o.legacy_windows, o.min_width, o.max_width, o.is_terminal, o.encoding,
        o.max_height, o.justify, o.overflow, o.no_wrap, o.highlight, o.markup, o.height,
    )  # fmt: skip


def _content(text: Text) -> tuple[object, ...]:
    """What a text draws as: its characters, its styles and its own layout settings."""
    return (
        text.plain, text.style, tuple(text.spans), text.justify, text.overflow,
        text.no_wrap, text.end, text.tab_size,
    )  # fmt: skip


def _sized_by_cells(column: Column) -> bool:
    """Whether ``column`` is as wide as its widest cell when the table fits (no set width,
    limit or share of the table's width)."""
    limits = (column.width, column.min_width, column.max_width, column.ratio)
    return all(limit is None for limit in limits)


class _Cell:
    """A padded text cell whose measurements and drawings are kept in its table's cache,
    shared by every cell with the same content."""

    __slots__ = ("_cache", "_content", "_text")

    def __init__(self, text: Text, cache: _Cache) -> None:
        self._text = text
        self._content = _content(text)
        self._cache = cache

    def measure(self, console: Console, options: ConsoleOptions) -> Measurement:
        """The cell's measure as ``Measurement.get`` gives it, once for each width."""
        key = (self._content, console, options.max_width)
        measured: Measurement | None = self._cache.get(key)
        if measured is None:
            measured = Measurement.get(console, options, Padding(self._text, _PADDING))
            self._cache[key] = measured
        return measured

    __rich_measure__ = measure

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        key = (self._content, console, *_layout(options))
        drawn: list[Segment] | None = self._cache.get(key)
        if drawn is None:
            drawn = list(console.render(Padding(self._text, _PADDING), options))
            self._cache[key] = drawn
        return drawn


class MeasuredTable(Table):
    """A rich ``Table`` with a title on the left, whose cells are text (a string is taken
    as plain text, never markup), that prints as rich prints it, faster. A text is not to
    change once in the table: it is drawn as it was when added.

    Args:
        title: The line above the table.

    Example:
        >>> import io
        >>> from rich.console import Console
        >>> table = MeasuredTable(title="Images")
        >>> table.add_column("image")
        >>> table.add_column("TP", justify="right")
        >>> table.add_row("a.xml", "12")
        >>> console = Console(file=io.StringIO(), width=40, color_system=None)
        >>> console.print(table)
        >>> for line in console.file.getvalue().splitlines():
        ...     print(line.rstrip())
        Images
        ┏━━━━━━━┳━━━━┓
        ┃ image ┃ TP ┃
        ┡━━━━━━━╇━━━━┩
        │ a.xml │ 12 │
        └───────┴────┘
    """

    def __init__(self, title: str) -> None:
        # The cells carry their padding: a table's own would wrap each one anew at each draw.
        super().__init__(title=title, title_justify="left", padding=0)
        self._cache: _Cache = {}
        self._all_text = True

    def _cell(self, content: RenderableType | None) -> RenderableType:
        if content is None:
            content = ""
        if isinstance(content, str):
            content = Text(content)
        if isinstance(content, Text):
            return _Cell(content, self._cache)
        self._all_text = False
        return Padding(content, _PADDING)

    def add_column(
        self, header: RenderableType = "", footer: RenderableType = "", **column: Any
    ) -> None:
        """As ``Table.add_column``; the header and footer are cells."""
        super().add_column(self._cell(header), self._cell(footer), **column)

    def add_row(
        self,
        *renderables: RenderableType | None,
        style: StyleType | None = None,
        end_section: bool = False,
    ) -> None:
        """As ``Table.add_row``; a string is plain text, a missing cell an empty one."""
        missing = [""] * (len(self.columns) - len(renderables))
        cells = [self._cell(content) for content in (*renderables, *missing)]
        super().add_row(*cells, style=style, end_section=end_section)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        columns = self._fitting_columns(console, options)
        if columns is None:
            return self._measured(console, options)
        # rich's measure of a table that fits: its columns' narrowest and widest widths,
        # each summed with the borders (measured on the table pinned at those widths).
        narrowest = self._pinned([column.minimum for column in columns])
        widest = self._pinned([column.maximum for column in columns])
        return Measurement(
            Measurement.get(console, options, narrowest).maximum,
            Measurement.get(console, options, widest).maximum,
        )

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        columns = self._fitting_columns(console, options)
        if columns is None:
            return super().__rich_console__(console, options)
        widest = self._pinned([column.maximum for column in columns])
        return Table.__rich_console__(widest, console, options)

    def _measured(self, console: Console, options: ConsoleOptions) -> Measurement:
        """rich's own measure of the table, once for each layout."""
        key = ("table", console, *_layout(options))
        measured: Measurement | None = self._cache.get(key)
        if measured is None:
            measured = super().__rich_measure__(console, options)
            self._cache[key] = measured
        return measured

    def _pinned(self, widths: list[int]) -> Table:
        """This table with its columns at ``widths``: drawn and measured without its cells
        being measured."""
        # A plain rich Table with this one's settings and rows: measured and drawn by rich
        # alone, keeping nothing.
        pinned = Table.__new__(Table)
        pinned.__dict__.update(vars(self))
        pinned.columns = [
            replace(column, width=width) for column, width in zip(self.columns, widths, strict=True)
        ]
        return pinned

    def _fitting_columns(
        self, console: Console, options: ConsoleOptions
    ) -> list[Measurement] | None:
        """Each column's narrowest and widest width when the table fits ``options`` at its
        widest, as rich measures them; None when rich must narrow or widen a column (or a
        cell is not text)."""
        if not self._all_text or self.expand or self.width is not None:
            return None
        if self.min_width is not None or not all(map(_sized_by_cells, self.columns)):
            return None
        unbounded = options.update_width(_UNBOUNDED)
        columns = self._natural_columns(console, unbounded)
        widest = self._pinned([column.maximum for column in columns])
        if Measurement.get(console, unbounded, widest).maximum > options.max_width:
            return None
        return columns

    def _natural_columns(self, console: Console, options: ConsoleOptions) -> list[Measurement]:
        """Each column's narrowest and widest cell at an unbounded width, measured once."""
        key = ("columns", console, self.row_count)
        columns: list[Measurement] | None = self._cache.get(key)
        if columns is None:
            columns = [self._column(console, options, column) for column in self.columns]
            self._cache[key] = columns
        return columns

    def _column(self, console: Console, options: ConsoleOptions, column: Column) -> Measurement:
        cells = list(column.cells)
        if self.show_header:
            cells.append(column.header)
        if self.show_footer:
            cells.append(column.footer)
        sizes = [cell.measure(console, options) for cell in cells if isinstance(cell, _Cell)]
        return Measurement(max(s.minimum for s in sizes), max(s.maximum for s in sizes))

"""Names are data, never markup: each output kind's escaping, on hostile names and on any
text hypothesis can make."""

from __future__ import annotations

import csv
import io
import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocmatch.escapes import (
    csv_text,
    github_message,
    github_property,
    markdown_text,
    printable,
    xml_text,
)

SURROGATE = b"\xe9".decode("utf-8", "surrogateescape")

#: Characters no output may carry as they are (tab aside, which is only whitespace).
UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069"
    "\ud800-\udfff\ufffe\uffff]"
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("plain name.xml", "plain name.xml", id="plain"),
        pytest.param("café 猫", "café 猫", id="unicode-kept"),
        pytest.param("evil\x1b[31m.xml", "evil\\x1b[31m.xml", id="csi"),
        pytest.param(
            "\x1b]8;;https://e.example\x1b\\click\x1b]8;;\x1b\\",
            "\\x1b]8;;https://e.example\\x1b\\click\\x1b]8;;\\x1b\\",
            id="osc-8-link",
        ),
        pytest.param("ring\x07", "ring\\x07", id="bel"),
        pytest.param("c1\x9b31m", "c1\\x9b31m", id="c1-csi"),
        pytest.param("nel\x85", "nel\\x85", id="c1-next-line"),
        pytest.param("gpj\u202eexe.jpg", "gpj\\u202eexe.jpg", id="bidi-override"),
        pytest.param("\u2066isolate\u2069", "\\u2066isolate\\u2069", id="bidi-isolate"),
        pytest.param("a\u2028b", "a\\u2028b", id="line-separator"),
        pytest.param("two\nlines\r", "two\\x0alines\\x0d", id="newline-cr"),
        pytest.param("tab\tkept", "tab\tkept", id="tab"),
        pytest.param(f"caf{SURROGATE}.xml", "caf\\udce9.xml", id="not-utf8"),
        pytest.param("[bold]x[/]", "[bold]x[/]", id="rich-markup-is-not-a-control"),
    ],
)
def test_printable(name: str, expected: str) -> None:
    """Controls, bidi formatting, separators and lone surrogates become visible escapes;
    everything else is kept as written."""
    assert printable(name) == expected


@given(st.text())
def test_printable_leaves_nothing_a_terminal_acts_on(text: str) -> None:
    """Any text: one line, nothing unsafe, encodable as UTF-8."""
    shown = printable(text)
    assert not UNSAFE.search(shown)
    assert len(shown.splitlines()) <= 1
    shown.encode("utf-8")
    assert all(unicodedata.category(c) != "Cc" or c == "\t" for c in shown)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("=1+1", "'=1+1", id="equals"),
        pytest.param("+cmd", "'+cmd", id="plus"),
        pytest.param("-2+3", "'-2+3", id="minus"),
        pytest.param("@SUM(A1)", "'@SUM(A1)", id="at"),
        pytest.param("\t=1", "'\t=1", id="tab-first"),
        pytest.param("\r=1", "\\x0d=1", id="cr-first-is-escaped"),
        pytest.param("a=b", "a=b", id="inside-is-fine"),
        pytest.param('=HYPERLINK("http://e.example","x")', "'=HYPERLINK(\"http://e.example\",\"x\")",
                     id="hyperlink"),
    ],
)  # fmt: skip
def test_csv_text_neutralises_formulas(name: str, expected: str) -> None:
    """A cell that would start a formula gets a leading apostrophe, as spreadsheets expect."""
    assert csv_text(name) == expected


@given(st.text())
def test_csv_cells_never_start_a_formula(text: str) -> None:
    """Any text: the cell, read back by the csv module, starts with no formula character."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([csv_text(text), "next"])
    assert buffer.getvalue().count("\n") == 1  # one record, one line
    (row,) = list(csv.reader(io.StringIO(buffer.getvalue())))
    assert row[1] == "next"
    assert row[0][:1] not in ("=", "+", "-", "@", "\t", "\r")
    assert not UNSAFE.search(row[0])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("a|b", "a\\|b", id="pipe"),
        pytest.param("[x](https://e.example)", "\\[x\\](https://e.example)", id="link"),
        pytest.param("`code`", "\\`code\\`", id="backticks"),
        pytest.param("*em* _em_ ~~s~~", "\\*em\\* \\_em\\_ \\~\\~s\\~\\~", id="emphasis"),
        pytest.param("<img src=x>", "\\<img src=x>", id="html"),
        pytest.param("&#x202e;", "\\&#x202e;", id="entity"),
        pytest.param("cat\n## heading", "cat\\\\x0a## heading", id="newline-heading"),
    ],
)
def test_markdown_text(name: str, expected: str) -> None:
    """Markup characters are escaped; a newline becomes a visible escape, so a name never
    starts a line (no heading, no list item, no new table row)."""
    assert markdown_text(name) == expected


@given(st.text())
def test_markdown_text_is_one_line_with_every_special_escaped(text: str) -> None:
    """Any text: one line, and every Markdown special character preceded by a backslash."""
    shown = markdown_text(text)
    assert "\n" not in shown and "\r" not in shown
    assert not UNSAFE.search(shown)
    unescaped = re.sub(r"\\.", "", shown)
    assert not re.search(r"[\\`*_\[\]<|&~]", unescaped)


@given(st.text())
def test_xml_text_holds_only_what_xml_allows(text: str) -> None:
    """Any text: only characters of XML 1.0's Char production."""
    shown = xml_text(text)
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]", shown)


@pytest.mark.parametrize(
    ("function", "name", "expected"),
    [
        pytest.param(github_property, "a,b:c%", "a%2Cb%3Ac%25", id="property"),
        pytest.param(github_property, "x\n::warning::y", "x\\x0a%3A%3Awarning%3A%3Ay",
                     id="property-newline"),
        pytest.param(github_message, "ok\n::error::forged", "ok\\x0a::error::forged",
                     id="message-newline"),
        pytest.param(github_message, "red\x1b[31m", "red\\x1b[31m", id="message-ansi"),
    ],
)  # fmt: skip
def test_github_commands(function: object, name: str, expected: str) -> None:
    """Workflow command values cannot start a command of their own or colour the log."""
    assert callable(function)
    assert function(name) == expected


@given(st.text())
def test_github_values_are_one_line(text: str) -> None:
    """Any text: no line break, and a property has no bare ``,`` or ``:``."""
    for shown in (github_message(text), github_property(text)):
        assert "\n" not in shown and "\r" not in shown and not UNSAFE.search(shown)
    assert not re.search("[,:]", github_property(text))

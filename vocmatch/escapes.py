r"""Names are data, never markup: how a file or class name is written in each kind of output.

File names, class names, ``<filename>`` texts and folder names come from people and tools
vocmatch does not control. Written as they are, a name holding ESC would drive the terminal
or colour a CI log, an OSC 8 sequence would hide a hyperlink, a bidi override would show
``gpj.exe`` as ``exe.jpg``, a newline would forge a report line or a Markdown heading, a
cell starting with ``=`` would run as a spreadsheet formula, and rich markup such as
``[link=...]`` would turn into a hidden link. Each kind of output therefore writes every
name through one function of this module:

========================  ==========================================================
output                    function
========================  ==========================================================
terminal, stderr, tables  :func:`printable` (rich renderables: ``Text(printable(s))``,
                          never a plain string, which rich would read as markup)
Markdown                  :func:`markdown_text`
CSV                       :func:`csv_text`
JUnit and other XML       :func:`xml_text` (the XML writer escapes ``<`` and ``&``)
GitHub workflow commands  :func:`github_property`, :func:`github_message`
JSON                      ``json.dumps(..., ensure_ascii=True)``: every control, bidi and
                          non-ASCII character is a ``\uXXXX`` escape, and a file name
                          byte that is not UTF-8 (read as a lone surrogate) is ``\udcXX``
HTML                      Jinja2's autoescaping, on names already made :func:`printable`
========================  ==========================================================

A new output uses the function of its kind (or adds one here), so that the rule for a kind
lives in one place. Every function is total: any ``str``, lone surrogates included, gives
text that encodes as UTF-8.
"""

from __future__ import annotations

import functools
import re

__all__ = [
    "csv_text",
    "github_message",
    "github_property",
    "markdown_text",
    "printable",
    "xml_text",
]


# What a terminal, a log viewer or an editor could act on rather than show:
# - C0 controls but tab, DEL and C1 controls (ESC starts ANSI and OSC sequences; CR, LF,
#   VT, FF, NEL would start a new line; BEL rings);
# - bidirectional formatting (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069), which
#   reorders what follows on the line ("Trojan Source", CVE-2021-42574);
# - the line and paragraph separators U+2028 and U+2029;
# - lone surrogates, which is how Python holds a file name byte that is not UTF-8
#   (PEP 383); written as they are they could not be encoded at all;
# - the non-characters U+FFFE and U+FFFF, which XML forbids.
# Compiled on first use (half a millisecond): a run that writes only JSON never needs it.
@functools.cache
def _unsafe() -> re.Pattern[str]:
    return re.compile(
        "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029"
        "\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
    )


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    r"""``text`` with every character a terminal could act on written as an escape.

    Control characters (tab excepted) become ``\xNN``; bidi controls, line separators,
    lone surrogates and non-characters become ``\uNNNN``. The result is one line.

    >>> printable("a\x1b[31mb")
    'a\\x1b[31mb'
    >>> printable("gpj\u202eexe.jpg")
    'gpj\\u202eexe.jpg'
    >>> printable("caf" + b"\xe9".decode("utf-8", "surrogateescape"))
    'caf\\udce9'
    >>> printable("two\nlines")
    'two\\x0alines'
    """
    return _unsafe().sub(_escape, text)


# Characters that Markdown (GitHub's included) could read as markup inside a line: emphasis,
# code, links and images, raw HTML, entities (``&#x202e;`` is a bidi override once
# rendered), table cells and strikethrough. Line-start markup (``#``, ``>``, ``-``) cannot
# occur: printable() leaves no line break, so a name never starts a line.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<|&~])")


def markdown_text(text: str) -> str:
    r"""``text`` for a Markdown table cell or line: :func:`printable`, then every character
    Markdown could read as markup escaped with a backslash.

    >>> markdown_text("[x](https://e.example) | `a`")
    '\\[x\\](https://e.example) \\| \\`a\\`'
    >>> markdown_text("cat\n## forged")  # renders as cat\x0a## forged, on one line
    'cat\\\\x0a## forged'
    """
    return _MARKDOWN_SPECIAL.sub(r"\\\1", printable(text))


# A cell a spreadsheet would read as a formula (OWASP's "CSV injection"): one starting with
# = + - @, or with a tab or carriage return before one. printable() has already written CR
# as an escape, so the cell starts with a backslash; tab is kept by printable.
_FORMULA_START = re.compile(r"[=+\-@\t\r]")


def csv_text(text: str) -> str:
    r"""``text`` for a CSV cell: :func:`printable`, and a leading ``'`` when the cell would
    start a spreadsheet formula (``= + - @`` or a tab), as spreadsheets expect.

    Numbers are not names: write them without this function (``-0.5`` stays a number).

    >>> csv_text("=HYPERLINK(\"http://e.example\")")
    '\'=HYPERLINK("http://e.example")'
    >>> csv_text("-cat"), csv_text("\t=1"), csv_text("cat")
    ("'-cat", "'\t=1", 'cat')
    """
    safe = printable(text)
    return f"'{safe}" if _FORMULA_START.match(safe) else safe


def xml_text(text: str) -> str:
    r"""``text`` for an XML attribute or element: :func:`printable`, which leaves only
    characters XML 1.0 allows (``<``, ``&`` and quotes are the XML writer's to escape).

    >>> xml_text("a\x00b\ufffe")
    'a\\x00b\\ufffe'
    """
    return printable(text)


_PROPERTY_ESCAPES = {"%": "%25", "\r": "%0D", "\n": "%0A", ":": "%3A", ",": "%2C"}
_DATA_ESCAPES = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_PROPERTY = re.compile("[%\r\n:,]")
_DATA = re.compile("[%\r\n]")


def github_property(text: str) -> str:
    """``text`` for a property of a GitHub Actions workflow command (``file=``,
    ``title=``): :func:`printable`, then ``%``, ``:`` and ``,`` percent-encoded as the
    runner expects.

    >>> github_property("a,b:c%")
    'a%2Cb%3Ac%25'
    """
    return _PROPERTY.sub(lambda m: _PROPERTY_ESCAPES[m.group()], printable(text))


def github_message(text: str) -> str:
    r"""``text`` for the message of a GitHub Actions workflow command: :func:`printable`
    (so no line of its own, and no ANSI colour in the log), then ``%`` percent-encoded.

    >>> github_message("100% bad\n::error::forged")
    '100%25 bad\\x0a::error::forged'
    """
    return _DATA.sub(lambda m: _DATA_ESCAPES[m.group()], printable(text))

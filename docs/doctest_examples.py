"""A Griffe extension for the API pages: doctest lines written at the end of a docstring,
outside any section, are shown as its ``Examples`` section.

Google style puts examples under ``Examples:``; many of vocmatch's docstrings end with bare
``>>>`` lines instead, which the Google parser would read as part of the section above them
(a ``Returns`` or ``Raises`` text, where ``[4, 4, 4]`` reads as a Markdown link). The
docstrings themselves are left as they are: the doctests run either way.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")


def examples_section(text: str) -> str:
    r"""The docstring with its first bare doctest line, and all after it, under ``Examples:``.

    >>> text = "Sum.\n\nReturns:\n    A number.\n\n>>> 1 + 1\n2"
    >>> examples_section(text).splitlines()[2:]
    ['Returns:', '    A number.', '', 'Examples:', '    >>> 1 + 1', '    2']
    """
    lines = text.splitlines()
    in_examples = False
    for i, line in enumerate(lines):
        if _SECTION.match(line):
            in_examples = line.rstrip(": ").strip() in ("Example", "Examples")
        elif line.startswith(">>>") and not in_examples:
            rest = [f"    {x}" if x.strip() else x for x in lines[i:]]
            return "\n".join([*lines[:i], "Examples:", *rest])
    return text


class DoctestExamples(griffe.Extension):
    """Put bare doctest lines under ``Examples:`` before the docstring is parsed."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = examples_section(obj.docstring.value)

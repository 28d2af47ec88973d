"""explain's renderers: names from the data are text, never markup, in every output."""

from __future__ import annotations

import json

from rich.console import Console

from vocmatch.core.protocol import protocol
from vocmatch.evidence.explanation import ExplainStep, Explanation, Setting
from vocmatch.render.explain_report import explain_html, explain_json, explain_table

HOSTILE = "<script>alert(1)</script>[bold]x[/bold]\x1b[31m"


def _found() -> Explanation:
    start = Setting(HOSTILE, protocol("voc07"), 0.5, ((HOSTILE, 0.5),))
    end = Setting("coco", protocol("coco"), 0.25, ((HOSTILE, 0.25),))
    step = ExplainStep(
        "AP IoU thresholds", "0.50", "0.50:0.95", 0.25, -0.25, ((HOSTILE, 0.25, -0.25),)
    )
    return Explanation(start, end, steps=(step,))


def test_html_escapes_every_name() -> None:
    page = explain_html(_found())
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    assert "\x1b" not in page


def test_terminal_shows_names_as_text() -> None:
    console = Console(width=200, record=True, force_terminal=False)
    console.print(explain_table(_found()))
    text = console.export_text()
    assert "[bold]x[/bold]" in text  # not read as markup
    assert "\x1b" not in text


def test_json_keeps_names_as_given() -> None:
    data = json.loads(explain_json(_found()))
    assert data["from"]["name"] == HOSTILE
    assert data["steps"][0]["classes"][HOSTILE] == {"ap": 0.25, "delta": -0.25}
    assert data["difference"] == -0.25

"""An explanation of two protocols' mAP (``vocmatch explain``) as JSON, as a terminal
waterfall and as an HTML page with the waterfall drawn. Nothing here prints.

Names are data, never markup: in the terminal each enters a cell escaped
(:func:`vocmatch.render.terminal.name_cell`); in HTML every text is escaped.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from vocmatch.core.protocol import Conventions
from vocmatch.escapes import printable
from vocmatch.evidence.explanation import Candidate, ExplainStep, Explanation, Setting
from vocmatch.render.terminal import name_cell, note_text, number_text, signed_cell

__all__ = ["explain_html", "explain_json", "explain_table"]


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _settings(conv: Conventions) -> dict[str, Any]:
    """Every convention of a setting, by field name (tuples as lists)."""
    found: dict[str, Any] = {}
    for field in dataclasses.fields(Conventions):
        value = getattr(conv, field.name)
        found[field.name] = list(value) if isinstance(value, tuple) else value
    return found


def _setting(setting: Setting) -> dict[str, Any]:
    prepared = setting.preparation
    return {
        "name": setting.name,
        "map": _number(setting.map),
        "settings": {
            **_settings(setting.conventions),
            "preparation": None if prepared is None else dataclasses.asdict(prepared),
        },
        "classes": {name: _number(ap) for name, ap in setting.classes},
    }


def _step(step: ExplainStep) -> dict[str, Any]:
    return {
        "convention": step.convention,
        "from_value": step.from_value,
        "to_value": step.to_value,
        "map": _number(step.map),
        "delta": _number(step.delta),
        "classes": {
            name: {"ap": _number(ap), "delta": _number(delta)} for name, ap, delta in step.classes
        },
    }


def _candidate(candidate: Candidate) -> dict[str, Any]:
    return {
        "protocol": candidate.protocol,
        "options": dict(candidate.options),
        "map": _number(candidate.map),
    }


def explain_json(found: Explanation) -> str:
    """The explanation as JSON: ``from``, ``to`` and ``steps``, or the target's
    ``candidates``; mAPs are the summary mAP ``vocmatch eval`` reports (``summary.map``)."""
    data: dict[str, Any] = {}
    if found.target is not None:
        data["target"] = {
            "given": found.target.text,
            "value": found.target.value,
            "decimals": found.target.decimals,
        }
        data["reproduced"] = found.reproduced
        data["tried"] = found.tried
        data["candidates"] = [_candidate(c) for c in found.candidates]
    if found.from_setting is not None and found.to_setting is not None:
        data["from"] = _setting(found.from_setting)
        data["to"] = _setting(found.to_setting)
        data["attribution"] = found.attribution
        data["steps"] = [_step(s) for s in found.steps]
        data["difference"] = _number(found.to_setting.map - found.from_setting.map)
    data["evaluations"] = found.evaluations
    data["notes"] = list(found.notes)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


#: Characters of the terminal waterfall's bars.
WATERFALL_WIDTH = 30


@dataclass(frozen=True, slots=True)
class _Scale:
    """Where the waterfall's column starts and how wide an mAP unit is."""

    low: float
    per_unit: float

    @classmethod
    def of(cls, levels: list[float], width: int) -> _Scale:
        finite = [v for v in levels if math.isfinite(v)] or [0.0]
        low, high = min(finite), max(finite)
        # The ends' bars start at the column's left: a little below the lowest level.
        low = max(0.0, low - 0.25 * (high - low)) if high > low else max(0.0, low - 0.1)
        return cls(low, width / (high - low) if high > low else width / max(high, 1e-12))

    def cell(self, value: float) -> int:
        return round((value - self.low) * self.per_unit)


def _bar(before: float | None, after: float, scale: _Scale, width: int) -> Text:
    """One row of the waterfall: an end's bar from the left (blue), or a step's bar from the
    mAP before it to the mAP after it (green up, red down; a dim tick for no change)."""
    if not math.isfinite(after) or (before is not None and not math.isfinite(before)):
        return Text("")
    if before is None:
        cells = max(scale.cell(after), 0)
        return Text("█" * cells, style="blue") + Text(" " * (width - cells))
    left, right = sorted((scale.cell(before), scale.cell(after)))
    if round(after - before, 4) == 0:
        return Text(" " * left) + Text("│", style="dim") + Text(" " * (width - left - 1))
    style = "green" if after > before else "red"
    cells = max(right - left, 1)
    return Text(" " * left) + Text("█" * cells, style=style) + Text(" " * (width - left - cells))


def _waterfall(found: Explanation) -> Table:
    start, end = found.from_setting, found.to_setting
    assert start is not None and end is not None
    shapley = found.attribution == "shapley"
    table = Table(
        title="mAP from {} to {}{}".format(
            printable(start.name), printable(end.name), " (Shapley values)" if shapley else ""
        ),
        title_justify="left",
    )
    table.add_column("convention")
    table.add_column("from")
    table.add_column("to")
    table.add_column("mAP", justify="right")
    table.add_column("delta", justify="right")
    table.add_column("", no_wrap=True, min_width=WATERFALL_WIDTH + 1)
    # Each step floats from the level before it; Shapley values are stacked in order.
    levels = [start.map]
    for step in found.steps:
        levels.append(levels[-1] + step.delta if step.map is None else step.map)
    scale = _Scale.of([*levels, end.map], WATERFALL_WIDTH)
    width = WATERFALL_WIDTH + 1
    table.add_row(
        name_cell(start.name), "", "", number_text(_number(start.map)), "",
        _bar(None, start.map, scale, width),
    )  # fmt: skip
    for step, before, after in zip(found.steps, levels[:-1], levels[1:], strict=True):
        table.add_row(
            step.convention, name_cell(step.from_value), name_cell(step.to_value),
            number_text(_number(step.map)), signed_cell(_number(step.delta)),
            _bar(before, after, scale, width),
        )  # fmt: skip
    table.add_row(
        name_cell(end.name), "", "", number_text(_number(end.map)),
        signed_cell(_number(end.map - start.map)), _bar(None, end.map, scale, width),
    )  # fmt: skip
    return table


def _class_table(found: Explanation) -> Table | None:
    """Each class's AP at both ends and its delta at each step."""
    start, end = found.from_setting, found.to_setting
    assert start is not None and end is not None
    if not found.steps:
        return None
    table = Table(title="AP per class: each step's delta", title_justify="left")
    table.add_column("class")
    table.add_column(printable(start.name), justify="right")
    for i, _ in enumerate(found.steps, 1):
        table.add_column(f"{i}", justify="right")
    table.add_column(printable(end.name), justify="right")
    starts, ends = dict(start.classes), dict(end.classes)
    names = sorted({*starts, *ends})
    for name in names:
        deltas = [dict((n, d) for n, _, d in step.classes).get(name) for step in found.steps]
        table.add_row(
            name_cell(name), number_text(_number(starts.get(name))),
            *(signed_cell(_number(d)) for d in deltas), number_text(_number(ends.get(name))),
        )  # fmt: skip
    return table


def _candidates_table(found: Explanation) -> Table:
    target = found.target
    assert target is not None
    title = (
        f"Settings whose mAP rounds to {target.value:.{target.decimals}f}"
        if found.reproduced
        else f"No setting gives {target.value:.{target.decimals}f}: the closest"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("protocol")
    table.add_column("changed conventions")
    table.add_column("mAP", justify="right")
    table.add_column("off by", justify="right")
    for c in found.candidates:
        options = ", ".join(f"{name}={value}" for name, value in c.options) or "(as the preset)"
        table.add_row(
            name_cell(c.protocol), name_cell(options), number_text(_number(c.map), 6),
            signed_cell(_number(c.map - target.value), digits=6),
        )  # fmt: skip
    return table


def explain_table(found: Explanation) -> RenderableType:
    """The explanation for a terminal: the waterfall and each class's deltas, or the
    target's candidates, then the notes."""
    parts: list[RenderableType] = []
    if found.target is not None:
        parts.append(_candidates_table(found))
        parts.append(
            Text(
                f"{found.tried} settings tried (presets and their one- and two-convention "
                "variants)",
                style="dim",
            )
        )
    else:
        parts.append(_waterfall(found))
        classes = _class_table(found)
        if classes is not None:
            parts.append(classes)
        if found.attribution == "steps":
            parts.append(
                Text(
                    "Conventions changed one at a time in a fixed order; each delta is the "
                    "change of mAP at its step, and the steps add up to the whole difference.",
                    style="dim",
                )
            )
    parts.extend(note_text(note) for note in found.notes)
    return Group(*parts)


_BAR_WIDTH = 480
_ROW = 28
_LABEL = 400


def _svg_waterfall(found: Explanation) -> str:
    """The waterfall as an SVG: a bar from the first mAP, each step's delta floating from
    the mAP before it, a bar to the second mAP; every text escaped."""
    start, end = found.from_setting, found.to_setting
    assert start is not None and end is not None
    rows: list[tuple[str, float, float, str]] = [(start.name, 0.0, start.map, "#4a6fa5")]
    level = start.map
    for step in found.steps:
        after = level + step.delta if step.map is None else step.map
        colour = "#2e8b57" if step.delta >= 0 else "#c0392b"
        label = f"{step.convention}: {step.from_value} → {step.to_value}"
        rows.append((label, level, after, colour))
        level = after
    rows.append((end.name, 0.0, end.map, "#4a6fa5"))
    values = [v for _, a, b, _ in rows for v in (a, b) if math.isfinite(v)]
    top = max([*values, 1e-12])
    height = _ROW * len(rows) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_LABEL + _BAR_WIDTH + 90}" '
        f'height="{height}" role="img" aria-label="waterfall of mAP">'
    ]
    for i, (label, a, b, colour) in enumerate(rows):
        y = 10 + i * _ROW
        low, high = (min(a, b), max(a, b)) if math.isfinite(a) and math.isfinite(b) else (0, 0)
        x = _LABEL + low / top * _BAR_WIDTH
        width = max((high - low) / top * _BAR_WIDTH, 1.0)
        text = html.escape(printable(label))
        parts.append(
            f'<text x="{_LABEL - 6}" y="{y + 17}" text-anchor="end" font-size="12">{text}</text>'
        )
        parts.append(
            f'<rect x="{x:.2f}" y="{y + 4}" width="{width:.2f}" height="{_ROW - 8}" '
            f'fill="{colour}"><title>{text}: {b:.6f}</title></rect>'
        )
        parts.append(f'<text x="{x + width + 4:.2f}" y="{y + 17}" font-size="11">{b:.4f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def explain_html(found: Explanation) -> str:
    """The explanation as one HTML page: the waterfall drawn, the steps and each class's
    deltas as tables (every text escaped)."""
    start, end = found.from_setting, found.to_setting
    if start is None or end is None:
        raise ValueError("an HTML page draws the steps between two settings")
    e = html.escape

    def cell(value: float | None, signed: bool = False) -> str:
        if value is None or not math.isfinite(value):
            return "—"
        return f"{value:+.4f}" if signed else f"{value:.4f}"

    rows = "".join(
        f"<tr><td>{e(s.convention)}</td><td>{e(s.from_value)}</td><td>{e(s.to_value)}</td>"
        f"<td>{cell(s.map)}</td><td>{cell(s.delta, True)}</td></tr>"
        for s in found.steps
    )
    names = sorted({n for n, _ in start.classes} | {n for n, _ in end.classes})
    head = "".join(f"<th>{i}</th>" for i, _ in enumerate(found.steps, 1))
    class_rows = ""
    for name in names:
        deltas = "".join(
            f"<td>{cell(dict((n, d) for n, _, d in s.classes).get(name), True)}</td>"
            for s in found.steps
        )
        class_rows += (
            f"<tr><td>{e(printable(name))}</td><td>{cell(dict(start.classes).get(name))}</td>"
            f"{deltas}<td>{cell(dict(end.classes).get(name))}</td></tr>"
        )
    title = f"mAP from {printable(start.name)} to {printable(end.name)}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}"
        "td:first-child{text-align:left}</style></head><body>"
        f"<h1>{e(title)}</h1>"
        f"<p>{e(found.attribution)}: mAP {cell(start.map)} → {cell(end.map)} "
        f"({cell(end.map - start.map, True)})</p>"
        f"{_svg_waterfall(found)}"
        "<h2>Steps</h2><table><tr><th>convention</th><th>from</th><th>to</th><th>mAP</th>"
        f"<th>delta</th></tr>{rows}</table>"
        f"<h2>AP per class</h2><table><tr><th>class</th><th>{e(printable(start.name))}</th>"
        f"{head}<th>{e(printable(end.name))}</th></tr>{class_rows}</table>"
        + "".join(f"<p>note: {e(printable(n))}</p>" for n in found.notes)
        + "</body></html>\n"
    )

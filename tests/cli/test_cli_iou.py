"""``vocmatch iou``: the printed text, the overlap diagram, JSON, errors and exit codes."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable

import pytest
from rich.console import Console, RenderableType

from tests.conftest import GOLDEN, ROOT, run_cli
from vocmatch.cli import EXIT_OK, EXIT_USAGE
from vocmatch.core import calculator
from vocmatch.core.calculator import BoxComparison, compare_boxes
from vocmatch.render.diagram import MIN_COLS, box_metrics, overlap_diagram

# The report's width comes from COLUMNS (stdout is not a terminal under CliRunner); colour is
# off because stdout is not a terminal, unless the environment forces it.
ENV: dict[str, str | None] = {
    "COLUMNS": "100",
    "FORCE_COLOR": None,
    "NO_COLOR": None,
    "TTY_COMPATIBLE": None,
    "TTY_INTERACTIVE": None,
}

EXAMPLES = {
    "overlapping": ["50,50,150,150", "80,80,180,180"],
    "disjoint": ["0,0,10,10", "20,20,30,30"],
    "nested": ["0,0,100,100", "25,25,75,75"],
    "labels": ["--labels", "cat, dog, bird", "dog,bird,fish"],
}


def run(*args: str, columns: int = 100) -> tuple[int, str, str]:
    return run_cli("iou", *args, env=ENV, columns=columns)


def lines_of(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def block(text: str, first: str, count: int) -> list[str]:
    """``count`` lines of ``text`` from the line that starts with ``first``."""
    lines = lines_of(text)
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    return lines[start : start + count]


def render(renderable: RenderableType, width: int = 100) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    console.print(renderable)
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()


def grid_rows(text: str) -> list[str]:
    """The cells of the diagram, one string per row, without the frame."""
    return [m.group(1) for m in re.finditer(r"^ +│(.*)│$", text, flags=re.MULTILINE)]


# The worked examples, on the exact printed text


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_matches_golden(name: str, golden: Callable[[str, str], None]) -> None:
    """The full printed output of each example pair reads as in tests/golden/iou_<name>.txt."""
    code, out, err = run(*EXAMPLES[name])
    assert (code, err) == (EXIT_OK, "")
    golden(f"iou_{name}.txt", out)


def test_overlapping_pair_prints_every_number() -> None:
    """IoU to 4 decimals and in percent, the verdict, GIoU, both Dice formulas and the areas."""
    _, out, _ = run(*EXAMPLES["overlapping"])
    assert block(out, "IoU  ", 11) == [
        "IoU           0.3245 (32.45%)       I / U = 4,900 / 15,100",
        "Verdict       No match (IoU < 0.5)  inclusive: IoU ≥ 0.5 matches",
        "GIoU          0.2180                IoU - (C - U) / C, C = 16,900 encloses both",
        "Dice / F1     0.4900                2·I / (A + B) = 9,800 / 20,000",
        "              0.4900                2·IoU / (1 + IoU); the two formulas agree",
        "Intersection  4,900",
        "Union         15,100                A + B - I = 10,000 + 10,000 - 4,900",
        "Area A        10,000",
        "Area B        10,000",
        "Relation      overlapping",
        "",
    ]
    assert block(out, "│ A  ", 3) == [
        "│ A     │ 50 │ 50 │ 150 │ 150 │   100 │    100 │ 10,000 │",
        "│ B     │ 80 │ 80 │ 180 │ 180 │   100 │    100 │ 10,000 │",
        "│ A ∩ B │ 80 │ 80 │ 150 │ 150 │    70 │     70 │  4,900 │",
    ]
    assert block(out, "│      0.50", 3) == [
        "│      0.50 │ PASCAL VOC / COCO AP50 │ ✗ no match │",
        "│      0.75 │ COCO AP75, strict      │ ✗ no match │",
        "│      0.95 │ near-exact             │ ✗ no match │",
    ]


def test_disjoint_pair_is_zero_and_never_matches() -> None:
    """0,0,10,10 vs 20,20,30,30: IoU 0, Dice 0, GIoU negative, no match at any threshold."""
    _, out, _ = run(*EXAMPLES["disjoint"])
    assert block(out, "IoU  ", 6) == [
        "IoU           0.0000 (0.00%)        I / U = 0 / 200",
        "Verdict       No match (IoU < 0.5)  inclusive: IoU ≥ 0.5 matches",
        "GIoU          -0.7778               IoU - (C - U) / C, C = 900 encloses both",
        "Dice / F1     0.0000                2·I / (A + B) = 0 / 200",
        "              0.0000                2·IoU / (1 + IoU); the two formulas agree",
        "Intersection  0",
    ]
    assert "│ A ∩ B │  — │  — │  — │  — │     — │      — │    0 │" in lines_of(out)
    assert "Relation      disjoint" in lines_of(out)
    assert out.count("✗ no match") == 3
    assert "✓ match" not in out


def test_label_sets() -> None:
    """Label mode prints the sets, their sizes, Jaccard, Dice and the inclusive verdict."""
    code, out, err = run(*EXAMPLES["labels"])
    assert (code, err) == (EXIT_OK, "")
    assert lines_of(out) == [
        "Label sets (lower-cased, de-duplicated)",
        "Set A      {bird, cat, dog}        |A| = 3",
        "Set B      {bird, dog, fish}       |B| = 3",
        "A ∩ B      {bird, dog}             |A ∩ B| = 2",
        "A ∪ B      {bird, cat, dog, fish}  |A ∪ B| = 4",
        "Jaccard    0.5000 (50.00%)         |A ∩ B| / |A ∪ B| = 2 / 4",
        "Dice / F1  0.6667                  2·|A ∩ B| / (|A| + |B|) = 4 / 6",
        "Verdict    Match (Jaccard ≥ 0.5)   inclusive: Jaccard ≥ 0.5 matches",
    ]


def test_threshold_is_inclusive() -> None:
    """IoU exactly 0.5 matches at 0.5 and the sweep says so."""
    _, out, _ = run("0,0,2,1", "0,0,1,1")
    assert block(out, "Verdict", 1) == [
        "Verdict       Match (IoU ≥ 0.5)  inclusive: IoU ≥ 0.5 matches"
    ]
    assert block(out, "│      0.50", 2) == [
        "│      0.50 │ PASCAL VOC / COCO AP50 │ ✓ match    │",
        "│      0.75 │ COCO AP75, strict      │ ✗ no match │",
    ]


def test_threshold_option() -> None:
    """--threshold moves the verdict; the sweep stays at 0.50, 0.75 and 0.95."""
    _, out, _ = run("--threshold", "0.3", *EXAMPLES["overlapping"])
    assert block(out, "Verdict", 1) == [
        "Verdict       Match (IoU ≥ 0.3)  inclusive: IoU ≥ 0.3 matches"
    ]
    assert out.count("✗ no match") == 3


def test_rounding_that_hides_the_verdict_shows_the_exact_value() -> None:
    """An IoU that rounds to the threshold but falls short of it is printed in full."""
    _, out, _ = run("0,0,1,1", "0,0,1,0.49999")
    assert block(out, "IoU  ", 2) == [
        "IoU           0.5000 (exactly 0.49999) (50.00%)  I / U = 0.49999 / 1",
        "Verdict       No match (IoU < 0.5)               inclusive: IoU ≥ 0.5 matches",
    ]


# Input forms


def test_negative_coordinates_work_as_typed() -> None:
    """A box starting with a minus sign is a box, not an option; `--` works too."""
    code, out, err = run("-5,3,10,20", "0,0,8,8")
    assert (code, err) == (EXIT_OK, "")
    assert "│ A     │ -5 │  3 │ 10 │ 20 │    15 │     17 │  255 │" in lines_of(out)
    assert run("--", "-5,3,10,20", "0,0,8,8")[1] == out
    assert run("0,0,8,8", "-5,3,10,20")[0] == EXIT_OK


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--xywh", "-5,3,15,17", "0,0,8,8"], id="xywh-commas"),
        pytest.param(["-5 3 15 17", "0 0 8 8", "--xywh"], id="xywh-spaces"),
        pytest.param(["--xywh", "-5", "3", "15", "17", "0", "0", "8", "8"], id="eight-numbers"),
        pytest.param(["-5.0, 3.0, 10, 20", "0,0,8.0,8"], id="floats"),
    ],
)
def test_input_forms_agree(args: list[str]) -> None:
    """x,y,w,h, spaces, loose numbers and floats all give the corner-form report."""
    assert run(*args)[1] == run("-5,3,10,20", "0,0,8,8")[1]


def test_json_output() -> None:
    """--format json prints only JSON with every number."""
    code, out, err = run("--format", "json", *EXAMPLES["overlapping"])
    assert (code, err) == (EXIT_OK, "")
    data = json.loads(out)
    assert data["iou"] == pytest.approx(4900 / 15100, abs=1e-15)
    assert (data["intersection"], data["union"]) == (4900.0, 15100.0)
    assert (data["box_a"]["area"], data["box_b"]["area"]) == (10000.0, 10000.0)
    assert data["dice"] == pytest.approx(0.49, abs=1e-15)
    assert data["match"] is False
    assert [s["match"] for s in data["sweep"]] == [False, False, False]


def test_json_output_for_labels() -> None:
    """Label mode's JSON has Jaccard and Dice."""
    data = json.loads(run("--format", "json", *EXAMPLES["labels"])[1])
    assert (data["mode"], data["jaccard"], data["match"]) == ("labels", 0.5, True)
    assert data["dice"] == pytest.approx(2 / 3, abs=1e-15)


# Bad input: one line on stderr, exit 2, nothing on stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["50,50,150", "80,80,180,180"],
            "box A: expected 4 numbers (x1,y1,x2,y2), got 3: '50,50,150'",
            id="three-numbers",
        ),
        pytest.param(
            ["50,50,150,150", "80,x,180,180"],
            "box B: 'x' is not a number: '80,x,180,180'",
            id="letter",
        ),
        pytest.param(
            ["150,50,50,150", "80,80,180,180"],
            "box A: x2 (50) is less than x1 (150): '150,50,50,150'",
            id="x2-less-than-x1",
        ),
        pytest.param(
            ["--xywh", "0,0,-5,10", "0,0,1,1"],
            "box A: width is negative (-5): '0,0,-5,10'",
            id="negative-width",
        ),
        pytest.param(
            ["--labels", "cat", " , "], "label set B: no labels in ' , '", id="empty-label-set"
        ),
        pytest.param(
            ["0,0,1,1"],
            "expected two boxes A B (x1,y1,x2,y2 each), got 1 argument(s)",
            id="one-box",
        ),
        pytest.param([], "expected two boxes A B (x1,y1,x2,y2 each), got 0 argument(s)", id="none"),
        pytest.param(
            ["--labels", "cat"], "expected two label sets A B, got 1 argument(s)", id="one-set"
        ),
        pytest.param(
            ["--treshold", "0.3", "0,0,1,1", "0,0,1,1"],
            "no such option: --treshold (see vocmatch iou --help)",
            id="unknown-option",
        ),
        pytest.param(
            ["--labels", "--xywh", "a", "b"],
            "--xywh applies to boxes, not to --labels",
            id="xywh-with-labels",
        ),
        pytest.param(
            ["--polygon", "0,0 1e308,0 0,1e308", "0,0 1,0 0,1"],
            "polygon A: coordinates too large: the area overflows: '0,0 1e308,0 0,1e308'",
            id="polygon-area-overflows",
        ),
        pytest.param(
            ["--polygon", "0,0 1,0 0,1", "-1e308,0 1e308,0 0,1"],
            "polygon B: coordinates too large: the area overflows: '-1e308,0 1e308,0 0,1'",
            id="polygon-width-overflows",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    """Bad input never shows a traceback: one line on stderr and the usage exit code."""
    code, out, err = run(*args)
    assert (code, out, err) == (EXIT_USAGE, "", f"vocmatch: error: {message}\n")


def test_threshold_outside_0_1_is_a_usage_error() -> None:
    """click rejects a threshold outside [0, 1] with the usage exit code."""
    code, out, err = run("--threshold", "1.5", *EXAMPLES["overlapping"])
    assert (code, out) == (EXIT_USAGE, "")
    assert "1.5 is not in the range 0.0<=x<=1.0" in err


def test_help() -> None:
    """The command documents its options and a negative-coordinate example."""
    code, out, _ = run("--help")
    assert code == EXIT_OK
    for text in ("--labels", "--xywh", "--polygon", "--threshold", "--format", "-5 3 10 20"):
        assert text in out


def test_dice_disagreement_is_loud(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were the two Dice formulas ever to disagree, stdout and stderr both say so."""
    honest = calculator.compare_boxes((50, 50, 150, 150), (80, 80, 180, 180))
    fields = {name: getattr(honest, name) for name in BoxComparison.__dataclass_fields__}
    broken = BoxComparison(**{**fields, "dice_from_iou": 0.5})
    monkeypatch.setattr(calculator, "compare_boxes", lambda *args: broken)
    code, out, err = run(*EXAMPLES["overlapping"])
    assert code == EXIT_OK
    assert "WARNING: the two Dice values disagree (0.49 vs 0.5)" in out
    assert err == ("vocmatch: warning: Dice 2*I/(A+B) = 0.49 disagrees with 2*IoU/(1+IoU) = 0.5\n")
    assert "WARNING" in render(box_metrics(broken))


# The overlap diagram


def diagram(box_a: str, box_b: str, width: int = 100) -> str:
    return render(
        overlap_diagram(
            compare_boxes(calculator.parse_box(box_a), calculator.parse_box(box_b)), width
        ),
        width,
    )


def test_diagram_of_the_overlapping_pair() -> None:
    """The frame is the enclosing box; A is top-left, B bottom-right, y pointing down."""
    text = diagram("50,50,150,150", "80,80,180,180")
    lines = lines_of(text)
    assert lines[:3] == [
        "Overlap diagram",
        "    50                             180 x →",
        " 50 ┌────────────────────────────────┐",
    ]
    rows = grid_rows(text)
    assert len(rows) == 16
    assert rows[0] == "░" * 25 + " " * 7
    assert rows[8] == "░" * 8 + "█" * 17 + "▒" * 7
    assert rows[-1] == " " * 8 + "▒" * 24
    assert lines[-4:] == [
        "180 └────────────────────────────────┘",
        "y ↓",
        "░░ A only   ▒▒ B only   ██ A ∩ B   frame: the smallest box enclosing both (C)",
        "scale: 1 column ≈ 4.06, 1 row ≈ 8.12",
    ]


@pytest.mark.parametrize(
    ("box_a", "box_b", "pattern"),
    [
        pytest.param("0,0,10,10", "10,0,20,10", r"^░+▒+$", id="touching"),
        pytest.param("0,0,10,10", "10.01,0,20,10", r"^░+ +▒+$", id="tiny-gap"),
        pytest.param("0,0,100,100", "25,25,75,75", r"^░+█+░+$", id="nested"),
        pytest.param("0,0,10,10", "0,0,10,10", r"^█+$", id="identical"),
    ],
)
def test_diagram_keeps_edges_in_order(box_a: str, box_b: str, pattern: str) -> None:
    """Touching boxes meet with no gap, any gap shows, nested boxes show the overlap inside."""
    rows = grid_rows(diagram(box_a, box_b))
    assert any(re.match(pattern, row) for row in rows)


def test_diagram_of_disjoint_boxes_has_no_overlap() -> None:
    """Disjoint boxes: no overlap cell, and empty rows between A (top) and B (bottom)."""
    rows = grid_rows(diagram("0,0,10,10", "20,20,30,30"))
    assert "█" not in "".join(rows)
    assert rows[0].startswith("░") and rows[-1].endswith("▒")
    assert any(row.strip() == "" for row in rows)


def test_diagram_shows_a_very_thin_box() -> None:
    """A box 2 units tall beside 1,000 still gets one row, and the note says it is widened."""
    text = diagram("0,0,1000,1000", "0,0,1000,2")
    rows = grid_rows(text)
    assert rows[0] == "█" * len(rows[0])
    assert all(set(row) == {"░"} for row in rows[1:])
    assert "not to scale: parts thinner than a character are drawn one character wide" in text


def test_diagram_shows_a_very_small_box() -> None:
    """A 1-unit box inside a 1,000-unit one is one overlap cell."""
    assert "".join(grid_rows(diagram("0,0,1000,1000", "500,500,501,501"))).count("█") == 1


def test_diagram_of_a_zero_width_box() -> None:
    """A box of zero width is a line one cell wide, drawn over the other box (IoU is 0)."""
    rows = grid_rows(diagram("0,0,10,10", "5,0,5,10"))
    assert all(re.fullmatch(r"░+▒░+", row) for row in rows)


def test_diagram_of_a_very_tall_pair_stays_readable() -> None:
    """A tall narrow pair keeps a minimum width and says the drawing is stretched."""
    text = diagram("0,0,10,1000", "5,100,12,200")
    rows = grid_rows(text)
    assert len(rows[0]) == MIN_COLS
    assert "not to scale: the short side is stretched to stay readable" in text


def test_diagram_of_denormal_boxes() -> None:
    """Two identical boxes 1e-320 wide (cells per unit would be inf): drawn as any two
    identical squares are, 32 by 16 cells, exit 0 and nothing on stderr."""
    code, out, err = run("0,0,1e-320,1e-320", "0,0,1e-320,1e-320")
    assert (code, err) == (EXIT_OK, "")
    assert grid_rows(out) == ["█" * 32] * 16
    assert lines_of(out)[-1] == "scale: 1 column ≈ 3.11e-322, 1 row ≈ 6.23e-322"


@pytest.mark.parametrize(
    ("box_a", "box_b", "rows", "scale"),
    [
        pytest.param(
            "0,0,1e-320,1e-320", "0,0,5e-324,5e-324", ["▒" + "░" * 31] + ["░" * 32] * 15,
            "scale: 1 column ≈ 3.11e-322, 1 row ≈ 6.23e-322", id="denormal-inside-denormal",
        ),
        pytest.param(
            "0,0,5e-324,1e300", "0,0,5e-324,1e300", ["█" * MIN_COLS] * 16,
            "scale: 8 columns ≈ 4.94e-324, 1 row ≈ 6.25e+298", id="smallest-by-huge",
        ),
        pytest.param(
            "0,0,1.7976931348623157e308,1e-300", "1e308,0,1.7976931348623157e308,1e-300",
            ["░" * 37 + "█" * 30] * 3, "scale: 1 column ≈ 2.68e+306, 1 row ≈ 3.33e-301",
            id="largest-float",
        ),
    ],
)  # fmt: skip
def test_diagram_of_extreme_extents(box_a: str, box_b: str, rows: list[str], scale: str) -> None:
    """Denormal and huge sides are drawn in proportion, at least a cell a piece; a cell
    smaller than the smallest float is given as the whole side over its cells."""
    text = diagram(box_a, box_b, width=80)
    assert grid_rows(text) == rows
    assert scale in lines_of(text)


@pytest.mark.parametrize("width", [40, 60, 80, 100, 160])
@pytest.mark.parametrize(
    ("box_a", "box_b"),
    [
        pytest.param("50,50,150,150", "80,80,180,180", id="overlapping"),
        pytest.param("0,0,10000,10", "9000,0,12000,5", id="wide"),
        pytest.param("-1000000,-5,1000000,5", "0,0,1,1", id="long-labels"),
    ],
)
def test_diagram_fits_the_width(box_a: str, box_b: str, width: int) -> None:
    """The drawing is scaled to the width it is given, never wider."""
    assert max(len(line) for line in lines_of(diagram(box_a, box_b, width))) <= width


def test_report_follows_columns() -> None:
    """The whole report fits a narrower terminal (COLUMNS)."""
    _, out, _ = run(*EXAMPLES["overlapping"], columns=80)
    assert max(len(line) for line in lines_of(out)) <= 80
    assert len(grid_rows(out)) == 16


def test_docs_excerpt_is_the_current_output() -> None:
    """The docs' IoU calculator session is lines of the golden output, so it cannot drift."""
    page = (ROOT / "docs" / "iou.md").read_text(encoding="utf-8")
    section = page.split("# IoU calculator", 1)[1]
    session = section.split("```console\n", 1)[1].split("```", 1)[0]
    command, *shown = session.splitlines()
    assert command == "$ vocmatch iou " + " ".join(EXAMPLES["overlapping"])
    golden = lines_of((GOLDEN / "iou_overlapping.txt").read_text(encoding="utf-8"))
    start = golden.index(shown[0])
    assert golden[start : start + len(shown)] == shown


# Polygons

POLYGON = ["--polygon", "200,100 300,100 200,200", "200,100,300,200"]


def test_polygon_example_matches_golden(golden: Callable[[str, str], None]) -> None:
    """A triangle against its bounding box, as in the docs: tests/golden/iou_polygon.txt."""
    code, out, err = run(*POLYGON)
    assert (code, err) == (EXIT_OK, "")
    golden("iou_polygon.txt", out)


def test_polygon_against_a_box() -> None:
    """Exact areas from the regions; the rows show bounding boxes, the points follow."""
    _, out, _ = run(*POLYGON)
    assert block(out, "IoU  ", 11) == [
        "IoU           0.5000 (50.00%)    I / U = 5,000 / 10,000",
        "Verdict       Match (IoU ≥ 0.5)  inclusive: IoU ≥ 0.5 matches",
        "GIoU          0.5000             IoU - (C - U) / C, C = 10,000 encloses both",
        "Dice / F1     0.6667             2·I / (A + B) = 10,000 / 15,000",
        "              0.6667             2·IoU / (1 + IoU); the two formulas agree",
        "Intersection  5,000",
        "Union         10,000             A + B - I = 5,000 + 10,000 - 5,000",
        "Area A        5,000",
        "Area B        10,000",
        "Relation      A inside B",
        "",
    ]
    assert "A: polygon (200, 100) (300, 100) (200, 200)" in lines_of(out)
    assert "polygons drawn approximately (by character centres); the numbers are exact" in out
    # The hypotenuse runs from the top right to the bottom left: A fills the top-left half.
    rows = grid_rows(out)
    assert rows[0].startswith("███") and rows[0].endswith("▒")
    assert rows[-1].startswith("█▒") and rows[-1].endswith("▒▒▒")


def test_polygon_may_be_either_side() -> None:
    """Arguments keep their order: a box A inside a diamond B."""
    code, out, _ = run("--polygon", "0,0,10,10", "5,-5 15,5 5,15 -5,5", "--format", "json")
    data = json.loads(out)
    assert code == EXIT_OK
    assert "points" not in data["box_a"]
    assert data["box_b"]["points"] == [[5.0, -5.0], [15.0, 5.0], [5.0, 15.0], [-5.0, 5.0]]
    assert (data["iou"], data["relation"], data["match"]) == (0.5, "A inside B", True)


def test_two_polygons() -> None:
    """Both sides polygons: I = 50 of a 75 triangle and a 100 square."""
    code, out, _ = run("--polygon", "-5,0 10,0 0,10", "0,0 10,0 10,10 0,10", "--format", "json")
    data = json.loads(out)
    assert code == EXIT_OK
    assert (data["intersection"], data["union"], data["iou"]) == (50.0, 125.0, 0.4)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--polygon", "0,0 2,2 2,0 0,2", "0,0,1,1"],
            "polygon A is self-intersecting at (1, 1): '0,0 2,2 2,0 0,2'",
            id="self-intersecting",
        ),
        pytest.param(
            ["--polygon", "0,0,1,1", "0,0 4,0 4,0"],
            "polygon B has 2 distinct points; a polygon needs at least 3: '0,0 4,0 4,0'",
            id="two-points",
        ),
        pytest.param(
            ["--polygon", "0,0 4,0 0,3", "0,0,1,1", "5"],
            "expected two regions A B (a box or polygon points each), got 3 argument(s)",
            id="three-arguments",
        ),
        pytest.param(
            ["--labels", "--polygon", "a", "b"],
            "--polygon applies to boxes, not to --labels",
            id="with-labels",
        ),
    ],
)
def test_bad_polygon_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    """A polygon that cannot be used is named, with why, on one line."""
    code, out, err = run(*args)
    assert (code, out, err) == (EXIT_USAGE, "", f"vocmatch: error: {message}\n")


def test_docs_polygon_excerpt_is_the_current_output() -> None:
    """The docs' polygon session is lines of the golden output, so it cannot drift."""
    page = (ROOT / "docs" / "shapes.md").read_text(encoding="utf-8")
    section = page.split("# Polygons and rotated boxes", 1)[1]
    session = section.split("```console\n", 1)[1].split("```", 1)[0]
    command, *shown = session.splitlines()
    assert command == "$ vocmatch iou --polygon '200,100 300,100 200,200' 200,100,300,200"
    golden = lines_of((GOLDEN / "iou_polygon.txt").read_text(encoding="utf-8"))
    start = golden.index(shown[0])
    assert golden[start : start + len(shown)] == shown


@pytest.mark.parametrize(
    ("flags", "iou", "union"),
    [
        # 10 x 10 pixels each (0..9 and 5..14 inclusive), 5 x 5 shared: 25 / 175.
        pytest.param(["--pixel-inclusive"], 25 / 175, 175.0, id="voc-plus-one"),
        # Continuous: 9 x 9 each, 4 x 4 shared: 16 / 146.
        pytest.param([], 16 / 146, 146.0, id="continuous-default"),
        pytest.param(["--continuous"], 16 / 146, 146.0, id="continuous"),
    ],
)
def test_pixel_inclusive_gives_the_voc_devkits_iou(
    flags: list[str], iou: float, union: float
) -> None:
    """--pixel-inclusive counts areas with the VOC devkit's +1 pixel, as eval's voc07 and
    voc12 protocols do; the JSON says which areas were used."""
    code, out, err = run(*flags, "0,0,9,9", "5,5,14,14", "--format", "json")
    assert (code, err) == (EXIT_OK, "")
    data = json.loads(out)
    assert (data["iou"], data["union"]) == (iou, union)
    assert data["pixel_inclusive"] is (flags == ["--pixel-inclusive"])


def test_pixel_inclusive_table_counts_both_edge_pixels() -> None:
    """The widths, heights and areas count both edge pixels, and the IoU row says so."""
    code, out, _ = run("--pixel-inclusive", "0,0,9,9", "5,5,14,14")
    assert code == EXIT_OK
    assert "I / U = 25 / 175; +1 pixel areas (VOC devkit)" in out
    assert block(out, "│ A ", 3) == [
        "│ A     │  0 │  0 │  9 │  9 │    10 │     10 │  100 │",
        "│ B     │  5 │  5 │ 14 │ 14 │    10 │     10 │  100 │",
        "│ A ∩ B │  5 │  5 │  9 │  9 │     5 │      5 │   25 │",
    ]
    assert "0.1429 (14.29%)" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--labels", "a", "b"], "--labels", id="labels"),
        pytest.param(["--polygon", "0,0 1,0 1,1", "0,0,1,1"], "--polygon", id="polygon"),
    ],
)
def test_pixel_inclusive_applies_to_boxes_only(args: list[str], message: str) -> None:
    """With label sets or polygons --pixel-inclusive is a usage error, not ignored."""
    code, out, err = run("--pixel-inclusive", *args)
    assert (code, out) == (EXIT_USAGE, "")
    assert err == f"vocmatch: error: --pixel-inclusive applies to boxes, not to {message}\n"

"""Check annotation files for the mistakes that spoil an evaluation, and report every one.

The evaluator's parser stops at the first problem in a file; the linter reads the same XML
with the same safe parser settings and keeps going, so one run lists every finding in every
file. A finding prints as ``path:line: CODE message``, the form compilers and linters use.

Rules (codes are stable: a code is never reused for a different check):

========  ====================  ==============================================================
code      name                  finds
========  ====================  ==============================================================
V001      invalid-xml           a file that cannot be read as an annotation document
V002      missing-tag           a required tag that is missing or empty
V003      non-numeric-value     a box coordinate or score that is not a number
V004      non-finite-value      a box coordinate or score that is NaN, infinite or beyond ±2^53
V005      empty-box             ``xmin >= xmax`` or ``ymin >= ymax`` (zero-area or inverted)
V006      box-outside-image     a box that extends outside the image ``<size>``
V007      invalid-size          a missing, non-numeric, zero or negative image ``<size>``
V008      filename-mismatch     a ``<filename>`` that does not name the annotation file's image
V009      unknown-class         a class name that is not in the list of known classes
V010      duplicate-box         the same class boxed twice at IoU >= a threshold
V011      no-objects            a file with no ``<object>``
V012      invalid-flag          a ``<difficult>`` or ``<truncated>`` that is not 0 or 1
V013      invalid-shape         a ``<robndbox>`` or ``<polygon>`` the evaluator cannot use
V014      repeated-field        a field written twice (two ``<bndbox>``): only the first is read
========  ====================  ==============================================================

Every file the evaluator's parser rejects gets at least one finding at the line its error
names, so a file that passes lint can be evaluated.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from lxml import etree

from vocmatch.core.iou import iou_matrix
from vocmatch.errors import AnnotationError, InputError, Message, Option
from vocmatch.escapes import github_message, github_property, printable
from vocmatch.readers.parse import (
    DEFAULT_MAX_BYTES,
    MAX_COORDINATE,
    XML_SPACE,
    children_named,
    element_text,
    first_child,
    local_name,
    number_problem,
    parse_document,
    raw_text,
    read_shape,
    refuse_dtd,
    source_line,
    walk_directory,
)
from vocmatch.readers.regular_files import read_bytes
from vocmatch.readers.workers import worker_count, worker_results

__all__ = [
    "DEFAULT_DUPLICATE_IOU",
    "RULES",
    "Finding",
    "LintOptions",
    "LintResult",
    "Rule",
    "github_annotation",
    "lint_bytes",
    "lint_file",
    "lint_paths",
    "read_classes",
    "rule",
    "select_codes",
    "summary",
    "text_line",
    "to_json",
]

#: IoU at or above which two boxes of one class in one file count as a double annotation.
DEFAULT_DUPLICATE_IOU = 0.9

_COORDINATES = ("xmin", "ymin", "xmax", "ymax")
_FLAGS = ("difficult", "truncated")


@dataclass(frozen=True, slots=True)
class Rule:
    """One lint check.

    Attributes:
        code: Stable identifier, ``V`` and three digits, used by ``--select`` and ``--ignore``.
        name: Short kebab-case name.
        description: What the rule finds, in one sentence.
    """

    code: str
    name: str
    description: str


#: Every rule, in code order.
RULES: tuple[Rule, ...] = (
    Rule(
        "V001",
        "invalid-xml",
        "The file cannot be read as an annotation document: unreadable, larger than the size "
        "limit, not well-formed XML, declaring a DTD or entities, or with a root other than "
        "<annotation>.",
    ),
    Rule(
        "V002",
        "missing-tag",
        "A required tag is missing or empty: <filename>, an object's <name>, or all of its "
        "<bndbox>, <robndbox> and <polygon>, or one of <xmin> <ymin> <xmax> <ymax> (<cx> <cy> "
        "<w> <h> <angle> of a <robndbox>).",
    ),
    Rule("V003", "non-numeric-value", "A box coordinate or <score> is not a number."),
    Rule(
        "V004",
        "non-finite-value",
        "A box coordinate or <score> is NaN or infinite, or a coordinate is beyond ±2^53.",
    ),
    Rule(
        "V005",
        "empty-box",
        "A box has xmin >= xmax or ymin >= ymax: zero area, or inverted corners.",
    ),
    Rule(
        "V006",
        "box-outside-image",
        "A box extends outside the image: a coordinate below 0 or beyond <size> (plus the "
        "tolerance).",
    ),
    Rule(
        "V007",
        "invalid-size",
        "The image <size> is missing, or its <width> or <height> is missing, not a number, "
        "zero or negative (or its <depth> is not a number).",
    ),
    Rule(
        "V008",
        "filename-mismatch",
        "<filename>, without its extension, is not the annotation file's name without .xml.",
    ),
    Rule(
        "V009",
        "unknown-class",
        Message("An object's class is not in the list of ", Option("classes"), "."),
    ),
    Rule(
        "V010",
        "duplicate-box",
        "Two boxes of the same class overlap at IoU >= the duplicate threshold: a likely "
        "double annotation (<bndbox> boxes only).",
    ),
    Rule("V011", "no-objects", "The file has no <object>."),
    Rule("V012", "invalid-flag", "<difficult> or <truncated> is not 0 or 1."),
    Rule(
        "V013",
        "invalid-shape",
        "A <robndbox> or <polygon> the evaluator refuses: a negative width or height, fewer "
        "than three points, zero area, mixed or repeated point tags, or both in one object.",
    ),
    Rule(
        "V014",
        "repeated-field",
        "A field the evaluator reads is written twice in one element (two <bndbox> in an "
        "object, two <xmin> in a <bndbox>, two <size>): only the first is read, so the result "
        "depends on the order the writer chose.",
    ),
)

_RULES_BY_CODE = {r.code: r for r in RULES}
_ALL_CODES = frozenset(_RULES_BY_CODE)


def rule(code: str) -> Rule:
    """The rule with this code.

    Raises:
        KeyError: No rule has this code.

    >>> rule("V005").name
    'empty-box'
    """
    return _RULES_BY_CODE[code]


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found in one file.

    Attributes:
        path: The file, as it was given or found.
        line: The 1-based line of the element at fault; 1 for problems with the whole file.
        code: The rule's code.
        message: What is wrong, in one line.
    """

    path: str
    line: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.code} {self.message}"


@dataclass(frozen=True, slots=True)
class LintOptions:
    """What to check, and the thresholds of the checks that have one.

    Attributes:
        codes: The codes to report; the others are still computed but dropped.
        classes: The known class names for V009; None turns V009 off.
        tolerance: Pixels a box may extend beyond the image before V006 reports it.
        duplicate_iou: IoU at or above which V010 reports two boxes of one class.
        max_bytes: Files larger than this are reported (V001) without being read.
    """

    codes: frozenset[str] = _ALL_CODES
    classes: frozenset[str] | None = None
    tolerance: float = 0.0
    duplicate_iou: float = DEFAULT_DUPLICATE_IOU
    max_bytes: int = DEFAULT_MAX_BYTES


@dataclass(frozen=True, slots=True)
class LintResult:
    """The findings of one lint run.

    Attributes:
        findings: Every reported finding, file by file in the order the files were checked,
            and by line and code within a file.
        files_checked: How many files were read.
    """

    findings: tuple[Finding, ...]
    files_checked: int

    @property
    def files_with_findings(self) -> int:
        """How many files have at least one finding."""
        return len({f.path for f in self.findings})


@dataclass(frozen=True, slots=True)
class _Box:
    """An object whose four coordinates are finite numbers."""

    name: str | None
    line: int
    bndbox_line: int
    x1: float
    y1: float
    x2: float
    y2: float
    texts: tuple[str, str, str, str]
    kind: str = "box"  # "rotated box" or "polygon" for a shape (its bounding box here)

    def label(self) -> str:
        return f"{self.kind} {self.name!r}" if self.name else self.kind


def select_codes(select: Iterable[str] = (), ignore: Iterable[str] = ()) -> frozenset[str]:
    """The codes a ``--select`` / ``--ignore`` pair leaves on.

    Each item may hold several comma-separated selectors. A selector is a code (``V005``) or a
    prefix of codes (``V00`` is V001 to V009); ``ALL`` selects every code. Case is ignored.

    Args:
        select: Selectors to report; empty means every rule.
        ignore: Selectors to drop from the selection.

    Returns:
        The codes to report.

    Raises:
        InputError: A selector matches no rule.

    >>> sorted(select_codes(["V005,V006"], ["V006"]))
    ['V005']
    """
    chosen = _expand(select) if _split(select) else set(_ALL_CODES)
    return frozenset(chosen - _expand(ignore))


def _split(items: Iterable[str]) -> list[str]:
    return [part.strip().upper() for item in items for part in item.split(",") if part.strip()]


def _expand(items: Iterable[str]) -> set[str]:
    codes: set[str] = set()
    for selector in _split(items):
        if selector == "ALL":
            codes |= _ALL_CODES
            continue
        matched = {code for code in _ALL_CODES if code.startswith(selector)}
        if not matched:
            raise InputError(
                f"unknown rule code {selector!r}; the codes are {', '.join(sorted(_ALL_CODES))}"
            )
        codes |= matched
    return codes


def read_classes(path: str | os.PathLike[str]) -> frozenset[str]:
    """Read the known class names: one per line; blank lines and ``#`` comments are skipped.

    LabelImg's ``predefined_classes.txt`` and a ``classes.txt`` of one name per line both
    read as they are.

    Args:
        path: The text file (UTF-8).

    Returns:
        The names, surrounding whitespace stripped.

    Raises:
        InputError: The file cannot be read or holds no name.
    """
    name = os.fspath(path)
    try:
        # Regular files only, read without blocking: a named pipe cannot hang the run.
        text = read_bytes(name).decode("utf-8")
    except AnnotationError as error:
        raise InputError(f"{name}: cannot read class list: {error.message}") from None
    except UnicodeDecodeError:
        raise InputError(f"{name}: class list is not UTF-8 text") from None
    classes = frozenset(
        stripped
        for line in text.splitlines()
        if (stripped := line.strip()) and not stripped.startswith("#")
    )
    if not classes:
        raise InputError(f"{name}: class list holds no class name")
    return classes


def _at(element: etree._Element, default: int = 1) -> int:
    line = source_line(element)
    return line if line is not None else default


def _parse_root(data: bytes, path: str) -> etree._Element:
    # The checks of vocmatch.readers.parse.parse_annotation up to the root element, with the same
    # parser settings, so lint refuses exactly the documents the evaluator refuses.
    try:
        root = parse_document(data)
    except etree.XMLSyntaxError as error:
        line = int(error.position[0]) if error.position else None
        message = str(error.msg or error).splitlines()[0]
        # The position is already the finding's line.
        message = re.sub(r", line \d+, column \d+$", "", message)
        raise AnnotationError(path, f"not well-formed XML: {message}", line) from None
    if root is None:
        raise AnnotationError(path, "empty document", 1)
    refuse_dtd(root.getroottree(), path)
    if local_name(root.tag) != "annotation":
        raise AnnotationError(
            path,
            f"root element is <{local_name(root.tag)}>, expected <annotation>",
            source_line(root),
        )
    return root


def _number(element: etree._Element, path: str, findings: list[Finding]) -> float | None:
    """The element's value, or None with a V003 / V004 finding."""
    # The evaluator's own grammar (vocmatch.readers.parse.read_number) and wording.
    name = local_name(element.tag)
    text = raw_text(element)
    value, problem = number_problem(text)
    if value is None:
        code = "V004" if problem == "is not finite" else "V003"
        shown = text.strip(XML_SPACE)
        findings.append(Finding(path, _at(element), code, f"<{name}> {problem}: {shown!r}"))
    return value


def _size_findings(
    root: etree._Element, path: str
) -> tuple[tuple[float, float] | None, list[Finding]]:
    """The image's (width, height) when both are usable, and the V007 findings."""
    findings: list[Finding] = []
    size = first_child(root, "size")
    if size is None:
        return None, [Finding(path, _at(root), "V007", "no <size>")]
    values: list[float] = []
    for name in ("width", "height"):
        element = first_child(size, name)
        if element is None:
            findings.append(Finding(path, _at(size), "V007", f"<size> has no <{name}>"))
            continue
        value = _number(element, path, findings)
        if value is None:
            continue
        if value <= 0:
            findings.append(
                Finding(
                    path,
                    _at(element),
                    "V007",
                    f"<{name}> is not positive: {element_text(element)!r}",
                )
            )
            continue
        values.append(value)
    depth = first_child(size, "depth")
    if depth is not None and element_text(depth):
        _number(depth, path, findings)
    # A bad size is one problem of the image's size, whatever form it takes.
    findings = [Finding(f.path, f.line, "V007", f.message) for f in findings]
    if len(values) == 2 and not findings:
        return (values[0], values[1]), findings
    return None, findings


def _filename_findings(root: etree._Element, path: str) -> list[Finding]:
    element = first_child(root, "filename")
    if element is None:
        return [Finding(path, _at(root), "V002", "<annotation> has no <filename>")]
    text = element_text(element)
    if not text:
        return [Finding(path, _at(element), "V002", "<filename> is empty")]
    # LabelImg writes a bare name; other tools write a path, on Windows with backslashes.
    image = PureWindowsPath(text).name
    stem = Path(path).stem
    if image == stem or os.path.splitext(image)[0] == stem:
        return []
    return [
        Finding(
            path,
            _at(element),
            "V008",
            f"<filename> {text!r} does not match the file name {Path(path).name!r}",
        )
    ]


def _first_children(element: etree._Element) -> dict[str, etree._Element]:
    """Each child element's local name -> the first child of that name (what ``first_child``
    finds), in one pass: an object is asked for a dozen names."""
    children: dict[str, etree._Element] = {}
    for child in element:
        if isinstance(child.tag, str):
            children.setdefault(local_name(child.tag), child)
    return children


def _flag_findings(children: dict[str, etree._Element], path: str) -> list[Finding]:
    findings: list[Finding] = []
    for name in _FLAGS:
        element = children.get(name)
        if element is None:
            continue
        text = element_text(element)
        # An empty flag reads as 0, as the evaluator's parser reads it.
        if text not in ("", "0", "1"):
            findings.append(
                Finding(path, _at(element), "V012", f"<{name}> must be 0 or 1, got {text!r}")
            )
    return findings


def _object_findings(
    obj: etree._Element, path: str, classes: frozenset[str] | None
) -> tuple[_Box | None, list[Finding]]:
    """The object's box when its coordinates are all finite numbers, and its findings."""
    children = _first_children(obj)
    findings = _flag_findings(children, path)
    line = _at(obj)
    name: str | None = None
    name_element = children.get("name")
    if name_element is None:
        findings.append(Finding(path, line, "V002", "<object> has no <name>"))
    else:
        name = element_text(name_element) or None
        if name is None:
            findings.append(Finding(path, _at(name_element), "V002", "<name> is empty"))
        elif classes is not None and name not in classes:
            # Case is ignored when looking for a suggestion: 'rbc' is most likely 'RBC'.
            lowered = {known.lower(): known for known in sorted(classes, reverse=True)}
            close = difflib.get_close_matches(name.lower(), sorted(lowered), n=1)
            hint = f" (did you mean {lowered[close[0]]!r}?)" if close else ""
            findings.append(
                Finding(path, _at(name_element), "V009", f"unknown class {name!r}{hint}")
            )
    for score_name in ("score", "confidence"):
        # The evaluator reads the first of the two that is present.
        score = children.get(score_name)
        if score is not None:
            _number(score, path, findings)
            break
    if "robndbox" in children or "polygon" in children:
        return _shape_box(obj, name, path, findings), findings
    bndbox = children.get("bndbox")
    if bndbox is None:
        label = f"<object> {name!r}" if name else "<object>"
        findings.append(
            Finding(path, line, "V002", f"{label} has no <bndbox>, <robndbox> or <polygon>")
        )
        return None, findings
    values: list[float] = []
    texts: list[str] = []
    corners = _first_children(bndbox)
    for tag in _COORDINATES:
        element = corners.get(tag)
        if element is None:
            findings.append(Finding(path, _at(bndbox), "V002", f"<bndbox> has no <{tag}>"))
            continue
        value = _number(element, path, findings)
        if value is not None and abs(value) > MAX_COORDINATE:
            findings.append(
                Finding(
                    path,
                    _at(element),
                    "V004",
                    f"<{tag}> {value:g} is out of range (the limit is ±2^53)",
                )
            )
        elif value is not None:
            values.append(value)
            texts.append(element_text(element))
    if len(values) != 4:
        return None, findings
    x1, y1, x2, y2 = values
    box = _Box(name, line, _at(bndbox), x1, y1, x2, y2, (texts[0], texts[1], texts[2], texts[3]))
    return box, findings


#: Codes for the parser's refusals of a shape, by what its message says; the rest is V013.
_SHAPE_CODES = (
    ("has no <", "V002"),
    ("is not a number", "V003"),
    ("is not finite", "V004"),
    ("is out of range", "V004"),
)


def _shape_box(
    obj: etree._Element, name: str | None, path: str, findings: list[Finding]
) -> _Box | None:
    """A rotated box or polygon read exactly as the evaluator reads it (its bounding box
    stands in for the box in the checks that follow), or None with the parser's refusal."""
    try:
        shape = read_shape(obj, name or "", path)
    except AnnotationError as error:
        code = next((c for text, c in _SHAPE_CODES if text in error.message), "V013")
        findings.append(Finding(path, error.line or _at(obj), code, error.message))
        return None
    rotated = first_child(obj, "robndbox")
    element = rotated if rotated is not None else first_child(obj, "polygon")
    if shape is None or element is None:
        return None  # not reached: the caller saw one of the two
    x1, y1, x2, y2 = shape.bounds
    texts = (f"{x1:g}", f"{y1:g}", f"{x2:g}", f"{y2:g}")
    kind = "rotated box" if rotated is not None else "polygon"
    return _Box(name, _at(obj), _at(element), x1, y1, x2, y2, texts, kind)


def _empty_box_finding(box: _Box, path: str) -> Finding | None:
    xmin, ymin, xmax, ymax = box.texts
    parts: list[str] = []
    inverted = False
    for low, high, low_text, high_text, axis in (
        (box.x1, box.x2, xmin, xmax, "x"),
        (box.y1, box.y2, ymin, ymax, "y"),
    ):
        if low > high:
            inverted = True
            parts.append(f"{axis}min {low_text} > {axis}max {high_text}")
        elif low == high:
            parts.append(f"{axis}min {low_text} = {axis}max {high_text}")
    if not parts:
        return None
    kind = "inverted" if inverted else "zero-area"
    return Finding(path, box.bndbox_line, "V005", f"{kind} {box.label()}: {', '.join(parts)}")


def _outside_finding(
    box: _Box, size: tuple[float, float], tolerance: float, path: str
) -> Finding | None:
    width, height = size
    xmin, ymin, xmax, ymax = box.texts
    parts: list[str] = []
    # Coordinates are pixel positions in [0, width] x [0, height]; the VOC devkit's 1-based
    # pixel indices (1 .. width) fall inside the same range.
    if box.x1 < -tolerance:
        parts.append(f"xmin {xmin} < 0")
    if box.y1 < -tolerance:
        parts.append(f"ymin {ymin} < 0")
    if box.x2 > width + tolerance:
        parts.append(f"xmax {xmax} > width {width:g}")
    if box.y2 > height + tolerance:
        parts.append(f"ymax {ymax} > height {height:g}")
    if not parts:
        return None
    return Finding(
        path,
        box.bndbox_line,
        "V006",
        f"{box.label()} outside the {width:g}x{height:g} image: {', '.join(parts)}",
    )


def _duplicate_findings(boxes: Sequence[_Box], threshold: float, path: str) -> list[Finding]:
    """One finding per box that repeats an earlier box of its class, naming the first one."""
    findings: list[Finding] = []
    by_class: dict[str, list[_Box]] = {}
    for box in boxes:
        # Boxes only: two rotated boxes or polygons can share a bounding box, not overlap.
        if box.name is not None and box.kind == "box" and box.x1 < box.x2 and box.y1 < box.y2:
            by_class.setdefault(box.name, []).append(box)
    for name, group in by_class.items():
        if len(group) < 2:
            continue
        corners = [(b.x1, b.y1, b.x2, b.y2) for b in group]
        overlap = iou_matrix(corners, corners)
        for j in range(1, len(group)):
            for i in range(j):
                if overlap[i, j] >= threshold:
                    findings.append(
                        Finding(
                            path,
                            group[j].line,
                            "V010",
                            f"duplicate {name!r} box: IoU {overlap[i, j]:.2f} with the box at "
                            f"line {group[i].line}",
                        )
                    )
                    break
    return findings


#: The fields the evaluator reads, by the element that holds them: a second one is ignored.
_READ_FIELDS: dict[str, tuple[str, ...]] = {
    "annotation": ("filename", "size"),
    "size": ("width", "height", "depth"),
    "object": (
        "name", "bndbox", "robndbox", "polygon", "score", "confidence", "difficult",
        "truncated", "occluded", "pose",
    ),
    "bndbox": _COORDINATES,
}  # fmt: skip


def _repeated_findings(root: etree._Element, path: str) -> list[Finding]:
    """A V014 finding at each second (third ...) field of an element that the evaluator
    reads once: the root, its first <size>, each object and its first <bndbox>."""
    holders = [root]
    size = first_child(root, "size")
    if size is not None:
        holders.append(size)
    for obj in children_named(root, "object"):
        holders.append(obj)
        bndbox = first_child(obj, "bndbox")
        if bndbox is not None:
            holders.append(bndbox)
    findings: list[Finding] = []
    for holder in holders:
        fields = _READ_FIELDS[local_name(holder.tag)]
        first: dict[str, etree._Element] = {}
        for child in holder:
            if not isinstance(child.tag, str):
                continue
            name = local_name(child.tag)
            if name not in fields:
                continue
            if name not in first:
                first[name] = child
                continue
            findings.append(
                Finding(
                    path,
                    _at(child),
                    "V014",
                    f"<{local_name(holder.tag)}> has a second <{name}>: only the first "
                    f"(line {_at(first[name])}) is read",
                )
            )
    return findings


def _document_findings(root: etree._Element, path: str, options: LintOptions) -> list[Finding]:
    findings = _filename_findings(root, path) + _repeated_findings(root, path)
    size, size_findings = _size_findings(root, path)
    findings += size_findings
    objects = children_named(root, "object")
    if not objects:
        findings.append(Finding(path, _at(root), "V011", "no <object>"))
    boxes: list[_Box] = []
    for obj in objects:
        box, object_findings = _object_findings(obj, path, options.classes)
        findings += object_findings
        if box is None:
            continue
        boxes.append(box)
        empty = _empty_box_finding(box, path)
        if empty is not None:
            findings.append(empty)
        if size is not None:
            outside = _outside_finding(box, size, options.tolerance, path)
            if outside is not None:
                findings.append(outside)
    findings += _duplicate_findings(boxes, options.duplicate_iou, path)
    return findings


def lint_bytes(data: bytes, path: str, options: LintOptions | None = None) -> list[Finding]:
    """Lint the content of one annotation file.

    Args:
        data: The file's bytes.
        path: The file's path: named in the findings and compared with ``<filename>`` (V008).
        options: What to check; every rule with default thresholds when None.

    Returns:
        The findings of the selected rules, sorted by line, then code.

    >>> xml = b"<annotation><filename>a.jpg</filename></annotation>"
    >>> for finding in lint_bytes(xml, "a.xml"):
    ...     print(finding)
    a.xml:1: V007 no <size>
    a.xml:1: V011 no <object>
    """
    options = options if options is not None else LintOptions()
    try:
        root = _parse_root(data, path)
    except AnnotationError as error:
        findings = [Finding(path, error.line or 1, "V001", error.message)]
    else:
        findings = _document_findings(root, path, options)
    return sorted((f for f in findings if f.code in options.codes), key=lambda f: (f.line, f.code))


def lint_file(path: str | os.PathLike[str], options: LintOptions | None = None) -> list[Finding]:
    """Lint one annotation file.

    A file that cannot be read, or is larger than ``options.max_bytes``, is a V001 finding.

    Args:
        path: The XML file.
        options: What to check; every rule with default thresholds when None.

    Returns:
        The findings of the selected rules, sorted by line, then code.
    """
    options = options if options is not None else LintOptions()
    name = os.fspath(path)
    try:
        # The evaluator's own reading: regular files only (a named pipe or a device is
        # refused without blocking), size checked before reading.
        data = read_bytes(name, options.max_bytes)
    except AnnotationError as error:
        return [Finding(name, 1, "V001", error.message)] if "V001" in options.codes else []
    return lint_bytes(data, name, options)


def _lint_files(files: Sequence[str], options: LintOptions | None) -> list[Finding]:
    return [finding for file in files for finding in lint_file(file, options)]


def lint_paths(
    paths: Iterable[str | os.PathLike[str]],
    options: LintOptions | None = None,
    jobs: int = 1,
) -> LintResult:
    """Lint files and every ``*.xml`` file below directories.

    Directories are searched recursively in sorted order; a file named directly is linted
    whatever its extension. A file reached twice is linted once.

    Args:
        paths: Files and directories, in the order to report them.
        options: What to check; every rule with default thresholds when None.
        jobs: Processes that lint files in parallel (1: this process). The findings are
            the same, in the same order, whatever the number.

    Returns:
        The findings, and how many files were checked.

    Raises:
        InputError: A path does not exist.
    """
    files: list[str] = []
    seen: set[str] = set()
    options = options if options is not None else LintOptions()
    # Folders that could not be listed (too deep for the system, no permission): a V001
    # finding each, so that no file goes unchecked without a word.
    unreadable: list[Finding] = []
    for path in paths:
        name = os.fspath(path)
        try:
            is_directory = stat.S_ISDIR(os.stat(name).st_mode)
        except FileNotFoundError:
            raise InputError(f"{name}: no such file or directory") from None
        except OSError as error:
            raise InputError(f"{name}: {error.strerror or error}") from None
        if is_directory:
            listing = walk_directory(name)
            found = [file for _, file in listing.files]
            unreadable += [
                Finding(s.path, 1, "V001", s.message)
                for s in listing.skipped
                if "V001" in options.codes
            ]
        else:
            found = [name]
        for file in found:
            real = os.path.realpath(file)
            if real not in seen:
                seen.add(real)
                files.append(file)
    # A few files are linted faster here than by starting processes.
    workers = 1 if len(files) < 64 else worker_count(jobs, len(files))
    # Chunks large enough that sending them costs little, enough to balance the workers.
    size = max(16, min(256, len(files) // (workers * 8)))
    chunks = [(files[i : i + size], options) for i in range(0, len(files), size)]
    with worker_results(_lint_files, chunks, workers) as parts:
        findings = [*unreadable, *(finding for part in parts for finding in part)]
    return LintResult(findings=tuple(findings), files_checked=len(files))


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def summary(result: LintResult) -> str:
    """One line that closes a text report.

    >>> summary(LintResult((), 12))
    'All checks passed (12 files checked).'
    >>> summary(LintResult((Finding("a.xml", 1, "V011", "no <object>"),), 1))
    'Found 1 finding in 1 file (1 file checked).'
    """
    checked = _count(result.files_checked, "file")
    if not result.findings:
        return f"All checks passed ({checked} checked)."
    found = _count(len(result.findings), "finding")
    return f"Found {found} in {_count(result.files_with_findings, 'file')} ({checked} checked)."


def text_line(finding: Finding) -> str:
    r"""The finding as one line of the text format, ``path:line: CODE message``, with
    control characters and bidi overrides of a name shown as escapes.

    >>> text_line(Finding("evil\x1b[2J.xml", 1, "V011", "no <object>"))
    'evil\\x1b[2J.xml:1: V011 no <object>'
    """
    return printable(str(finding))


def github_annotation(finding: Finding) -> str:
    """The finding as a GitHub Actions workflow command, shown on the file's line in a PR.

    Values are escaped as the runner expects (``%``, and in properties ``:`` and ``,``);
    line breaks, control characters and bidi overrides of a name are shown as escapes
    (:mod:`vocmatch.escapes`), so a name can neither start a command of its own nor colour
    the log.

    >>> print(github_annotation(Finding("gt/a.xml", 14, "V005", "zero-area box 'RBC'")))
    ::error file=gt/a.xml,line=14,title=V005 empty-box::V005 zero-area box 'RBC'
    """
    title = f"{finding.code} {rule(finding.code).name}"
    return (
        f"::error file={github_property(finding.path)},line={finding.line},"
        f"title={github_property(title)}::"
        f"{github_message(f'{finding.code} {finding.message}')}"
    )


def to_json(result: LintResult) -> str:
    """The result as JSON: counts, then one object per finding, ending in a newline.

    >>> print(to_json(LintResult((Finding("a.xml", 1, "V011", "no <object>"),), 1)), end="")
    {
      "files_checked": 1,
      "files_with_findings": 1,
      "findings": [
        {
          "path": "a.xml",
          "line": 1,
          "code": "V011",
          "name": "no-objects",
          "message": "no <object>"
        }
      ]
    }
    """
    document = {
        "files_checked": result.files_checked,
        "files_with_findings": result.files_with_findings,
        "findings": [
            {
                "path": f.path,
                "line": f.line,
                "code": f.code,
                "name": rule(f.code).name,
                "message": f.message,
            }
            for f in result.findings
        ],
    }
    # ASCII: control, bidi and non-UTF-8 characters of a name as \\u escapes.
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"

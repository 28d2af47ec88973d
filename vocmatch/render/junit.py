"""An :class:`~vocmatch.evaluation.scoring.Evaluation` and its gates as JUnit XML, so
that CI systems list the evaluation as tests.

Names are data: every file and class name goes through
:func:`~vocmatch.escapes.xml_text` (what XML 1.0 cannot hold, as escapes).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from vocmatch.escapes import xml_text

if TYPE_CHECKING:
    # Only for the annotations: a report imports the modules of the parts it writes.
    from vocmatch.evaluation.scoring import Evaluation, ImageResult
    from vocmatch.evidence.gates import GateReport

__all__ = [
    "NO_BOXES",
    "to_junit",
]


def _xml(text: str) -> str:
    # What XML 1.0 cannot hold even escaped, shown as escapes, so the file always parses.
    return xml_text(text)


def _junit_image_detail(image: ImageResult) -> str:
    """One line per item, each name escaped on its own (the lines' breaks are ours)."""
    lines = [
        f"gt {image.gt}, pred {image.pred}, tp {image.tp}, fp {image.fp}, fn {image.fn}",
        f"gt file: {_xml(image.gt_path)}",
        f"pred file: {_xml(image.pred_path) if image.pred_path is not None else '(none)'}",
    ]
    # False positives first, then missed objects, each in file order.
    for m in sorted(image.matches, key=lambda m: (m.pred_index or 0, m.gt_index or 0)):
        if m.outcome == "fp" and m.pred_index is not None:
            score = "" if m.score is None else f", score {m.score:g}"
            lines.append(f"fp: {_xml(m.name)}#{m.pred_index}, best IoU {m.iou:.3f}{score}")
    for m in sorted(image.matches, key=lambda m: m.gt_index or 0):
        if m.outcome == "fn" and m.gt_index is not None:
            lines.append(f"fn: {_xml(m.name)}#{m.gt_index}, best IoU {m.iou:.3f}")
    if (image.fp or image.fn) and not image.matches:
        lines.append(NO_BOXES)
    return "\n".join(lines)


#: The line in place of an image's FP and FN when the evaluation kept no box by box matches
#: (merged shard states keep each image's counts only).
NO_BOXES = "fp and fn boxes: not listed (this evaluation kept counts, not boxes)"


def to_junit(evaluation: Evaluation, gates: GateReport | None = None) -> str:
    """JUnit XML, so that CI systems list the evaluation as tests.

    One ``<testsuite name="vocmatch">`` holds a test case per dataset or class gate
    (``classname="vocmatch.gates"``, named as the condition, ``person:recall >= 0.9``) and
    a test case per image (``classname="vocmatch.images"``, named by key), which fails when
    the image is over ``max_fp`` or ``max_fn``; without limits every image passes. A
    failure's ``message`` is the failed condition, its text the counts, the files and each
    FP and FN (``class#n``: objects numbered from 0 in file order, as in every output; or,
    for an evaluation that kept no matches, :data:`NO_BOXES`). The conventions are
    ``<properties>``.

    Args:
        evaluation: The evaluation.
        gates: The checked gates; None checks none.

    Returns:
        The XML document, UTF-8 declared, ending in a newline.
    """
    from vocmatch.evidence.gates import GateReport

    report = gates if gates is not None else GateReport((), ())
    checks = {c.key: c for c in report.images}
    root = ET.Element("testsuites", name="vocmatch")
    suite = ET.SubElement(root, "testsuite", name="vocmatch")
    properties = ET.SubElement(suite, "properties")
    for name, value in evaluation.conventions.describe():
        ET.SubElement(properties, "property", name=name, value=value)
    tests = failures = 0
    for result in report.gates:
        case = ET.SubElement(
            suite, "testcase", classname="vocmatch.gates", name=_xml(str(result.gate))
        )
        tests += 1
        if not result.passed:
            failures += 1
            failure = ET.SubElement(case, "failure", type="fail-under", message=_xml(str(result)))
            failure.text = _xml(str(result))
    for image in evaluation.images:
        case = ET.SubElement(suite, "testcase", classname="vocmatch.images", name=_xml(image.key))
        tests += 1
        check = checks.get(image.key)
        if check is not None and not check.passed:
            failures += 1
            kinds = [
                k for k, bad in (("max-fp", check.fp_failed), ("max-fn", check.fn_failed)) if bad
            ]
            failure = ET.SubElement(
                case, "failure", type=",".join(kinds), message=_xml("; ".join(check.failures()))
            )
            failure.text = _junit_image_detail(image)
    for element in (root, suite):
        element.set("tests", str(tests))
        element.set("failures", str(failures))
        element.set("errors", "0")
    suite.set("skipped", "0")
    ET.indent(root, space="  ")
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"

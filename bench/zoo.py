"""The same boxes written the way different annotation tools write PASCAL VOC XML.

Real files come from many writers, and each lays an object out its own way: child order,
extra elements, indentation, line endings, number format. ``bench/generate.py`` writes
LabelImg's layout; this module writes the same generated images (same seed, same boxes,
same scores) in each layout below, so that a reader can be checked to give identical
results on all of them, and timed on each::

    python bench/zoo.py OUT_DIR --images 5000              # every layout
    python bench/zoo.py OUT_DIR --images 500 --layouts cvat,roboflow

writes ``OUT_DIR/<layout>/gt/*.xml`` and ``OUT_DIR/<layout>/pred/*.xml``. The COCO JSON of
the same boxes is ``bench/generate.py``'s (the layouts change no number).

What each layout copies (from the tools' own exporters and their published samples):

=================  ======================================================================
``labelimg``       LabelImg: tab indentation, ``name pose truncated difficult bndbox``;
                   the predictions' ``<score>`` after ``<bndbox>`` (bench/generate.py).
``labelimg-crlf``  The same file saved with Windows line endings (CR LF).
``cvat``           CVAT 2.x's Pascal VOC export (written by datumaro's VOC converter with
                   lxml's pretty printer): two-space indentation, no XML declaration,
                   ``<source>`` with ``database``/``annotation``/``image``, an empty
                   ``<depth>``, objects ``name truncated occluded difficult bndbox``,
                   coordinates as floats (``12.0``) and an ``<attributes>`` block whose
                   ``<attribute>`` children hold a ``<name>`` of their own; the
                   predictions' ``<score>`` before ``<bndbox>``.
``datumaro``       ``datum export -f voc``: the same converter with ``<pose>`` and no
                   attribute block; ``<score>`` last.
``roboflow``       Roboflow's VOC export: tabs, empty ``<folder>``, ``<database>
                   roboflow.ai``, ``name pose truncated difficult occluded bndbox`` and the
                   corners in the order ``xmin xmax ymin ymax``; ``<confidence>`` after
                   ``<bndbox>``.
``labelstudio``    Label Studio's converter (``xml.dom.minidom``, no indentation, one
                   element per line, an XML declaration, ``<source>`` with five children
                   and an ``<owner>`` holding a ``<name>``); ``<score>`` last.
``minified``       A detector exporter's compact form: an XML declaration, no whitespace
                   at all, and ``<score>`` first in each object, before ``<name>``.
=================  ======================================================================
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from generate import (  # noqa: E402
    IMAGE_FOLDER,
    IMAGE_SUFFIX,
    GeneratedImage,
    ImageBoxes,
    class_names,
    generated_images,
    voc_xml,
)


@dataclass(frozen=True, slots=True)
class ZooObject:
    """One object's values as text, ready to be laid out."""

    name: str
    xmin: int
    ymin: int
    xmax: int
    ymax: int
    truncated: int
    difficult: int
    score: str | None  # repr of the score, None for ground truth


def objects(image: GeneratedImage, boxes: ImageBoxes, names: Sequence[str]) -> list[ZooObject]:
    """The objects of an image's ground truth or predictions, in file order."""
    scores = [None] * len(boxes.labels) if boxes.scores is None else boxes.scores.tolist()
    found = []
    for (xmin, ymin, xmax, ymax), label, difficult, score in zip(
        boxes.boxes.tolist(), boxes.labels.tolist(), boxes.difficult.tolist(), scores, strict=True
    ):
        # LabelImg's rule, kept in every layout so that all carry the same flags.
        truncated = xmin == 1 or ymin == 1 or xmax == image.width or ymax == image.height
        found.append(
            ZooObject(
                names[label],
                xmin,
                ymin,
                xmax,
                ymax,
                int(truncated),
                int(difficult),
                None if score is None else repr(score),
            )
        )
    return found


def _element(name: str, text: object) -> str:
    return f"<{name}>{text}</{name}>"


def _pretty(lines: list[tuple[int, str]], indent: str, newline: str = "\n") -> str:
    return "".join(f"{indent * depth}{line}{newline}" for depth, line in lines)


def labelimg(image: GeneratedImage, boxes: ImageBoxes, names: Sequence[str]) -> str:
    return voc_xml(image, boxes, names)


def labelimg_crlf(image: GeneratedImage, boxes: ImageBoxes, names: Sequence[str]) -> str:
    return voc_xml(image, boxes, names).replace("\n", "\r\n")


def _datumaro_header(image: GeneratedImage) -> list[tuple[int, str]]:
    # datumaro's VOC converter: folder from the item id, three <source> children, an
    # empty <depth> when the image's channels are unknown.
    return [
        (0, "<annotation>"),
        (1, "<folder></folder>"),
        (1, _element("filename", image.name + IMAGE_SUFFIX)),
        (1, "<source>"),
        (2, _element("database", "Unknown")),
        (2, _element("annotation", "Unknown")),
        (2, _element("image", "Unknown")),
        (1, "</source>"),
        (1, "<size>"),
        (2, _element("width", image.width)),
        (2, _element("height", image.height)),
        (2, "<depth></depth>"),
        (1, "</size>"),
        (1, _element("segmented", 0)),
    ]


def _float_box(obj: ZooObject, depth: int) -> list[tuple[int, str]]:
    # str(float): datumaro stores boxes as floats, so 12 is written 12.0.
    return [
        (depth, "<bndbox>"),
        (depth + 1, _element("xmin", float(obj.xmin))),
        (depth + 1, _element("ymin", float(obj.ymin))),
        (depth + 1, _element("xmax", float(obj.xmax))),
        (depth + 1, _element("ymax", float(obj.ymax))),
        (depth, "</bndbox>"),
    ]


def cvat(image: GeneratedImage, boxes: ImageBoxes, names: Sequence[str]) -> str:
    lines = _datumaro_header(image)
    for obj in objects(image, boxes, names):
        lines += [
            (1, "<object>"),
            (2, _element("name", obj.name)),
            (2, _element("truncated", obj.truncated)),
            (2, _element("occluded", 0)),
            (2, _element("difficult", obj.difficult)),
        ]
        if obj.score is not None:
            lines.append((2, _element("score", obj.score)))
        lines += _float_box(obj, 2)
        lines += [
            (2, "<attributes>"),
            (3, "<attribute>"),
            (4, _element("name", "rotation")),
            (4, _element("value", 0.0)),
            (3, "</attribute>"),
            (2, "</attributes>"),
            (1, "</object>"),
        ]
    lines.append((0, "</annotation>"))
    return _pretty(lines, "  ")


def datumaro(image: GeneratedImage, boxes: ImageBoxes, names: Sequence[str]) -> str:
    lines = _datumaro_header(image)
    for obj in objects(image, boxes, names):
        lines += [
            (1, "<object>"),
            (2, _element("name", obj.name)),
            (2, _element("pose", "Unspecified")),
            (2, _element("truncated", obj.truncated)),
            (2, _element("occluded", 0)),
            (2, _element("difficult", obj.difficult)),
            *_float_box(obj, 2),
        ]
        if obj.score is not None:
            lines.append((2, _element("score", obj.score)))
        lines.append((1, "</object>"))
    lines.append((0, "</annotation>"))
    return _pretty(lines, "  ")


def roboflow(image: GeneratedImage, boxes: ImageBoxes, names: Sequence[str]) -> str:
    filename = image.name + IMAGE_SUFFIX
    lines = [
        (0, "<annotation>"),
        (1, "<folder></folder>"),
        (1, _element("filename", filename)),
        (1, _element("path", filename)),
        (1, "<source>"),
        (2, _element("database", "roboflow.ai")),
        (1, "</source>"),
        (1, "<size>"),
        (2, _element("width", image.width)),
        (2, _element("height", image.height)),
        (2, _element("depth", 3)),
        (1, "</size>"),
        (1, _element("segmented", 0)),
    ]
    for obj in objects(image, boxes, names):
        lines += [
            (1, "<object>"),
            (2, _element("name", obj.name)),
            (2, _element("pose", "Unspecified")),
            (2, _element("truncated", obj.truncated)),
            (2, _element("difficult", obj.difficult)),
            (2, _element("occluded", 0)),
            (2, "<bndbox>"),
            # Roboflow's order: both x corners, then both y corners.
            (3, _element("xmin", obj.xmin)),
            (3, _element("xmax", obj.xmax)),
            (3, _element("ymin", obj.ymin)),
            (3, _element("ymax", obj.ymax)),
            (2, "</bndbox>"),
        ]
        if obj.score is not None:
            lines.append((2, _element("confidence", obj.score)))
        lines.append((1, "</object>"))
    lines.append((0, "</annotation>"))
    return _pretty(lines, "\t")


def labelstudio(image: GeneratedImage, boxes: ImageBoxes, names: Sequence[str]) -> str:
    # minidom's writexml(addindent="", newl="\n"): every element on a line of its own,
    # text-only elements on one line, no indentation.
    lines = [
        '<?xml version="1.0" encoding="utf-8"?>',
        "<annotation>",
        _element("folder", IMAGE_FOLDER),
        _element("filename", image.name),
        "<source>",
        _element("database", "MyDatabase"),
        _element("annotation", "COCO2017"),
        _element("image", "flickr"),
        _element("flickrid", "NULL"),
        _element("annotator", ""),
        "</source>",
        "<owner>",
        _element("flickrid", "NULL"),
        _element("name", "Label Studio"),
        "</owner>",
        "<size>",
        _element("width", image.width),
        _element("height", image.height),
        _element("depth", 3),
        "</size>",
        _element("segmented", 0),
    ]
    for obj in objects(image, boxes, names):
        lines += [
            "<object>",
            _element("name", obj.name),
            _element("pose", "Unspecified"),
            _element("truncated", obj.truncated),
            _element("difficult", obj.difficult),
            "<bndbox>",
            _element("xmin", obj.xmin),
            _element("ymin", obj.ymin),
            _element("xmax", obj.xmax),
            _element("ymax", obj.ymax),
            "</bndbox>",
        ]
        if obj.score is not None:
            lines.append(_element("score", obj.score))
        lines.append("</object>")
    lines.append("</annotation>")
    return "\n".join(lines) + "\n"


def minified(image: GeneratedImage, boxes: ImageBoxes, names: Sequence[str]) -> str:
    parts = [
        '<?xml version="1.0"?><annotation>',
        _element("filename", image.name + IMAGE_SUFFIX),
        f"<size><width>{image.width}</width><height>{image.height}</height></size>",
    ]
    for obj in objects(image, boxes, names):
        score = "" if obj.score is None else _element("score", obj.score)
        parts.append(
            f"<object>{score}<name>{obj.name}</name>"
            f"<bndbox><xmin>{obj.xmin}</xmin><ymin>{obj.ymin}</ymin>"
            f"<xmax>{obj.xmax}</xmax><ymax>{obj.ymax}</ymax></bndbox>"
            f"<truncated>{obj.truncated}</truncated><difficult>{obj.difficult}</difficult>"
            "</object>"
        )
    parts.append("</annotation>")
    return "".join(parts)


Writer = Callable[[GeneratedImage, ImageBoxes, Sequence[str]], str]

#: Every layout, by name, in the order the benchmark reports them.
LAYOUTS: dict[str, Writer] = {
    "labelimg": labelimg,
    "labelimg-crlf": labelimg_crlf,
    "cvat": cvat,
    "datumaro": datumaro,
    "roboflow": roboflow,
    "labelstudio": labelstudio,
    "minified": minified,
}


def write_layout(
    out_dir: Path,
    layout: str,
    images: int,
    classes: int = 20,
    gt_per_image: float = 7,
    pred_per_image: int = 100,
    seed: int = 0,
) -> None:
    """Write ``out_dir/gt`` and ``out_dir/pred`` in one layout.

    The arguments after ``layout`` are ``bench/generate.py``'s: equal arguments give the
    same boxes and scores in every layout.
    """
    writer = LAYOUTS[layout]
    names = class_names(classes)
    gt_dir, pred_dir = out_dir / "gt", out_dir / "pred"
    gt_dir.mkdir(parents=True, exist_ok=True)
    pred_dir.mkdir(parents=True, exist_ok=True)
    for image in generated_images(images, classes, gt_per_image, pred_per_image, seed):
        # newline="": the text is written as laid out (CR LF stays CR LF).
        with (gt_dir / f"{image.name}.xml").open("w", encoding="utf-8", newline="") as f:
            f.write(writer(image, image.gt, names))
        with (pred_dir / f"{image.name}.xml").open("w", encoding="utf-8", newline="") as f:
            f.write(writer(image, image.pred, names))


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point: write the chosen layouts of one generated set."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    parser.add_argument("--images", type=int, required=True)
    parser.add_argument("--layouts", default=",".join(LAYOUTS), help="comma-separated")
    parser.add_argument("--classes", type=int, default=20)
    parser.add_argument("--gt-per-image", type=float, default=7)
    parser.add_argument("--pred-per-image", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for layout in args.layouts.split(","):
        start = time.perf_counter()
        write_layout(
            args.out_dir / layout,
            layout,
            args.images,
            args.classes,
            args.gt_per_image,
            args.pred_per_image,
            args.seed,
        )
        seconds = time.perf_counter() - start
        print(f"wrote {layout} ({args.images} images) in {seconds:.2f} s")


if __name__ == "__main__":
    main()

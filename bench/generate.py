"""Seeded generator of a synthetic detection dataset for the speed benchmark.

One run writes the same boxes twice, so vocmatch and its COCO peers score identical data:

- ``OUT_DIR/gt/<image>.xml`` and ``OUT_DIR/pred/<image>.xml``: PASCAL VOC XML laid out
  byte for byte as LabelImg writes it (tab indentation, no XML declaration); each
  prediction ``<object>`` carries a ``<score>`` after its ``<bndbox>``.
- ``OUT_DIR/coco/gt.json``: COCO ground truth. Image ids follow sorted image-name order from
  1, category ids follow sorted class-name order from 1 over the class names that occur in
  ground truth or predictions, annotation ids count from 1 in file order. ``bbox`` is
  ``[xmin, ymin, xmax - xmin, ymax - ymin]``, ``area`` is its ``w * h`` and ``iscrowd`` is
  the VOC ``difficult`` flag (a difficult VOC object is treated as a COCO crowd region).
- ``OUT_DIR/coco/pred.json``: a COCO results list (image_id, category_id, bbox, score) in
  file order.

Coordinates are integer pixels and scores have at most six decimals, written with ``repr``,
so XML and JSON hold exactly the same numbers and equal scores occur now and then.

Usage::

    python bench/generate.py OUT_DIR --images 5000 --classes 20 --gt-per-image 7 \\
        --pred-per-image 100 --seed 0
    python bench/generate.py OUT_DIR --shape objects365     # 80,000 images, 365 classes

A shape (``SHAPES``) names a preset of the four counts; a flag given beside it overrides
its count. ``default`` is the set above (its images default to 5,000); ``objects365`` has
the proportions of Objects365's validation set: 80,000 images, 365 classes, about 15
ground-truth boxes and exactly 14 predictions per image (1.12 M predictions).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

# Image metadata written into every XML file. The path is fixed rather than derived from
# OUT_DIR so that two runs with the same seed give byte-identical files wherever they write.
IMAGE_FOLDER = "images"
IMAGE_ROOT = "/data/images"
IMAGE_SUFFIX = ".jpg"
IMAGE_SIDE_RANGE = (300, 1000)  # inclusive, drawn independently for width and height

# Ground truth.
DIFFICULT_RATE = 0.03
# Box areas are log-uniform between MIN_BOX_SIDE**2 and (MAX_BOX_FRACTION * shorter side)**2,
# which puts roughly a third of the boxes in each COCO area range (small < 32**2 <= medium
# < 96**2 <= large).
MIN_BOX_SIDE = 10
MAX_BOX_FRACTION = 0.7
ASPECT_RATIO_RANGE = (1 / 3, 3)  # width / height, log-uniform

# Predictions: per ground-truth box a likely hit and a possible duplicate, the rest background.
HIT_RATE = 0.85
HIT_JITTER = 0.08  # standard deviation of each edge, as a fraction of the box side
DUPLICATE_RATE = 0.3
DUPLICATE_JITTER = 0.2
WRONG_CLASS_RATE = 0.1
WRONG_CLASS_SCORE_FACTOR = 0.7
SCORE_NOISE = 0.08  # standard deviation added to the score of a hit or duplicate
SCORE_DECIMALS = 6


@dataclass(frozen=True, slots=True)
class Shape:
    """The counts of a generated set: a preset of ``generate``'s arguments.

    Attributes:
        images: Number of images.
        classes: Number of classes.
        gt_per_image: Mean number of ground-truth boxes per image (Poisson).
        pred_per_image: Exact number of predictions per image.
    """

    images: int
    classes: int
    gt_per_image: float
    pred_per_image: int


#: The named presets of ``--shape``. ``default`` is the benchmark's set; ``objects365``
#: is shaped like Objects365's validation set (80,000 images, 365 classes, ~15 objects).
SHAPES: dict[str, Shape] = {
    "default": Shape(images=5000, classes=20, gt_per_image=7, pred_per_image=100),
    "objects365": Shape(images=80_000, classes=365, gt_per_image=15, pred_per_image=14),
}


@dataclass(frozen=True, slots=True)
class ImageBoxes:
    """The boxes of one image, in file order.

    Attributes:
        boxes: Shape (K, 4), integer pixel ``xmin, ymin, xmax, ymax`` with
            ``1 <= xmin < xmax <= width`` and ``1 <= ymin < ymax <= height``.
        labels: Shape (K,), class indices.
        difficult: Shape (K,), the VOC ``difficult`` flags (all False for predictions).
        scores: Shape (K,), confidence scores, or None for ground truth.
    """

    boxes: IntArray
    labels: IntArray
    difficult: npt.NDArray[np.bool_]
    scores: FloatArray | None


@dataclass(frozen=True, slots=True)
class GeneratedImage:
    """One generated image: its size, ground truth and predictions."""

    name: str
    width: int
    height: int
    gt: ImageBoxes
    pred: ImageBoxes


def class_names(classes: int) -> list[str]:
    """Class names ``class00``, ``class01``, ... zero-padded so text order is index order.

    Args:
        classes: Number of classes.

    Returns:
        The names, sorted.
    """
    digits = max(2, len(str(classes - 1)))
    return [f"class{index:0{digits}d}" for index in range(classes)]


def image_names(images: int) -> list[str]:
    """Image names ``img_000000``, ``img_000001``, ... zero-padded so text order is index order.

    Args:
        images: Number of images.

    Returns:
        The names, sorted.
    """
    digits = max(6, len(str(images - 1)))
    return [f"img_{index:0{digits}d}" for index in range(images)]


def _random_boxes(rng: np.random.Generator, count: int, width: int, height: int) -> IntArray:
    """Draw boxes with log-uniform area and aspect ratio, placed uniformly inside the image.

    Returns:
        Shape (count, 4) integer ``xmin, ymin, xmax, ymax``.
    """
    max_side = MAX_BOX_FRACTION * min(width, height)
    log_area = rng.uniform(2 * np.log(MIN_BOX_SIDE), 2 * np.log(max_side), count)
    log_ratio = rng.uniform(np.log(ASPECT_RATIO_RANGE[0]), np.log(ASPECT_RATIO_RANGE[1]), count)
    box_w = np.clip(np.rint(np.exp((log_area + log_ratio) / 2)), 1, width - 1).astype(np.int64)
    box_h = np.clip(np.rint(np.exp((log_area - log_ratio) / 2)), 1, height - 1).astype(np.int64)
    # LabelImg never writes a coordinate below 1, so the top-left corner starts at 1.
    xmin = 1 + np.floor(rng.random(count) * (width - box_w)).astype(np.int64)
    ymin = 1 + np.floor(rng.random(count) * (height - box_h)).astype(np.int64)
    return np.stack([xmin, ymin, xmin + box_w, ymin + box_h], axis=1)


def _jitter(
    rng: np.random.Generator, boxes: IntArray, scales: FloatArray, width: int, height: int
) -> IntArray:
    """Move each edge by Gaussian noise proportional to the box side, kept inside the image.

    Args:
        rng: Random source.
        boxes: Shape (K, 4).
        scales: Shape (K,), the noise standard deviation of each row as a fraction of its sides.
        width: Image width.
        height: Image height.

    Returns:
        Shape (K, 4) integer boxes, each at least one pixel wide and high.
    """
    sides = np.tile(boxes[:, 2:] - boxes[:, :2], 2)
    noise = rng.normal(0.0, 1.0, boxes.shape) * scales[:, None] * sides
    moved = np.rint(boxes + noise).astype(np.int64)
    xmin = np.clip(moved[:, 0], 1, width - 1)
    ymin = np.clip(moved[:, 1], 1, height - 1)
    xmax = np.clip(moved[:, 2], xmin + 1, width)
    ymax = np.clip(moved[:, 3], ymin + 1, height)
    return np.stack([xmin, ymin, xmax, ymax], axis=1)


def _paired_iou(first: IntArray, second: IntArray) -> FloatArray:
    """IoU of ``first[i]`` with ``second[i]`` for each row (COCO areas, no +1).

    Returns:
        Shape (K,).
    """
    top_left = np.maximum(first[:, :2], second[:, :2])
    bottom_right = np.minimum(first[:, 2:], second[:, 2:])
    inter = np.prod(np.clip(bottom_right - top_left, 0, None), axis=1)
    area_first = (first[:, 2] - first[:, 0]) * (first[:, 3] - first[:, 1])
    area_second = (second[:, 2] - second[:, 0]) * (second[:, 3] - second[:, 1])
    iou: FloatArray = inter / (area_first + area_second - inter)
    return iou


def _other_labels(rng: np.random.Generator, labels: IntArray, classes: int) -> IntArray:
    """A uniformly drawn class different from each given one (the same class if only one)."""
    if classes == 1:
        return labels.copy()
    return (labels + rng.integers(1, classes, labels.shape)) % classes


def _ground_truth(
    rng: np.random.Generator, width: int, height: int, classes: int, gt_per_image: float
) -> ImageBoxes:
    """A Poisson number of boxes with uniform classes, a few of them difficult."""
    count = int(rng.poisson(gt_per_image))
    return ImageBoxes(
        boxes=_random_boxes(rng, count, width, height),
        labels=rng.integers(0, classes, count),
        difficult=rng.random(count) < DIFFICULT_RATE,
        scores=None,
    )


def _predictions(
    rng: np.random.Generator,
    gt: ImageBoxes,
    width: int,
    height: int,
    classes: int,
    pred_per_image: int,
) -> ImageBoxes:
    """Exactly ``pred_per_image`` predictions: hits, duplicates and background, shuffled.

    A hit or duplicate is a jittered copy of a ground-truth box, sometimes with a wrong
    class; its score grows with its IoU to that box. Background boxes score low.
    """
    hit_rows = np.flatnonzero(rng.random(len(gt.labels)) < HIT_RATE)
    duplicate_rows = np.flatnonzero(rng.random(len(gt.labels)) < DUPLICATE_RATE)
    sources = np.concatenate([hit_rows, duplicate_rows])[:pred_per_image]
    scales = np.where(np.arange(len(sources)) < len(hit_rows), HIT_JITTER, DUPLICATE_JITTER)
    copies = _jitter(rng, gt.boxes[sources], scales, width, height)
    copy_labels = gt.labels[sources]
    wrong = rng.random(len(sources)) < WRONG_CLASS_RATE
    copy_labels = np.where(wrong, _other_labels(rng, copy_labels, classes), copy_labels)
    copy_scores = 0.1 + 0.85 * _paired_iou(copies, gt.boxes[sources])
    copy_scores *= np.where(wrong, WRONG_CLASS_SCORE_FACTOR, 1.0)
    copy_scores += rng.normal(0.0, SCORE_NOISE, len(sources))

    background = pred_per_image - len(sources)
    boxes = np.concatenate([copies, _random_boxes(rng, background, width, height)])
    labels = np.concatenate([copy_labels, rng.integers(0, classes, background)])
    scores = np.concatenate([copy_scores, 0.6 * rng.beta(1.2, 5.0, background)])
    scores = np.round(np.clip(scores, 10.0**-SCORE_DECIMALS, 1.0), SCORE_DECIMALS)

    order = rng.permutation(pred_per_image)
    return ImageBoxes(
        boxes=boxes[order],
        labels=labels[order],
        difficult=np.zeros(pred_per_image, dtype=np.bool_),
        scores=scores[order],
    )


def image_sizes(images: int, seed: int = 0) -> IntArray:
    """Draw the width and height of every image.

    Sizes come from their own random stream, so they are known before any box is drawn.

    Args:
        images: Number of images.
        seed: Seed of the dataset.

    Returns:
        Shape (images, 2), integer ``width, height`` per image in name order.
    """
    rng = np.random.default_rng([seed, 0])
    return rng.integers(*IMAGE_SIDE_RANGE, (images, 2), endpoint=True)


def generated_images(
    images: int,
    classes: int = 20,
    gt_per_image: float = 7,
    pred_per_image: int = 100,
    seed: int = 0,
) -> Iterator[GeneratedImage]:
    """Yield the images of a dataset one at a time, in name order.

    Args:
        images: Number of images.
        classes: Number of classes.
        gt_per_image: Mean number of ground-truth boxes per image (Poisson, 0 allowed).
        pred_per_image: Exact number of predictions per image.
        seed: Seed of the dataset; equal arguments yield equal images.

    Yields:
        One generated image after the other.
    """
    rng = np.random.default_rng([seed, 1])
    sizes = image_sizes(images, seed).tolist()
    for name, (width, height) in zip(image_names(images), sizes, strict=True):
        gt = _ground_truth(rng, width, height, classes, gt_per_image)
        pred = _predictions(rng, gt, width, height, classes, pred_per_image)
        yield GeneratedImage(name=name, width=width, height=height, gt=gt, pred=pred)


# LabelImg builds the tree with ElementTree, pretty-prints it with lxml and turns each pair
# of indentation spaces into a tab; the templates below produce the same bytes directly.
_XML_HEADER = (
    "<annotation>\n"
    "\t<folder>{folder}</folder>\n"
    "\t<filename>{filename}</filename>\n"
    "\t<path>{path}</path>\n"
    "\t<source>\n"
    "\t\t<database>Unknown</database>\n"
    "\t</source>\n"
    "\t<size>\n"
    "\t\t<width>{width}</width>\n"
    "\t\t<height>{height}</height>\n"
    "\t\t<depth>3</depth>\n"
    "\t</size>\n"
    "\t<segmented>0</segmented>\n"
)
_XML_OBJECT = (
    "\t<object>\n"
    "\t\t<name>{name}</name>\n"
    "\t\t<pose>Unspecified</pose>\n"
    "\t\t<truncated>{truncated}</truncated>\n"
    "\t\t<difficult>{difficult}</difficult>\n"
    "\t\t<bndbox>\n"
    "\t\t\t<xmin>{xmin}</xmin>\n"
    "\t\t\t<ymin>{ymin}</ymin>\n"
    "\t\t\t<xmax>{xmax}</xmax>\n"
    "\t\t\t<ymax>{ymax}</ymax>\n"
    "\t\t</bndbox>\n"
    "{score}"
    "\t</object>\n"
)
_XML_FOOTER = "</annotation>\n"


def voc_xml(image: GeneratedImage, boxes: ImageBoxes, names: Sequence[str]) -> str:
    """The LabelImg XML text of one annotation file.

    Args:
        image: The image the boxes belong to.
        boxes: Its ground truth or its predictions.
        names: Class names indexed by label.

    Returns:
        The file content.
    """
    filename = image.name + IMAGE_SUFFIX
    parts = [
        _XML_HEADER.format(
            folder=IMAGE_FOLDER,
            filename=filename,
            path=f"{IMAGE_ROOT}/{filename}",
            width=image.width,
            height=image.height,
        )
    ]
    scores = [None] * len(boxes.labels) if boxes.scores is None else boxes.scores.tolist()
    for (xmin, ymin, xmax, ymax), label, difficult, score in zip(
        boxes.boxes.tolist(), boxes.labels.tolist(), boxes.difficult.tolist(), scores, strict=True
    ):
        # LabelImg's rule: a box touching the first pixel or the far edge is truncated.
        truncated = xmin == 1 or ymin == 1 or xmax == image.width or ymax == image.height
        parts.append(
            _XML_OBJECT.format(
                name=names[label],
                truncated=int(truncated),
                difficult=int(difficult),
                xmin=xmin,
                ymin=ymin,
                xmax=xmax,
                ymax=ymax,
                score="" if score is None else f"\t\t<score>{score!r}</score>\n",
            )
        )
    parts.append(_XML_FOOTER)
    return "".join(parts)


class _JsonArray:
    """Writes the items of a JSON array one per line, so a large array streams to disk."""

    def __init__(self, file: TextIO, opening: str, closing: str) -> None:
        self._file = file
        self._closing = closing
        self._separator = "\n"
        file.write(opening)

    def append(self, item: Any) -> None:
        self._file.write(self._separator)
        self._file.write(json.dumps(item))
        self._separator = ",\n"

    def close(self) -> None:
        self._file.write("\n" + self._closing)


def _coco_bbox(box: Sequence[int]) -> list[int]:
    xmin, ymin, xmax, ymax = box
    return [xmin, ymin, xmax - xmin, ymax - ymin]


def generate(
    out_dir: Path,
    images: int,
    classes: int = 20,
    gt_per_image: float = 7,
    pred_per_image: int = 100,
    seed: int = 0,
) -> None:
    """Write a dataset as LabelImg XML and as COCO JSON (see the module docstring).

    Files are written one image at a time; only the image sizes are held for the whole set.

    Args:
        out_dir: Directory to write ``gt/``, ``pred/`` and ``coco/`` into (created if missing).
        images: Number of images.
        classes: Number of classes.
        gt_per_image: Mean number of ground-truth boxes per image (Poisson, 0 allowed).
        pred_per_image: Exact number of predictions per image.
        seed: Seed of the random source; equal arguments give byte-identical files.
    """
    names = class_names(classes)
    gt_dir, pred_dir, coco_dir = (out_dir / sub for sub in ("gt", "pred", "coco"))
    for directory in (gt_dir, pred_dir, coco_dir):
        directory.mkdir(parents=True, exist_ok=True)
    used = np.zeros(classes, dtype=np.bool_)
    with (
        (coco_dir / "gt.json").open("w", encoding="utf-8") as gt_file,
        (coco_dir / "pred.json").open("w", encoding="utf-8") as pred_file,
    ):
        gt_images = _JsonArray(gt_file, '{"images": [', "],\n")
        sizes = image_sizes(images, seed).tolist()
        for image_id, (name, (width, height)) in enumerate(
            zip(image_names(images), sizes, strict=True), start=1
        ):
            gt_images.append(
                {"id": image_id, "file_name": name + IMAGE_SUFFIX, "width": width, "height": height}
            )
        gt_images.close()

        # Category ids are provisional (class index + 1) until every class seen is known.
        gt_annotations = _JsonArray(gt_file, '"annotations": [', "],\n")
        pred_results = _JsonArray(pred_file, "[", "]\n")
        annotation_id = 0
        for image_id, image in enumerate(
            generated_images(images, classes, gt_per_image, pred_per_image, seed), start=1
        ):
            (gt_dir / f"{image.name}.xml").write_text(voc_xml(image, image.gt, names), "utf-8")
            (pred_dir / f"{image.name}.xml").write_text(voc_xml(image, image.pred, names), "utf-8")
            for box, label, difficult in zip(
                image.gt.boxes.tolist(),
                image.gt.labels.tolist(),
                image.gt.difficult.tolist(),
                strict=True,
            ):
                annotation_id += 1
                bbox = _coco_bbox(box)
                gt_annotations.append(
                    {
                        "id": annotation_id,
                        "image_id": image_id,
                        "category_id": label + 1,
                        "bbox": bbox,
                        "area": bbox[2] * bbox[3],
                        "iscrowd": int(difficult),
                    }
                )
            pred_scores = [] if image.pred.scores is None else image.pred.scores.tolist()
            for box, label, score in zip(
                image.pred.boxes.tolist(), image.pred.labels.tolist(), pred_scores, strict=True
            ):
                pred_results.append(
                    {
                        "image_id": image_id,
                        "category_id": label + 1,
                        "bbox": _coco_bbox(box),
                        "score": score,
                    }
                )
            used[image.gt.labels] = True
            used[image.pred.labels] = True
        gt_annotations.close()
        pred_results.close()

        gt_categories = _JsonArray(gt_file, '"categories": [', "]}\n")
        for index in np.flatnonzero(used).tolist():
            gt_categories.append({"id": index + 1, "name": names[index]})
        gt_categories.close()
    if not used.all():
        _renumber_categories(coco_dir)


def _renumber_categories(coco_dir: Path) -> None:
    """Renumber category ids 1, 2, ... in name order when some classes never occurred.

    Only small datasets can miss a class, so loading both files whole here is cheap.
    """
    gt_path, pred_path = coco_dir / "gt.json", coco_dir / "pred.json"
    gt_data = json.loads(gt_path.read_text("utf-8"))
    pred_data = json.loads(pred_path.read_text("utf-8"))
    categories = sorted(gt_data["categories"], key=lambda category: str(category["name"]))
    new_ids = {category["id"]: new_id for new_id, category in enumerate(categories, start=1)}
    for category in categories:
        category["id"] = new_ids[category["id"]]
    for annotation in (*gt_data["annotations"], *pred_data):
        annotation["category_id"] = new_ids[annotation["category_id"]]
    with gt_path.open("w", encoding="utf-8") as gt_file:
        for opening, key, closing in (
            ('{"images": [', "images", "],\n"),
            ('"annotations": [', "annotations", "],\n"),
            ('"categories": [', "categories", "]}\n"),
        ):
            section = _JsonArray(gt_file, opening, closing)
            for record in categories if key == "categories" else gt_data[key]:
                section.append(record)
            section.close()
    with pred_path.open("w", encoding="utf-8") as pred_file:
        results = _JsonArray(pred_file, "[", "]\n")
        for record in pred_data:
            results.append(record)
        results.close()


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point: generate a dataset and report how long it took."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="default")
    parser.add_argument("--images", type=int, help="default: the shape's")
    parser.add_argument("--classes", type=int, help="default: the shape's")
    parser.add_argument("--gt-per-image", type=float, help="default: the shape's")
    parser.add_argument("--pred-per-image", type=int, help="default: the shape's")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    shape = SHAPES[args.shape]
    images = shape.images if args.images is None else args.images
    start = time.perf_counter()
    generate(
        args.out_dir,
        images=images,
        classes=shape.classes if args.classes is None else args.classes,
        gt_per_image=shape.gt_per_image if args.gt_per_image is None else args.gt_per_image,
        pred_per_image=shape.pred_per_image if args.pred_per_image is None else args.pred_per_image,
        seed=args.seed,
    )
    seconds = time.perf_counter() - start
    print(f"wrote {images} images to {args.out_dir} in {seconds:.2f} s")


if __name__ == "__main__":
    main()

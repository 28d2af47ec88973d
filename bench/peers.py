"""Peer evaluators the speed benchmark compares vocmatch with, and the XML parsing floor.

Each peer reads the COCO JSON that ``bench/generate.py`` writes next to the XML and returns
the 12 ``COCOeval.stats`` numbers (AP, AP50, AP75, AP small/medium/large, AR@1, AR@10,
AR@100, AR small/medium/large). Run one peer in a fresh process so a benchmark can time it
and read its peak memory from the parent (``resource.getrusage(RUSAGE_CHILDREN)``)::

    python bench/peers.py pycocotools bench/data/5000
    python bench/peers.py faster-coco-eval bench/data/5000
    python bench/peers.py hotcoco bench/data/5000
    python bench/peers.py vernier bench/data/5000
    python bench/peers.py ultrafast-pycocotools bench/data/5000

prints one JSON object: ``{"peer": ..., "stats": [12 floats], "seconds": ..., "max_rss_kib": ...}``
where ``seconds`` covers loading both JSON files and evaluating, without interpreter start-up.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import resource
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from lxml import etree


def run_pycocotools(gt_json: Path, pred_json: Path) -> list[float]:
    """Score predictions with pycocotools' ``COCOeval`` on boxes.

    Args:
        gt_json: COCO ground-truth file.
        pred_json: COCO results file.

    Returns:
        The 12 ``COCOeval.stats`` numbers.
    """
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    # pycocotools prints progress and the summary table to stdout; keep only the numbers.
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(str(gt_json))
        coco_pred = coco_gt.loadRes(str(pred_json))
        evaluation = COCOeval(coco_gt, coco_pred, iouType="bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return [float(value) for value in evaluation.stats]


def run_faster_coco_eval(gt_json: Path, pred_json: Path) -> list[float]:
    """Score predictions with faster-coco-eval's ``COCOeval_faster`` on boxes.

    ``COCOeval_faster`` keeps pycocotools' interface and conventions and moves per-image
    matching and accumulation to C++.

    Args:
        gt_json: COCO ground-truth file.
        pred_json: COCO results file.

    Returns:
        The 12 ``COCOeval.stats`` numbers.
    """
    from faster_coco_eval import COCO, COCOeval_faster

    def quiet(*args: object, **kwargs: object) -> None:
        """Drop progress messages and the summary table."""

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(str(gt_json))
        coco_pred = coco_gt.loadRes(str(pred_json))
        evaluation = COCOeval_faster(coco_gt, coco_pred, iouType="bbox", print_function=quiet)
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return [float(value) for value in evaluation.stats]


def run_hotcoco(gt_json: Path, pred_json: Path) -> list[float]:
    """Score predictions with hotcoco (a Rust evaluator with pycocotools' interface).

    hotcoco converts VOC XML to COCO but drops ``<score>``, so it cannot read scored XML
    predictions: it is measured, like the other peers, from the COCO JSON.

    Args:
        gt_json: COCO ground-truth file.
        pred_json: COCO results file.

    Returns:
        The 12 ``COCOeval.stats`` numbers.
    """
    from hotcoco import COCO, COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(str(gt_json))
        coco_pred = coco_gt.load_res(str(pred_json))
        evaluation = COCOeval(coco_gt, coco_pred, "bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return [float(value) for value in evaluation.stats]


def run_vernier(gt_json: Path, pred_json: Path) -> list[float]:
    """Score predictions with vernier (a Rust evaluator) in its pycocotools-exact mode.

    ``parity_mode="strict"`` reproduces pycocotools bit for bit (vernier's default,
    ``"corrected"``, fixes some of pycocotools' quirks and may differ). vernier reads the
    JSON bytes itself.

    Args:
        gt_json: COCO ground-truth file.
        pred_json: COCO results file.

    Returns:
        The 12 ``COCOeval.stats`` numbers.
    """
    from vernier.instance import Evaluator

    summary = Evaluator(parity_mode="strict").evaluate(gt_json.read_bytes(), pred_json.read_bytes())
    return [float(value) for value in summary.stats]


def run_ultrafast_pycocotools(gt_json: Path, pred_json: Path) -> list[float]:
    """Score predictions with ultrafast-pycocotools (a Rust core behind pycocotools' interface).

    It reads a box-only COCO file into native columns and reproduces pycocotools bit for bit;
    ``verbose=False`` and ``print_function`` silence its progress lines and summary table.

    Args:
        gt_json: COCO ground-truth file.
        pred_json: COCO results file.

    Returns:
        The 12 ``COCOeval.stats`` numbers.
    """
    from ultrafast_pycocotools import COCO, COCOeval

    def quiet(*args: object, **kwargs: object) -> None:
        """Drop the summary table."""

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(str(gt_json), verbose=False)
        coco_pred = coco_gt.loadRes(str(pred_json))
        evaluation = COCOeval(coco_gt, coco_pred, "bbox", print_function=quiet)
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return [float(value) for value in evaluation.stats]


PEERS: dict[str, Callable[[Path, Path], list[float]]] = {
    "pycocotools": run_pycocotools,
    "faster-coco-eval": run_faster_coco_eval,
    "hotcoco": run_hotcoco,
    "vernier": run_vernier,
    "ultrafast-pycocotools": run_ultrafast_pycocotools,
}


def _parse_files(paths: Sequence[Path]) -> int:
    """Parse XML files into lxml trees and count their ``<object>`` elements."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    objects = 0
    for path in paths:
        root = etree.parse(str(path), parser).getroot()
        objects += len(root.findall("object"))
    return objects


def lxml_parse_floor(paths: Sequence[Path], jobs: int = 1) -> int:
    """Only parse the given XML files with lxml: the least work any VOC reader has to do.

    Args:
        paths: XML files.
        jobs: Worker processes; 1 parses in this process.

    Returns:
        The number of ``<object>`` elements parsed, so a caller can check the work was done.
    """
    if jobs <= 1 or len(paths) < 2:
        return _parse_files(paths)
    # A few chunks per worker keeps the pool busy without paying per-file messaging.
    chunk_count = min(len(paths), 4 * jobs)
    chunks = [paths[index::chunk_count] for index in range(chunk_count)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return sum(pool.map(_parse_files, chunks))


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point: run one peer on a generated dataset and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("peer", choices=sorted(PEERS))
    parser.add_argument("dataset", type=Path, help="directory written by bench/generate.py")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    stats = PEERS[args.peer](args.dataset / "coco" / "gt.json", args.dataset / "coco" / "pred.json")
    seconds = time.perf_counter() - start
    max_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    result = {"peer": args.peer, "stats": stats, "seconds": seconds, "max_rss_kib": max_rss_kib}
    print(json.dumps(result))


if __name__ == "__main__":
    main()

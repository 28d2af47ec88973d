"""Pairs of polygons left unclipped by their IoU bound: time and exact overlaps, with and without.

```console
$ python bench/shape_pruning.py                      # 3,000 + 3,000 triangles, 3 rounds
$ python bench/shape_pruning.py --triangles 1000 --runs 1
$ python bench/shape_pruning.py --protocol coco --args=--errors
```

Writes one image (seeded, under ``bench/data/shape_pruning/<n>``) of ``n`` ground-truth and
``n`` predicted triangles of one class whose bounding boxes all contain the image's centre,
so every one of the ``n x n`` pairs has bounding boxes that meet and none is set aside by
the STR tree. Each triangle is half of its bounding box (three of its corners, the missing
corner drawn at random), the boxes' sides spread over 300 to 2,000 px; two predictions in
three are a jittered copy of a ground truth, the others drawn like ground truth.

Then runs ``vocmatch GT PRED --format json`` (plus ``--protocol`` and ``--args``) in a child
process of its own, in turns: as it is (``pruned``), and with every pair clipped (``all
pairs``: the child sets the IoU floor to 0, as before pairs were left out by their bound).
It prints, for each, the median wall time, the median processor time of the child (GEOS
clips on every core), and the number of exact region overlaps computed (every pair of
regions whose bounding boxes meet is clipped without pruning); and it stops unless both
give the same JSON, byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "shape_pruning"
CENTRE = 2500.0

#: Runs ``vocmatch`` in this process and writes the number of exact overlaps computed to the
#: file named by the first argument; with a second argument ``all``, every pair is clipped.
CHILD = """
import atexit, sys
import vocmatch.evaluation.stages as stages
import vocmatch.evaluation.pair_space as pair_space
COUNT_FILE, MODE = sys.argv[1], sys.argv[2]
spaces = []
created = pair_space.PairSpace.__init__
def init(self, *args, **kwargs):
    created(self, *args, **kwargs)
    spaces.append(self)
pair_space.PairSpace.__init__ = init
if MODE == "all":
    stages.iou_floor = lambda thresholds: 0.0
def count():
    with open(COUNT_FILE, "w") as handle:
        handle.write(str(sum(space.exact_overlaps for space in spaces)))
atexit.register(count)
sys.argv = ["vocmatch", *sys.argv[3:]]
from vocmatch.__main__ import main
main()
"""


def _triangles(boxes: np.ndarray, missing: np.ndarray) -> list[list[tuple[float, float]]]:
    """Half of each box: three of its corners, in order around it, corner ``missing`` left
    out."""
    out = []
    for (x1, y1, x2, y2), left_out in zip(boxes.tolist(), missing.tolist(), strict=True):
        corners = [(x1, y1), (x2, y1), (x2, y2), (x1, y2)]
        out.append([c for k, c in enumerate(corners) if k != left_out])
    return out


def _boxes(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` boxes, each holding the centre: sides 300 to 2,000 px, placed at random."""
    size = np.exp(rng.uniform(np.log(300), np.log(2000), (n, 2)))
    corner = CENTRE - size * rng.uniform(0.05, 0.95, (n, 2))
    return np.round(np.concatenate([corner, corner + size], axis=1), 1)


def _object(points: list[tuple[float, float]], score: float | None) -> str:
    body = "".join(f"<pt><x>{x}</x><y>{y}</y></pt>" for x, y in points)
    scored = "" if score is None else f"\n\t\t<score>{score!r}</score>"
    return (
        "\t<object>\n\t\t<name>object</name>\n\t\t<difficult>0</difficult>\n"
        f"\t\t<polygon>{body}</polygon>{scored}\n\t</object>\n"
    )


def _file(path: Path, objects: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        "<annotation>\n\t<filename>triangles.jpg</filename>\n"
        "\t<size>\n\t\t<width>5000</width>\n\t\t<height>5000</height>\n"
        "\t\t<depth>3</depth>\n\t</size>\n"
    )
    path.write_text(header + "".join(objects) + "</annotation>\n", encoding="utf-8")


def write_triangles(root: Path, n: int, seed: int = 0) -> None:
    """One image, ``n`` ground-truth and ``n`` predicted triangles (see the module doc)."""
    rng = np.random.default_rng(seed)
    gt = _boxes(rng, n)
    pred = _boxes(rng, n)
    copied = rng.random(n) < 2 / 3
    jittered = gt + rng.normal(0, 20, gt.shape)
    # A copy keeps the centre inside its box.
    jittered[:, :2] = np.minimum(jittered[:, :2], CENTRE - 1)
    jittered[:, 2:] = np.maximum(jittered[:, 2:], CENTRE + 1)
    pred[copied] = np.round(jittered[copied], 1)
    gt_missing = rng.integers(0, 4, n)
    # A copy leaves out its ground truth's corner.
    pred_missing = np.where(copied, gt_missing, rng.integers(0, 4, n))
    gt_shapes, pred_shapes = _triangles(gt, gt_missing), _triangles(pred, pred_missing)
    scores = np.round(rng.random(n), 4).tolist()
    _file(root / "gt" / "triangles.xml", [_object(t, None) for t in gt_shapes])
    _file(
        root / "pred" / "triangles.xml",
        [_object(t, s) for t, s in zip(pred_shapes, scores, strict=True)],
    )


def run_once(root: Path, mode: str, extra: list[str]) -> tuple[float, float, int, bytes]:
    """One child run: wall seconds, processor seconds, exact overlaps, its JSON."""
    with tempfile.TemporaryDirectory() as scratch:
        count_file = Path(scratch) / "count"
        command = [
            sys.executable, "-c", CHILD, str(count_file), mode,
            str(root / "gt"), str(root / "pred"), "--format", "json", "--quiet", *extra,
        ]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{mode}: exit {done.returncode}\n{done.stderr.decode()}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu, int(count_file.read_text()), done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triangles", type=int, default=3000, help="per side [3000]")
    parser.add_argument("--runs", type=int, default=3, help="rounds, each mode once [3]")
    parser.add_argument("--protocol", default="default")
    parser.add_argument("--args", default="", help="more vocmatch options, space separated")
    options = parser.parse_args()
    root = DATA / str(options.triangles)
    if not (root / "pred" / "triangles.xml").exists():
        write_triangles(root, options.triangles)
    extra = ["--protocol", options.protocol, *options.args.split()]
    n = options.triangles
    print(f"load average {os.getloadavg()[0]:.1f}; {n:,} + {n:,} triangles, {n * n:,} pairs")
    times: dict[str, list[tuple[float, float]]] = {"pruned": [], "all": []}
    overlaps: dict[str, int] = {}
    outputs: dict[str, bytes] = {}
    for _ in range(options.runs):
        for mode in times:
            wall, cpu, count, output = run_once(root, mode, extra)
            times[mode].append((wall, cpu))
            overlaps[mode] = count
            if outputs.setdefault(mode, output) != output:
                raise SystemExit(f"{mode}: two runs gave different JSON")
    if outputs["pruned"] != outputs["all"]:
        raise SystemExit("pruned and all pairs gave different JSON")
    summary = json.loads(outputs["pruned"])["summary"]
    print(f"same JSON both ways ({len(outputs['pruned']):,} bytes); "
          f"TP {summary['tp']} FP {summary['fp']} FN {summary['fn']}")  # fmt: skip
    print(f"{'':10} {'wall s':>8} {'cpu s':>8} {'exact overlaps':>15}")
    for mode, label in (("all", "all pairs"), ("pruned", "pruned")):
        wall = statistics.median(t[0] for t in times[mode])
        cpu = statistics.median(t[1] for t in times[mode])
        print(f"{label:10} {wall:8.2f} {cpu:8.2f} {overlaps[mode]:15,}")


if __name__ == "__main__":
    main()

"""Peak memory and time of vocmatch on the inputs that grow quadratically if handled naively.

    python bench/memory.py                     # every case, full size
    python bench/memory.py --cases boxes-overlap,polygons-overlap
    python bench/memory.py --scale 0.25        # the same cases, a quarter of the objects
    python bench/memory.py --list

Each case is a folder pair written once under ``bench/data/memory/`` (seeded, so the same
files every time), then evaluated by the ``vocmatch`` command in a child process of its
own. The table gives the child's peak resident memory -- its own ``VmHWM``, read as it
exits, and the ``ru_maxrss`` that ``wait4`` reports for it (which on Linux also counts
the moment before ``exec`` and any reading worker it waited for) -- its wall time, its exit
code and a digest of its result, so that a case that ran out of memory or crashed shows as
such rather than as a number.

The cases:

* ``boxes-random``: one image with 20,000 ground-truth and 20,000 predicted boxes of one
  class, scattered over a 10,000 px square (each box meets a few others).
* ``boxes-overlap``: one image, 20,000 + 20,000 boxes of one class, every one a jittered
  copy of the same box: all 400 million pairs overlap, most above IoU 0.5.
* ``boxes-overlap-unscored``: the same without scores (paired highest IoU first).
* ``boxes-identical-unscored``: 20,000 + 20,000 copies of one box, all ties at IoU 1.
* ``polygons-overlap``: one image, 3,000 + 3,000 octagons around the same centre.
* ``polygons-overlap-unscored``: the same without scores.
* ``classes-50000-errors``: 10,000 images, 50,000 class names, ``--errors`` (TIDE types, their
  mAP cost and a confusion matrix over the classes).
* ``one-image-50000-classes-errors``: one image of 50,000 objects, each of a class of its
  own, ``--errors``.
* ``classes-3000-html``: 3,000 images, 3,000 class names, ``--html``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "memory"
LIMIT_MIB = 2048

#: Runs ``vocmatch`` in this process, then writes its own peak (VmHWM) to the file named
#: by the first argument: the child's own peak, not its parent's.
CHILD = """
import atexit, sys
PEAK_FILE = sys.argv[1]
def peak():
    try:
        text = open('/proc/self/status').read().split('VmHWM:')[1]
        kib = int(text.split()[0])
    except (OSError, IndexError):
        import resource
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open(PEAK_FILE, 'w') as handle:
        handle.write(str(kib))
atexit.register(peak)
sys.argv = ['vocmatch', *sys.argv[2:]]
from vocmatch.__main__ import main
main()
"""


# Writing the folders -------------------------------------------------------------------


def _object(name: str, geometry: str, score: float | None) -> str:
    scored = "" if score is None else f"\n\t\t<score>{score!r}</score>"
    return (
        f"\t<object>\n\t\t<name>{name}</name>\n\t\t<pose>Unspecified</pose>\n"
        f"\t\t<truncated>0</truncated>\n\t\t<difficult>0</difficult>\n{geometry}{scored}\n"
        "\t</object>\n"
    )


def _bndbox(x1: float, y1: float, x2: float, y2: float) -> str:
    return (
        f"\t\t<bndbox>\n\t\t\t<xmin>{x1}</xmin>\n\t\t\t<ymin>{y1}</ymin>\n"
        f"\t\t\t<xmax>{x2}</xmax>\n\t\t\t<ymax>{y2}</ymax>\n\t\t</bndbox>"
    )


def _polygon(points: Iterable[tuple[float, float]]) -> str:
    body = "".join(f"<pt><x>{x}</x><y>{y}</y></pt>" for x, y in points)
    return f"\t\t<polygon>{body}</polygon>"


def _file(path: Path, objects: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        "<annotation>\n\t<folder>images</folder>\n"
        f"\t<filename>{path.stem}.jpg</filename>\n"
        "\t<size>\n\t\t<width>10000</width>\n\t\t<height>10000</height>\n"
        "\t\t<depth>3</depth>\n\t</size>\n\t<segmented>0</segmented>\n"
    )
    path.write_text(header + "".join(objects) + "</annotation>\n", encoding="utf-8")


def _boxes(rng: np.random.Generator, n: int, layout: str) -> np.ndarray:
    if layout == "random":
        corner = rng.uniform(0, 9900, (n, 2))
        size = rng.uniform(20, 100, (n, 2))
    elif layout == "identical":
        corner = np.full((n, 2), 2000.0)
        size = np.full((n, 2), 400.0)
    else:  # every box a jittered copy of one
        corner = 2000 + rng.normal(0, 15, (n, 2))
        size = 400 + rng.normal(0, 15, (n, 2))
    return np.round(np.concatenate([corner, corner + size], axis=1), 1)


def write_dense_boxes(root: Path, n: int, layout: str, scored: bool) -> None:
    """One image, ``n`` ground-truth and ``n`` predicted boxes of class ``object``."""
    rng = np.random.default_rng(1)
    gt = _boxes(rng, n, layout)
    if layout == "random":
        pred = np.round(gt + rng.normal(0, 4, gt.shape), 1)
        pred[:, 2:] = np.maximum(pred[:, 2:], pred[:, :2] + 1)
    else:
        pred = _boxes(rng, n, layout)
    scores = np.round(rng.random(n), 4)
    _file(root / "gt" / "dense.xml", (_object("object", _bndbox(*b), None) for b in gt.tolist()))
    _file(
        root / "pred" / "dense.xml",
        (
            _object("object", _bndbox(*b), s if scored else None)
            for b, s in zip(pred.tolist(), scores.tolist(), strict=True)
        ),
    )


def _octagons(rng: np.random.Generator, n: int) -> list[list[tuple[float, float]]]:
    centre = 2000 + rng.normal(0, 10, (n, 2))
    radius = 300 + rng.normal(0, 10, n)
    angles = 2 * math.pi * np.arange(8) / 8 + 0.1
    out = []
    for (cx, cy), r in zip(centre.tolist(), radius.tolist(), strict=True):
        out.append(
            [(round(cx + r * math.cos(a), 2), round(cy + r * math.sin(a), 2)) for a in angles]
        )
    return out


def write_dense_polygons(root: Path, n: int, scored: bool) -> None:
    """One image, ``n`` ground-truth and ``n`` predicted octagons around one centre."""
    rng = np.random.default_rng(2)
    gt, pred = _octagons(rng, n), _octagons(rng, n)
    scores = np.round(rng.random(n), 4).tolist()
    _file(root / "gt" / "dense.xml", (_object("object", _polygon(p), None) for p in gt))
    _file(
        root / "pred" / "dense.xml",
        (
            _object("object", _polygon(p), s if scored else None)
            for p, s in zip(pred, scores, strict=True)
        ),
    )


def write_many_classes(root: Path, images: int, classes: int, per_image: int) -> None:
    """``images`` images of ``per_image`` objects, class names drawn from ``classes``; each
    prediction a jittered copy, a tenth of them under another class name, plus a stray
    box."""
    rng = np.random.default_rng(3)
    names = [f"class{k:05d}" for k in range(classes)]
    for i in range(images):
        picked = rng.integers(0, classes, per_image)
        corner = rng.uniform(0, 900, (per_image, 2))
        boxes = np.round(np.concatenate([corner, corner + rng.uniform(10, 100, (per_image, 2))], 1))
        gt_objects = [
            _object(names[k], _bndbox(*b), None)
            for k, b in zip(picked.tolist(), boxes.tolist(), strict=True)
        ]
        pred_objects = []
        for k, b in zip(picked.tolist(), boxes.tolist(), strict=True):
            moved = [v + float(rng.integers(-4, 5)) for v in b]
            moved[2], moved[3] = max(moved[2], moved[0] + 1), max(moved[3], moved[1] + 1)
            name = names[int(rng.integers(0, classes))] if rng.random() < 0.1 else names[k]
            pred_objects.append(_object(name, _bndbox(*moved), round(float(rng.random()), 4)))
        x, y = rng.uniform(0, 900, 2).round()
        stray = _bndbox(x, y, x + 30, y + 30)
        pred_objects.append(_object(names[int(rng.integers(0, classes))], stray, 0.05))
        _file(root / "gt" / f"img{i:05d}.xml", gt_objects)
        _file(root / "pred" / f"img{i:05d}.xml", pred_objects)


def write_one_image_classes(root: Path, classes: int) -> None:
    """One image of ``classes`` objects, each of a class of its own, scattered over a
    10,000 px square; predictions as :func:`write_many_classes` makes them."""
    rng = np.random.default_rng(4)
    names = [f"class{k:05d}" for k in range(classes)]
    corner = rng.uniform(0, 9900, (classes, 2))
    boxes = np.round(np.concatenate([corner, corner + rng.uniform(10, 100, (classes, 2))], 1))
    gt_objects = [_object(names[k], _bndbox(*b), None) for k, b in enumerate(boxes.tolist())]
    pred_objects = []
    for k, b in enumerate(boxes.tolist()):
        moved = [v + float(rng.integers(-4, 5)) for v in b]
        moved[2], moved[3] = max(moved[2], moved[0] + 1), max(moved[3], moved[1] + 1)
        name = names[int(rng.integers(0, classes))] if rng.random() < 0.1 else names[k]
        pred_objects.append(_object(name, _bndbox(*moved), round(float(rng.random()), 4)))
    x, y = rng.uniform(0, 9900, 2).round()
    pred_objects.append(_object(names[0], _bndbox(x, y, x + 30, y + 30), 0.05))
    _file(root / "gt" / "one.xml", gt_objects)
    _file(root / "pred" / "one.xml", pred_objects)


# The cases -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A folder pair and the command line that evaluates it."""

    name: str
    write: Callable[[Path, float], None]
    options: tuple[str, ...] = ()


CASES = (
    Case("boxes-random", lambda root, s: write_dense_boxes(root, _n(20000, s), "random", True)),
    Case("boxes-overlap", lambda root, s: write_dense_boxes(root, _n(20000, s), "jitter", True)),
    Case(
        "boxes-overlap-unscored",
        lambda root, s: write_dense_boxes(root, _n(20000, s), "jitter", False),
    ),
    Case(
        "boxes-identical-unscored",
        lambda root, s: write_dense_boxes(root, _n(20000, s), "identical", False),
    ),
    Case("polygons-overlap", lambda root, s: write_dense_polygons(root, _n(3000, s), True)),
    Case(
        "polygons-overlap-unscored",
        lambda root, s: write_dense_polygons(root, _n(3000, s), False),
    ),
    Case(
        "classes-50000-errors",
        lambda root, s: write_many_classes(root, _n(10000, s), _n(50000, s), 8),
        ("--errors",),
    ),
    Case(
        "one-image-50000-classes-errors",
        lambda root, s: write_one_image_classes(root, _n(50000, s)),
        ("--errors",),
    ),
    Case(
        "classes-3000-html",
        lambda root, s: write_many_classes(root, _n(3000, s), _n(3000, s), 8),
        ("--html", "{tmp}/report.html"),
    ),
)


def _n(full: int, scale: float) -> int:
    return max(1, round(full * scale))


def prepare(case: Case, scale: float) -> Path:
    """The case's folders, written if they are not there yet."""
    root = DATA / (case.name if scale == 1 else f"{case.name}-x{scale:g}")
    done = root / ".complete"
    if not done.exists():
        started = time.perf_counter()
        case.write(root, scale)
        done.write_text("")
        print(f"wrote {root} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return root


@dataclass(frozen=True)
class Result:
    """One run."""

    case: str
    exit_code: int
    seconds: float
    vm_hwm_mib: float | None
    maxrss_mib: float
    digest: str
    summary: str


def measure(case: Case, root: Path, timeout: float) -> Result:
    """Evaluate the case in a child process; its peak memory, time and a digest of the
    JSON result."""
    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "peak"
        out = Path(tmp) / "result.json"
        options = [o.replace("{tmp}", tmp) for o in case.options]
        command = [
            sys.executable, "-c", CHILD, str(peak_file), str(root / "gt"), str(root / "pred"),
            "--format", "json", "--output", str(out), "--quiet", *options,
        ]  # fmt: skip
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - started
        stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
        code = os.waitstatus_to_exitcode(status)
        vm_hwm = float(peak_file.read_text()) / 1024 if peak_file.exists() else None
        digest, summary = "-", stderr.strip().splitlines()[-1][:60] if stderr.strip() else ""
        if out.exists():
            data = json.loads(out.read_text())
            s = data["summary"]
            digest = hashlib.sha256(out.read_bytes()).hexdigest()[:12]
            mean = s.get("map")
            summary = f"TP {s['tp']} FP {s['fp']} FN {s['fn']} mAP " + (
                "-" if mean is None else f"{mean:.4f}"
            )
    return Result(case.name, code, seconds, vm_hwm, usage.ru_maxrss / 1024, digest, summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--scale", type=float, default=1.0, help="share of the full sizes")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per case")
    parser.add_argument("--list", action="store_true", help="list the cases and stop")
    args = parser.parse_args()
    if args.list:
        for case in CASES:
            print(case.name)
        return
    wanted = args.cases.split(",") if args.cases else [c.name for c in CASES]
    unknown = set(wanted) - {c.name for c in CASES}
    if unknown:
        parser.error(f"unknown cases: {', '.join(sorted(unknown))}")
    cases = [c for c in CASES if c.name in wanted]
    print(
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
        f"bound {LIMIT_MIB} MiB; scale {args.scale:g}"
    )
    header = f"{'case':28} {'exit':>4} {'seconds':>8} {'VmHWM MiB':>10} {'maxrss MiB':>10}  result"
    print(header)
    print("-" * len(header))
    for case in cases:
        root = prepare(case, args.scale)
        r = measure(case, root, args.timeout)
        hwm = "-" if r.vm_hwm_mib is None else f"{r.vm_hwm_mib:.0f}"
        print(
            f"{r.case:28} {r.exit_code:>4} {r.seconds:>8.1f} {hwm:>10} {r.maxrss_mib:>10.0f}  "
            f"{r.summary} [{r.digest}]",
            flush=True,
        )


if __name__ == "__main__":
    main()

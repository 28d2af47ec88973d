"""Time vocmatch against pycocotools and faster-coco-eval on the same data, side by side.

    python bench/run.py                      # the medium set: 5,000 images, 3 runs each
    python bench/run.py --images 500 --runs 5
    python bench/run.py --scaling 500,5000,50000 --runs 1

Every tool runs as its own process, in turns (one run of each, then the next round), so
machine load falls on all of them alike. Wall time covers the whole process: start-up,
reading the files (XML for vocmatch, JSON for the peers), evaluating and printing. Peak
memory is the process's maximum resident set size. Before any time is printed, the 12 COCO
numbers of vocmatch and of both peers are compared and must agree to 1e-12.

The floor is lxml parsing the same XML files into trees with the same number of processes
and doing nothing else: what any XML-reading evaluator built on lxml would pay.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import generate  # noqa: E402
from peers import lxml_parse_floor  # noqa: E402

COCO_NAMES = (
    "AP",
    "AP50",
    "AP75",
    "APs",
    "APm",
    "APl",
    "AR1",
    "AR10",
    "AR100",
    "ARs",
    "ARm",
    "ARl",
)


@dataclass
class Measure:
    """One run of one tool."""

    seconds: float
    peak_mib: float
    stdout: str


def wrapped(command: list[str]) -> list[str]:
    """Run ``command`` under a tiny Python wrapper that prints the child's own peak RSS."""
    code = (
        "import os,subprocess,sys\n"
        "p=subprocess.Popen(sys.argv[1:])\n"
        "_,status,usage=os.wait4(p.pid,0)\n"
        "sys.stderr.write('\\nPEAK_KIB %d\\n' % usage.ru_maxrss)\n"
        "sys.exit(os.waitstatus_to_exitcode(status))\n"
    )
    return [sys.executable, "-c", code, *command]


def run_tool(command: list[str]) -> Measure:
    """Run a command under the wrapper: wall time, the command's own peak RSS, stdout."""
    start = time.perf_counter()
    process = subprocess.run(wrapped(command), capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if process.returncode not in (0, 3):
        raise SystemExit(
            f"{' '.join(command)} failed ({process.returncode}):\n{process.stderr.decode()}"
        )
    peak_kib = 0
    for line in process.stderr.decode().splitlines():
        if line.startswith("PEAK_KIB "):
            peak_kib = int(line.split()[1])
    return Measure(elapsed, peak_kib / 1024, process.stdout.decode())


def ensure_dataset(root: Path, images: int) -> Path:
    folder = root / str(images)
    if not (folder / "coco" / "pred.json").exists():
        print(f"generating {images:,} images in {folder} ...", flush=True)
        generate(folder, images)
    return folder


def commands(folder: Path, jobs: int) -> dict[str, list[str]]:
    vocmatch = [sys.executable, "-m", "vocmatch", str(folder / "gt"), str(folder / "pred")]
    peers = [sys.executable, str(HERE / "peers.py")]
    return {
        "vocmatch --protocol coco": [
            *vocmatch, "--protocol", "coco", "--format", "json", "--jobs", str(jobs),
        ],
        "vocmatch --protocol voc12": [
            *vocmatch, "--protocol", "voc12", "--format", "json", "--jobs", str(jobs),
        ],
        "pycocotools": [*peers, "pycocotools", str(folder)],
        "faster-coco-eval": [*peers, "faster-coco-eval", str(folder)],
        f"floor: lxml parse, {jobs} process(es)": [
            sys.executable, str(HERE / "run.py"), "--floor", str(folder), "--jobs", str(jobs),
        ],
    }  # fmt: skip


def coco_numbers(name: str, stdout: str) -> list[float]:
    data = json.loads(stdout)
    if name.startswith("vocmatch"):
        return [float(data["coco"][key]) for key in COCO_NAMES]
    return [float(v) for v in data["stats"]]


def compare(folder: Path, jobs: int, runs: int) -> None:
    tools = commands(folder, jobs)
    results: dict[str, list[Measure]] = {name: [] for name in tools}
    for round_ in range(runs):
        for name, command in tools.items():
            results[name].append(run_tool(command))
        print(f"round {round_ + 1}/{runs} done", file=sys.stderr, flush=True)
    reference = coco_numbers("vocmatch", results["vocmatch --protocol coco"][0].stdout)
    for peer in ("pycocotools", "faster-coco-eval"):
        numbers = coco_numbers(peer, results[peer][0].stdout)
        worst = max(abs(a - b) for a, b in zip(reference, numbers, strict=True))
        if worst > 1e-12:
            raise SystemExit(f"COCO numbers differ from {peer} by {worst:g}: no timing reported")
        print(f"12 COCO numbers equal to {peer}'s (largest difference {worst:.1e})")
    print(f"AP {reference[0]:.4f}  AP50 {reference[1]:.4f}  AP75 {reference[2]:.4f}")
    images = sum(1 for _ in (folder / "gt").glob("*.xml"))
    print(f"\n{images:,} images, {runs} runs each, interleaved; jobs = {jobs}\n")
    base = statistics.median(m.seconds for m in results["vocmatch --protocol coco"])
    print(f"{'tool':<36} {'median s':>9} {'min s':>7} {'peak MiB':>9} {'time / vocmatch coco':>21}")
    for name, measures in results.items():
        median = statistics.median(m.seconds for m in measures)
        fastest = min(m.seconds for m in measures)
        peak = max(m.peak_mib for m in measures)
        print(f"{name:<36} {median:>9.2f} {fastest:>7.2f} {peak:>9.0f} {median / base:>20.2f}x")


def scaling(root: Path, sizes: list[int], jobs: int, runs: int) -> None:
    print(f"{'images':>8} {'protocol':<8} {'median s':>9} {'peak MiB':>9} {'ms / 1k images':>15}")
    for images in sizes:
        folder = ensure_dataset(root, images)
        for protocol in ("coco", "voc12"):
            command = commands(folder, jobs)[f"vocmatch --protocol {protocol}"]
            measures = [run_tool(command) for _ in range(runs)]
            median = statistics.median(m.seconds for m in measures)
            peak = max(m.peak_mib for m in measures)
            per_k = median / images * 1000 * 1000
            print(f"{images:>8,} {protocol:<8} {median:>9.2f} {peak:>9.0f} {per_k:>15.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--scaling", help="comma-separated sizes: vocmatch time and memory")
    parser.add_argument("--floor", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor is not None:
        paths = sorted((args.floor / "gt").glob("*.xml")) + sorted(
            (args.floor / "pred").glob("*.xml")
        )
        print(json.dumps({"objects": lxml_parse_floor(paths, args.jobs)}))
        return
    if args.scaling:
        scaling(args.data, [int(s) for s in args.scaling.split(",")], args.jobs, args.runs)
        return
    compare(ensure_dataset(args.data, args.images), args.jobs, args.runs)


if __name__ == "__main__":
    main()

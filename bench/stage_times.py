"""Where a run's time goes, stage by stage: vocmatch from XML beside the peers from JSON.

    python bench/stage_times.py bench/data/5000                       # LabelImg's layout
    python bench/stage_times.py bench/data/5000/layouts/cvat --jobs 2
    python bench/stage_times.py bench/data/objects365-80000 --peers hotcoco

First it runs the stages of ``vocmatch --protocol coco --format json`` in this process, as
the command line does, and prints for each the wall time and the processor time it used
(this process, and the reading processes): interpreter start-up (measured apart,
``python -c pass``), importing what ``eval`` imports, reading both folders (listing, the
reading processes, assembling the columns), evaluating and writing the JSON. Processor time
stays meaningful on a loaded machine, where wall time does not.

Then it prints the shares table: for vocmatch from XML and for each peer from JSON (each
peer in a process of its own), the share of the run in

- **read bytes**: reading every byte of the input files and nothing else (a pass of its own
  over the same files, with the same number of processes, timed apart);
- **parse**: the reading stage less the bytes: for vocmatch, parsing the XML into columns;
  for a peer, loading both JSON files (``COCO(gt)`` and ``loadRes(pred)``) into its index;
- **match**: vocmatch's matching stages (selecting, sorting, pairing, matching, each COCO
  area range, per-image results); a peer's ``evaluate()``;
- **accumulate**: vocmatch's accumulation (AP per class and pycocotools' numbers); a peer's
  ``accumulate()``;
- **write**: vocmatch writing the JSON report; a peer's ``summarize()`` (the 12 numbers).

Importing is left out of the shares (its seconds are shown apart): the tools import
different amounts before they read a byte. Stages of a peer are timed by calling its API
one call at a time, as its documentation shows; vernier is one call and has no split.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

START = time.perf_counter()
# As the command line does (vocmatch/__main__.py), before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
#: The columns of the shares table, in the order a run goes through them.
SHARE_STAGES = ("read bytes", "parse", "match", "accumulate", "write")
#: Peers whose API splits loading, evaluating, accumulating and summarizing.
SPLIT_PEERS = ("hotcoco", "ultrafast-pycocotools", "faster-coco-eval", "pycocotools")


def cpu() -> tuple[float, float]:
    """Processor seconds of this process and of its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def bytes_seconds(paths: list[Path], jobs: int) -> float:
    """Wall seconds to read every byte of ``paths`` in ``jobs`` processes, nothing else."""
    sys.path.insert(0, str(HERE))
    from run import read_bytes_floor

    began = time.perf_counter()
    read_bytes_floor(paths, jobs)
    return time.perf_counter() - began


def peer_api(name: str) -> tuple[Callable[[str], object], Callable[..., object], str]:
    """The ground-truth loader, the evaluator class and the results-loading method of a peer
    with pycocotools' interface."""
    if name == "hotcoco":
        from hotcoco import COCO as HotCOCO
        from hotcoco import COCOeval as HotEval

        return HotCOCO, HotEval, "load_res"
    if name == "ultrafast-pycocotools":
        from ultrafast_pycocotools import COCO as FastCOCO
        from ultrafast_pycocotools import COCOeval as FastEval

        def quiet(*args: object, **kwargs: object) -> None:
            """Drop the summary table."""

        def fast_eval(gt: object, pred: object, iou_type: str) -> object:
            return FastEval(gt, pred, iou_type, print_function=quiet)

        return lambda path: FastCOCO(path, verbose=False), fast_eval, "loadRes"
    if name == "faster-coco-eval":
        from faster_coco_eval import COCO as FasterCOCO
        from faster_coco_eval import COCOeval_faster

        return FasterCOCO, COCOeval_faster, "loadRes"
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    return COCO, COCOeval, "loadRes"


def peer_stages(name: str, folder: Path) -> dict[str, float]:
    """Time a peer's calls one by one on ``folder/coco``: seconds of each stage."""
    seconds: dict[str, float] = {}
    began = time.perf_counter()
    load_gt, evaluator, load_res = peer_api(name)
    seconds["import"] = time.perf_counter() - began
    gt_json, pred_json = folder / "coco" / "gt.json", folder / "coco" / "pred.json"
    with contextlib.redirect_stdout(io.StringIO()):
        began = time.perf_counter()
        coco_gt = load_gt(str(gt_json))
        coco_pred = getattr(coco_gt, load_res)(str(pred_json))
        seconds["load"] = time.perf_counter() - began
        evaluation = evaluator(coco_gt, coco_pred, "bbox")
        for step in ("evaluate", "accumulate", "summarize"):
            began = time.perf_counter()
            getattr(evaluation, step)()
            seconds[step] = time.perf_counter() - began
    return seconds


def vocmatch_stages(folder: Path, jobs: int) -> list[tuple[str, float, float, float]]:
    """Run the stages of a ``--protocol coco --format json`` run in this process: (name, wall
    seconds, own processor seconds, reading processes' processor seconds) of each."""
    stages: list[tuple[str, float, float, float]] = []
    wall, (own, children) = time.perf_counter(), cpu()

    def stage(name: str) -> None:
        nonlocal wall, own, children
        now, (own_now, children_now) = time.perf_counter(), cpu()
        stages.append((name, now - wall, own_now - own, children_now - children))
        wall, own, children = now, own_now, children_now

    # What `vocmatch eval ... --format json` imports before it reads a file.
    import vocmatch.cli.eval_cmd  # noqa: F401  (the command modules load when used)
    from vocmatch.core.protocol import protocol
    from vocmatch.evaluation.matched import evaluate_matched
    from vocmatch.evidence.gates import check_gates
    from vocmatch.readers.scan import read_column_pair, reads_in_threads
    from vocmatch.render.json_report import to_json

    stage("import")
    gt, pred = read_column_pair(folder / "gt", folder / "pred", jobs)
    workers = "threads" if reads_in_threads() else "processes"
    stage(f"read {len(gt.keys) + len(pred.keys):,} files ({jobs} {workers})")

    def progress(name: str, done: int, total: int) -> None:
        # Accumulation starts at "AP per class"; every stage before it matches.
        if name == "AP per class":
            stage("match (coco)")

    evaluation = evaluate_matched(
        gt, pred, protocol("coco"), keep_matches=False, progress=progress
    ).evaluation
    check_gates(evaluation, (), None, None)
    stage("accumulate (coco)")
    text = to_json(evaluation)
    sys.stdout.flush()
    stage(f"JSON ({len(text) / 1e6:.1f} MB)")
    return stages


def print_shares(rows: dict[str, dict[str, float]], imports: dict[str, float]) -> None:
    """The shares table, as Markdown: seconds and share of each stage of each tool."""
    print("\n| tool | " + " | ".join(SHARE_STAGES) + " | total s | import s |")
    print("|---|" + "---:|" * (len(SHARE_STAGES) + 2))
    for tool, seconds in rows.items():
        total = sum(seconds.get(name, 0.0) for name in SHARE_STAGES)
        cells = [
            f"{seconds[name]:.2f} s ({100 * seconds[name] / total:.0f} %)"
            if name in seconds
            else "—"
            for name in SHARE_STAGES
        ]
        print(f"| {tool} | " + " | ".join(cells) + f" | {total:.2f} | {imports[tool]:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a folder with gt/ and pred/ (and coco/)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--peers", default="hotcoco,ultrafast-pycocotools", help="comma-separated, or empty"
    )
    parser.add_argument("--peer", choices=SPLIT_PEERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer is not None:
        print(json.dumps(peer_stages(args.peer, args.folder)))
        return
    stages = vocmatch_stages(args.folder, args.jobs)
    bare = []
    for _ in range(5):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - began)
    print(f"{'stage':<34} {'wall s':>7} {'cpu s':>7} {'workers cpu s':>14}")
    print(f"{'interpreter start-up (median of 5)':<34} {sorted(bare)[2]:>7.3f}")
    for name, seconds, own_cpu, children_cpu in stages:
        print(f"{name:<34} {seconds:>7.3f} {own_cpu:>7.3f} {children_cpu:>14.3f}")
    total = sum(s[1] for s in stages) + sorted(bare)[2]
    load = os.getloadavg()[0]
    print(f"{'total':<34} {total:>7.3f}   (load average {load:.2f})")

    xml_paths = sorted((args.folder / "gt").glob("*.xml"))
    xml_paths += sorted((args.folder / "pred").glob("*.xml"))
    xml_bytes = bytes_seconds(xml_paths, args.jobs)
    read = stages[1][1]
    rows = {
        "vocmatch from XML": {
            "read bytes": xml_bytes,
            "parse": max(read - xml_bytes, 0.0),
            "match": stages[2][1],
            "accumulate": stages[3][1],
            "write": stages[4][1],
        }
    }
    imports = {"vocmatch from XML": stages[0][1]}
    json_paths = [args.folder / "coco" / "gt.json", args.folder / "coco" / "pred.json"]
    json_bytes = bytes_seconds(json_paths, 1)
    for peer in [name for name in args.peers.split(",") if name]:
        if peer not in SPLIT_PEERS:
            parser.error(f"no stages of {peer!r} (known: {', '.join(SPLIT_PEERS)})")
        command = [sys.executable, __file__, str(args.folder), "--peer", peer]
        seconds = json.loads(subprocess.run(command, capture_output=True, check=True).stdout)
        rows[f"{peer} from JSON"] = {
            "read bytes": json_bytes,
            "parse": max(seconds["load"] - json_bytes, 0.0),
            "match": seconds["evaluate"],
            "accumulate": seconds["accumulate"],
            "write": seconds["summarize"],
        }
        imports[f"{peer} from JSON"] = seconds["import"]
    size = sum(path.stat().st_size for path in xml_paths) / 1e6
    json_size = sum(path.stat().st_size for path in json_paths) / 1e6
    print(
        f"\nshares of the run after imports: {size:.0f} MB of XML ({args.jobs} process(es)) "
        f"against {json_size:.0f} MB of JSON (one process); "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print_shares(rows, imports)


if __name__ == "__main__":
    main()

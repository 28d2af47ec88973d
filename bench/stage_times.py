"""Where a ``vocmatch --protocol coco --format json`` run spends its time, stage by stage.

    python bench/stage_times.py bench/data/5000                       # LabelImg's layout
    python bench/stage_times.py bench/data/5000/layouts/cvat --jobs 2

runs the command's stages in this process, as the command line does, and prints for each
the wall time and the processor time it used (this process, and the reading processes):
interpreter start-up (measured apart, ``python -c pass``), importing what ``eval`` imports,
reading both folders (listing, the reading processes, assembling the columns), evaluating
and writing the JSON. Processor time stays meaningful on a loaded machine, where wall time
does not; the sum of the stages is close to ``bench/run.py``'s whole-process time.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

START = time.perf_counter()
# As the command line does (vocmatch/__main__.py), before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def cpu() -> tuple[float, float]:
    """Processor seconds of this process and of its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a folder with gt/ and pred/")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
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
    from vocmatch.evaluation.engine import evaluate_matched
    from vocmatch.evidence.gates import check_gates
    from vocmatch.readers.scan import read_column_pair
    from vocmatch.render.json_report import to_json

    stage("import")
    gt, pred = read_column_pair(args.folder / "gt", args.folder / "pred", args.jobs)
    stage(f"read {len(gt.keys) + len(pred.keys):,} files ({args.jobs} processes)")
    evaluation = evaluate_matched(gt, pred, protocol("coco"), keep_matches=False).evaluation
    check_gates(evaluation, (), None, None)
    stage("evaluate (coco)")
    text = to_json(evaluation)
    sys.stdout.flush()
    stage(f"JSON ({len(text) / 1e6:.1f} MB)")

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


if __name__ == "__main__":
    main()

"""Time slices matched into match records, and measure what they add to a state.

    python bench/slices_bench.py                      # bench/data/5000, default and coco
    python bench/slices_bench.py --data bench/data/2000 --slices size,pose --runs 3

The set is read once. For each protocol, the script first checks that three shards'
states, saved and merged, give the slices of one run (every value's numbers equal), then
times the evaluation without slices and with them (matching each value where the images
are matched, then accumulating the records), and prints the state's size either way.
The dataset is generated under ``bench/data/<images>`` when missing (``bench/generate.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import generate  # noqa: E402

from vocmatch.core.protocol import protocol  # noqa: E402
from vocmatch.evaluation.engine import evaluate_columns  # noqa: E402
from vocmatch.evaluation.records import MatchRecords  # noqa: E402
from vocmatch.evaluation.shards.incremental import Evaluator  # noqa: E402
from vocmatch.evidence.slices import SliceSpec, parse_slices, slice_evaluation  # noqa: E402
from vocmatch.readers.scan import ColumnSet, read_columns  # noqa: E402


def evaluated(gt: ColumnSet, pred: ColumnSet, name: str, specs: tuple[SliceSpec, ...]) -> float:
    """Seconds to evaluate the set (and its slices, when given)."""
    start = time.perf_counter()
    kept: list[MatchRecords] = []
    evaluation = evaluate_columns(
        gt, pred, protocol(name), keep_matches=False, kept=kept.append, slices=specs
    )
    if specs:
        slice_evaluation(evaluation, kept[0], specs)
    return time.perf_counter() - start


def state_size(gt: ColumnSet, pred: ColumnSet, name: str, specs: tuple[SliceSpec, ...]) -> int:
    evaluator = Evaluator(protocol(name), slices=specs)
    evaluator.add_columns(gt, pred)
    return len(evaluator.to_bytes())


def check_merged(gt: ColumnSet, pred: ColumnSet, name: str, specs: tuple[SliceSpec, ...]) -> None:
    """Three shards saved and merged give the slices of one run."""
    kept: list[MatchRecords] = []
    single = evaluate_columns(
        gt, pred, protocol(name), keep_matches=False, kept=kept.append, slices=specs
    )
    shards = []
    for k in (1, 2, 3):
        evaluator = Evaluator(protocol(name), slices=specs)
        evaluator.add_columns(gt, pred, shard=(k, 3))
        shards.append(Evaluator.from_bytes(evaluator.to_bytes()))
    merged = shards[2]
    merged.merge(shards[0])
    merged.merge(shards[1])
    expected = slice_evaluation(single, kept[0], specs)
    if slice_evaluation(merged.result(), merged.records(), specs) != expected:
        raise SystemExit(f"{name}: the merged shards' slices differ from one run's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=HERE / "data" / "5000")
    parser.add_argument("--slices", default="size", help="comma-separated, as --slice")
    parser.add_argument("--protocols", default="default,coco")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not (args.data / "gt").is_dir():
        generate(args.data, int(args.data.name))
    gt, pred = read_columns(args.data / "gt"), read_columns(args.data / "pred")
    specs = parse_slices(args.slices.split(","))
    print(f"{len(gt.keys):,} images, {pred.image.size:,} predictions, slices {args.slices}")
    print(f"{'protocol':10} {'without':>16} {'with slices':>16} {'state':>10} {'with':>10}")
    for name in args.protocols.split(","):
        check_merged(gt, pred, name, specs)
        plain = [evaluated(gt, pred, name, ()) for _ in range(args.runs)]
        sliced = [evaluated(gt, pred, name, specs) for _ in range(args.runs)]
        sizes = state_size(gt, pred, name, ()), state_size(gt, pred, name, specs)
        print(
            f"{name:10} {statistics.median(plain):7.3f} s ({min(plain):.3f}) "
            f"{statistics.median(sliced):7.3f} s ({min(sliced):.3f}) "
            f"{sizes[0] / 1e6:7.1f} MB {sizes[1] / 1e6:7.1f} MB"
        )


if __name__ == "__main__":
    main()

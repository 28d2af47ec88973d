"""A million images on a Dask LocalCluster: synthetic boxes made on the workers (no XML),
each chunk fed to an :class:`~vocmatch.evaluation.shards.incremental.Evaluator` where it is made,
only the chunk's saved state sent to the client, merged there and evaluated (coco).

    python bench/dask_scale.py                                    # 1,000,000 images x 100
    python bench/dask_scale.py --images 20000 --single            # and one process, to compare

Prints the wall time, the peak resident memory of each worker and of the client (which
merges and computes the result; and its bytes a prediction above its memory once the cluster
is up), the state's bytes per prediction, and, with ``--single``,
the same chunks evaluated one after the other in this process (its time and peak), whose
12 COCO numbers must equal the cluster's to the bit. The boxes are float32 as a detector
gives them, the data of ``bench/incremental_bench.py``, seeded per chunk: the same chunks
on any cluster.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import resource
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from vocmatch.evaluation.shards.incremental import Evaluator  # noqa: E402


def _synthetic() -> Callable[..., list[Any]]:
    """bench/incremental_bench.py's generator, loaded by path: this runs on the workers,
    whose import path does not hold bench/."""
    spec = importlib.util.spec_from_file_location(
        "incremental_bench", HERE / "incremental_bench.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic  # type: ignore[no-any-return]


def peak_mib() -> float:
    """This process's peak resident memory so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def chunk_state(chunk: int, size: int, classes: int, pred_per_image: int) -> tuple[bytes, float]:
    """The saved state of chunk ``chunk`` (images ``chunk * size`` on), made and evaluated
    here, and this process's peak memory after it."""
    names = [f"class{k:02d}" for k in range(classes)]
    data = _synthetic()(size, classes, 7, pred_per_image, 1_000_003 * chunk + 17)
    evaluator = Evaluator("coco", class_names=names)
    for offset, (_, gb, gl, pb, ps, pl) in enumerate(data):
        evaluator.add(f"img_{chunk * size + offset:08d}", gb, gl, pb, ps, pl)
    return evaluator.to_bytes(), peak_mib()


def on_cluster(args: argparse.Namespace, chunks: int) -> tuple[list[float], float, float, int, Any]:
    """Wall seconds, workers' peaks, the client's peak once the cluster is up, state bytes
    and the result on a LocalCluster."""
    from distributed import Client, LocalCluster, as_completed

    with (
        LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        client_start = peak_mib()
        start = time.perf_counter()
        futures = client.map(
            chunk_state, range(chunks), size=args.chunk, classes=args.classes,
            pred_per_image=args.pred_per_image, pure=False,
        )  # fmt: skip
        merged: Evaluator | None = None
        state_bytes = 0
        for future in as_completed(futures):
            state, _ = future.result()
            future.release()
            state_bytes += len(state)
            part = Evaluator.from_bytes(state)
            if merged is None:
                merged = part
            else:
                merged.merge(part)
        assert merged is not None
        result = merged.result()
        elapsed = time.perf_counter() - start
        peaks = client.run(peak_mib)
    return [elapsed, *peaks.values()], client_start, state_bytes, len(merged), result


def single(args: argparse.Namespace, chunks: int) -> tuple[float, float, list[float]]:
    """Wall seconds, peak memory and the 12 numbers of the same chunks in one process (run
    in a child process of its own, so that its peak is its own)."""
    start = time.perf_counter()
    merged: Evaluator | None = None
    for chunk in range(chunks):
        part = Evaluator.from_bytes(
            chunk_state(chunk, args.chunk, args.classes, args.pred_per_image)[0]
        )
        if merged is None:
            merged = part
        else:
            merged.merge(part)
    assert merged is not None
    coco = merged.result().coco
    assert coco is not None  # the states are evaluated under protocol "coco"
    return time.perf_counter() - start, peak_mib(), coco.as_list()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=5000, help="images a task")
    parser.add_argument("--classes", type=int, default=20)
    parser.add_argument("--pred-per-image", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--single", action="store_true", help="also run in one process")
    args = parser.parse_args()
    chunks = -(-args.images // args.chunk)
    images = chunks * args.chunk
    (elapsed, *worker_peaks), client_start, state_bytes, n_images, result = on_cluster(args, chunks)
    client_peak = peak_mib()
    n_pred = images * args.pred_per_image
    print(
        f"{images:,} images ({n_images:,} merged), about {n_pred:,} predictions, "
        f"{args.classes} classes, {chunks} tasks on {args.workers} workers"
    )
    print(f"AP {result.coco.AP:.4f}  AP50 {result.coco.AP50:.4f}  AP75 {result.coco.AP75:.4f}")
    above = (client_peak - client_start) * 2**20 / n_pred
    print(
        f"cluster: {elapsed:.1f} s wall, client peak {client_peak:,.0f} MiB "
        f"({client_start:,.0f} MiB with the cluster up: {above:.1f} bytes a prediction above)"
    )
    for k, peak in enumerate(worker_peaks, start=1):
        print(f"  worker {k}: peak {peak:,.0f} MiB")
    print(f"state: {state_bytes:,} bytes in all, {state_bytes / n_pred:.1f} bytes a prediction")
    if args.single:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            single_s, single_peak, numbers = pool.submit(single, args, chunks).result()
        if numbers != result.coco.as_list():
            raise SystemExit("the cluster's 12 numbers differ from one process's")
        print(
            f"one process: {single_s:.1f} s wall, peak {single_peak:,.0f} MiB "
            "(12 numbers identical)"
        )


if __name__ == "__main__":
    main()

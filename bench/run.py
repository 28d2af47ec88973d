"""Time vocmatch against pycocotools, faster-coco-eval, hotcoco, vernier and ultrafast-pycocotools.

    python bench/run.py                      # the medium set: 5,000 images, 5 rounds
    python bench/run.py --set objects365     # 80,000 images, 365 classes, 1.12 M predictions
    python bench/run.py --images 500 --runs 7
    python bench/run.py --peers hotcoco,vernier --layouts labelimg,cvat
    python bench/run.py --scaling 500,5000,50000 --runs 1

Every tool runs as its own process, in turns (one run of each, then the next round), so
machine load falls on all of them alike; the figures are medians over the rounds (at least
5 by default). The 1-minute load average is read before each round, which waits up to three
minutes for it to fall below ``--max-load`` (1.5; the race's own rounds raise it): still at
or above it, the race is refused, unless ``--noisy`` lets it run with a warning line for each
such round (and one above the table). Beside each wall time stands the processor time of
the tool's process and its children (user + system, from ``os.wait4``), which a busy
machine disturbs less. The ratio columns divide by the fastest peer from JSON (the one with
the smallest median wall time): wall time, processor time and peak memory.

Before each timed run, the files that tool reads are read once, untimed (``warm``): the
machine's memory manager pages out file pages idle for about a minute, longer than a round
of the large set, so every tool starts with its inputs in the page cache, as a user re-running
an evaluation would.

Wall time covers the whole process: start-up, reading the files (XML for vocmatch, in
every writer's layout of ``bench/zoo.py``; COCO JSON for the peers), evaluating and
printing. Peak memory is the process's maximum resident set size. Before any time is
printed, the 12 COCO numbers of vocmatch on every layout and of every peer are compared:
every peer must agree with vocmatch to 1e-12 (the report says whether they are equal to the
bit), and the layouts with each other exactly.

The floor is lxml parsing the same XML files into trees with the same number of processes
and doing nothing else: what any XML-reading evaluator built on lxml would pay. Below it,
reading every byte of the files (the same processes, nothing else done with them) is the
floor of any reader at all. vocmatch runs with its compiled reader, and once more with the
pure-Python one (``VOCMATCH_PURE_READER=1``) on LabelImg's layout. Start-up is
``vocmatch --version`` run many times, beside the bare interpreter.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import SHAPES, generate  # noqa: E402
from peers import PEERS, lxml_parse_floor  # noqa: E402
from zoo import LAYOUTS, write_layout  # noqa: E402

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
#: The peers, in the order of the summary lines (fastest first, as last measured).
PEER_ORDER = ("hotcoco", "ultrafast-pycocotools", "vernier", "faster-coco-eval", "pycocotools")
#: The sets ``--set`` names: bench/generate.py's shapes.
SETS = tuple(SHAPES)
VOCMATCH = "vocmatch coco"
PURE = "vocmatch pure reader: labelimg"


@dataclass
class Measure:
    """One run of one tool."""

    seconds: float
    cpu_seconds: float
    peak_mib: float
    stdout: str


def wrapped(command: list[str]) -> list[str]:
    """Run ``command`` under a tiny Python wrapper that prints the child's own peak RSS and
    processor time (user + system of the child and the children it waited for)."""
    code = (
        "import os,subprocess,sys\n"
        "p=subprocess.Popen(sys.argv[1:])\n"
        "_,status,usage=os.wait4(p.pid,0)\n"
        "sys.stderr.write('\\nPEAK_KIB %d\\n' % usage.ru_maxrss)\n"
        "sys.stderr.write('CPU_S %r\\n' % (usage.ru_utime+usage.ru_stime))\n"
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
    cpu_seconds = 0.0
    for line in process.stderr.decode().splitlines():
        if line.startswith("PEAK_KIB "):
            peak_kib = int(line.split()[1])
        elif line.startswith("CPU_S "):
            cpu_seconds = float(line.split()[1])
    return Measure(elapsed, cpu_seconds, peak_kib / 1024, process.stdout.decode())


def dataset_folder(root: Path, images: int, set_name: str = "default") -> Path:
    """Where a set of ``images`` images of shape ``set_name`` lives under ``root``."""
    return root / (str(images) if set_name == "default" else f"{set_name}-{images}")


def ensure_dataset(root: Path, images: int, set_name: str = "default") -> Path:
    folder = dataset_folder(root, images, set_name)
    if not (folder / "coco" / "pred.json").exists():
        print(f"generating {images:,} images ({set_name}) in {folder} ...", flush=True)
        shape = SHAPES[set_name]
        generate(folder, images, shape.classes, shape.gt_per_image, shape.pred_per_image)
    return folder


def layout_folder(folder: Path, layout: str, images: int, set_name: str = "default") -> Path:
    """The dataset's files in one layout (LabelImg's are the generated set itself)."""
    if layout == "labelimg":
        return folder
    target = folder / "layouts" / layout
    done = target / ".complete"
    if not done.exists():
        print(f"writing the {layout} layout of {images:,} images ...", flush=True)
        shape = SHAPES[set_name]
        write_layout(
            target, layout, images, shape.classes, shape.gt_per_image, shape.pred_per_image
        )
        done.write_text("")
    return target


def vocmatch_command(folder: Path, protocol: str, jobs: int) -> list[str]:
    return [
        sys.executable, "-m", "vocmatch", str(folder / "gt"), str(folder / "pred"),
        "--protocol", protocol, "--format", "json", "--jobs", str(jobs), "--quiet",
    ]  # fmt: skip


@dataclass(frozen=True)
class Tool:
    """A racer: its command and the files or folders it reads (warmed before each run)."""

    command: list[str]
    inputs: tuple[Path, ...]


def commands(
    folder: Path, images: int, jobs: int, layouts: list[str], peers: list[str], set_name: str
) -> dict[str, Tool]:
    tools = {}
    xml = (folder / "gt", folder / "pred")
    for layout in layouts:
        files = layout_folder(folder, layout, images, set_name)
        tools[f"{VOCMATCH}: {layout}"] = Tool(
            vocmatch_command(files, "coco", jobs), (files / "gt", files / "pred")
        )
    tools["vocmatch voc12: labelimg"] = Tool(vocmatch_command(folder, "voc12", jobs), xml)
    tools[PURE] = Tool(
        ["env", "VOCMATCH_PURE_READER=1", *vocmatch_command(folder, "coco", jobs)], xml
    )
    for peer in peers:
        tools[peer] = Tool(
            [sys.executable, str(HERE / "peers.py"), peer, str(folder)], (folder / "coco",)
        )
    tools[f"floor: lxml parse, {jobs} process(es)"] = Tool([
        sys.executable, str(HERE / "run.py"), "--floor", str(folder), "--jobs", str(jobs),
    ], xml)  # fmt: skip
    tools[f"floor: read the bytes, {jobs} process(es)"] = Tool([
        sys.executable, str(HERE / "run.py"), "--bytes-floor", str(folder), "--jobs", str(jobs),
    ], xml)  # fmt: skip
    return tools


def warm(inputs: tuple[Path, ...]) -> None:
    """Read every file of ``inputs`` once, untimed, so that each tool starts with its files
    in the page cache: this machine pages out file pages left idle for about a minute, and
    a round of the large set lasts longer than that, so without this a tool would pay for
    reading from disk what the tool before it pushed out (the XML sets are three times the
    size of the JSON files, so mostly vocmatch would)."""
    for top in inputs:
        paths = [top] if top.is_file() else (p for p in top.rglob("*") if p.is_file())
        for path in paths:
            with open(path, "rb") as handle:
                while handle.read(1 << 20):
                    pass


def coco_numbers(name: str, stdout: str) -> list[float]:
    data = json.loads(stdout)
    if name.startswith((VOCMATCH, PURE)):
        return [float(data["coco"][key]) for key in COCO_NAMES]
    return [float(v) for v in data["stats"]]


def check_numbers(results: dict[str, list[Measure]], peers: list[str]) -> list[float]:
    """Stop unless every layout gives vocmatch the same 12 numbers and every peer agrees
    with them (1e-12); return them."""
    layouts = [name for name in results if name.startswith(VOCMATCH)]
    reference = coco_numbers(layouts[0], results[layouts[0]][0].stdout)
    for name in layouts[1:]:
        for measure in results[name]:
            if coco_numbers(name, measure.stdout) != reference:
                raise SystemExit(f"{name}: other numbers than {layouts[0]}: no timing reported")
    print(f"12 COCO numbers identical on {len(layouts)} layout(s)")
    if PURE in results and coco_numbers(PURE, results[PURE][0].stdout) != reference:
        raise SystemExit("the pure reader gives other numbers: no timing reported")
    for peer in peers:
        numbers = coco_numbers(peer, results[peer][0].stdout)
        worst = max(abs(a - b) for a, b in zip(reference, numbers, strict=True))
        if worst > 1e-12:
            raise SystemExit(f"COCO numbers differ from {peer} by {worst:g}: no timing reported")
        if numbers == reference:
            print(f"12 COCO numbers equal to {peer}'s to the bit")
        else:
            differing = sum(a != b for a, b in zip(reference, numbers, strict=True))
            print(
                f"12 COCO numbers equal to {peer}'s within 1e-12: {differing} differ in their "
                f"last bits (largest difference {worst:.1e})"
            )
    return reference


#: Seconds a round waits for the load average to fall below --max-load: the race's own
#: rounds (two reading processes on two processors) raise it for a minute after them.
SETTLE_SECONDS = 180


def load_check(max_load: float, noisy: bool, where: str) -> float:
    """Read the 1-minute load average, waiting up to :data:`SETTLE_SECONDS` for it to fall
    below ``max_load``; refuse when it does not unless ``noisy``, in which case print a
    warning line. Returns the load average."""
    load = os.getloadavg()[0]
    waited = 0
    while load >= max_load and waited < SETTLE_SECONDS and not noisy:
        time.sleep(5)
        waited += 5
        load = os.getloadavg()[0]
    if load >= max_load:
        message = (
            f"load average {load:.2f} >= {max_load} {where}: other processes share the "
            "processors and the figures are noise"
        )
        if not noisy:
            raise SystemExit(f"refused: {message} (--noisy runs anyway, with a warning)")
        print(f"WARNING: {message}", file=sys.stderr, flush=True)
    return load


def _read_all(paths: list[Path]) -> int:
    return sum(len(path.read_bytes()) for path in paths)


def read_bytes_floor(paths: list[Path], jobs: int) -> int:
    """Read every byte of the files, in ``jobs`` processes (as the lxml floor splits them),
    and do nothing else: the floor of any reader. Returns the bytes read."""
    if jobs <= 1:
        return _read_all(paths)
    chunk_count = min(len(paths), 4 * jobs)
    chunks = [paths[index::chunk_count] for index in range(chunk_count)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return sum(pool.map(_read_all, chunks))


def startup(runs: int) -> None:
    """``vocmatch --version`` and the bare interpreter, ``runs`` times each, in turns."""
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "vocmatch --version": [sys.executable, "-m", "vocmatch", "--version"],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs + 1):  # the first round warms the file cache and is not counted
        for name, command in cases.items():
            start = time.perf_counter()
            subprocess.run(command, capture_output=True, check=True)
            times[name].append(time.perf_counter() - start)
    print(f"\nstart-up, {runs} runs each, interleaved\n")
    print(f"{'command':<24} {'median s':>9} {'min s':>7}")
    for name, seconds in times.items():
        kept = seconds[1:]
        print(f"{name:<24} {statistics.median(kept):>9.3f} {min(kept):>7.3f}")


@dataclass(frozen=True)
class RaceSettings:
    """How a race is run: rounds, processes and the load it accepts."""

    runs: int
    jobs: int
    max_load: float
    noisy: bool


def compare(
    folder: Path,
    images: int,
    settings: RaceSettings,
    layouts: list[str],
    peers: list[str],
    set_name: str = "default",
) -> None:
    runs, jobs = settings.runs, settings.jobs
    tools = commands(folder, images, jobs, layouts, peers, set_name)
    results: dict[str, list[Measure]] = {name: [] for name in tools}
    names = list(tools)
    loads = []
    for round_ in range(runs):
        loads.append(load_check(settings.max_load, settings.noisy, f"before round {round_ + 1}"))
        # Each round starts one tool later, so no tool always runs right after the same one
        # (a slot after a large run was measurably slower on this machine).
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            warm(tools[name].inputs)
            results[name].append(run_tool(tools[name].command))
        print(
            f"round {round_ + 1}/{runs} done (load average {loads[-1]:.2f} before it)",
            file=sys.stderr,
            flush=True,
        )
    load_after = os.getloadavg()[0]
    reference = check_numbers(results, peers)
    print(f"AP {reference[0]:.4f}  AP50 {reference[1]:.4f}  AP75 {reference[2]:.4f}")
    if max(loads) >= settings.max_load:
        print(
            f"\nWARNING: noisy figures: load average up to {max(loads):.2f} before a round "
            f"(>= {settings.max_load})"
        )
    print(
        f"\n{set_name} set, {images:,} images, medians of {runs} interleaved rounds; "
        f"jobs = {jobs}; load average before each round "
        f"{', '.join(f'{load:.2f}' for load in loads)}; {load_after:.2f} after\n"
    )
    medians = {name: statistics.median(m.seconds for m in ms) for name, ms in results.items()}
    cpu = {name: statistics.median(m.cpu_seconds for m in ms) for name, ms in results.items()}
    peaks = {name: max(m.peak_mib for m in ms) for name, ms in results.items()}
    ratio_peers = [p for p in PEER_ORDER if p in peers]
    fastest_peer = min(peers, key=medians.__getitem__) if peers else None
    header = f"{'tool':<36} {'wall s':>7} {'cpu s':>7} {'min s':>7} {'peak MiB':>9}"
    if fastest_peer is not None:
        header += f" {'wall /':>7} {'cpu /':>7} {'peak /':>7}"
    print(header)
    for name in results:
        fastest = min(m.seconds for m in results[name])
        line = (
            f"{name:<36} {medians[name]:>7.2f} {cpu[name]:>7.2f} {fastest:>7.2f} "
            f"{peaks[name]:>9.0f}"
        )
        if fastest_peer is not None:
            line += (
                f" {medians[name] / medians[fastest_peer]:>6.2f}x"
                f" {cpu[name] / cpu[fastest_peer]:>6.2f}x"
                f" {peaks[name] / peaks[fastest_peer]:>6.2f}x"
            )
        print(line)
    if fastest_peer is not None:
        print(f"(ratios: to {fastest_peer}, the fastest peer from JSON)")
    layout_times = {n: t for n, t in medians.items() if n.startswith(VOCMATCH)}
    slowest = max(layout_times, key=layout_times.__getitem__)
    fastest_layout = min(layout_times, key=layout_times.__getitem__)
    spread = layout_times[slowest] / layout_times[fastest_layout]
    print(
        f"\nlayouts: slowest ({slowest.split(': ')[1]}) / fastest "
        f"({fastest_layout.split(': ')[1]}) = {spread:.2f}x"
    )
    for peer in ratio_peers:
        best = min(layout_times.values()) / medians[peer]
        worst = max(layout_times.values()) / medians[peer]
        print(f"vocmatch coco / {peer}: {best:.2f}x to {worst:.2f}x over the layouts")


def scaling(root: Path, sizes: list[int], jobs: int, runs: int) -> None:
    print(
        f"{'images':>8} {'protocol':<8} {'median s':>9} {'cpu s':>7} {'peak MiB':>9} "
        f"{'ms / 1k images':>15}"
    )
    for images in sizes:
        folder = ensure_dataset(root, images)
        for protocol in ("coco", "voc12"):
            command = vocmatch_command(folder, protocol, jobs)
            measures = [run_tool(command) for _ in range(runs)]
            median = statistics.median(m.seconds for m in measures)
            cpu = statistics.median(m.cpu_seconds for m in measures)
            peak = max(m.peak_mib for m in measures)
            per_k = median / images * 1000 * 1000
            print(
                f"{images:>8,} {protocol:<8} {median:>9.2f} {cpu:>7.2f} {peak:>9.0f} {per_k:>15.1f}"
            )


def byte_compile_vocmatch() -> None:
    """Compile vocmatch's modules to bytecode once, as ``pip install`` does.

    Run from a checkout (``pip install -e .``) under ``PYTHONDONTWRITEBYTECODE``, every
    process would compile every module again (a tenth of a second); an installed package
    never does. The peers' modules were compiled when pip installed them.
    """
    spec = importlib.util.find_spec("vocmatch")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            compileall.compile_dir(location, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--set", choices=SETS, default="default", dest="set_name")
    parser.add_argument("--images", type=int, help="default: the set's (5,000; 80,000)")
    parser.add_argument("--runs", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--max-load", type=float, default=1.5, help="refuse a round at or above")
    parser.add_argument(
        "--noisy", action="store_true", help="run above --max-load, with a warning line"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--layouts", default=",".join(LAYOUTS), help="comma-separated")
    parser.add_argument("--peers", default=",".join(PEER_ORDER), help="comma-separated")
    parser.add_argument("--startup", type=int, default=20, help="runs of vocmatch --version")
    parser.add_argument("--scaling", help="comma-separated sizes: vocmatch time and memory")
    parser.add_argument("--floor", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--bytes-floor", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bytes_floor is not None:
        paths = sorted((args.bytes_floor / "gt").glob("*.xml")) + sorted(
            (args.bytes_floor / "pred").glob("*.xml")
        )
        print(json.dumps({"bytes": read_bytes_floor(paths, args.jobs)}))
        return
    if args.floor is not None:
        paths = sorted((args.floor / "gt").glob("*.xml")) + sorted(
            (args.floor / "pred").glob("*.xml")
        )
        print(json.dumps({"objects": lxml_parse_floor(paths, args.jobs)}))
        return
    if args.scaling:
        byte_compile_vocmatch()
        scaling(args.data, [int(s) for s in args.scaling.split(",")], args.jobs, args.runs)
        return
    layouts = [name for name in args.layouts.split(",") if name]
    peers = [name for name in args.peers.split(",") if name]
    for name in layouts:
        if name not in LAYOUTS:
            parser.error(f"unknown layout {name!r} (known: {', '.join(LAYOUTS)})")
    for name in peers:
        if name not in PEERS:
            parser.error(f"unknown peer {name!r} (known: {', '.join(PEERS)})")
    byte_compile_vocmatch()
    images = SHAPES[args.set_name].images if args.images is None else args.images
    folder = ensure_dataset(args.data, images, args.set_name)
    settings = RaceSettings(args.runs, args.jobs, args.max_load, args.noisy)
    compare(folder, images, settings, layouts, peers, args.set_name)
    if args.startup:
        startup(args.startup)


if __name__ == "__main__":
    main()

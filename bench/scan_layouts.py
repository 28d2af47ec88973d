"""The compiled reader's chunk call alone on each writer's layout of a set, to see what a
layout costs the scanner: ``fastxml.read_chunk`` on every file of ``gt/`` and ``pred/``, in
chunks of 512 as a run reads them, in one thread, with the files in the page cache (read
once before each round). Prints the processor time of each layout (user and system, medians
over the rounds), its bytes and its time per MB::

    python bench/scan_layouts.py bench/data/5000                  # LabelImg and CVAT
    python bench/scan_layouts.py bench/data/5000 --layouts labelimg,cvat --runs 9
    python bench/scan_layouts.py bench/data/5000 --against OLD.so  # another build beside

A layout other than ``labelimg`` is read from ``DIR/layouts/<layout>`` (``bench/run.py``
writes them there). ``--against`` loads another build of the extension (a ``fastxml*.so``)
and times it in the same rounds, one build after the other, so that a busy machine slows
both alike; both must give the same columns.
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vocmatch.core.model import MAX_COORDINATE  # noqa: E402
from vocmatch.readers.scan import PARSER_TEXT_LIMIT  # noqa: E402

#: Files a chunk holds, as a run of 10,000 files or more reads them.
CHUNK = 512


def _build(path: str | None, index: int) -> ModuleType:
    """The extension built in this checkout, or the one at ``path``."""
    if path is None:
        from vocmatch.readers import fastxml

        return fastxml
    spec = importlib.util.spec_from_file_location(f"build{index}.fastxml", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(folder: Path) -> list[tuple[str, str]]:
    return [
        (path.stem, str(path))
        for side in ("gt", "pred")
        for path in sorted((folder / side).glob("*.xml"))
    ]


def _warm(files: list[tuple[str, str]]) -> int:
    total = 0
    for _, path in files:
        with open(path, "rb") as handle:
            total += len(handle.read())
    return total


def _processor() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _read(build: ModuleType, files: list[tuple[str, str]]) -> tuple[float, list[Any]]:
    """Processor seconds of reading the files chunk by chunk, and the chunks' columns."""
    results = []
    start = _processor()
    for first in range(0, len(files), CHUNK):
        chunk = files[first : first + CHUNK]
        results.append(build.read_chunk(chunk, 1 << 40, MAX_COORDINATE, PARSER_TEXT_LIMIT))
    return _processor() - start, results


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a set's folder (gt/, pred/, layouts/)")
    parser.add_argument("--layouts", default="labelimg,cvat", help="comma-separated")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--against", help="another build of the extension (.so)")
    args = parser.parse_args(argv)
    builds = {"this checkout": _build(None, 0)}
    if args.against:
        builds[args.against] = _build(args.against, 1)
    for layout in [name for name in args.layouts.split(",") if name]:
        folder = args.folder if layout == "labelimg" else args.folder / "layouts" / layout
        files = _files(folder)
        if not files:
            raise SystemExit(f"{folder}: no gt/*.xml or pred/*.xml")
        times: dict[str, list[float]] = {name: [] for name in builds}
        size = 0
        for _ in range(args.runs):
            size = _warm(files)
            columns = []
            for name, build in builds.items():
                seconds, read = _read(build, files)
                times[name].append(seconds)
                columns.append(read)
            if any(c != columns[0] for c in columns[1:]):
                raise SystemExit(f"{layout}: the builds read other columns")
        for name, values in times.items():
            median = statistics.median(values)
            print(
                f"{layout:<14} {len(files):>7,} files {size / 1e6:>6.0f} MB  {name}: "
                f"{median * 1e3:6.1f} ms processor time (min {min(values) * 1e3:.1f}), "
                f"{median * 1e3 / (size / 1e6):.2f} ms/MB"
            )


if __name__ == "__main__":
    main()

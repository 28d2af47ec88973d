"""Coverage-guided differential fuzzing of the compiled reader against the parser (lxml).

Every input the compiled reader (``vocmatch/readers/fastxml.c``) reads itself must be read
by the parser to exactly the same objects, and by the pure-Python fast reader too where
that one reads it; an input it leaves to the parser is always fine. Built with
AddressSanitizer and libFuzzer's coverage instrumentation, any out-of-bounds access also
stops the run with a report. atheris (``pip install atheris``) drives it::

    # the instrumented extension, built apart from the checkout's own
    CC=clang-14 CFLAGS="-fsanitize=address,fuzzer-no-link -g -O1" \\
        python bench/fuzz_reader.py --build /tmp/asan
    # the run: seeds from every layout of bench/zoo.py, then mutations for 30 minutes
    LD_PRELOAD=$(clang-14 -print-file-name=libclang_rt.asan-x86_64.so) \\
    ASAN_OPTIONS=detect_leaks=0 python bench/fuzz_reader.py \\
        --extension /tmp/asan/vocmatch/readers/fastxml*.so --seeds /tmp/corpus-seeds \\
        /tmp/corpus -max_total_time=1800

Arguments after the options go to libFuzzer (``-max_total_time``, ``-jobs``, ...).
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from vocmatch.errors import AnnotationError  # noqa: E402
from vocmatch.readers import scan  # noqa: E402
from vocmatch.readers.parse import parse_annotation  # noqa: E402

#: The name under which vocmatch.readers.scan holds the compiled reader (None when it is not
#: built); a private name of that module, so it is reached by name.
COMPILED = "_compiled"


def build(out: Path) -> None:
    """Build the extension into ``out`` with the environment's CC and CFLAGS."""
    subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--build-lib", str(out), "--force"],
        cwd=ROOT,
        check=True,
    )


def load_extension(path: str) -> None:
    """Use the extension at ``path`` (an instrumented build) as the compiled reader."""
    spec = importlib.util.spec_from_file_location("vocmatch.readers.fastxml", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    setattr(scan, COMPILED, module)


def write_seeds(folder: Path) -> None:
    """A few files of every layout of bench/zoo.py, small enough to mutate quickly."""
    import zoo

    for layout in sorted(zoo.LAYOUTS):
        zoo.write_layout(folder / layout, layout, images=3, classes=3, pred_per_image=3, seed=1)
    for index, path in enumerate(sorted(folder.rglob("*.xml"))):
        (folder / f"seed-{index:03d}.xml").write_bytes(path.read_bytes())


def rows(read: Any) -> list[tuple[Any, ...]]:
    """A fast reader's objects as comparable rows (names and poses as the parser reads them)."""
    out = []
    for k, raw in enumerate(read.names):
        pose = read.poses[k]
        pose_text = None if pose is None else scan.decoded_text(pose).strip() or None
        score = float(read.scores[k])
        out.append(
            (
                scan.decoded_text(raw).strip(),
                *map(float, read.coordinates[k]),
                bool(read.difficult[k]),
                bool(read.truncated[k]),
                bool(read.occluded[k]),
                None if math.isnan(score) else score,
                pose_text,
            )
        )
    return out


def check(data: bytes) -> None:
    """Raise if the compiled reader reads ``data`` otherwise than the parser (or the pure
    fast reader, where it reads the file too)."""
    compiled = scan._fast_compiled(data, ())
    if compiled is None:
        return
    try:
        parsed = parse_annotation(data, "fuzz.xml", "fuzz")
    except AnnotationError as error:
        raise AssertionError(f"read a file the parser refuses: {error}") from None
    expected = [
        (b.name, b.x1, b.y1, b.x2, b.y2, b.difficult, b.truncated, b.occluded, b.score, b.pose)
        for b in parsed.boxes
    ]
    got = rows(compiled)
    if any(b.shape is not None for b in parsed.boxes) or got != expected:
        raise AssertionError(f"objects differ:\n{got}\n{expected}")
    header = (compiled.header.filename, compiled.header.size)
    if header != (parsed.filename, parsed.size):
        raise AssertionError(f"headers differ: {header} {(parsed.filename, parsed.size)}")
    pure = scan._fast_pure(data)
    if pure is not None and rows(pure) != got:
        raise AssertionError("the pure reader reads it otherwise")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", type=Path, help="build the extension into this folder")
    parser.add_argument("--extension", help="the extension to fuzz (default: the built one)")
    parser.add_argument("--seeds", type=Path, help="write seed files here, added to the run")
    options, rest = parser.parse_known_args()
    if options.build:
        build(options.build)
        return
    # libFuzzer first: the instrumented extension registers its coverage with it on loading.
    import atheris

    if options.extension:
        load_extension(glob.glob(options.extension)[0])
    if getattr(scan, COMPILED) is None:
        sys.exit("the compiled reader is not built")
    if options.seeds:
        options.seeds.mkdir(parents=True, exist_ok=True)
        write_seeds(options.seeds)
        rest = [*rest, str(options.seeds)]
    os.environ.pop(scan.PURE_READER_VARIABLE, None)
    atheris.Setup([sys.argv[0], *rest], check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

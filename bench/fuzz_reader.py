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

``--chunk`` fuzzes the chunk reader (``fastxml.read_chunk``) instead, without libFuzzer:
seeded chunks of generated and mutated files (and paths that are not plain files) are
written to a temporary folder and read four ways -- by the chunk reader, file by file with
the compiled reader, with the pure reader, and by the parser alone -- and the four column
sets must be the same to the bit (boxes, scores, flags, labels, poses, sizes, filenames,
skipped files and their messages). A chunk that differs is written out with its seed. Run it
with the extension built in place with AddressSanitizer and UndefinedBehaviorSanitizer
(``PYTHONMALLOC=malloc`` so that every allocation of the extension is checked)::

    CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined \\
        -fno-omit-frame-pointer -O1 -g" LDFLAGS="-fsanitize=address,undefined" \\
        python setup.py build_ext --inplace --force
    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \\
        PYTHONMALLOC=malloc python bench/fuzz_reader.py --chunk --seconds 600 --seed 1
    python bench/fuzz_reader.py --chunk --replay 1:4711     # one chunk again, by its seed
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import importlib.util
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from vocmatch.core.model import SkippedFile  # noqa: E402
from vocmatch.errors import AnnotationError  # noqa: E402
from vocmatch.readers import scan  # noqa: E402
from vocmatch.readers.parse import (  # noqa: E402
    AnnotationSet,
    parse_annotation,
    read_annotation,
)
from vocmatch.readers.regular_files import read_bytes  # noqa: E402
from vocmatch.readers.scan import (  # noqa: E402
    ColumnSet,
    columns_from_annotations,
    read_listed_columns,
)

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


# --- the chunk reader ----------------------------------------------------------------------

#: Texts of <name> and <pose>: several spellings of one stripped text (the chunk gives them
#: one code each, read as one class), Unicode blanks and line ends around and inside.
NAME_TEXTS = [
    "cat", " cat", "cat ", "\tcat\n", "cat\r\n", "\r\ncat", "Cat", "c\u00e9t", "ce\u0301t",
    "\u00a0cat", "cat\u3000", "a\r\nb", "a\rb", "a\nb", "a\r\rb", "dog", "a>b", "\u540d\u524d",
    "\U0001f600", "\u2028x\u2029", "x\u0085", "]]", "\ud7ff", "Left", "left", "Unspecified",
    "person", "person ", "\ufeffcat", "\u00a0c\u00e9t\r\n",
]  # fmt: skip
#: Texts of <name> and <pose> the readers refuse or leave to the parser (blank, markup).
ODD_NAMES = ["", " ", "\r\n", "\u00a0", "\u3000", "\u0085", "\u2028", "a]]>b", "&amp;",
             "&#65;", "\x00", "\x1f", "\ufffe", "\udcff", "<", "<![CDATA[x]]>"]  # fmt: skip
NUMBER_TEXTS = [
    "0", "1", "7", "12.5", " 7 ", "\r\n7\r\n", "+5", "-0", "-0.0", "1e2", "1E-2", ".5", "5.",
    "00012", "9" * 400, "1e308", "1e309", "-1e309", "nan", "NaN", "inf", "-Infinity", "0x10",
    "1_000", "\u0661\u0662", "\uff11\uff12", "", ".", "e5", "1e", "1e+", "--1",
    "1.7976931348623157e308", "4.9e-324", "123456789012345678901234", "0.1234567890123456789",
    "1e-400", "9007199254740992", "9007199254740993", "9007199254740992.5", "1e15", "1e16",
    "0." + "0" * 70 + "1", "1" + "0" * 70, "1e100000000000", "1e-100000000000", "3.0e0",
]  # fmt: skip
SIZE_TEXTS = [
    "640", "0", "0012", " 5", "5 ", "5\r\n", "5.0", "1e3", "-5", "+5", "", " ", "\u00a0",
    "\uff11\uff12", "9" * 15, "9" * 16, "1" + "0" * 15, "9" * 308, "9" * 309, "x", "1e400",
]  # fmt: skip
DEPTH_TEXTS = [None, "", " ", "\r\n", "3", " 3", "3 ", "3.5", "3.0", "\u00a0", "1e2", "-1",
               "9" * 15, "9" * 20, "x", "0"]  # fmt: skip
FLAG_TEXTS = ["", "0", "1", " 1 ", "2", "true", "TRUE", "yes", "No", "0.0", "1.0", "x", "-0"]
DECLARATIONS = [
    "", '<?xml version="1.0"?>', "<?xml version='1.0' encoding='utf-8'?>",
    '<?xml version="1.0" encoding="UTF8" standalone="yes"?>', '<?xml version="1.1"?>',
    '<?xml version="1.0" encoding="latin-1"?>', '<?xml  version = "1.0"  ?>',
    '<?xml version="1.0" standalone="maybe"?>', "<?xml-stylesheet href='a'?>", "\ufeff",
    "<!DOCTYPE annotation>", "<!-- a comment -->",
]  # fmt: skip
#: Byte strings inserted by mutation (markup the scan refuses, partial UTF-8, NUL).
CHUNK_SNIPPETS = [
    b"<!DOCTYPE a [<!ENTITY x 'y'>]>", b"&x;", b"<![CDATA[x]]>", b"]]>", b"\x00", b"\xff",
    b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xef\xbf\xbe", b"\xc0\xaf",
    b"<!-- c -->", b"<object>", b"</object>", b"<bndbox>", b"</bndbox>", b"<name>", b"</name>",
    b"<a>", b"</a>", b"<x/>", b"<x a='1'>", b"\r\n", b"\r", b"<", b">", b"&", b"&#0;",
    b"<?pi?>", b"<polygon>", b"<robndbox>", b"<size>", b"</size>", b"<depth>", b"<score>",
    b"xmlns='urn:x'", b"<annotation>", b"</annotation>", b"\xef\xbb\xbf",
]  # fmt: skip


class ChunkFiles:
    """The files of one generated chunk, written in ``folder``: ``files`` are the (key,
    path) pairs read, sorted by key."""

    def __init__(self, folder: Path, rng: random.Random) -> None:
        self.folder = folder
        self.rng = rng
        self.files: list[tuple[str, str]] = []
        # Names shared by the chunk's files, so that a name comes back in later files.
        self.names = rng.sample(NAME_TEXTS, rng.randint(1, 6))
        self.layout = rng.choice(["", "\n", "\n\t", "\r\n  ", "\r\n", "\n    "])
        self.odd = 1.0  # how hostile the file being made is (a factor of every odd chance)

    def maybe(self, chance: float) -> bool:
        """Whether to make something odd, at ``chance`` times the file's hostility."""
        return self.rng.random() < chance * self.odd

    def pick_name(self) -> str:
        rng = self.rng
        if self.maybe(0.03):
            return rng.choice(["x", "n\u00e9", "\u540d"]) * rng.choice([100, 5000, 70000])
        if self.maybe(0.05):
            return rng.choice(ODD_NAMES)
        if rng.random() < 0.1:
            return f"c{rng.randrange(3000)}"  # many names: the chunk's table of names grows
        if rng.random() < 0.8:
            return rng.choice(self.names)
        return rng.choice(NAME_TEXTS)

    def number(self, low: int = 0, high: int = 900) -> str:
        rng = self.rng
        if self.maybe(0.1):
            return rng.choice(NUMBER_TEXTS)
        value: float = rng.randint(low, high)
        if rng.random() < 0.3:
            value += rng.choice([0.5, 0.25, 0.1, 1e-9])
        return rng.choice([str(value), repr(float(value)), f"{value:.17g}", f"{value:e}"])

    def element(self, tag: str, text: str, indent: str) -> str:
        rng = self.rng
        if self.maybe(0.01):
            return f"{indent}<{tag}>{self.nested(rng.randint(1, 3))}{text}</{tag}>"
        if self.maybe(0.005):
            return f"{indent}<{tag}/>"
        return f"{indent}<{tag}>{text}</{tag}>"

    def nested(self, depth: int) -> str:
        return "<a>" * depth + "x" + "</a>" * depth

    def bndbox(self, indent: str) -> str:
        rng = self.rng
        x1, y1 = rng.randint(0, 500), rng.randint(0, 500)
        x2, y2 = x1 + rng.randint(-2, 300), y1 + rng.randint(-2, 300)
        corners = [("xmin", str(x1)), ("ymin", str(y1)), ("xmax", str(x2)), ("ymax", str(y2))]
        if rng.random() < 0.5:
            corners = [
                (t, self.number(int(v), int(v)) if rng.random() < 0.8 else v) for t, v in corners
            ]
        if self.maybe(0.1):
            tag, _ = rng.choice(corners)
            corners[rng.randrange(4)] = (tag, self.number())
        if self.maybe(0.03):
            corners.pop(rng.randrange(len(corners)))
        if self.maybe(0.03):
            corners.append((rng.choice(["xmin", "xmax", "zmin"]), self.number()))
        if rng.random() < 0.2:
            rng.shuffle(corners)
        inner = indent + self.layout.lstrip("\r\n")
        parts = [self.element(t, v, self.layout + inner) for t, v in corners]
        return f"{indent}<bndbox>{''.join(parts)}{self.layout}{indent}</bndbox>"

    def obj(self) -> str:
        rng = self.rng
        indent = self.layout.lstrip("\r\n")
        fields = [self.element("name", self.pick_name(), indent), self.bndbox(indent)]
        for tag, chance in (
            ("pose", 0.5),
            ("truncated", 0.5),
            ("difficult", 0.5),
            ("occluded", 0.3),
        ):
            if rng.random() < chance:
                text = self.pick_name() if tag == "pose" else rng.choice(FLAG_TEXTS)
                if tag != "pose" and not self.maybe(0.3):
                    text = rng.choice(["0", "1"])
                fields.append(self.element(tag, text, indent))
        if rng.random() < 0.5:
            score = self.number() if self.maybe(0.2) else repr(rng.random())
            fields.append(self.element(rng.choice(["score", "score", "confidence"]), score, indent))
        if rng.random() < 0.05:
            fields.append(
                f"{indent}<attributes><attribute><name>n</name><value>v</value>"
                "</attribute></attributes>"
            )
        if self.maybe(0.03):
            fields.append(
                self.element(
                    rng.choice(["name", "bndbox", "score", "pose"]), self.pick_name(), indent
                )
            )
        if self.maybe(0.02):
            shape = rng.choice(
                [
                    "<polygon><x1>1</x1><y1>1</y1><x2>9</x2><y2>1</y2><x3>9</x3>"
                    "<y3>9</y3></polygon>",
                    "<robndbox><cx>5</cx><cy>5</cy><w>2</w><h>2</h><angle>0.5</angle></robndbox>",
                ]
            )
            fields.append(indent + shape)
        if self.maybe(0.01):
            depth = rng.choice([61, 62, 63, 64, 65, 300])
            fields.append(indent + self.nested(depth))
        if rng.random() < 0.5:
            rng.shuffle(fields)
        body = "".join(self.layout + f for f in fields)
        return f"<object>{body}{self.layout}</object>"

    def size(self) -> str:
        rng = self.rng
        choice = rng.random()
        if choice < 0.1:
            return ""
        indent = self.layout.lstrip("\r\n")
        if not self.maybe(0.4):
            width, height = str(rng.randint(1, 4000)), str(rng.randint(1, 4000))
            depth: str | None = rng.choice([None, "3", "1", ""])
        else:
            width, height = rng.choice(SIZE_TEXTS), rng.choice(SIZE_TEXTS)
            depth = rng.choice(DEPTH_TEXTS)
        children = [("width", width), ("height", height)]
        if depth is not None:
            children.append(("depth", depth))
        if self.maybe(0.03):
            children.pop(rng.randrange(len(children)))
        if rng.random() < 0.2:
            rng.shuffle(children)
        parts = "".join(self.element(t, v, self.layout + indent * 2) for t, v in children)
        size = f"{indent}<size>{parts}{self.layout}{indent}</size>"
        if self.maybe(0.03):
            size += self.layout + f"{indent}<size><width>1</width><height>2</height></size>"
        return size

    def document(self) -> bytes:
        rng = self.rng
        indent = self.layout.lstrip("\r\n")
        header = []
        if rng.random() < 0.5:
            header.append(self.element("folder", "images", indent))
        if rng.random() < 0.8:
            text = "a.jpg" if rng.random() < 0.7 else self.pick_name()
            header.append(self.element("filename", text, indent))
        header.append(self.size())
        if rng.random() < 0.3:
            header.append(f"{indent}<source><database>Unknown</database></source>")
        if rng.random() < 0.3:
            header.append(self.element("segmented", "0", indent))
        if self.maybe(0.02):
            header.append(indent + self.nested(rng.choice([62, 63, 64, 65, 200])))
        if rng.random() < 0.2:
            rng.shuffle(header)
        count = rng.choice([0, 1, 1, 2, 3, 5, 8, 20])
        if rng.random() < 0.02:
            count = rng.randint(200, 3000)
        objects = [self.obj() for _ in range(count)]
        root = rng.choice(
            ["<annotation>"] * 8 + ['<annotation verified="yes">', "<annotation verified='no'>"]
        )
        text = (
            (
                rng.choice(DECLARATIONS[: None if self.maybe(0.5) else 4])
                if rng.random() < 0.3
                else ""
            )
            + (self.layout if rng.random() < 0.3 else "")
            + root
            + "".join(self.layout + h for h in header if h)
            + "".join(self.layout + indent + o for o in objects)
            + self.layout
            + "</annotation>"
            + rng.choice(["", "\n", "\r\n", " \n\t"] + ["x", "<a/>"] * self.maybe(0.3))
        )
        return text.encode("utf-8", "surrogatepass")

    def mutated(self, data: bytes) -> bytes:
        rng = self.rng
        out = bytearray(data)
        for _ in range(rng.choice([1, 1, 2, 3, 8])):
            at = rng.randint(0, len(out))
            operation = rng.choice(
                ["delete", "duplicate", "overwrite", "insert", "insert", "truncate", "byte"]
            )
            span = rng.randint(1, 16)
            if operation == "delete":
                del out[at : at + span]
            elif operation == "duplicate":
                out[at:at] = out[at : at + span]
            elif operation == "overwrite":
                snippet = rng.choice(CHUNK_SNIPPETS)
                out[at : at + len(snippet)] = snippet
            elif operation == "insert":
                out[at:at] = rng.choice(CHUNK_SNIPPETS)
            elif operation == "truncate":
                del out[at:]
            elif out:
                out[min(at, len(out) - 1)] = rng.randrange(256)
        return bytes(out)

    def content(self, seeds: list[bytes]) -> bytes:
        rng = self.rng
        self.odd = rng.choice([0.0, 0.1, 0.3, 1.0, 1.0])
        choice = rng.random()
        if choice < 0.02:
            return rng.choice(
                [b"", b" ", b"\n", b"\x00", b"<annotation/>", b"<annotation></annotation>"]
            )
        if choice < 0.15 and seeds:
            data = rng.choice(seeds)
            return self.mutated(data) if rng.random() < 0.8 else data
        data = self.document()
        if self.maybe(0.25):
            data = self.mutated(data)
        if rng.random() < 0.1:
            data = data.replace(b"\n", b"\r\n")
        return data

    def add(self, seeds: list[bytes]) -> None:
        rng = self.rng
        key = f"k{len(self.files):04d}"
        choice = rng.random()
        stem = key
        if rng.random() < 0.05:
            stem = key + rng.choice(["-" + "n" * 200, "-\u00e9\u540d", "-\udcff", " space", "-\n"])
        path = self.folder / f"{stem}.xml"
        if choice < 0.01:
            pass  # missing
        elif choice < 0.02:
            path.mkdir()
        elif choice < 0.03:
            os.mkfifo(path)
        elif choice < 0.04:
            target = self.folder / f"{stem}-target.xml"
            target.write_bytes(self.content(seeds))
            path.symlink_to(target)
        elif choice < 0.045:
            path.symlink_to(self.folder / "nowhere.xml")
        else:
            path.write_bytes(self.content(seeds))
            if choice < 0.05 and os.geteuid() != 0:
                os.chmod(path, 0)
        self.files.append((key, str(path)))


def chunk_seeds() -> list[bytes]:
    """Files of every layout of bench/zoo.py, mutated by the chunk fuzzer."""
    with tempfile.TemporaryDirectory() as folder:
        write_seeds(Path(folder))
        return [p.read_bytes() for p in sorted(Path(folder).glob("seed-*.xml"))]


def float_bits(value: Any) -> Any:
    """Floats as their bits, in any nesting of tuples, lists and dataclasses."""
    if isinstance(value, float):
        return struct.pack("<d", value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, float_bits(dataclasses.astuple(value)))
    if isinstance(value, (tuple, list)):
        return tuple(float_bits(v) for v in value)
    return value


def column_differences(a: ColumnSet, b: ColumnSet) -> list[str]:
    """The fields in which two column sets differ (floats to the bit; skipped files by path,
    message, line and key)."""
    differences = []
    for f in dataclasses.fields(ColumnSet):
        if f.name == "root":
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "skipped":
            x = [(s.path, s.message, s.line, s.key) for s in x]
            y = [(s.path, s.message, s.line, s.key) for s in y]
        if isinstance(x, np.ndarray):
            same = x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        else:
            same = float_bits(x) == float_bits(y)
        if not same:
            differences.append(f"{f.name}: {x!r} != {y!r}"[:2000])
    return differences


def _read_bytes_apart(path: str, max_bytes: int) -> bytes:
    # Any reading function other than read_bytes itself takes the per-file route.
    return read_bytes(path, max_bytes)


def parser_columns(files: list[tuple[str, str]], max_bytes: int) -> ColumnSet:
    """The files read by the parser alone, as columns."""
    annotations = []
    skipped = []
    for key, path in files:
        try:
            annotations.append(read_annotation(path, key, max_bytes))
        except AnnotationError as error:
            skipped.append(SkippedFile(error.path, error.message, error.line, key=key))
    return columns_from_annotations(AnnotationSet("", tuple(annotations), tuple(skipped)))


def check_chunk(files: list[tuple[str, str]], max_bytes: int) -> tuple[int, int]:
    """Raise if the chunk reader reads the files otherwise than file by file, the pure reader
    or the parser; return the files it read and the objects of the chunk."""
    # The chunk reader as the chunk route calls it (a private name of scan, reached by name).
    read = scan._read_compiled_chunk(files, max_bytes)
    assert read is not None
    left, counts = read.left, read.counts
    rows = int(counts.sum())
    problems = []
    if left != sorted(set(left)) or any(not 0 <= i < len(files) for i in left):
        problems.append(f"left indices out of order or range: {left}")
    if len(counts) != len(files) - len(left) or (counts < 0).any():
        problems.append(f"{len(counts)} counts for {len(files) - len(left)} files read")
    columns = (read.boxes, read.scores, read.difficult, read.truncated, read.occluded,
               read.name_codes, read.pose_codes)  # fmt: skip
    if any(len(column) != rows for column in columns):
        problems.append(f"columns of {[len(c) for c in columns]} rows for {rows} objects")
    if rows and (read.name_codes.min() < 0 or read.name_codes.max() >= len(read.names)):
        problems.append("a name code outside the names")
    if rows and (read.pose_codes.min() < -1 or read.pose_codes.max() >= len(read.poses)):
        problems.append("a pose code outside the poses")
    if len(read.filenames) != len(counts) or len(read.size_codes) != len(counts):
        problems.append("headers not one per file read")
    if len(counts) and (read.size_codes.min() < -1 or read.size_codes.max() >= len(read.sizes)):
        problems.append("a size code outside the sizes")
    if len(set(map(tuple, read.sizes.tolist()))) != len(read.sizes):
        problems.append("a size twice among the distinct sizes")
    for index, (_, path) in enumerate(files):
        if index in left:
            continue
        # What the chunk reader reads, the per-file scan reads too.
        if scan._fast_compiled(read_bytes(path, max_bytes), ()) is None:
            problems.append(f"read {path}, which the per-file scan leaves")
    chunk = read_listed_columns(files, max_bytes)
    per_file = read_listed_columns(files, max_bytes, _read_bytes_apart)
    os.environ[scan.PURE_READER_VARIABLE] = "1"
    try:
        pure = read_listed_columns(files, max_bytes, _read_bytes_apart)
    finally:
        os.environ.pop(scan.PURE_READER_VARIABLE, None)
    parsed = parser_columns(files, max_bytes)
    for name, other in (("file by file", per_file), ("pure", pure), ("parser", parsed)):
        problems.extend(f"{name}: {d}" for d in column_differences(chunk, other))
    if problems:
        raise AssertionError("\n".join(problems))
    return len(files) - len(left), rows


def make_chunk(folder: Path, seed: str, seeds: list[bytes]) -> tuple[list[tuple[str, str]], int]:
    """The chunk of a seed, written in ``folder``: its files and the size limit."""
    rng = random.Random(seed)
    chunk = ChunkFiles(folder, rng)
    count = rng.choice([1, 2, 3, 5, 8, 16, 30]) if rng.random() < 0.95 else rng.randint(100, 300)
    for _ in range(count):
        chunk.add(seeds)
    sizes = [os.path.getsize(p) for _, p in chunk.files if os.path.isfile(p)] or [0]
    max_bytes = 1 << 20
    choice = rng.random()
    if choice < 0.1:
        max_bytes = rng.choice(sizes) + rng.choice([-1, 0, 1])
    elif choice < 0.13:
        max_bytes = rng.choice([0, -1, 1, 10**30, sys.maxsize, -(2**63), -(2**63) - 1, -(10**30)])
    # Sometimes a parser text limit within the files' sizes (every reader reads it).
    scan.PARSER_TEXT_LIMIT = TEXT_LIMIT
    if rng.random() < 0.05:
        scan.PARSER_TEXT_LIMIT = rng.choice(sizes) + rng.choice([-1, 0, 1])
    return chunk.files, max_bytes


TEXT_LIMIT = scan.PARSER_TEXT_LIMIT


def run_chunk(seed: str, seeds: list[bytes], keep: Path) -> tuple[int, int, int]:
    """Generate and check one chunk; on a difference, write it to ``keep`` and raise."""
    with tempfile.TemporaryDirectory() as folder:
        try:
            files, max_bytes = make_chunk(Path(folder), seed, seeds)
            read, rows = check_chunk(files, max_bytes)
        except Exception as error:  # a difference, or any exception: a finding
            readable(Path(folder))
            out = keep / seed.replace(":", "-")
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(
                folder,
                out,
                symlinks=True,
                ignore_dangling_symlinks=True,
                ignore=lambda d, names: [n for n in names if not (Path(d) / n).is_file()],
            )
            limit = scan.PARSER_TEXT_LIMIT
            raise AssertionError(
                f"chunk {seed} (max_bytes {max_bytes}, text limit {limit}, files in {out}):"
                f"\n{type(error).__name__}: {error}"
            ) from error
        finally:
            readable(Path(folder))
            scan.PARSER_TEXT_LIMIT = TEXT_LIMIT
    return len(files), read, rows


def readable(folder: Path) -> None:
    """Make the files made unreadable readable again, to copy or remove them."""
    for path in folder.iterdir():
        if not path.is_symlink():
            os.chmod(path, 0o700)


def fuzz_chunks(seconds: float, seed: int, keep: Path, replay: str | None) -> None:
    """Check generated chunks for ``seconds`` (or the one chunk ``replay`` names)."""
    seeds = chunk_seeds()
    if replay is not None:
        print(run_chunk(replay, seeds, keep))
        return
    start = time.monotonic()
    chunks = files = read = rows = 0
    while time.monotonic() - start < seconds:
        n, r, b = run_chunk(f"{seed}:{chunks}", seeds, keep)
        chunks, files, read, rows = chunks + 1, files + n, read + r, rows + b
        if chunks % 200 == 0:
            print(
                f"{time.monotonic() - start:7.0f} s  {chunks} chunks, {files} files "
                f"({read} read whole by the chunk reader), {rows} objects",
                flush=True,
            )
    print(
        f"done: {time.monotonic() - start:.0f} s, seed {seed}, {chunks} chunks, {files} files "
        f"({read} read whole by the chunk reader), {rows} objects, no difference"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", type=Path, help="build the extension into this folder")
    parser.add_argument("--extension", help="the extension to fuzz (default: the built one)")
    parser.add_argument("--seeds", type=Path, help="write seed files here, added to the run")
    parser.add_argument("--chunk", action="store_true", help="fuzz the chunk reader")
    parser.add_argument("--seconds", type=float, default=60.0, help="--chunk: how long")
    parser.add_argument("--seed", type=int, default=0, help="--chunk: the first seed")
    parser.add_argument("--replay", help="--chunk: check the one chunk of this seed (S:N)")
    parser.add_argument(
        "--keep",
        type=Path,
        default=HERE / "data" / "fuzz-chunk",
        help="--chunk: where a chunk that differs is written",
    )
    options, rest = parser.parse_known_args()
    if options.build:
        build(options.build)
        return
    if options.chunk:
        if options.extension:
            load_extension(glob.glob(options.extension)[0])
        if getattr(scan, COMPILED) is None:
            sys.exit("the compiled reader is not built")
        os.environ.pop(scan.PURE_READER_VARIABLE, None)
        fuzz_chunks(options.seconds, options.seed, options.keep, options.replay)
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

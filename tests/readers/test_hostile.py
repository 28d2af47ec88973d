"""Hostile, odd and broken input: each file is refused or read safely, named with its path,
and never the reason another file is lost."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from tests.conftest import ROOT
from vocmatch.cli import EXIT_OK, EXIT_SKIPPED, main
from vocmatch.core.model import Box
from vocmatch.errors import AnnotationError
from vocmatch.evaluation.scoring import evaluate, read_pair
from vocmatch.readers import folders
from vocmatch.readers.parse import (
    DEFAULT_MAX_BYTES,
    find_annotation_files,
    list_directory,
    parse_annotation,
    read_annotation,
    read_directory,
)
from vocmatch.readers.regular_files import _read_to_end, read_bytes
from vocmatch.readers.scan import read_column_pair, read_columns

SECRET = "vocmatch-secret-7f3a9c"


def obj(name: str = "cat", box: tuple[object, ...] = (10, 10, 50, 50), extra: str = "") -> str:
    coordinates = "".join(
        f"<{tag}>{value}</{tag}>"
        for tag, value in zip(("xmin", "ymin", "xmax", "ymax"), box, strict=True)
    )
    return f"<object><name>{name}</name>{extra}<bndbox>{coordinates}</bndbox></object>"


def voc(*objects: str, header: str = "") -> bytes:
    return f"<annotation>{header}<filename>a.jpg</filename>{''.join(objects)}</annotation>".encode()


def jpeg_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (200, 30, 30)).save(buffer, "JPEG")
    return buffer.getvalue()


def billion_laughs() -> bytes:
    levels = "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">\n'
        for i in range(1, 10)
    )
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n{levels}]>\n'
        "<annotation><filename>&lol9;</filename></annotation>\n"
    ).encode()


def external_entity(secret: Path) -> bytes:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE a [<!ENTITY x SYSTEM "{secret.as_uri()}">]>\n'
        f"<annotation><filename>&x;</filename>{obj('&x;')}</annotation>\n"
    ).encode()


def external_dtd(dtd: Path) -> bytes:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE annotation SYSTEM "{dtd.as_uri()}">\n'
        f"<annotation><filename>&x;</filename>{obj()}</annotation>\n"
    ).encode()


def parameter_entity(dtd: Path) -> bytes:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE a [<!ENTITY % p SYSTEM "{dtd.as_uri()}"> %p;]>\n'
        f"<annotation>{obj('&x;')}</annotation>\n"
    ).encode()


def xinclude(secret: Path) -> bytes:
    return (
        '<annotation xmlns:xi="http://www.w3.org/2001/XInclude">'
        f'<filename><xi:include href="{secret.as_uri()}" parse="text"/></filename>{obj()}'
        "</annotation>"
    ).encode()


def deep_nesting() -> bytes:
    return b"<annotation>\n" + b"<a>\n" * 10_000 + b"</a>\n" * 10_000 + b"</annotation>\n"


def secrets(folder: Path) -> tuple[Path, Path]:
    """A local file that must never be read into any output, and a DTD pointing at it."""
    secret = folder / "secret.txt"
    secret.write_text(SECRET)
    dtd = folder / "secret.dtd"
    dtd.write_text(f'<!ENTITY x SYSTEM "{secret.as_uri()}">\n<!ENTITY y "{SECRET}">\n')
    return secret, dtd


def hostile_folder(root: Path) -> tuple[Path, Path]:
    """gt/ and pred/ with one good image and every hostile file beside it."""
    secret, dtd = secrets(root)
    gt, pred = root / "gt", root / "pred"
    gt.mkdir()
    pred.mkdir()
    (gt / "good.xml").write_bytes(voc(obj()))
    (pred / "good.xml").write_bytes(voc(obj(extra="<score>0.9</score>")))
    (gt / "bomb.xml").write_bytes(billion_laughs())
    (gt / "xxe.xml").write_bytes(external_entity(secret))
    (gt / "dtd.xml").write_bytes(external_dtd(dtd))
    (gt / "param.xml").write_bytes(parameter_entity(dtd))
    (gt / "xinclude.xml").write_bytes(xinclude(secret))
    (pred / "xinclude.xml").write_bytes(voc(obj(extra="<score>0.5</score>")))
    (gt / "deep.xml").write_bytes(deep_nesting())
    (gt / "photo.xml").write_bytes(jpeg_bytes())
    (gt / "text-node.xml").write_bytes(
        b"<annotation><filename>" + b"x" * 11_000_000 + b"</filename></annotation>"
    )
    with (gt / "big.xml").open("wb") as handle:
        handle.truncate(200 * 1024 * 1024)  # sparse: 200 MB long, nothing on disk
    return gt, pred


HOSTILE_SKIPS = [
    "big.xml: file is larger than the 33,554,432-byte limit (209,715,200 bytes)",
    "bomb.xml:1: refusing a document that declares entities",
    "deep.xml:257: refusing a document nested deeper than 256 elements",
    "dtd.xml:1: refusing a document that references an external DTD",
    "param.xml:1: refusing a document that declares entities",
    "photo.xml:1: not well-formed XML: Start tag expected, '<' not found (the file looks like a JPEG image)",
    "text-node.xml:1: refusing a document over the parser's limits: Text node too long",
    "xxe.xml:1: refusing a document that declares entities",
]


def test_hostile_files_are_refused_and_the_rest_is_evaluated(tmp_path: Path) -> None:
    """Each hostile file is skipped with its path and reason; the good images are evaluated."""
    gt_dir, pred_dir = hostile_folder(tmp_path)
    gt, pred = read_pair(gt_dir, pred_dir)
    evaluation = evaluate(gt, pred)
    assert [str(s).removeprefix(f"{gt_dir}{os.sep}") for s in evaluation.skipped] == HOSTILE_SKIPS
    assert [i.key for i in evaluation.images] == ["good", "xinclude"]
    assert (evaluation.summary.tp, evaluation.summary.fp, evaluation.summary.fn) == (2, 0, 0)


@pytest.mark.skipif(sys.platform == "win32", reason="resource (peak memory) is POSIX only")
def test_hostile_folder_is_read_in_bounded_time_and_memory(tmp_path: Path) -> None:
    """In a fresh process, the whole hostile folder takes well under 10 s and 250 MB.

    Reading the 200 MB file, expanding the entity bomb or building 10,000 nested elements
    would each go far past either bound.
    """
    gt_dir, pred_dir = hostile_folder(tmp_path)
    code = (
        "import json, resource, sys, time\n"
        "from vocmatch.evaluation.scoring import evaluate, read_pair\n"
        "start = time.perf_counter()\n"
        "evaluation = evaluate(*read_pair(sys.argv[1], sys.argv[2]))\n"
        "seconds = time.perf_counter() - start\n"
        # Linux: VmHWM is this process's own peak; ru_maxrss would also count the pytest
        # process it was started from (Linux carries the peak over fork and exec).
        "try:\n"
        "    status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "    peak = int(status.split()[0]) * 1024\n"
        "except (OSError, IndexError):\n"
        "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "    peak *= 1 if sys.platform == 'darwin' else 1024\n"
        "print(json.dumps({'seconds': seconds, 'peak': peak,\n"
        "    'images': [i.key for i in evaluation.images], 'skipped': len(evaluation.skipped)}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(gt_dir), str(pred_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    measured = json.loads(result.stdout)
    assert measured["images"] == ["good", "xinclude"]
    assert measured["skipped"] == len(HOSTILE_SKIPS)
    assert measured["seconds"] < 10
    assert measured["peak"] < 250 * 1024 * 1024


@pytest.mark.parametrize("output_format", ["table", "json", "csv", "markdown", "junit"])
def test_a_local_file_named_by_an_entity_never_reaches_any_output(
    tmp_path: Path, output_format: str
) -> None:
    """The secret an external entity, an external DTD or an XInclude points at is never shown."""
    gt_dir, pred_dir = hostile_folder(tmp_path)
    html = tmp_path / "report.html"
    result = CliRunner().invoke(
        main,
        [
            str(gt_dir),
            str(pred_dir),
            "--format",
            output_format,
            "--max-rows",
            "0",
            "--html",
            str(html),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == EXIT_SKIPPED
    assert SECRET not in result.stdout
    assert SECRET not in result.stderr
    assert SECRET not in html.read_text(encoding="utf-8")
    for line in HOSTILE_SKIPS:
        assert f"vocmatch: skipped {gt_dir}{os.sep}{line}\n" in result.stderr


def test_a_200_mb_file_is_refused_from_its_size_before_reading(tmp_path: Path) -> None:
    """The size limit is checked on the file's status; nothing of a 200 MB file is read."""
    path = tmp_path / "big.xml"
    with path.open("wb") as handle:
        handle.truncate(200 * 1024 * 1024)
    start = time.perf_counter()
    with pytest.raises(AnnotationError) as info:
        read_annotation(path)
    assert time.perf_counter() - start < 1.0
    assert str(info.value) == (
        f"{path}: file is larger than the 33,554,432-byte limit (209,715,200 bytes)"
    )


@pytest.mark.parametrize(
    ("written", "expected", "max_bytes", "read"),
    [
        pytest.param(5000, 10, 1000, 1001, id="grew-past-the-limit"),
        pytest.param(5000, 10, 10_000, 5000, id="grew-within-the-limit"),
        pytest.param(200_000, 200_000, 300_000, 200_000, id="as-stated"),
        pytest.param(0, 0, 1000, 0, id="empty"),
    ],
)
def test_reading_stops_one_byte_past_the_limit_whatever_the_stated_size(
    tmp_path: Path, written: int, expected: int, max_bytes: int, read: int
) -> None:
    """A file that grew after its size was checked (``expected`` is the size it had) is read
    to its end, but never more than one byte past the limit, which then refuses it."""
    content = bytes(range(256)) * (written // 256 + 1)
    path = tmp_path / "growing.xml"
    path.write_bytes(content[:written])
    descriptor = os.open(path, os.O_RDONLY)
    try:
        data = _read_to_end(descriptor, expected, max_bytes)
    finally:
        os.close(descriptor)
    assert data == content[:read]


def test_the_size_limit_is_an_option(tmp_path: Path) -> None:
    """--max-file-size takes 5000, 64K, 32M or 1G; a file above it is skipped, exit 3."""
    for folder in ("gt", "pred"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.xml").write_bytes(voc(obj()))
        (tmp_path / folder / "b.xml").write_bytes(voc(*[obj()] * 12))
    size = (tmp_path / "gt" / "b.xml").stat().st_size
    runner = CliRunner()
    args = [str(tmp_path / "gt"), str(tmp_path / "pred"), "--format", "json"]
    small = runner.invoke(main, [*args, "--max-file-size", "1K"], catch_exceptions=False)
    assert small.exit_code == EXIT_SKIPPED
    assert json.loads(small.stdout)["summary"]["images"] == 1
    assert small.stderr.startswith(
        f"vocmatch: skipped {tmp_path / 'gt' / 'b.xml'}: file is larger than the 1,024-byte "
        f"limit ({size:,} bytes)\n"
    )
    roomy = runner.invoke(main, [*args, "--max-file-size", "2kib"], catch_exceptions=False)
    assert roomy.exit_code == EXIT_OK
    bad = runner.invoke(main, [*args, "--max-file-size", "lots"], catch_exceptions=False)
    assert bad.exit_code == 2
    assert "'lots' is not a size such as 5000, 64K, 32M or 1G" in bad.stderr
    assert DEFAULT_MAX_BYTES == 32 * 1024**2


def test_deep_nesting_is_refused_quickly_with_path_and_line() -> None:
    """libxml2's depth limit (huge_tree off) stops 10,000 nested elements at depth 256."""
    start = time.perf_counter()
    with pytest.raises(AnnotationError) as info:
        parse_annotation(deep_nesting(), "deep.xml", "deep")
    assert time.perf_counter() - start < 1.0
    assert str(info.value) == "deep.xml:257: refusing a document nested deeper than 256 elements"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(b"", "a.xml:1: not well-formed XML: Document is empty", id="empty"),
        pytest.param(
            b"\x89PNG\r\n\x1a\n\x00\x00",
            "a.xml:1: not well-formed XML: Start tag expected, '<' not found (the file looks like a PNG image)",
            id="png",
        ),
        pytest.param(
            b'{"annotations": []}',
            "a.xml:1: not well-formed XML: Start tag expected, '<' not found (the file looks like JSON)",
            id="json",
        ),
        pytest.param(
            b"<annotation><name>\x00</name></annotation>",
            "a.xml:1: not well-formed XML: Invalid character: Char 0x0 out of allowed range",
            id="nul-byte",
        ),
        pytest.param(
            "<annotation><filename>café</filename></annotation>".encode("latin-1"),
            "a.xml:1: not well-formed XML: Invalid bytes in character encoding",
            id="latin-1-undeclared",
        ),
        pytest.param(
            b'<?xml version="1.0" encoding="X-NOPE"?><annotation/>',
            "a.xml:1: not well-formed XML: Unsupported encoding: X-NOPE",
            id="unknown-encoding",
        ),
        pytest.param(
            b"<annotation><filename>&undefined;</filename></annotation>",
            "a.xml:1: not well-formed XML: Entity 'undefined' not defined",
            id="undefined-entity",
        ),
        pytest.param(
            b"<annotation>\n<object><name>cat</na",
            "a.xml:2: not well-formed XML: expected '>'",
            id="truncated",
        ),
    ],
)
def test_files_that_are_not_xml_say_what_is_wrong(data: bytes, message: str) -> None:
    """Broken bytes give libxml2's reason without its advice or repeated position."""
    with pytest.raises(AnnotationError) as info:
        parse_annotation(data, "a.xml", "a")
    assert str(info.value) == message


# Odd but legal XML ------------------------------------------------------------------------

CAT = (Box("cat", 10.0, 10.0, 50.0, 50.0),)


def without_lines(boxes: tuple[Box, ...]) -> tuple[Box, ...]:
    return tuple(
        Box(b.name, b.x1, b.y1, b.x2, b.y2, b.difficult, b.truncated, b.score) for b in boxes
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"\xef\xbb\xbf" + voc(obj()), CAT, id="utf8-bom"),
        pytest.param(
            '<?xml version="1.0" encoding="ISO-8859-1"?><annotation><object><name>café</name>'
            "<bndbox><xmin>10</xmin><ymin>10</ymin><xmax>50</xmax><ymax>50</ymax></bndbox>"
            "</object></annotation>".encode("latin-1"),
            (Box("café", 10.0, 10.0, 50.0, 50.0),),
            id="latin-1",
        ),
        pytest.param(
            "<?xml version='1.0' encoding='latin-1'?>\n<annotation><object><name>café</name>"
            "<bndbox><xmin>10</xmin><ymin>10</ymin><xmax>50</xmax><ymax>50</ymax></bndbox>"
            "</object></annotation>".encode("latin-1"),
            (Box("café", 10.0, 10.0, 50.0, 50.0),),
            id="latin-1-as-python-writes-it",
        ),
        pytest.param(
            '<?xml version="1.0" encoding="UTF-16"?>\r\n<annotation><object><name>猫</name>'
            "<bndbox><xmin>10</xmin><ymin>10</ymin><xmax>50</xmax><ymax>50</ymax></bndbox>"
            "</object></annotation>".encode("utf-16"),
            (Box("猫", 10.0, 10.0, 50.0, 50.0),),
            id="utf-16",
        ),
        pytest.param(voc(obj()).replace(b"><", b">\r\n  <"), CAT, id="crlf"),
        pytest.param(
            voc(
                obj(
                    name="c<!-- was dog -->a<![CDATA[t]]>",
                    box=("<![CDATA[10]]>", "1<!-- -->0", 50, 50),
                )
            ),
            CAT,
            id="comments-and-cdata",
        ),
        pytest.param(
            b'<annotation xmlns="http://example.org/voc"><object><name>cat</name><bndbox>'
            b"<xmin>10</xmin><ymin>10</ymin><xmax>50</xmax><ymax>50</ymax></bndbox></object>"
            b"</annotation>",
            CAT,
            id="default-namespace",
        ),
        pytest.param(
            b'<v:annotation xmlns:v="urn:voc"><v:object><v:name>cat</v:name><v:bndbox>'
            b"<v:xmin>10</v:xmin><v:ymin>10</v:ymin><v:xmax>50</v:xmax><v:ymax>50</v:ymax>"
            b"</v:bndbox></v:object></v:annotation>",
            CAT,
            id="prefixed-namespace",
        ),
        pytest.param(
            b'<annotation verified="yes" version="2">'
            b'<object id="7"><name lang="en">cat</name><bndbox unit="px"><xmin>10</xmin>'
            b"<ymin>10</ymin><xmax>50</xmax><ymax>50</ymax></bndbox></object></annotation>",
            CAT,
            id="attributes",
        ),
        pytest.param(
            voc(
                obj(
                    name="person",
                    box=(0, 0, 90, 90),
                    extra="<part><name>hand</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>9</xmax>"
                    "<ymax>9</ymax></bndbox></part>"
                    f"<part><name>head</name>{obj(name='cat')}</part>",
                )
            ),
            (Box("person", 0.0, 0.0, 90.0, 90.0),),
            id="object-inside-part",
        ),
        pytest.param(
            voc(
                obj(
                    extra="<pose>Left</pose><occluded>1</occluded><attributes><a>b</a></attributes>"
                ),
                header="<folder>x</folder><source><database>d</database></source><segmented>0</segmented>"
                "<owner><flickrid>y</flickrid></owner>",
            ),
            CAT,
            id="unknown-elements",
        ),
        pytest.param(
            voc(obj(box=("\n\t 10 \n", " +10", "5e1", "50.000"))),
            CAT,
            id="whitespace-sign-exponent",
        ),
        pytest.param(
            voc(obj(box=("+5", "1e1", "1e2", "+1E2"))),
            (Box("cat", 5.0, 10.0, 100.0, 100.0),),
            id="plus-and-1e2",
        ),
        pytest.param(
            b'<?xml version="1.1"?><?xml-stylesheet href="s.xsl"?>' + voc(obj()),
            CAT,
            id="xml-1.1-and-pi",
        ),
    ],
)
def test_odd_but_legal_xml_reads_as_plain_voc(data: bytes, expected: tuple[Box, ...]) -> None:
    """Encodings, line ends, comments, CDATA, namespaces, attributes and extra elements change
    nothing; only direct <object> children of <annotation> are objects."""
    assert without_lines(parse_annotation(data, "a.xml", "a").boxes) == expected


@pytest.mark.parametrize(
    ("encoding", "code", "message"),
    [
        pytest.param("latin-1", "V003", "a.xml:3: <xmin> is not a number: 'x\xe9'", id="latin-1"),
        pytest.param("LATIN-1", "V003", "a.xml:3: <xmin> is not a number: 'x\xe9'", id="upper"),
        pytest.param(
            "bogus",
            "V001",
            "a.xml:1: not well-formed XML: Unsupported encoding: bogus",
            id="unknown",
        ),
        pytest.param(
            "rot13", "V001", "a.xml:1: not well-formed XML: Unsupported encoding: rot13", id="rot13"
        ),
    ],
)
def test_encoding_named_as_python_names_it(
    tmp_path: Path, encoding: str, code: str, message: str
) -> None:
    """An encoding libxml2 knows under another name is read as Python names it, lines kept,
    by the evaluator and by lint alike; a name neither knows stays an error of line 1."""
    data = (
        f'<?xml version="1.0" encoding="{encoding}"?>\n<annotation><filename>a.jpg</filename>\n'
        "<size><width>64</width><height>64</height></size><object><name>cat</name><bndbox>"
        "<xmin>x\xe9</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>"
        "</annotation>"
    ).encode("latin-1")
    with pytest.raises(AnnotationError) as info:
        parse_annotation(data, "a.xml", "a")
    assert str(info.value) == message
    (tmp_path / "a.xml").write_bytes(data)
    result = CliRunner().invoke(main, ["lint", "--select", "V001,V003", str(tmp_path / "a.xml")])
    location, problem = message.split(" ", 1)
    assert result.stdout.splitlines()[0] == f"{tmp_path / location} {code} {problem}"


# Bad values -----------------------------------------------------------------------------


def scored(
    name: str = "cat", box: tuple[object, ...] = (10, 10, 50, 50), score: object = 0.9
) -> str:
    return obj(name, box, f"<score>{score}</score>")


def pair_dirs(tmp_path: Path, gt: dict[str, bytes], pred: dict[str, bytes]) -> tuple[Path, Path]:
    for folder, files in (("gt", gt), ("pred", pred)):
        (tmp_path / folder).mkdir()
        for name, data in files.items():
            (tmp_path / folder / f"{name}.xml").write_bytes(data)
    return tmp_path / "gt", tmp_path / "pred"


@pytest.mark.parametrize(
    ("box", "message"),
    [
        pytest.param(("nan", 10, 50, 50), "<xmin> is not finite: 'nan'", id="nan"),
        pytest.param((10, 10, "inf", 50), "<xmax> is not finite: 'inf'", id="inf"),
        pytest.param(
            (10, "-Infinity", 50, 50), "<ymin> is not finite: '-Infinity'", id="minus-infinity"
        ),
        pytest.param((10, 10, 50, "1e400"), "<ymax> is not finite: '1e400'", id="overflow"),
        pytest.param(
            (10, 10, "1e300", 50),
            "<xmax> 1e+300 is out of range (the limit is ±2^53)",
            id="beyond-2^53",
        ),
        pytest.param((10, 10, 50, ""), "<ymax> is not a number: ''", id="empty"),
    ],
)
def test_non_finite_coordinates_skip_their_file_only(
    tmp_path: Path, box: tuple[object, ...], message: str
) -> None:
    """NaN, infinity and values past 2^53 cannot be evaluated: the file is skipped, named with
    its line, and the other image is still evaluated."""
    gt_dir, pred_dir = pair_dirs(
        tmp_path,
        {"a": voc(obj()), "b": voc(obj())},
        {"a": voc(scored()), "b": b"<annotation>\n" + voc(scored(box=box))[12:]},
    )
    evaluation = evaluate(*read_pair(gt_dir, pred_dir))
    assert [str(s) for s in evaluation.skipped] == [f"{pred_dir / 'b.xml'}:2: {message}"]
    assert [i.key for i in evaluation.images] == ["a"]
    assert evaluation.summary.tp == 1


def test_nan_score_skips_its_file(tmp_path: Path) -> None:
    """A NaN score cannot be ranked: its file is skipped with the line."""
    gt_dir, pred_dir = pair_dirs(tmp_path, {"a": voc(obj())}, {"a": voc(scored(score="NaN"))})
    evaluation = evaluate(*read_pair(gt_dir, pred_dir))
    assert [s.message for s in evaluation.skipped] == ["<score> is not finite: 'NaN'"]


def test_negative_and_enormous_coordinates_are_kept_and_noted(tmp_path: Path) -> None:
    """A box may extend past the image edge: negative and enormous values are evaluated as given."""
    gt_dir, pred_dir = pair_dirs(
        tmp_path,
        {"a": voc(obj(box=(-5, -5, 40, 40))), "b": voc(obj(box=(0, 0, 2e6, 10)))},
        {"a": voc(scored(box=(-5, -5, 40, 40))), "b": voc(scored(box=(0, 0, 2e6, 10)))},
    )
    evaluation = evaluate(*read_pair(gt_dir, pred_dir))
    assert evaluation.skipped == ()
    assert (evaluation.summary.tp, evaluation.summary.map) == (2, 1.0)
    assert evaluation.notes == (
        f"2 boxes in 2 files have negative coordinates; kept, as a box may extend past the "
        f"image edge (first: {gt_dir / 'a.xml'})",
        f"2 boxes in 2 files have coordinates beyond 1,000,000 px; kept (first: {gt_dir / 'b.xml'})",
    )


def test_scores_outside_0_1_are_ranked_as_given_and_noted(tmp_path: Path) -> None:
    """Logits and other unbounded scores still rank; the note counts them."""
    gt_dir, pred_dir = pair_dirs(
        tmp_path,
        {"a": voc(obj(), obj(box=(60, 60, 90, 90)))},
        {
            "a": voc(
                scored(score=3.5),
                scored(box=(61, 61, 90, 90), score=-2),
                scored(box=(0, 0, 5, 5), score=0.5),
            )
        },
    )
    evaluation = evaluate(*read_pair(gt_dir, pred_dir))
    assert evaluation.notes == (
        f"2 predictions in 1 file have a score outside [0, 1]; ranked as given (first: {pred_dir / 'a.xml'})",
    )
    # Ranked 3.5 (TP), 0.5 (FP), -2 (TP): all-point AP = (1/2)(1) + (1/2)(2/3).
    assert evaluation.summary.map == pytest.approx(1 / 2 + 1 / 3)


def test_a_file_without_scores_in_a_scored_set_is_counted_in_the_note(tmp_path: Path) -> None:
    """Unscored predictions rank last; the note names how many and in how many files."""
    gt_dir, pred_dir = pair_dirs(
        tmp_path,
        {"a": voc(obj()), "b": voc(obj()), "c": voc(obj())},
        {
            "a": voc(scored()),
            "b": voc(obj(), obj(box=(0, 0, 5, 5))),
            "c": voc(obj(), scored(box=(0, 0, 5, 5))),
        },
    )
    evaluation = evaluate(*read_pair(gt_dir, pred_dir))
    assert evaluation.notes == ("3 predictions in 2 files have no score; they rank last for AP",)
    assert evaluation.summary.map is not None
    # In JSON the unscored predictions' place on the curve has a null score. Ranked: 0.9 TP,
    # 0.9 FP, then the three unscored (TP, FP, TP); the curve is written at its corners
    # (each TP, and the last point): ranks 1, 3 and 5.
    result = CliRunner().invoke(
        main, [str(gt_dir), str(pred_dir), "--format", "json"], catch_exceptions=False
    )
    assert result.exit_code == EXIT_OK
    curve = json.loads(result.stdout)["classes"][0]["curve"]
    assert curve["scores"] == [0.9, None, None]
    assert curve["recall"] == [1 / 3, 2 / 3, 1.0]
    assert curve["precision"] == [1.0, 2 / 3, 3 / 5]


def test_empty_name_skips_its_file(tmp_path: Path) -> None:
    """An object without a class name cannot be matched: its file is skipped with the line."""
    gt_dir, pred_dir = pair_dirs(
        tmp_path, {"a": voc(obj()), "b": b"<annotation>\n" + voc(obj(name="  "))[12:]}, {}
    )
    gt, _ = read_pair(gt_dir, pred_dir)
    assert [str(s) for s in gt.skipped] == [f"{gt_dir / 'b.xml'}:2: <name> is empty"]
    assert [a.key for a in gt.annotations] == ["a"]


def case_variants(tmp_path: Path) -> tuple[Path, Path]:
    return pair_dirs(
        tmp_path,
        {"a": voc(obj(name="Car"), obj(name=" dog ", box=(60, 60, 90, 90)))},
        {"a": voc(scored(name="car"), scored(name="dog\n", box=(60, 60, 90, 90), score=0.8))},
    )


def test_class_names_differing_in_case_are_noted(tmp_path: Path) -> None:
    """Car and car are different classes unless folded; surrounding space is always stripped."""
    evaluation = evaluate(*read_pair(*case_variants(tmp_path)))
    assert [c.name for c in evaluation.classes] == ["Car", "car", "dog"]
    assert evaluation.notes[0] == (
        "class names differ only in case: Car/car; counted as different classes "
        "(fold them with fold_case=True)"
    )


def test_case_note_names_the_flag_on_the_command_line(tmp_path: Path) -> None:
    """The command line's report names --fold-case where the library names fold_case."""
    gt_dir, pred_dir = case_variants(tmp_path)
    result = CliRunner().invoke(
        main, [str(gt_dir), str(pred_dir), "--format", "json"], catch_exceptions=False
    )
    assert json.loads(result.stdout)["notes"][0] == (
        "class names differ only in case: Car/car; counted as different classes "
        "(fold them with --fold-case)"
    )


def test_fold_case_merges_the_variants(tmp_path: Path) -> None:
    """fold_case lower-cases every name before matching, and the note says what was merged."""
    evaluation = evaluate(*read_pair(*case_variants(tmp_path)), fold_case=True)
    assert [(c.name, c.tp) for c in evaluation.classes] == [("car", 1), ("dog", 1)]
    assert evaluation.notes == ("class names folded to lower case: Car/car as car",)
    assert evaluation.summary.map == 1.0


def test_fold_case_option(tmp_path: Path) -> None:
    """--fold-case on the command line gives the folded evaluation."""
    gt_dir, pred_dir = case_variants(tmp_path)
    result = CliRunner().invoke(
        main,
        [str(gt_dir), str(pred_dir), "--format", "json", "--fold-case"],
        catch_exceptions=False,
    )
    data = json.loads(result.stdout)
    assert [c["name"] for c in data["classes"]] == ["car", "dog"]
    assert data["notes"] == ["class names folded to lower case: Car/car as car"]
    # The error analysis reads the folded names too.
    table = CliRunner().invoke(
        main, [str(gt_dir), str(pred_dir), "--errors", "--fold-case"], catch_exceptions=False
    )
    assert table.exit_code == EXIT_OK


# File system ----------------------------------------------------------------------------


def case_sensitive(folder: Path) -> bool:
    probe = folder / "Probe"
    probe.write_text("")
    sensitive = not (folder / "probe").exists()
    probe.unlink()
    return sensitive


def test_nested_folders_are_keyed_by_relative_path(tmp_path: Path) -> None:
    """Files in subfolders pair by their relative path; a.xml in two folders is two images."""
    for relative in ("a.xml", "one/a.xml", "two/a.xml", "two/deeper/b.xml"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(voc(obj()))
    result = read_directory(tmp_path)
    assert [a.key for a in result.annotations] == ["a", "one/a", "two/a", "two/deeper/b"]
    assert result.skipped == ()


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="symlinks")
def test_symlink_loops_end_and_each_directory_is_read_once(tmp_path: Path) -> None:
    """Links are followed; a loop or a second link to a walked directory is noted, not entered."""
    root = tmp_path / "gt"
    (root / "sub").mkdir(parents=True)
    (root / "z").mkdir()
    (root / "a.xml").write_bytes(voc(obj()))
    (root / "sub" / "b.xml").write_bytes(voc(obj()))
    (root / "z" / "c.xml").write_bytes(voc(obj()))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "d.xml").write_bytes(voc(obj()))
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)
    (root / "self").symlink_to(".", target_is_directory=True)
    (root / "a-link").symlink_to("z", target_is_directory=True)  # sorts before z
    (root / "more").symlink_to(outside, target_is_directory=True)
    (root / "more-again").symlink_to(outside, target_is_directory=True)
    start = time.perf_counter()
    result = read_directory(root)
    assert time.perf_counter() - start < 2.0
    assert [a.key for a in result.annotations] == ["a", "more/d", "sub/b", "z/c"]
    assert result.skipped == ()
    assert sorted(result.notes) == [
        f"{root / name}: link to a directory already read as {first}; not entered again"
        for name, first in [
            ("a-link", root / "z"),
            ("more-again", root / "more"),
            ("self", root),
            ("sub/loop", root),
        ]
    ]


def test_a_directory_named_like_a_file_is_walked(tmp_path: Path) -> None:
    """x.xml/ is a folder like any other: never read as a file, its contents are read."""
    (tmp_path / "x.xml").mkdir()
    (tmp_path / "x.xml" / "a.xml").write_bytes(voc(obj()))
    result = read_directory(tmp_path)
    assert [a.key for a in result.annotations] == ["x.xml/a"]
    assert result.skipped == ()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX only")
def test_a_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO called a.xml would block a plain open(); it is refused at once."""
    os.mkfifo(tmp_path / "a.xml")
    (tmp_path / "b.xml").write_bytes(voc(obj()))
    start = time.perf_counter()
    result = read_directory(tmp_path)
    assert time.perf_counter() - start < 2.0
    assert [str(s) for s in result.skipped] == [
        f"{tmp_path / 'a.xml'}: not a regular file: a named pipe"
    ]
    assert [a.key for a in result.annotations] == ["b"]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_a_dangling_link_is_skipped_with_the_system_reason(tmp_path: Path) -> None:
    """A link to nothing is named with the OS error."""
    (tmp_path / "a.xml").symlink_to(tmp_path / "gone.xml")
    (tmp_path / "b.xml").write_bytes(voc(obj()))
    result = read_directory(tmp_path)
    assert [str(s) for s in result.skipped] == [
        f"{tmp_path / 'a.xml'}: cannot read file: No such file or directory"
    ]


def test_an_unreadable_file_is_skipped_with_the_system_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Permission denied on one file (simulated: root reads anything) skips that file only."""
    (tmp_path / "a.xml").write_bytes(voc(obj()))
    (tmp_path / "b.xml").write_bytes(voc(obj()))
    denied = str(tmp_path / "a.xml")
    real_open = os.open

    def fake_open(path: str, flags: int, *args: int) -> int:
        if path == denied:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", fake_open)
    result = read_directory(tmp_path)
    assert [str(s) for s in result.skipped] == [f"{denied}: cannot read file: Permission denied"]
    assert [a.key for a in result.annotations] == ["b"]


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="root reads files without permission"
)
def test_an_unreadable_file_on_disk(tmp_path: Path) -> None:  # pragma: no cover - not as root
    """chmod 000 on a file: skipped with the OS reason."""
    (tmp_path / "a.xml").write_bytes(voc(obj()))
    (tmp_path / "a.xml").chmod(0)
    try:
        result = read_directory(tmp_path)
    finally:
        (tmp_path / "a.xml").chmod(0o644)
    assert [str(s) for s in result.skipped] == [
        f"{tmp_path / 'a.xml'}: cannot read file: Permission denied"
    ]


def test_an_unreadable_directory_is_skipped_with_the_system_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder that cannot be listed is named (so the run exits 3); its siblings are read."""
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "a.xml").write_bytes(voc(obj()))
    (tmp_path / "b.xml").write_bytes(voc(obj()))
    locked = str(tmp_path / "locked")
    real_scandir = os.scandir

    def fake_scandir(path: str) -> object:
        if path == locked:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", fake_scandir)
    list_folder = getattr(folders._compiled, "list_folder", None)
    if list_folder is not None:
        # The compiled listing cannot open it either, and leaves it to os.scandir.
        def fake_list_folder(path: str, *args: str) -> object:
            return None if path == locked else list_folder(path, *args)

        monkeypatch.setattr(folders._compiled, "list_folder", fake_list_folder)
    result = read_directory(tmp_path)
    assert [str(s) for s in result.skipped] == [
        f"{locked}: cannot read directory: Permission denied"
    ]
    assert [a.key for a in result.annotations] == ["b"]


def test_keys_differing_only_in_case_keep_the_first(tmp_path: Path) -> None:
    """A.xml and a.xml are one file on a case-insensitive system: the later is skipped on every
    system, with both paths, so results do not depend on where they are computed."""
    if not case_sensitive(tmp_path):
        pytest.skip("the file system folds case: A.xml and a.xml cannot both exist")
    gt = tmp_path / "gt"
    (gt / "Sub").mkdir(parents=True)
    (gt / "sub").mkdir()
    for relative in ("A.xml", "a.xml", "Sub/x.xml", "sub/x.xml", "b.xml", "b.XML"):
        (gt / relative).write_bytes(voc(obj()))
    listing = list_directory(gt)
    assert [key for key, _ in listing.files] == ["A", "Sub/x", "b"]
    assert [str(s) for s in listing.skipped] == [
        f"{gt / 'a.xml'}: image key 'a' differs only in case from 'A' ({gt / 'A.xml'}), which is "
        "the same file on a case-insensitive file system",
        f"{gt / 'b.xml'}: same image key 'b' as {gt / 'b.XML'}",
        f"{gt / 'sub' / 'x.xml'}: image key 'sub/x' differs only in case from 'Sub/x' "
        f"({gt / 'Sub' / 'x.xml'}), which is the same file on a case-insensitive file system",
    ]
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "A.xml").write_bytes(voc(scored()))
    (pred / "a.xml").write_bytes(voc(scored()))
    evaluation = evaluate(read_directory(gt), read_directory(pred))
    # The pred a.xml is the second of a pair too; image a is left out, not counted as orphan.
    assert [i.key for i in evaluation.images] == ["A", "Sub/x", "b"]
    assert evaluation.orphan_pred == ()
    assert len(evaluation.skipped) == 4


def test_non_ascii_file_names_pair_and_print(tmp_path: Path) -> None:
    """Accented and CJK names pair like any other and show in every output."""
    names = ["café", "日本/画像", "Ωmega"]
    for folder in ("gt", "pred"):
        for name in names:
            path = tmp_path / folder / f"{name}.xml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(
                voc(scored(name="ü-class") if folder == "pred" else obj(name="ü-class"))
            )
    result = CliRunner().invoke(
        main,
        [str(tmp_path / "gt"), str(tmp_path / "pred"), "--format", "csv"],
        catch_exceptions=False,
    )
    assert result.exit_code == EXIT_OK
    assert [line.split(",")[0] for line in result.stdout.splitlines()[1:]] == [
        "café",
        "Ωmega",
        "日本/画像",
    ]


@pytest.mark.skipif(sys.platform != "linux", reason="file names that are not UTF-8: Linux")
def test_a_file_name_that_is_not_utf8_does_not_break_the_report(tmp_path: Path) -> None:
    """Undecodable bytes in a name are shown escaped, even under a strict UTF-8 stdout."""
    for folder in ("gt", "pred"):
        (tmp_path / folder).mkdir()
        with open(os.fsencode(tmp_path / folder) + b"/caf\xe9.xml", "wb") as handle:
            handle.write(voc(scored() if folder == "pred" else obj()))
    environment = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "vocmatch",
            str(tmp_path / "gt"),
            str(tmp_path / "pred"),
            "--format",
            "csv",
        ],
        cwd=ROOT,
        capture_output=True,
        env=environment,
        timeout=60,
        check=False,
    )
    assert result.returncode == EXIT_OK, result.stderr
    assert result.stdout.splitlines()[1].startswith(b"caf\\udce9,")


@pytest.mark.slow
def test_100000_files_in_one_folder(tmp_path: Path) -> None:
    """A flat folder of 100,000 tiny files is listed, read and evaluated by the column path
    every run takes (read_columns, evaluate_columns; about 10 s once the files are written)."""
    from vocmatch.evaluation.engine import evaluate_columns
    from vocmatch.readers.scan import read_columns

    folder = tmp_path / "many"
    folder.mkdir()
    data = voc(obj())
    # Hard links to a hundred files outside the folder, a thousand links each (below every
    # file system's limit: NTFS allows 1,024): a directory entry costs the system a fraction
    # of a new file's inode and data, and the files read the same.
    sources = tmp_path / "sources"
    sources.mkdir()
    for j in range(100):
        (sources / f"{j}.xml").write_bytes(data)
    for i in range(100_000):
        os.link(sources / f"{i // 1000}.xml", folder / f"{i:06d}.xml")
    assert len(find_annotation_files(folder)) == 100_000
    columns = read_columns(folder)
    assert columns.skipped == ()
    evaluation = evaluate_columns(columns, columns)
    assert (evaluation.summary.images, evaluation.summary.tp) == (100_000, 100_000)
    assert math.isclose(evaluation.summary.recall or 0.0, 1.0)


# A path holding a NUL byte, which no system call takes (only a library caller can give one):
# a typed error naming it, never a bare ValueError.


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda: read_annotation("a\0b.xml"), id="read_annotation"),
        pytest.param(lambda: read_bytes("a\0b.xml", 1000), id="read_bytes"),
    ],
)
def test_a_file_path_with_a_nul_byte_is_an_annotation_error(read: object) -> None:
    with pytest.raises(AnnotationError, match=r"cannot read file: the path holds a NUL byte$"):
        read()  # type: ignore[operator]


def test_a_listed_file_with_a_nul_byte_is_skipped() -> None:
    from vocmatch.readers.scan import read_listed_columns

    columns = read_listed_columns([("k", "a\0b.xml")])
    assert [(f.path, f.message) for f in columns.skipped] == [
        ("a\0b.xml", "cannot read file: the path holds a NUL byte")
    ]


def test_a_directory_path_with_a_nul_byte_is_an_input_error() -> None:
    from vocmatch.errors import InputError
    from vocmatch.readers.scan import read_columns

    with pytest.raises(InputError, match=r"cannot read directory: the path holds a NUL byte$"):
        read_columns("x\0y")


# A size limit or a worker count that is not a whole number, given to a reader of the
# library: one RequestError naming the field, never a bare TypeError from deep inside.

_DEMO_GT = str(ROOT / "fixtures" / "demo" / "gt")
_DEMO_PRED = str(ROOT / "fixtures" / "demo" / "pred")
_DEMO_FILE = str(ROOT / "fixtures" / "demo" / "gt" / "street_01.xml")


def _size_limit_doors() -> list[object]:
    from vocmatch import Evaluator, read_states
    from vocmatch.readers.parse import list_directory, read_directory
    from vocmatch.readers.pred_formats import read_detections
    from vocmatch.readers.scan import read_listed_columns, read_listings

    def detections(limit: object) -> object:
        gt = read_columns(_DEMO_GT)
        return read_detections("yolo", _DEMO_PRED, gt, max_bytes=limit)  # type: ignore[arg-type]

    return [
        pytest.param(lambda v: read_bytes(_DEMO_FILE, v), id="read_bytes"),
        pytest.param(lambda v: read_annotation(_DEMO_FILE, max_bytes=v), id="read_annotation"),
        pytest.param(lambda v: read_directory(_DEMO_GT, v), id="read_directory"),
        pytest.param(lambda v: read_columns(_DEMO_GT, max_bytes=v), id="read_columns"),
        pytest.param(lambda v: read_column_pair(_DEMO_GT, _DEMO_PRED, max_bytes=v), id="pair"),
        pytest.param(lambda v: read_listings([list_directory(_DEMO_GT)], 1, v), id="listings"),
        pytest.param(lambda v: read_listed_columns([("a", _DEMO_FILE)], v), id="listed"),
        pytest.param(detections, id="read_detections"),
        pytest.param(lambda v: Evaluator.load("missing.vms", max_bytes=v), id="Evaluator.load"),
        pytest.param(lambda v: read_states(["missing.vms"], max_bytes=v), id="read_states"),
    ]


@pytest.mark.parametrize("door", _size_limit_doors())
@pytest.mark.parametrize(
    ("limit", "shown"),
    [
        pytest.param(1e6, r"'1000000\.0'.*got float", id="float"),
        pytest.param(True, r"'True'.*got bool", id="bool"),
        pytest.param("4096", r"'4096'.*got str", id="text"),
    ],
)
def test_a_size_limit_that_is_not_a_whole_number_is_a_request_error(
    door: object, limit: object, shown: str
) -> None:
    from vocmatch.errors import RequestError

    with pytest.raises(RequestError, match=rf"^max_bytes {shown}$"):
        door(limit)  # type: ignore[operator]


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda v: read_columns(_DEMO_GT, jobs=v), id="read_columns"),
        pytest.param(lambda v: read_column_pair(_DEMO_GT, _DEMO_PRED, v), id="pair"),
    ],
)
@pytest.mark.parametrize("jobs", [2.5, "2", None, True])
def test_a_worker_count_that_is_not_a_whole_number_is_a_request_error(
    read: object, jobs: object
) -> None:
    from vocmatch.errors import RequestError

    with pytest.raises(RequestError, match=r"^jobs '.*': expected a whole number, got \w+$"):
        read(jobs)  # type: ignore[operator]

"""Inputs given as fsspec URLs: the demo set in a local S3 (moto's server on 127.0.0.1) gives
the report of the same files read from the folder, in this process and on Dask workers.

The S3 tests need the ``test-s3`` extra (s3fs, moto, boto3; ``.ci/run`` installs it). Without
it they skip, except where the ``CI`` environment variable is set, where they fail.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.conftest import FIXTURES
from vocmatch.cli import main
from vocmatch.errors import AnnotationError, InputError
from vocmatch.readers.remote import is_url, list_location, location_reader, read_location_pair
from vocmatch.readers.scan import read_column_pair

BUCKET = "vocmatch-test"
# What the S3 tests import beyond the test extra.
S3_STACK = ("s3fs", "moto", "boto3")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    """A local S3 server (moto) for this module's tests; its endpoint URL."""
    missing = [name for name in S3_STACK if importlib.util.find_spec(name) is None]
    if missing:
        reason = f"the test-s3 extra is not installed (no {', '.join(missing)})"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {reason}")
        pytest.skip(reason)
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def s3(s3_server: str) -> Iterator[str]:
    """The demo set uploaded to ``s3://vocmatch-test/{gt,pred}`` (fake credentials, the
    local endpoint in the environment, which Dask workers started later inherit)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from uploaded(s3_server, monkeypatch)


def uploaded(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    import boto3
    import fsspec

    demo = FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred"
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_server,
        "NO_PROXY": "127.0.0.1",
    }.items():
        monkeypatch.setenv(name, value)
    fsspec.filesystem("s3").clear_instance_cache()
    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    for side, folder in zip(("gt", "pred"), demo, strict=True):
        for path in sorted(folder.rglob("*.xml")):
            client.put_object(
                Bucket=BUCKET, Key=f"{side}/{path.relative_to(folder)}", Body=path.read_bytes()
            )
    yield f"s3://{BUCKET}"
    objects = client.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    for entry in objects:
        client.delete_object(Bucket=BUCKET, Key=entry["Key"])
    client.delete_bucket(Bucket=BUCKET)
    fsspec.filesystem("s3").clear_instance_cache()


def local_json(demo: tuple[Path, Path], s3: str, *args: str) -> str:
    """The JSON report of the folders, their paths written as the bucket's URLs."""
    gt, pred = demo
    code, out, _ = run("eval", str(gt), str(pred), "--format", "json", *args)
    assert code == 0
    return out.replace(str(gt), f"{s3}/gt").replace(str(pred), f"{s3}/pred")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("s3://bucket/gt", True, id="s3"),
        pytest.param("file:///data/gt", True, id="file"),
        pytest.param("data/gt", False, id="relative"),
        pytest.param("C:/data/gt", False, id="windows-drive"),
    ],
)
def test_urls_are_told_from_paths(text: str, expected: bool) -> None:
    assert is_url(text) is expected


def test_a_bucket_lists_the_keys_of_a_folder(s3: str, demo: tuple[Path, Path]) -> None:
    """The same keys as the folder's listing, each file named by its URL."""
    remote = list_location(f"{s3}/gt")
    local = list_location(demo[0])
    assert [k for k, _ in remote.files] == [k for k, _ in local.files]
    assert remote.files[0] == ("street_01", f"{s3}/gt/street_01.xml")
    assert (remote.skipped, remote.notes) == ((), ())


def test_an_s3_run_reports_as_a_local_run(s3: str, demo: tuple[Path, Path]) -> None:
    code, out, err = run("eval", f"{s3}/gt", f"{s3}/pred", "--format", "json")
    assert code == 0
    assert out == local_json(demo, s3)
    assert (
        err
        == "vocmatch: warning: no prediction file for 'street_05': its objects count as missed\n"
    )


def test_an_s3_run_on_dask_reports_as_a_local_run(s3: str, demo: tuple[Path, Path]) -> None:
    """Workers read the bucket (the endpoint reaches them through the environment)."""
    code, out, err = run(
        "eval", f"{s3}/gt", f"{s3}/pred", "--format", "json", "--protocol", "coco",
        "--dask", "local:2",
    )  # fmt: skip
    assert code == 0, err
    assert out == local_json(demo, s3, "--protocol", "coco")


def test_storage_options_reach_the_file_system(
    s3: str, s3_server: str, demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoint given as fsspec storage options wins over the environment's (here a
    closed local port, so that a run ignoring the options fails without leaving the host)."""
    import fsspec

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    fsspec.filesystem("s3").clear_instance_cache()
    options = {"client_kwargs": {"endpoint_url": s3_server}}
    gt, pred = read_location_pair(f"{s3}/gt", f"{s3}/pred", storage_options=options)
    local_gt, local_pred = read_column_pair(*demo)
    assert gt.keys == local_gt.keys
    assert pred.keys == local_pred.keys
    assert gt.paths[0] == f"{s3}/gt/street_01.xml"
    np.testing.assert_array_equal(gt.boxes, local_gt.boxes)
    np.testing.assert_array_equal(pred.scores, local_pred.scores)
    fsspec.filesystem("s3").clear_instance_cache()


def test_a_file_url_reports_as_its_folder(demo: tuple[Path, Path]) -> None:
    gt, pred = demo
    code, out, _ = run("eval", gt.as_uri(), pred.as_uri(), "--format", "json")
    assert code == 0
    local = run("eval", str(gt), str(pred), "--format", "json")[1]
    assert out == local.replace(str(gt), gt.as_uri()).replace(str(pred), pred.as_uri())


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--classes", "car,dog"], id="classes"),
        pytest.param(["--class-map", "coco-to-voc"], id="class-map"),
        pytest.param(["--agnostic"], id="agnostic"),
    ],
)
def test_classes_chosen_for_a_file_url_are_its_folder_s(
    demo: tuple[Path, Path], args: list[str]
) -> None:
    """The class choice applies to inputs read from URLs as to folders read here."""
    gt, pred = demo
    code, out, _ = run("eval", gt.as_uri(), pred.as_uri(), *args, "--format", "json")
    assert code == 0
    local = run("eval", str(gt), str(pred), *args, "--format", "json")[1]
    assert local != run("eval", str(gt), str(pred), "--format", "json")[1]
    assert out == local.replace(str(gt), gt.as_uri()).replace(str(pred), pred.as_uri())


def test_a_file_over_the_size_limit_is_refused_unread(s3: str) -> None:
    read = location_reader()
    url = f"{s3}/gt/street_01.xml"
    size = len(read(url, 1 << 20))
    with pytest.raises(AnnotationError) as caught:
        read(url, 100)
    assert str(caught.value) == (f"{url}: file is larger than the 100-byte limit ({size:,} bytes)")


def test_oversized_files_are_refused_as_local_ones(s3: str, demo: tuple[Path, Path]) -> None:
    """The same exit code and the same lines as for the folder, paths aside."""
    gt, pred = demo
    remote = run("eval", f"{s3}/gt", f"{s3}/pred", "--max-file-size", "1000", "-q")
    local = run("eval", str(gt), str(pred), "--max-file-size", "1000", "-q")
    assert remote[0] == local[0] != 0
    assert remote[2] == local[2].replace(str(gt), f"{s3}/gt").replace(str(pred), f"{s3}/pred")


def test_a_missing_file_is_skipped_with_its_reason(s3: str) -> None:
    with pytest.raises(AnnotationError, match="cannot read file: no such file or folder"):
        location_reader()(f"{s3}/gt/nothing.xml", 1000)


def test_an_empty_prefix_has_no_annotation_files(s3: str) -> None:
    code, out, err = run("eval", f"{s3}/nothing", f"{s3}/pred")
    assert (code, out) == (2, "")
    assert err == f"vocmatch: error: {s3}/nothing: no .xml annotation files found\n"


def test_an_unknown_scheme_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^nope://x: .*nope"):
        list_location("nope://x")

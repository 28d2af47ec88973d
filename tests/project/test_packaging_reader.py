"""The sdist installs with a C compiler (and has the compiled reader) and without one (and
reads with the pure-Python reader), to the same columns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.conftest import ROOT

FILE = (
    b"<annotation><filename>a.jpg</filename><size><width>640</width><height>480</height>"
    b"<depth>3</depth></size><object><name>car</name><difficult>1</difficult><bndbox>"
    b"<xmin>1.5</xmin><ymin>2</ymin><xmax>30</xmax><ymax>40e0</ymax></bndbox>"
    b"<score>0.25</score></object></annotation>\n"
)
READ = (
    "import json, sys, vocmatch\n"
    "from vocmatch.readers import scan\n"
    "from vocmatch.compiled import active_engine\n"
    "columns = scan.read_columns(sys.argv[1])\n"
    "print(json.dumps([vocmatch.__file__, scan.active_reader(), columns.boxes.tolist(),\n"
    "    columns.scores.tolist(), columns.difficult.tolist(), list(columns.label_names),\n"
    "    active_engine('vocmatch.evaluation.fastaccumulate'),\n"
    "    active_engine('vocmatch.core.fastmatch'),\n"
    "    active_engine('vocmatch.render.fastjson')]))\n"
)


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"from setuptools import build_meta; build_meta.build_sdist({str(out)!r})",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (archive,) = out.glob("vocmatch-*.tar.gz")
    return archive


def _fresh_venv(folder: Path) -> Path:
    """A new virtual environment that sees this environment's packages (vocmatch's
    dependencies, pip, setuptools) after its own, so that installing needs no network."""
    venv.create(folder, with_pip=False)
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    # A path line in a .pth file: the folder is searched, its own .pth files (this
    # environment's editable vocmatch among them) are not run.
    (Path(site) / "outer.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


@pytest.mark.slow
@pytest.mark.parametrize(
    "compiler, reader", [("default", "compiled"), ("/bin/false", "pure")], ids=["cc", "no-cc"]
)
def test_the_sdist_installs_with_and_without_a_compiler(
    sdist: Path, tmp_path: Path, compiler: str, reader: str
) -> None:
    """Built with the machine's compiler the package reads with the compiled reader; with a
    compiler that fails (CC=/bin/false) it still installs, warns, and reads the same
    columns with the pure-Python reader."""
    if compiler == "default" and os.name != "nt":
        from shutil import which

        if which(os.environ.get("CC", "cc")) is None:
            pytest.skip("no C compiler here")
    python = _fresh_venv(tmp_path / "venv")
    unset = ("PYTHONPATH", "VOCMATCH_PURE_READER", "VOCMATCH_PURE_ENGINE")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    if compiler != "default":
        env["CC"] = compiler
    install = subprocess.run(
        [python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
         "--no-cache-dir", "--verbose", str(sdist)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    if compiler != "default":
        for extension in (
            "vocmatch.readers.fastxml",
            "vocmatch.evaluation.fastaccumulate",
            "vocmatch.core.fastmatch",
            "vocmatch.render.fastjson",
        ):
            assert f'building extension "{extension}" failed' in install.stdout + install.stderr
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.xml").write_bytes(FILE)
    read = subprocess.run(
        [python, "-c", READ, str(tmp_path / "data")],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=True,
    )  # fmt: skip
    where, active, boxes, scores, difficult, names, engine, matching, writer = json.loads(
        read.stdout
    )
    assert Path(where).is_relative_to(tmp_path / "venv")
    assert active == reader
    # The compiled matching and accumulation are built, or left to numpy, with the reader.
    assert engine == matching == writer == ("compiled" if reader == "compiled" else "numpy")
    assert (boxes, scores, difficult, names) == ([[1.5, 2.0, 30.0, 40.0]], [0.25], [True], ["car"])

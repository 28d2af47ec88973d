"""The package is built in layers, and imports run one way: a layer imports only the layers
below it (shared < core < readers < evaluation < evidence < render < run < cli). Only the command
line knows click; each third-party library stays with the layer that needs it. The run package
(whole runs: request -> read -> evaluate -> evidence -> one result) sits right below the
command line."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "vocmatch"

#: The layers from the bottom up. A module's layer is its sub-package; the modules at the top
#: of the package (errors, escapes) are the shared basics everyone may import.
LAYERS = ("shared", "core", "readers", "evaluation", "evidence", "render", "run", "cli")

#: Modules at the top of the package and the layer they belong to.
TOP_LEVEL = {
    "errors": "shared",
    "checks": "shared",
    "escapes": "shared",
    "words": "shared",
    "files": "shared",
    "limits": "shared",
    "compiled": "shared",
    "kernel_threads": "shared",
    "lazy": "shared",
    "version": "shared",
    "__init__": "shared",
    "__main__": "cli",
}

#: Third-party packages and the layers that may import them: the library never knows click.
THIRD_PARTY = {
    "click": {"cli"},
    "rich": {"render", "cli"},
    "lxml": {"readers"},
    "yaml": {"readers"},  # names files of other tools (data.yaml)
    "shapely": {"core"},
    "PIL": {"evaluation", "render"},  # masks are read by seg; the HTML report scales pictures
    "jinja2": {"render"},
    "markupsafe": {"render"},
    # eval --dask: the cluster runner, and the command's check that it is installed.
    "dask": {"evaluation"},
    "distributed": {"evaluation", "cli"},
    # Inputs given as URLs are listed and read by the readers alone.
    "fsspec": {"readers"},
    "s3fs": {"readers"},
}

#: Exactly where shapely is used: one module knows GEOS.
SHAPELY_MODULES = {"core/geometry.py"}


def all_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts)


def layer_of(dotted: str) -> str:
    """The layer of a module given as ``vocmatch.a.b``."""
    parts = dotted.split(".")
    if len(parts) == 1:  # `vocmatch` itself: the version and the public API
        return "shared"
    head = parts[1]
    if head in LAYERS:
        return head
    return TOP_LEVEL.get(head, "shared")


@functools.cache
def tree_of(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for all the tests that read it (none changes it)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, lazily or not, as dotted names."""
    tree = tree_of(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "vocmatch" or (
                node.module.startswith("vocmatch.") and node.module.count(".") == 1
            ):
                # `from vocmatch.core import iou` imports the module vocmatch.core.iou
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
            names.add(node.module)
    return names


MODULES = all_modules()
IDS = [str(p.relative_to(PACKAGE)) for p in MODULES]


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_imports_run_down_the_layers(path: Path) -> None:
    """A module imports only its own layer and the layers below it."""
    own = layer_of(module_name(path))
    if module_name(path) == "vocmatch.__init__":
        return  # the public API re-exports from every layer, loaded lazily
    for name in imports_of(path):
        if name.split(".")[0] != "vocmatch" or name == "vocmatch.__version__":
            continue
        target = layer_of(name)
        assert LAYERS.index(target) <= LAYERS.index(own), (
            f"{module_name(path)} ({own}) must not import {name} ({target})"
        )


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_third_party_libraries_stay_in_their_layer(path: Path) -> None:
    """click only in the command line, lxml only in the readers, shapely only in geometry."""
    own = layer_of(module_name(path))
    relative = str(path.relative_to(PACKAGE))
    for name in imports_of(path):
        top = name.split(".")[0]
        if top in THIRD_PARTY:
            assert own in THIRD_PARTY[top], f"{relative} ({own}) must not import {top}"
        if top == "shapely":
            assert relative in SHAPELY_MODULES, f"{relative} must not import shapely"


def test_every_module_is_in_a_layer() -> None:
    """No module sits outside the layers (a new top-level module must be placed)."""
    for path in MODULES:
        relative = path.relative_to(PACKAGE)
        if len(relative.parts) == 1:
            assert relative.stem in TOP_LEVEL, f"vocmatch/{relative} is not placed in a layer"
        else:
            assert relative.parts[0] in LAYERS, f"vocmatch/{relative.parts[0]} is not a layer"


def test_the_rule_can_fail() -> None:
    """The import reader sees a lazy import inside a function, as a layer violation would be."""
    source = PACKAGE / "core" / "iou.py"
    assert layer_of("vocmatch.cli.app") == "cli"
    assert layer_of("vocmatch.errors") == "shared"
    assert any(n.startswith("numpy") for n in imports_of(source))
    assert LAYERS.index(layer_of("vocmatch.render.terminal")) > LAYERS.index("evaluation")


def test_library_never_prints() -> None:
    """Only the command line writes to the terminal."""
    for path in MODULES:
        if layer_of(module_name(path)) == "cli":
            continue
        tree = tree_of(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "print", f"{module_name(path)} calls print()"


#: A flag as it is written inside a sentence: ``--slice``, not ``x--y``.
_FLAG_IN_TEXT = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

#: A CSS custom property (``var(--ink)``) is not a flag.
_CSS_VARIABLE = re.compile(r"var\(--[\w-]+\)")

#: Library texts that name a flag, each with why it may. Each entry is (module, flag).
FLAG_TEXT_ALLOWED: set[tuple[str, str]] = set()


def cli_flags() -> set[str]:
    """Every flag the command line declares: the string constants of vocmatch/cli that are a
    flag and nothing else (``"--slice"`` in ``@click.option("--slice", ...)``)."""
    flags = set()
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                flags.update(
                    re.findall(r"\A(--[a-z][a-z0-9-]*)(?:/--[a-z][a-z0-9-]*)?\Z", node.value)
                )
    return flags


def docstrings(tree: ast.Module) -> set[int]:
    """ids of the constants that are docstrings: they may explain which flag sets an option."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def flags_in_strings(tree: ast.Module, flags: set[str]) -> list[tuple[int, str]]:
    """Each (line, flag) where a string literal other than a docstring names a flag of the
    command line; the literal parts of f-strings count."""
    skip = docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = _CSS_VARIABLE.sub("", node.value)
            found += [(node.lineno, f) for f in _FLAG_IN_TEXT.findall(text) if f in flags]
    return sorted(found)


def test_library_texts_name_no_command_line_flag() -> None:
    """Errors, notes and texts of the library name its own options (``protocol='coco'``), never
    a flag of the command line (``--protocol coco``): the command line words them at its edge
    (vocmatch.errors.Message). Docstrings may say which flag sets an option."""
    flags = cli_flags()
    assert {"--slice", "--coco-gt", "--protocol", "--fold-case", "--geometry"} <= flags
    named = []
    for path in MODULES:
        name = module_name(path)
        if layer_of(name) == "cli":
            continue
        for line, flag in flags_in_strings(tree_of(path), flags):
            if (name, flag) not in FLAG_TEXT_ALLOWED:
                named.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {flag}")
    assert named == []


def test_the_flag_rule_can_fail() -> None:
    """A flag in a raised message or an f-string is found; one in a docstring, a CSS variable
    or a word joined by dashes is not."""
    source = (
        "def f(x):\n"
        '    """Read ``--slice`` values."""\n'
        "    if x:\n"
        '        raise ValueError(f"{x}: give --coco-gt FILE")\n'
        '    return "var(--ink) a--slice"\n'
    )
    found = flags_in_strings(ast.parse(source), {"--slice", "--coco-gt", "--ink"})
    assert found == [(4, "--coco-gt")]


def test_every_option_the_library_names_is_a_flag_of_the_command_line() -> None:
    """Each ``Option("field")`` in a library message is worded by the command line as one of
    its own flags (or the PRED argument), never as a made-up ``--field``."""
    from vocmatch.cli.console import option_words
    from vocmatch.errors import Option

    flags = cli_flags()
    fields = set()
    for path in MODULES:
        if layer_of(module_name(path)) == "cli":
            continue
        for node in ast.walk(tree_of(path)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Option"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                fields.add(node.args[0].value)
    assert {"coco_gt", "fold_case", "geometry", "max_rows", "protocol", "slices"} <= fields
    for field in sorted(fields):
        word = option_words(Option(field)).split()[0]
        assert word in flags or word == "PRED", f"{field} is worded as {word}"


#: The largest module and the longest function the house keeps: past these, a module holds
#: more than one concern, a function more than one stage (split them by what they do).
MOST_MODULE_LINES = 1_000
MOST_FUNCTION_LINES = 120


def test_modules_and_functions_stay_readable() -> None:
    """No module of the package over 1,000 lines, no function over 120."""
    long_modules = []
    long_functions = []
    for path in MODULES:
        name = str(path.relative_to(PACKAGE))
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MOST_MODULE_LINES:
            long_modules.append(f"{name}: {lines} lines")
        for node in ast.walk(tree_of(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                if length > MOST_FUNCTION_LINES:
                    long_functions.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    assert long_modules == []
    assert long_functions == []


def test_file_size_limits_live_in_one_module() -> None:
    """Every limit on the size of a file read (``*_BYTES``) is defined in vocmatch/limits.py
    and imported from there, so the limits can be read and changed in one place."""
    defined = []
    for path in MODULES:
        if path.name == "limits.py":
            continue
        for node in tree_of(path).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and re.fullmatch(r"\w*MAX\w*_BYTES", target.id):
                    defined.append(f"{path.relative_to(PACKAGE)}: {target.id}")
    assert defined == []


#: Every module of the package by its dotted name (``vocmatch.core.iou``; the package itself
#: is ``vocmatch``), the compiled reader (known by its stub) included.
MODULE_NAMES = {
    module_name(p).removesuffix(".__init__") for p in [*MODULES, *PACKAGE.rglob("*.pyi")]
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_names_used(tree: ast.Module, own: str) -> list[str]:
    """Each ``line: module._name`` where a module whose dotted name is ``own`` takes an
    underscore name of another module of the package: ``from X import _name``, or
    ``X._name`` on a module it imported."""
    found = []
    bound: dict[str, str] = {}  # a local name -> the package module it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                if dotted in MODULE_NAMES:
                    bound[alias.asname or alias.name] = dotted
                elif node.module in MODULE_NAMES and node.module != own and _private(alias.name):
                    found.append((node.lineno, dotted))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULE_NAMES and alias.asname:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            value = ast.unparse(node.value)
            target = bound.get(value, value if value in MODULE_NAMES else None)
            if target is not None and target != own:
                found.append((node.lineno, f"{target}.{node.attr}"))
    return [f"{line}: {name}" for line, name in sorted(found)]


def test_no_underscore_name_crosses_modules() -> None:
    """A name another module needs is public in its own module (no underscore, in
    ``__all__``): an underscore name is used only where it is defined."""
    crossing = []
    for path in MODULES:
        own = module_name(path).removesuffix(".__init__")
        for where in private_names_used(tree_of(path), own):
            crossing.append(f"{path.relative_to(PACKAGE.parent)}:{where}")
    assert crossing == []


def test_the_underscore_rule_can_fail() -> None:
    """Underscore names taken by import or by attribute are found; those of the module itself,
    dunder names and a private attribute of an object are not."""
    source = (
        "import vocmatch.core.iou as iou_module\n"
        "from vocmatch.core import iou\n"
        "from vocmatch.core.ap import _points, average_precision\n"
        "from vocmatch.core.match import _own\n"
        "import vocmatch.core.model\n"
        "iou._pairs\n"
        "iou_module._boxes\n"
        "vocmatch.core.model._check\n"
        "iou.__name__\n"
        "box._area\n"
    )
    found = private_names_used(ast.parse(source), "vocmatch.core.match")
    assert found == [
        "3: vocmatch.core.ap._points",
        "6: vocmatch.core.iou._pairs",
        "7: vocmatch.core.iou._boxes",
        "8: vocmatch.core.model._check",
    ]

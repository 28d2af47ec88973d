"""Mutation testing, small: do the tests notice when a module's code is changed?

    python bench/mutate.py vocmatch/core/match.py --tests tests/core/test_match.py
    python bench/mutate.py vocmatch/core/ap.py --tests tests/core/test_calculator.py --lines 40-90
    python bench/mutate.py vocmatch/core/iou.py --tests tests/core/test_iou.py --list
    python bench/mutate.py vocmatch/core/match.py --tests "tests/core/test_match.py -k strict" \
        --sample 40 --seed 1

parses the module with ``ast`` and makes one mutant per change: a comparison operator swapped
(``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``, ``is`` and ``is not``, ``in`` and
``not in``), a number constant plus or minus one, ``and`` and ``or`` swapped, the condition of
an ``if``, ``while`` or conditional expression negated, and a returned value replaced by
``None``. Each mutant is written over the module in a temporary copy of the checkout (the
original is never touched) and the chosen tests are run against it with pytest, stopping at
the first failure. A failing run (or one that times out) kills the mutant; a passing one lets
it survive. The report lists every survivor with its line, and the counts.

Each value of ``--tests`` is split as a shell would (``--tests "tests/core/test_match.py -n 0"`` is
two arguments), so options that start with a dash can be given inside the quotes. Every run
is one process: ``-n 0`` comes before the given arguments (the project's ``addopts`` asks for
``-n auto``), and ``--jobs`` tests several mutants at once instead; an ``-n`` among the given
arguments wins. ``PYTEST_ADDOPTS`` is passed on as it is.

hypothesis runs under the ``mutation`` profile that ``tests/conftest.py`` registers: no
deadline (a slow run under load is not a failure), no example database (what one mutant found
is not replayed to the next) and derandomised examples, so a mutant's fate does not depend on
the mutants before it or on the machine's load, and two runs give the same report.

Each copy's package and tests, and each mutant, are compiled before any test runs there: a
test that starts children under a memory limit or stops them with a signal would otherwise
let one of them meet bytecode another is still writing, and fail whatever the mutant.

``--sample N --seed S`` tests N mutants drawn at random (the same N for the same seed and
module) from the whole module or from ``--lines``, in the order of ``--list``: a view of a large
module in bounded time. ``--timeout`` defaults to five times the unchanged module's run plus
30 seconds: a mutant that loops forever is killed by the timeout, not waited on for minutes.

A survivor is either a gap in the tests or an equivalent mutant (a change that cannot alter
behaviour, such as ``>=`` for ``>`` where equality cannot occur): read each one.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_SYMBOLS = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Mutant:
    """One change: the ``site``-th mutable node (in :func:`_sites` order), changed by
    ``variant``, described for the report."""

    site: int
    variant: str
    line: int
    description: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the tests made of a mutant."""

    mutant: Mutant
    killed: bool
    seconds: float
    timed_out: bool


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the constant nodes that are docstrings (never mutated)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _sites(tree: ast.Module) -> Iterator[tuple[ast.AST, list[tuple[str, str]]]]:
    """Every node that can be mutated, in a fixed order, with its variants (name, text)."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        variants: list[tuple[str, str]] = []
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in _SWAPS:
                    new = _SWAPS[type(op)]
                    variants.append((f"cmp{k}", f"{_SYMBOLS[type(op)]} -> {_SYMBOLS[new]}"))
        elif isinstance(node, ast.Constant) and id(node) not in skip:
            value = node.value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                variants += [
                    ("plus", f"{value!r} -> {value!r} + 1"),
                    ("minus", f"{value!r} -> {value!r} - 1"),
                ]
        elif isinstance(node, ast.BoolOp):
            variants.append(
                ("boolop", "and -> or" if isinstance(node.op, ast.And) else "or -> and")
            )
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            variants.append(("negate", f"condition negated ({type(node).__name__})"))
        elif isinstance(node, ast.Return) and not (
            node.value is None
            or (isinstance(node.value, ast.Constant) and node.value.value is None)
        ):
            variants.append(("none", "return value -> None"))
        if variants:
            yield node, variants


def mutants(source: str, lines: range | None = None) -> list[Mutant]:
    """Every mutant of a module's source, optionally of some lines only."""
    found = []
    for site, (node, variants) in enumerate(_sites(ast.parse(source))):
        line = getattr(node, "lineno", 0)
        if lines is not None and line not in lines:
            continue
        found += [Mutant(site, name, line, text) for name, text in variants]
    return found


def mutated(source: str, mutant: Mutant) -> str:
    """The module's source with one mutant applied (comments and layout are lost)."""
    tree = ast.parse(source)
    node = next(n for k, (n, _) in enumerate(_sites(tree)) if k == mutant.site)
    variant = mutant.variant
    if variant.startswith("cmp") and isinstance(node, ast.Compare):
        k = int(variant[3:])
        node.ops[k] = _SWAPS[type(node.ops[k])]()
    elif variant in ("plus", "minus") and isinstance(node, ast.Constant):
        value = node.value
        assert isinstance(value, (int, float))  # only numbers have these variants
        node.value = value + (1 if variant == "plus" else -1)
    elif variant == "boolop" and isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif variant == "negate" and isinstance(node, (ast.If, ast.While, ast.IfExp)):
        node.test = ast.UnaryOp(ast.Not(), node.test)
    elif variant == "none" and isinstance(node, ast.Return):
        node.value = ast.Constant(None)
    else:
        raise ValueError(f"cannot apply {mutant}")
    return ast.unparse(ast.fix_missing_locations(tree))


def _copy_checkout(target: Path) -> None:
    """Copy what the tests read: the package, the tests and their data, and the scripts and
    pages some tests load (bench/ without the data sets it generates, docs/)."""
    for name, ignore in (
        ("vocmatch", ("__pycache__",)),
        ("tests", ("__pycache__", "artifacts")),
        ("fixtures", ("__pycache__",)),
        ("bench", ("__pycache__", "data")),
        ("docs", ("__pycache__",)),
    ):
        if (ROOT / name).exists():
            shutil.copytree(ROOT / name, target / name, ignore=shutil.ignore_patterns(*ignore))
    for name in ("pyproject.toml", "README.md", "mkdocs.yml", "setup.py", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, target / name)


def pytest_arguments(values: list[str]) -> list[str]:
    """The pytest arguments of ``--tests``, each value split as a shell would.

    >>> pytest_arguments(["tests/core/test_match.py -n 0", "-k strict"])  # doctest: +ELLIPSIS
    ['-n', '0', '--hypothesis-profile=mutation', 'tests/core/test_match.py', '-n', '0', ...]
    """
    given = [word for value in values for word in shlex.split(value)]
    return ["-n", "0", "--hypothesis-profile=mutation", *given]


def sample(found: list[Mutant], size: int, seed: int) -> list[Mutant]:
    """``size`` mutants drawn at random with ``seed``, in their order (all when fewer).

    >>> few = sample([Mutant(k, "none", k, "") for k in range(10)], 3, seed=1)
    >>> [m.site for m in few] == sorted(m.site for m in few), len(few)
    (True, 3)
    """
    if size >= len(found):
        return list(found)
    chosen = set(random.Random(seed).sample(range(len(found)), size))
    return [m for k, m in enumerate(found) if k in chosen]


def _bytecode(copy: Path) -> Path:
    """Where the runs in a copy keep their compiled modules (the unchanged ones are compiled
    once, not at every run)."""
    return copy.parent / f"{copy.name}-pycache"


def _forget_bytecode(copy: Path, module: Path) -> None:
    """Remove the compiled form of a module that is about to change: its timestamp alone
    (whole seconds) could let a mutant run the bytecode of the one before."""
    cached = _bytecode(copy) / (copy / module).parent.relative_to("/")
    for pyc in cached.glob(f"{module.stem}.*.pyc"):
        pyc.unlink()


def _environment(copy: Path) -> dict[str, str]:
    """The environment of the runs in a copy: its code first, its own bytecode folder."""
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONPYCACHEPREFIX": str(_bytecode(copy))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _compile(copy: Path, *paths: Path) -> None:
    """Compile ``paths`` of a copy before any test runs: otherwise the first processes to
    import them race to write their bytecode, and a child the tests start under a memory
    limit or stop with a signal can meet a half-written file (``marshal data too short``)
    and fail whatever the mutant."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *map(str, paths)],
        cwd=copy, env=_environment(copy), capture_output=True, check=False,
    )  # fmt: skip


def _run(copy: Path, tests: list[str], timeout: float) -> tuple[bool, bool]:
    """Run the tests in a copy: (they failed, they timed out)."""
    env = _environment(copy)
    command = [
        sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
        "-p", "no:benchmark", "-p", "no:randomly", *tests,
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=copy, env=env, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return True, True
    return done.returncode != 0, False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", type=Path, help="the module to mutate, e.g. vocmatch/core/iou.py")
    parser.add_argument(
        "--tests",
        nargs="+",
        required=True,
        help='pytest arguments, each split as a shell would: "tests/core/test_match.py -n 0"',
    )
    parser.add_argument("--lines", help="only mutants on these lines, e.g. 120-180")
    parser.add_argument("--jobs", type=int, default=1, help="mutants tested at once")
    parser.add_argument(
        "--timeout",
        type=float,
        help="seconds per test run (default: five times the unchanged run, plus 30)",
    )
    parser.add_argument("--sample", type=int, help="test only this many mutants, drawn at random")
    parser.add_argument("--seed", type=int, default=0, help="the draw of --sample")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = parser.parse_args()
    relative = args.module.resolve().relative_to(ROOT)
    source = (ROOT / relative).read_text()
    lines = None
    if args.lines:
        first, _, last = args.lines.partition("-")
        lines = range(int(first), int(last or first) + 1)
    every = mutants(source, lines)
    found = every if args.sample is None else sample(every, args.sample, args.seed)
    tests = pytest_arguments(args.tests)
    if args.list:
        for m in found:
            print(f"{relative}:{m.line}: {m.description}")
        print(f"{len(found)} of {len(every)} mutants")
        return
    with tempfile.TemporaryDirectory(prefix="vocmatch-mutate-") as temp:
        copies = [Path(temp) / f"copy{j}" for j in range(max(args.jobs, 1))]
        for copy in copies:
            _copy_checkout(copy)
            _compile(
                copy, *(copy / name for name in ("vocmatch", "tests") if (copy / name).exists())
            )
        start = time.perf_counter()
        baseline_failed, _ = _run(copies[0], tests, args.timeout or 3600.0)
        baseline = time.perf_counter() - start
        if baseline_failed:
            sys.exit("the tests fail on the unchanged module: nothing to measure")
        timeout = args.timeout or 5 * baseline + 30
        print(
            f"pytest {shlex.join(tests)}: {baseline:.1f} s on the unchanged module;"
            f" {len(found)} of {len(every)} mutants, {timeout:.0f} s each at most",
            flush=True,
        )
        free = list(copies)

        def test(mutant: Mutant) -> Outcome:
            copy = free.pop()
            try:
                _forget_bytecode(copy, relative)
                (copy / relative).write_text(mutated(source, mutant))
                _compile(copy, copy / relative)
                start = time.perf_counter()
                killed, timed_out = _run(copy, tests, timeout)
                return Outcome(mutant, killed, time.perf_counter() - start, timed_out)
            finally:
                _forget_bytecode(copy, relative)
                (copy / relative).write_text(source)
                free.append(copy)

        outcomes = []
        with ThreadPoolExecutor(max_workers=len(copies)) as pool:
            for outcome in pool.map(test, found):
                outcomes.append(outcome)
                m = outcome.mutant
                status = "killed" if outcome.killed else "SURVIVED"
                if outcome.timed_out:
                    status = "killed (timeout)"
                print(
                    f"[{len(outcomes)}/{len(found)}] {relative}:{m.line}: {status:<16}"
                    f" {m.description} ({outcome.seconds:.1f} s)",
                    flush=True,
                )
    survived = [o.mutant for o in outcomes if not o.killed]
    killed = len(outcomes) - len(survived)
    print(f"\n{len(every)} mutants, {len(outcomes)} run, {killed} killed, {len(survived)} survived")
    for m in survived:
        print(f"  survived {relative}:{m.line}: {m.description}")


if __name__ == "__main__":
    main()

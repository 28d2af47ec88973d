"""Class names in index order, from the files other tools write: Ultralytics' dataset YAML
(``data.yaml``, whose ``names:`` is a list or an ``{index: name}`` mapping) and Darknet's or
LabelImg's one-name-a-line lists (``classes.txt``, ``obj.names``).

A ``.yaml`` or ``.yml`` file, or any file with a top-level ``names:`` line, is read as YAML; any
other file as one name a line. A one-name-a-line file whose line looks like YAML or JSON is
refused with that line, rather than read as a class called ``names:`` or ``0: person`` (which
would make every prediction's class wrong, and the run's mAP 0).

The YAML is read with PyYAML's safe loader: dataset files carry more than ``names`` (block
scalars holding download scripts, anchors, quoted names), which a reader of a subset of YAML
would refuse or misread; PyYAML is what Ultralytics reads them with.
"""

from __future__ import annotations

import os
import re
from typing import Any

from vocmatch.errors import AnnotationError, InputError
from vocmatch.limits import MAX_NAMES_BYTES
from vocmatch.readers.pred_formats import read_class_list
from vocmatch.readers.regular_files import read_bytes

__all__ = ["YAML_SUFFIXES", "read_class_names"]

#: File suffixes always read as YAML.
YAML_SUFFIXES = (".yaml", ".yml")


_NAMES_KEY = re.compile(r"^names\s*:")
#: Lines of a one-name-a-line file that are YAML or JSON structure, not a class name:
#: ``0: person``, ``- person``, ``key:`` / ``key: value`` at the start, ``{``, ``[``.
_STRUCTURE = re.compile(r"^(\d+\s*:\s|\d+\s*:$|-\s|[{\[]|[A-Za-z_][\w-]*:(\s|$))")


def read_class_names(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The class names of a names file, in class-index order.

    Args:
        path: A dataset YAML file (``names:`` as a list or an ``{index: name}`` mapping), or
            a list of names, one a line (line 1 is class 0).

    Returns:
        The names; index ``k`` is class ``k``.

    Raises:
        AnnotationError: ``path:line``: a YAML error, a ``names`` value that is not a list or
            a mapping of indices 0 to N-1 to names, a name given twice, or a line of a list
            that looks like YAML or JSON.
        InputError: The file cannot be read, or names no class.
    """
    name = os.fspath(path)
    try:
        raw = read_bytes(name, MAX_NAMES_BYTES)
    except AnnotationError as error:
        if error.line is None:
            raise InputError(str(error)) from None
        raise
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        at = raw[: error.start].count(b"\n") + 1
        raise AnnotationError(name, "not UTF-8 text: not a names file", at) from None
    lines = text.splitlines()
    if name.lower().endswith(YAML_SUFFIXES) or any(_NAMES_KEY.match(line) for line in lines):
        return _yaml_names(name, text)
    for number, line in enumerate(lines, start=1):
        if _STRUCTURE.match(line.strip()):
            raise AnnotationError(
                name,
                f"{line.strip()!r} looks like YAML or JSON, not a class name: a names file is "
                "one class name a line, or YAML with a 'names:' list or mapping",
                number,
            )
    return read_class_list(name)


def _line(node: Any) -> int:
    return int(node.start_mark.line) + 1


def _yaml_names(name: str, text: str) -> tuple[str, ...]:
    """``names`` of a YAML document, checked node by node (each error with its line)."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or "not valid YAML"
        line = int(mark.line) + 1 if mark is not None else None
        raise AnnotationError(name, f"not valid YAML: {problem}", line) from None
    if not isinstance(root, yaml.MappingNode):
        line = _line(root) if root is not None else 1
        raise AnnotationError(name, "expected a YAML mapping with a 'names:' key", line)
    found = [value for key, value in root.value if key.value == "names"]
    if not found:
        raise AnnotationError(name, "no 'names:' key (the class names, a list or a mapping)", 1)
    node = found[0]
    if isinstance(node, yaml.SequenceNode):
        entries = [(k, item) for k, item in enumerate(node.value)]
    elif isinstance(node, yaml.MappingNode):
        entries = [(_index(name, key), item) for key, item in node.value]
        entries.sort(key=lambda entry: entry[0])
        for expected, (index, item) in enumerate(entries):
            if index != expected:
                problem = f"{expected} is missing" if index > expected else f"{index} given twice"
                raise AnnotationError(
                    name,
                    f"class indices must run from 0 to {len(entries) - 1}: {problem}",
                    _line(item),
                )
    else:
        raise AnnotationError(
            name, "'names' must be a list of names or a mapping {index: name}", _line(node)
        )
    names: list[str] = []
    seen: dict[str, int] = {}
    for _, item in entries:
        if not isinstance(item, yaml.ScalarNode) or not str(item.value).strip():
            raise AnnotationError(name, "a class name must be a non-empty text", _line(item))
        label = str(item.value).strip()
        if label in seen:
            raise AnnotationError(
                name, f"class {label!r} named twice (first on line {seen[label]})", _line(item)
            )
        seen[label] = _line(item)
        names.append(label)
    if not names:
        raise InputError(f"{name}: 'names' holds no class")
    return tuple(names)


def _index(name: str, key: Any) -> int:
    text = str(key.value)
    if not re.fullmatch(r"\d+", text):
        raise AnnotationError(
            name, f"a class index must be a whole number >= 0, not {text!r}", _line(key)
        )
    return int(text)

"""Why no ground-truth image found its predictions: a diagnosis for the one-line error.

When not a single ground-truth image pairs with a prediction, the numbers would say only that
every object was missed, with a warning per image. That is nearly always a wrong folder, a
naming convention or a format given as another, and the file names say which: this module
compares the two sets of names and guesses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence

from vocmatch.errors import Message, Option
from vocmatch.readers.formats import PREDICTION_FORMATS, PredictionFormat

__all__ = ["IMAGE_SUFFIXES", "no_pairs_reason", "other_files", "paired"]

#: Suffixes of picture files, left in an annotation's name by some exporters (``a.jpg.xml``).
IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")

_EXAMPLES = 3


def other_files(root: str | os.PathLike[str], limit: int = 10_000) -> list[str]:
    """Names of the files below ``root`` that are not ``*.xml`` (at most ``limit``), sorted.

    Args:
        root: A directory.
        limit: How many names to collect at most.

    Returns:
        Paths relative to ``root``, ``/``-separated; empty when ``root`` cannot be listed.
    """
    found: list[str] = []
    top = os.fspath(root)
    for folder, dirs, files in os.walk(top, onerror=None):
        dirs.sort()
        for name in sorted(files):
            if not name.lower().endswith(".xml"):
                found.append(os.path.relpath(os.path.join(folder, name), top).replace(os.sep, "/"))
                if len(found) >= limit:
                    return found
    return found


def _quoted(names: Sequence[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_EXAMPLES])
    return shown + (", ..." if len(names) > _EXAMPLES else "")


def _image_suffix(key: str) -> str | None:
    lower = key.lower()
    return next((s for s in IMAGE_SUFFIXES if lower.endswith(s)), None)


def _first_line(path: str) -> str | None:
    """The first non-blank line of a file's first 4 KiB, or None when it has none or cannot
    be read."""
    try:
        with open(path, "rb") as file:
            head = file.read(4096)
    except OSError:
        return None
    lines = head.decode("utf-8-sig", errors="replace").splitlines()
    return next((line for line in lines if line.strip()), None)


def _told_apart(
    pred_dir: str, found: Sequence[str], records: Sequence[PredictionFormat]
) -> list[PredictionFormat]:
    """Of formats whose files look alike, those whose line shape the first file's first line
    has; all of them when it has none's or cannot be read."""
    if len(records) < 2:
        return list(records)
    line = _first_line(os.path.join(pred_dir, found[0]))
    if line is None:
        return list(records)
    shaped = [r for r in records if r.hint is not None and re.fullmatch(r.hint.line, line)]
    return shaped or list(records)


def _suggestion(record: PredictionFormat) -> list[str | Option]:
    """The option that reads a format's files, with what it needs."""
    assert record.hint is not None
    tail: list[str | Option] = []
    if record.table_required and record.table is not None:
        tail = [" ", Option(record.table, placeholder="FILE")]
    elif record.one_file:
        tail = [" with the file as ", Option("pred")]
    return [f"{record.hint.guess}use ", Option("pred_format", record.name), *tail]


def _formats_guess(pred_dir: str, others: Sequence[str]) -> str:
    """What a prediction folder without XML holds, and the option that reads it."""
    if not others:
        return f"{pred_dir} holds no files at all (an empty or wrong folder?)"
    hinted = [record for record in PREDICTION_FORMATS.values() if record.hint]
    for rank in sorted({record.hint.rank for record in hinted if record.hint}):
        for pattern in dict.fromkeys(
            r.hint.pattern for r in hinted if r.hint and r.hint.rank == rank
        ):
            records = [
                r for r in hinted if r.hint and (r.hint.rank, r.hint.pattern) == (rank, pattern)
            ]
            hint = records[0].hint
            assert hint is not None
            found = [n for n in others if hint.matches(n)]
            if not found:
                continue
            parts: list[str | Option] = [
                f"{pred_dir} holds {hint.holds} ({_quoted(found)}), not XML: "
            ]
            for index, record in enumerate(_told_apart(pred_dir, found, records)):
                parts += (["; or "] if index else []) + _suggestion(record)
            return Message(*parts)
    return f"{pred_dir} holds no .xml files ({len(others)} other files: {_quoted(others)})"


def no_pairs_reason(
    gt_keys: Sequence[str],
    pred_keys: Sequence[str],
    pred_dir: str,
    others: Sequence[str] = (),
) -> str:
    """The guess, for the error line, of why no ground-truth key is a prediction key.

    Args:
        gt_keys: Keys of the ground-truth images (relative paths without ``.xml``).
        pred_keys: Keys of the prediction files.
        pred_dir: The prediction folder as the user gave it.
        others: Files of the prediction folder that are not XML (:func:`other_files`).

    Returns:
        One sentence, without a full stop.

    >>> no_pairs_reason(["a", "b"], ["a.jpg", "b.jpg"], "pred").split(":")[0]
    "prediction files are named '*.jpg.xml' ('a.jpg.xml') where the ground truth has 'a.xml'"
    >>> no_pairs_reason(["a"], ["labels/a"], "pred").split(": ")[1]
    'give pred/labels as pred'
    """
    if not pred_keys:
        return _formats_guess(pred_dir, others)
    gt_set = set(gt_keys)
    # Picture suffixes left in the names, on either side.
    for keys, other, side, other_side in (
        (pred_keys, gt_set, "prediction", "the ground truth"),
        (gt_keys, set(pred_keys), "ground-truth", "the predictions"),
    ):
        for key in keys:
            suffix = _image_suffix(key)
            if suffix is not None and key[: -len(suffix)] in other:
                return (
                    f"{side} files are named '*{suffix}.xml' ({key + '.xml'!r}) where "
                    f"{other_side} {'has' if other_side == 'the ground truth' else 'have'} "
                    f"{key[: -len(suffix)] + '.xml'!r}: rename them without {suffix!r}"
                )
    # The same names one folder down (a run's output folder inside the predictions' folder).
    for key in pred_keys:
        folder, _, base = key.rpartition("/")
        if folder and base in gt_set:
            return Message(
                f"the prediction files sit one folder down ({key + '.xml'!r} for "
                f"{base + '.xml'!r}): give {pred_dir.rstrip('/')}/{folder} as ",
                Option("pred"),
            )
    gt_bases = {k.rpartition("/")[2]: k for k in gt_keys}
    for key in pred_keys:
        if "/" not in key and key in gt_bases:
            return (
                f"the ground truth is in subfolders ({gt_bases[key] + '.xml'!r}) and the "
                f"predictions are not ({key + '.xml'!r}): keys are paths relative to each folder"
            )
    folded = {k.casefold(): k for k in gt_keys}
    for key in pred_keys:
        if key.casefold() in folded:
            return (
                f"names differ only in case ({key + '.xml'!r} and "
                f"{folded[key.casefold()] + '.xml'!r}); pairing is case-sensitive"
            )
    return (
        f"no file name in common (ground truth: {_quoted(sorted(gt_keys))}; predictions: "
        f"{_quoted(sorted(pred_keys))}): a wrong folder?"
    )


def paired(gt_keys: Collection[str], pred_keys: Collection[str]) -> bool:
    """Some ground-truth key is a prediction key."""
    small, large = sorted((gt_keys, pred_keys), key=len)
    wanted = set(large)
    return any(key in wanted for key in small)

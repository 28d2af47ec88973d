"""A hint when classes found only in the predictions are ground-truth classes under the
names of a built-in class map (:class:`MapHint`, found by
:func:`vocmatch.evaluation.class_map.builtin_map_hint`): a COCO model's ``motorcycle`` on
VOC's ``motorbike``.

A module of its own, imported when such a hint is found: a run without one builds no hint's
record.
"""

from __future__ import annotations

from dataclasses import dataclass

from vocmatch.errors import Message, Option
from vocmatch.evaluation.class_map import SHOWN_NAMES

__all__ = ["MapHint"]


@dataclass(frozen=True, slots=True)
class MapHint:
    """A built-in class map that would give prediction-only classes ground-truth names.

    Attributes:
        name: The built-in map's name (``coco-to-voc``).
        renamed: ``(prediction name, ground-truth name)`` for each class it would rename.
    """

    name: str
    renamed: tuple[tuple[str, str], ...]

    def message(self) -> Message:
        """What to do, naming the option that gives the map.

        >>> message = MapHint("coco-to-voc", (("motorcycle", "motorbike"),)).message()
        >>> print(message.split(": ")[0][-47:])
        under other names ('motorcycle' is 'motorbike')
        >>> print(message.split("; ")[-1])
        rename them with class_map='coco-to-voc'
        """
        pairs = ", ".join(f"{pred!r} is {gt!r}" for pred, gt in self.renamed[:SHOWN_NAMES])
        more = len(self.renamed) - SHOWN_NAMES
        pairs += f", and {more:,} more" if more > 0 else ""
        return Message(
            f"classes only in predictions are ground-truth classes under other names ({pairs}):"
            " scored as false positives, their objects as missed; rename them with ",
            Option("class_map", self.name),
        )

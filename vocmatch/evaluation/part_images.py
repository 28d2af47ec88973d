"""Each image's result made from a part's match records as the part comes back, so that the
evaluation of the joined records only puts them together in key order.

An image's result (:class:`~vocmatch.evaluation.result.ImageResult`) is read from that
image's own counts, keys and paths, and the protocol's sweep thresholds: a part's images give
the results the joined records give them, bit for bit. One thing is read from every image:
which reading of the scores the counts are taken under (the scored one when some prediction
has a score). A part's results are made under the scored reading, and are used only where the
joined records' evaluation reads that one (:func:`joined_image_results`); else they are made
again from the joined records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vocmatch.core.protocol import Conventions
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.result import ImageResult

__all__ = ["PartImages", "joined_image_results", "part_image_results"]


@dataclass(frozen=True, slots=True)
class PartImages:
    """The results of a part's images, in key order.

    Attributes:
        keys: The part's image keys, in key order.
        images: Each image's result, in the same order.
    """

    keys: tuple[str, ...]
    images: list[ImageResult]


def part_image_results(records: MatchRecords, conv: Conventions) -> PartImages:
    """The results of ``records``' images under the scored reading of their counts, as
    :func:`~vocmatch.evaluation.from_records.evaluation_of` makes them of records holding
    these images among others."""
    from vocmatch.evaluation.from_records import image_results

    records = records.in_key_order()
    return PartImages(records.keys, image_results(records, records.counts, conv))


def joined_image_results(
    parts: Sequence[PartImages], records: MatchRecords
) -> list[ImageResult] | None:
    """The parts' results in key order: those :func:`evaluation_of` makes of ``records``
    (the parts' records joined, in key order); None where the parts' do not serve (their
    images are not exactly the records', or the evaluation reads the counts of no score)."""
    if not (records.notes.scored or records.unscored is None):
        return None
    ordered = sorted((p for p in parts if p.keys), key=lambda p: p.keys[0])
    keys: list[str] = []
    images: list[ImageResult] = []
    for part in ordered:
        keys.extend(part.keys)
        images.extend(part.images)
    if len(keys) != len(records.keys) or keys != list(records.keys):
        return None
    return images

"""Every limit on the size of a file vocmatch reads, in one place.

A file over its limit is refused from its size before a byte is read (and no more than the
limit and one byte is ever read, even from a file that grows): a wrong path, a huge or
crafted file costs a line, not the machine's memory. The modules that read each kind of
file take these as their defaults; the limits that a user may need to raise are options
(``--max-file-size``, ``max_bytes=``).
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_JSON_BYTES",
    "MAX_MAP_BYTES",
    "MAX_NAMES_BYTES",
    "MAX_SPLIT_BYTES",
    "MAX_STATE_BYTES",
    "MAX_THRESHOLD_FILE_BYTES",
]

#: An annotation file (VOC XML; ``--max-file-size``, ``max_file_size=``). VOC files are a
#: few kilobytes; a 32 MiB file of nothing but objects takes about 7 s and 0.7 GB to parse.
DEFAULT_MAX_BYTES = 32 * 1024 * 1024

#: A prediction JSON file (COCO results, LabelMe, ...): a COCO results list for 5,000
#: images of 100 detections is about 50 MB; the file is parsed in memory.
MAX_JSON_BYTES = 1024**3

#: A file of per-class score thresholds (one line per class).
MAX_THRESHOLD_FILE_BYTES = 16 * 1024 * 1024

#: A class map file.
MAX_MAP_BYTES = 16 * 1024 * 1024

#: A class names file (COCO's data.yaml with its download script is 3 kB).
MAX_NAMES_BYTES = 16 * 1024 * 1024

#: An image list of a split (VOC's are a few hundred kilobytes).
MAX_SPLIT_BYTES = 64 * 1024 * 1024

#: An evaluator state file (``merge --max-file-size``, ``max_bytes=``): a state takes about
#: 25 bytes a prediction, so this is some 170 million predictions.
MAX_STATE_BYTES = 4 * 1024**3

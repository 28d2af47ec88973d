"""The compiled fast reader (``fastxml.c``), used by :mod:`vocmatch.readers.scan`."""

Size = tuple[bytes, bytes, bytes | None]
Read = tuple[
    bytes | None,  # <filename> text as written, None where absent
    Size | None,  # <width>, <height>, <depth> texts as written, None without <size>
    list[bytes],  # each object's <name> text as written
    bytes,  # (B, 4) float64 x1, y1, x2, y2
    bytes,  # (B,) float64 scores, NaN where absent
    bytes,  # (B,) bool difficult
    bytes,  # (B,) bool truncated
    bytes,  # (B,) bool occluded
    list[bytes | None],  # each object's <pose> text as written, None where absent
]

def scan(data: bytes, max_coordinate: float, /) -> Read | None: ...
def read_number(text: bytes, /) -> float | None: ...

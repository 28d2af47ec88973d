"""The compiled writer of JSON float lists and image rows (``fastjson.c``), as ASCII bytes,
used through :func:`vocmatch.render.json_report.dumps_chunks`."""

from collections.abc import Callable
from typing import Any

def float_list(values: Any, /) -> bytes: ...
def image_rows(
    images: Any,
    separator: str,
    sweep: tuple[tuple[float, str], ...],
    fallback: Callable[[Any], str],
    /,
) -> bytes: ...

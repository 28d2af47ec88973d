"""The compiled writer of JSON float lists and image rows (``fastjson.c``), used through
:func:`vocmatch.render.json_report.dumps_indented`."""

from collections.abc import Callable
from typing import Any

def float_list(values: Any, /) -> str: ...
def image_rows(
    images: Any,
    separator: str,
    sweep: tuple[tuple[float, str], ...],
    fallback: Callable[[Any], str],
    /,
) -> str: ...

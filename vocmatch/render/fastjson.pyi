"""The compiled writer of JSON float lists (``fastjson.c``), used through
:func:`vocmatch.render.json_report.dumps_indented`."""

from typing import Any

def float_list(values: Any, /) -> str: ...

"""``python -m vocmatch``."""

from vocmatch.cli import run

run()

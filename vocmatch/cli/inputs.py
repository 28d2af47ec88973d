"""The inputs a command names, as the report-path checks see them."""

from __future__ import annotations

import os
from pathlib import Path

from vocmatch.cli.console import xml_folders
from vocmatch.files import InputFolder
from vocmatch.run.evaluate import PredFormat, prediction_suffixes


def prediction_inputs(pred_dir: Path, pred_format: PredFormat) -> list[InputFolder]:
    """The folders a run reads predictions from (reports must not be written there)."""
    suffixes = prediction_suffixes(pred_format)
    if suffixes is None:
        return []
    if pred_format == "voc":
        return xml_folders(pred_dir)
    return [InputFolder(os.fspath(pred_dir), suffixes)]

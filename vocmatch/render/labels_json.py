"""Label-set and segmentation-mask evaluations as JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from vocmatch.version import __version__

if TYPE_CHECKING:
    # Only for the annotations: a report imports the modules of the parts it writes.
    from vocmatch.evaluation.labels_and_masks.labels import (
        LabelClassResult,
        LabelEvaluation,
        LabelImageResult,
    )
    from vocmatch.evaluation.labels_and_masks.seg import SegEvaluation

__all__ = [
    "labels_to_json",
    "labels_to_json_dict",
    "seg_to_json",
    "seg_to_json_dict",
]


def _label_class(cls: LabelClassResult) -> dict[str, Any]:
    return {
        "name": cls.name,
        "gt": cls.gt,
        "pred": cls.pred,
        "tp": cls.tp,
        "fp": cls.fp,
        "fn": cls.fn,
        "ignored": cls.ignored,
        "iou": cls.iou,
    }


def _label_image(image: LabelImageResult) -> dict[str, Any]:
    return {
        "image": image.key,
        "gt_path": image.gt_path,
        "pred_path": image.pred_path,
        "gt": list(image.gt),
        "pred": list(image.pred),
        "ignored": list(image.ignored),
        "missed": list(image.missed),
        "extra": list(image.extra),
        "jaccard": image.jaccard,
        "dice": image.dice,
    }


def labels_to_json_dict(evaluation: LabelEvaluation) -> dict[str, Any]:
    """A label-set evaluation as plain JSON-ready data (documented in docs/outputs.md).

    Class names are lower-case; sets are sorted lists; missing values are None.
    """
    return {
        "vocmatch": __version__,
        "mode": "labels",
        "conventions": {"difficult": evaluation.difficult, "lower_case": True},
        "summary": {
            "images": len(evaluation.images),
            "tp": evaluation.tp,
            "fp": evaluation.fp,
            "fn": evaluation.fn,
            "macro_iou": evaluation.macro_iou,
            "micro_iou": evaluation.micro_iou,
            "mean_jaccard": evaluation.mean_jaccard,
            "mean_dice": evaluation.mean_dice,
            "exact_match": evaluation.exact_match,
            "skipped": len(evaluation.skipped),
            "missing_pred": len(evaluation.missing_pred),
            "orphan_pred": len(evaluation.orphan_pred),
        },
        "classes": [_label_class(c) for c in evaluation.classes],
        "images": [_label_image(i) for i in evaluation.images],
        "skipped": [
            {"path": f.path, "line": f.line, "error": f.message} for f in evaluation.skipped
        ],
        "missing_pred": list(evaluation.missing_pred),
        "orphan_pred": list(evaluation.orphan_pred),
        "notes": list(evaluation.notes),
    }


def labels_to_json(evaluation: LabelEvaluation) -> str:
    """The label-set evaluation as indented JSON text, ending in a newline."""
    return json.dumps(labels_to_json_dict(evaluation), indent=2, allow_nan=False) + "\n"


def seg_to_json_dict(evaluation: SegEvaluation) -> dict[str, Any]:
    """A segmentation evaluation as plain JSON-ready data: the version, the ``pred_void``
    convention, then
    :meth:`~vocmatch.evaluation.labels_and_masks.seg.SegEvaluation.to_json_dict`
    (``summary.miou``, ``classes[].iou``, ``images``, ``skipped``)."""
    return {
        "vocmatch": __version__,
        "mode": "seg",
        "pred_void": evaluation.pred_void,
        **evaluation.to_json_dict(),
    }


def seg_to_json(evaluation: SegEvaluation) -> str:
    """The segmentation evaluation as indented JSON text, ending in a newline."""
    return json.dumps(seg_to_json_dict(evaluation), indent=2, allow_nan=False) + "\n"

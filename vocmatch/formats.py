"""Machine-readable forms of an :class:`~vocmatch.evaluate.Evaluation`.

Every form is deterministic: images sorted by key, classes by name, keys in a fixed order.
"""

from __future__ import annotations

import json
from typing import Any

from vocmatch import __version__
from vocmatch.evaluate import ClassResult, Evaluation, ImageResult

__all__ = ["COCO_NAMES", "to_json", "to_json_dict"]

#: pycocotools' ``COCOeval.stats``, by position.
COCO_NAMES: tuple[str, ...] = (
    "AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl",
)  # fmt: skip


def _class(cls: ClassResult) -> dict[str, Any]:
    curve = None
    if cls.curve is not None:
        curve = {
            "recall": cls.curve.recall.tolist(),
            "precision": cls.curve.precision.tolist(),
            "scores": cls.curve.scores.tolist(),
        }
    return {
        "name": cls.name,
        "gt": cls.gt,
        "gt_ignored": cls.gt_ignored,
        "pred": cls.pred,
        "tp": cls.tp,
        "fp": cls.fp,
        "fn": cls.fn,
        "precision": cls.precision,
        "recall": cls.recall,
        "f1": cls.f1,
        "ap": cls.ap,
        "in_map": cls.in_map,
        "curve": curve,
    }


def _image(image: ImageResult) -> dict[str, Any]:
    return {
        "image": image.key,
        "gt_path": image.gt_path,
        "pred_path": image.pred_path,
        "gt": image.gt,
        "gt_ignored": image.gt_ignored,
        "pred": image.pred,
        "tp": image.tp,
        "fp": image.fp,
        "fn": image.fn,
        "mean_iou": image.mean_iou,
        "sweep": {f"{s.threshold:.2f}": {"tp": s.tp, "fp": s.fp, "fn": s.fn} for s in image.sweep},
    }


def to_json_dict(evaluation: Evaluation) -> dict[str, Any]:
    """The evaluation as plain JSON-ready data (documented in the README)."""
    conv = evaluation.conventions
    s = evaluation.summary
    data: dict[str, Any] = {
        "vocmatch": __version__,
        "conventions": {
            "protocol": conv.protocol,
            "iou_threshold": conv.iou_threshold,
            "strict_threshold": conv.strict_threshold,
            "pixel_inclusive": conv.pixel_inclusive,
            "match_rule": conv.match_rule,
            "difficult": conv.difficult,
            "interpolation": conv.interpolation,
            "ap_thresholds": list(conv.ap_thresholds),
            "max_dets": conv.max_dets,
        },
        "summary": {
            "images": s.images,
            "gt": s.gt,
            "pred": s.pred,
            "tp": s.tp,
            "fp": s.fp,
            "fn": s.fn,
            "precision": s.precision,
            "recall": s.recall,
            "f1": s.f1,
            "map": s.map,
            "skipped": s.skipped,
            "missing_pred": s.missing_pred,
            "orphan_pred": s.orphan_pred,
        },
        "classes": [_class(c) for c in evaluation.classes],
        "images": [_image(i) for i in evaluation.images],
    }
    if evaluation.coco is not None:
        data["coco"] = dict(zip(COCO_NAMES, evaluation.coco.as_list(), strict=True))
    data["skipped"] = [
        {"path": f.path, "line": f.line, "error": f.message} for f in evaluation.skipped
    ]
    data["missing_pred"] = list(evaluation.missing_pred)
    data["orphan_pred"] = list(evaluation.orphan_pred)
    data["notes"] = list(evaluation.notes)
    return data


def to_json(evaluation: Evaluation) -> str:
    """The evaluation as indented JSON text, ending in a newline."""
    return json.dumps(to_json_dict(evaluation), indent=2, allow_nan=False) + "\n"

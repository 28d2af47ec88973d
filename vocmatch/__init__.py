"""vocmatch: score object-detection annotations in PASCAL VOC / LabelImg XML.

The public API is listed in ``__all__``. Each name is imported when first used (PEP 562), so
``import vocmatch`` loads neither numpy, lxml nor rich.

Example:
    >>> import vocmatch
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     report = vocmatch.evaluate("fixtures/demo/gt", "fixtures/demo/pred", protocol="voc07")
    >>> print(caught[0].message)  # the demo's street_05 has no prediction file
    no prediction file for 'street_05': its objects count as missed (missing_pred lists it)
    >>> print(vocmatch.render_text(report, "markdown").splitlines()[0])
    ## vocmatch evaluation
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vocmatch.lazy import lazy_attribute
from vocmatch.version import __version__

#: Each public name and the module that defines it.
_WHERE = {
    # whole runs
    "evaluate": "vocmatch.run.evaluate",
    "EvalRequest": "vocmatch.run.evaluate",
    "EvalReport": "vocmatch.evidence.run_report",
    "Evidence": "vocmatch.evidence.run_report",
    "compare": "vocmatch.run.compare",
    "explain": "vocmatch.run.explain",
    "ExplainRequest": "vocmatch.run.explain",
    "Explanation": "vocmatch.evidence.explanation",
    "DiffRequest": "vocmatch.run.compare",
    "DiffReport": "vocmatch.run.compare",
    "find_suspects": "vocmatch.run.find_suspects",
    "SuspectsRequest": "vocmatch.run.find_suspects",
    "operating_thresholds": "vocmatch.run.extras",
    "evaluate_labels": "vocmatch.run.evaluate_labels",
    "LabelsRequest": "vocmatch.run.evaluate_labels",
    "LabelEvaluation": "vocmatch.evaluation.labels_and_masks.labels",
    # evaluation state: arrays in, shards merged exactly
    "Evaluator": "vocmatch.evaluation.shards.incremental",
    "evaluator_for": "vocmatch.run.shard_states",
    "read_states": "vocmatch.run.shard_states",
    # outputs
    "render_text": "vocmatch.render.outputs",
    "render_html": "vocmatch.render.outputs",
    "render_labels_text": "vocmatch.render.outputs",
    "TableOptions": "vocmatch.render.outputs",
    # the parts
    "evaluate_directories": "vocmatch.evaluation.scoring",
    "Evaluation": "vocmatch.evaluation.scoring",
    "protocol": "vocmatch.core.protocol",
    "Conventions": "vocmatch.core.protocol",
    "iou_matrix": "vocmatch.core.iou",
    "nms": "vocmatch.core.nms",
    "Preparation": "vocmatch.core.preparation",
    "ULTRALYTICS_PREPARATION": "vocmatch.core.preparation",
    "Box": "vocmatch.core.model",
    "ImageAnnotation": "vocmatch.core.model",
    "AnnotationSet": "vocmatch.readers.parse",
    # errors
    "VocmatchError": "vocmatch.errors",
    "InputError": "vocmatch.errors",
    "RequestError": "vocmatch.errors",
    "OutputError": "vocmatch.errors",
    "StateError": "vocmatch.errors",
    "DistributedError": "vocmatch.errors",
    "AnnotationError": "vocmatch.errors",
    "VocmatchWarning": "vocmatch.errors",
    "ClassMapWarning": "vocmatch.errors",
    "SwappedInputsWarning": "vocmatch.errors",
    "MissingPredictionWarning": "vocmatch.errors",
}

__all__ = [
    "ULTRALYTICS_PREPARATION",
    "AnnotationError",
    "AnnotationSet",
    "Box",
    "ClassMapWarning",
    "Conventions",
    "DiffReport",
    "DiffRequest",
    "DistributedError",
    "EvalReport",
    "EvalRequest",
    "Evaluation",
    "Evaluator",
    "Evidence",
    "ExplainRequest",
    "Explanation",
    "ImageAnnotation",
    "InputError",
    "LabelEvaluation",
    "LabelsRequest",
    "MissingPredictionWarning",
    "OutputError",
    "Preparation",
    "RequestError",
    "StateError",
    "SuspectsRequest",
    "SwappedInputsWarning",
    "TableOptions",
    "VocmatchError",
    "VocmatchWarning",
    "__version__",
    "compare",
    "evaluate",
    "evaluate_directories",
    "evaluate_labels",
    "evaluator_for",
    "explain",
    "find_suspects",
    "iou_matrix",
    "nms",
    "operating_thresholds",
    "protocol",
    "read_states",
    "render_html",
    "render_labels_text",
    "render_text",
]

if TYPE_CHECKING:
    from vocmatch.core.iou import iou_matrix
    from vocmatch.core.model import Box, ImageAnnotation
    from vocmatch.core.nms import nms
    from vocmatch.core.preparation import ULTRALYTICS_PREPARATION, Preparation
    from vocmatch.core.protocol import Conventions, protocol
    from vocmatch.errors import (
        AnnotationError,
        ClassMapWarning,
        DistributedError,
        InputError,
        MissingPredictionWarning,
        OutputError,
        RequestError,
        StateError,
        SwappedInputsWarning,
        VocmatchError,
        VocmatchWarning,
    )
    from vocmatch.evaluation.labels_and_masks.labels import LabelEvaluation
    from vocmatch.evaluation.scoring import Evaluation, evaluate_directories
    from vocmatch.evaluation.shards.incremental import Evaluator
    from vocmatch.evidence.explanation import Explanation
    from vocmatch.evidence.run_report import EvalReport, Evidence
    from vocmatch.readers.parse import AnnotationSet
    from vocmatch.render.outputs import (
        TableOptions,
        render_html,
        render_labels_text,
        render_text,
    )
    from vocmatch.run.compare import DiffReport, DiffRequest, compare
    from vocmatch.run.evaluate import (
        EvalRequest,
        evaluate,
        evaluator_for,
        read_states,
    )
    from vocmatch.run.evaluate_labels import LabelsRequest, evaluate_labels
    from vocmatch.run.explain import ExplainRequest, explain
    from vocmatch.run.extras import operating_thresholds
    from vocmatch.run.find_suspects import SuspectsRequest, find_suspects


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562)."""
    return lazy_attribute(__name__, _WHERE, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})

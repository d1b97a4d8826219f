"""Everything Inspect AI finds under the `tracegrade/` prefix: Inspect imports
this module through the `inspect_ai` entry point, and importing the decorated
tasks, scorers, solver and metrics registers them."""

from .scorers import (
    answer_failures,
    context_precision,
    context_recall,
    criteria_shares,
    lucky_answers,
    ordered_extraction_scorer,
    scored_runs,
    stage_diagnosis_scorer,
    stage_shares,
)
from .tasks import ordered_extraction_recorded, replay, stage_diagnosis
from .tasks.live import ordered_extraction

__all__ = [
    "answer_failures",
    "context_precision",
    "context_recall",
    "criteria_shares",
    "lucky_answers",
    "ordered_extraction",
    "ordered_extraction_recorded",
    "ordered_extraction_scorer",
    "replay",
    "scored_runs",
    "stage_diagnosis",
    "stage_diagnosis_scorer",
    "stage_shares",
]

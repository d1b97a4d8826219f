"""Everything Inspect AI finds under the `tracegrade/` prefix.

Inspect imports this module through the `inspect_ai` entry point; importing
the decorated functions is what registers them: the tasks
`tracegrade/stage_diagnosis` and `tracegrade/ordered_extraction_recorded`
(replays) and `tracegrade/ordered_extraction` (a live model), the scorers
`tracegrade/stage_diagnosis` and `tracegrade/ordered_extraction` (Inspect
keys its registry by type, so a task and a scorer may share a name), the
`tracegrade/replay` solver and the metrics.
"""

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

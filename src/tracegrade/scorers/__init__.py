"""Inspect AI scorers over the pure core, registered as `tracegrade/...`."""

from .answer_parsing import UnreadableAnswer, parse_answer_ids
from .arguments import ScorerArgumentError
from .extraction import extraction_score, ordered_extraction_scorer
from .grader import LabelScorerError, label_from_value
from .metrics import (
    answer_failures,
    context_precision,
    context_recall,
    criteria_shares,
    lucky_answers,
    scored_runs,
    stage_modes,
    stage_shares,
    step_recall,
)
from .outcome import ANSWER_FAILURES, DATA_ERRORS, RUN_ERRORS
from .stage import diagnosis_score, stage_diagnosis_scorer
from .store import RetrievalTrace

__all__ = [
    "ANSWER_FAILURES", "DATA_ERRORS", "RUN_ERRORS", "LabelScorerError",
    "RetrievalTrace", "ScorerArgumentError", "UnreadableAnswer", "answer_failures",
    "context_precision", "context_recall", "criteria_shares", "diagnosis_score",
    "extraction_score", "label_from_value", "lucky_answers",
    "ordered_extraction_scorer", "parse_answer_ids", "scored_runs",
    "stage_diagnosis_scorer", "stage_modes", "stage_shares", "step_recall",
]  # fmt: skip

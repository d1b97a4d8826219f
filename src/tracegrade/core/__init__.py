"""The rules, and the pure functions of their ID lists; no Inspect AI import."""

from .canonical import canonical_json
from .errors import InvalidRecord
from .extraction import ExtractionResult, grade_extraction, has_duplicates
from .itemise import Itemisation, itemise
from .javascript import js_sorted
from .recall import id_recall, stage_precision, stage_recall
from .stage import StageResult, diagnose_stage

__all__ = [
    "ExtractionResult", "InvalidRecord", "Itemisation", "StageResult", "canonical_json",
    "diagnose_stage", "grade_extraction", "has_duplicates", "id_recall", "itemise",
    "js_sorted", "stage_precision", "stage_recall",
]  # fmt: skip

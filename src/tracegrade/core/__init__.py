"""The framework-free rules: no Inspect AI import below this package."""

from .canonical import canonical_json
from .errors import InvalidRecord
from .extraction import ExtractionResult, grade_extraction, has_duplicates
from .javascript import js_sorted
from .stage import StageResult, diagnose_stage

__all__ = [
    "ExtractionResult",
    "InvalidRecord",
    "StageResult",
    "canonical_json",
    "diagnose_stage",
    "grade_extraction",
    "has_duplicates",
    "js_sorted",
]

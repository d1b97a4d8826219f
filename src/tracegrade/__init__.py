"""tracegrade: deterministic diagnostic scorers for Inspect AI.

The rules live in `tracegrade.core`, which imports nothing from Inspect AI,
so `diagnose_stage` and `grade_extraction` stay cheap to import and call.
"""

from .core import (
    ExtractionResult,
    InvalidRecord,
    StageResult,
    canonical_json,
    diagnose_stage,
    grade_extraction,
)

__all__ = [
    "ExtractionResult",
    "InvalidRecord",
    "StageResult",
    "canonical_json",
    "diagnose_stage",
    "grade_extraction",
]

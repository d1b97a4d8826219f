"""The framework-free rules: no Inspect AI import below this package.

`itemise` is here too, though it is no rule of the reference evaluators:
it is a pure function of the same ID lists, shared by the scorer, its
explanations and `tracegrade report`.
"""

from .canonical import canonical_json
from .errors import InvalidRecord
from .extraction import ExtractionResult, grade_extraction, has_duplicates
from .itemise import Itemisation, itemise
from .javascript import js_sorted
from .stage import StageResult, diagnose_stage

__all__ = [
    "ExtractionResult",
    "InvalidRecord",
    "Itemisation",
    "StageResult",
    "canonical_json",
    "diagnose_stage",
    "grade_extraction",
    "has_duplicates",
    "itemise",
    "js_sorted",
]

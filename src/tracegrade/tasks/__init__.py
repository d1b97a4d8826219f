"""Inspect AI tasks that replay recorded runs, and the replay solver."""

from .recorded import (
    extraction_input_score,
    ordered_extraction_recorded,
    stage_diagnosis,
    stage_input_score,
)
from .replay import replay

__all__ = [
    "extraction_input_score", "ordered_extraction_recorded", "replay",
    "stage_diagnosis", "stage_input_score",
]  # fmt: skip

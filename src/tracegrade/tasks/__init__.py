"""Inspect AI tasks that replay recorded runs, and the replay solver."""

from .recorded import ordered_extraction_recorded, stage_diagnosis
from .replay import replay

__all__ = ["ordered_extraction_recorded", "replay", "stage_diagnosis"]

"""tracegrade's scorers for Inspect AI, loaded on first use: importing is quick."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not `typing`'s: the program's start-up imports little

if TYPE_CHECKING:
    from typing import Any

    from .core import (
        ExtractionResult,
        InvalidRecord,
        StageResult,
        canonical_json,
        diagnose_stage,
        grade_extraction,
    )
    from .datasets import (
        DatasetError,
        ordered_extraction_dataset,
        stage_diagnosis_dataset,
    )
    from .labels import LabelsError
    from .scorers import (
        LabelScorerError,
        RetrievalTrace,
        ScorerArgumentError,
        ordered_extraction_scorer,
        stage_diagnosis_scorer,
    )
    from .scorers.arguments import TaskArgumentError
    from .table import ScoreTableError, score_table
    from .tasks import ordered_extraction_recorded, stage_diagnosis
    from .tasks.live import ordered_extraction

_LAZY = {
    name: f"tracegrade.{module}"
    for module, names in {
        "core": "ExtractionResult InvalidRecord StageResult canonical_json "
        "diagnose_stage grade_extraction",
        "datasets": "DatasetError ordered_extraction_dataset stage_diagnosis_dataset",
        "labels": "LabelsError",
        "scorers": "LabelScorerError RetrievalTrace ScorerArgumentError "
        "ordered_extraction_scorer stage_diagnosis_scorer",
        "scorers.arguments": "TaskArgumentError",
        "table": "ScoreTableError score_table",
        "tasks": "ordered_extraction_recorded stage_diagnosis",
        "tasks.live": "ordered_extraction",
    }.items()
    for name in names.split()
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracegrade' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "DatasetError", "ExtractionResult", "InvalidRecord", "LabelScorerError",
    "LabelsError", "RetrievalTrace", "ScoreTableError", "ScorerArgumentError",
    "StageResult", "TaskArgumentError", "canonical_json", "diagnose_stage",
    "grade_extraction", "ordered_extraction", "ordered_extraction_dataset",
    "ordered_extraction_recorded", "ordered_extraction_scorer", "score_table",
    "stage_diagnosis", "stage_diagnosis_dataset", "stage_diagnosis_scorer",
]  # fmt: skip

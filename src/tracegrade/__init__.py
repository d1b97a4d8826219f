"""tracegrade: deterministic diagnostic scorers for Inspect AI.

The rules live in `tracegrade.core`, which imports nothing from Inspect AI,
so `diagnose_stage` and `grade_extraction` stay cheap to import and call.
Every name is loaded on first use, so `import tracegrade` alone never
imports Inspect AI, and the program's start-up (`__main__`) begins at once.
"""

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
    "DatasetError": "tracegrade.datasets",
    "ExtractionResult": "tracegrade.core",
    "InvalidRecord": "tracegrade.core",
    "StageResult": "tracegrade.core",
    "TaskArgumentError": "tracegrade.scorers.arguments",
    "canonical_json": "tracegrade.core",
    "diagnose_stage": "tracegrade.core",
    "grade_extraction": "tracegrade.core",
    "LabelScorerError": "tracegrade.scorers",
    "LabelsError": "tracegrade.labels",
    "RetrievalTrace": "tracegrade.scorers",
    "ScoreTableError": "tracegrade.table",
    "ScorerArgumentError": "tracegrade.scorers",
    "ordered_extraction": "tracegrade.tasks.live",
    "ordered_extraction_dataset": "tracegrade.datasets",
    "ordered_extraction_recorded": "tracegrade.tasks",
    "ordered_extraction_scorer": "tracegrade.scorers",
    "stage_diagnosis": "tracegrade.tasks",
    "stage_diagnosis_dataset": "tracegrade.datasets",
    "stage_diagnosis_scorer": "tracegrade.scorers",
    "score_table": "tracegrade.table",
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
    "DatasetError",
    "ExtractionResult",
    "InvalidRecord",
    "LabelScorerError",
    "LabelsError",
    "RetrievalTrace",
    "ScoreTableError",
    "ScorerArgumentError",
    "StageResult",
    "TaskArgumentError",
    "canonical_json",
    "diagnose_stage",
    "grade_extraction",
    "ordered_extraction",
    "ordered_extraction_dataset",
    "ordered_extraction_recorded",
    "ordered_extraction_scorer",
    "score_table",
    "stage_diagnosis",
    "stage_diagnosis_dataset",
    "stage_diagnosis_scorer",
]

"""RAG failure stage, in the reference evaluator's order of checks (docs/parity.md)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from .fields import as_record, id_list
from .javascript import js_sorted

Stage = Literal["retrieval", "generation", "pass"]


class Diagnosis(TypedDict):
    stage: Stage
    missing: list[str]


class Unresolved(TypedDict):
    stage: Literal["unresolved"]


class LabelError(TypedDict):
    error: Literal["answer-label"]


StageResult = Diagnosis | Unresolved | LabelError


def diagnose_stage(record: Any) -> StageResult:
    """Diagnose one run as the reference `evaluate` does."""
    record = as_record(record)
    required = [] if record.get("required") is None else id_list(record, "required")
    context = id_list(record, "context")
    correct = record.get("correct")

    if not required:
        return {"stage": "unresolved"}
    if type(correct) is not bool:
        return {"error": "answer-label"}
    # In place: `difference` would first copy the set.
    absent = set(required)
    absent.difference_update(context)
    missing = js_sorted(absent)
    stage: Stage = "retrieval" if missing else "pass" if correct else "generation"
    return {"stage": stage, "missing": missing}

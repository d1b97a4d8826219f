"""RAG failure-stage diagnosis: where did a run fail, retrieval or generation?

The rules, in the reference evaluator's order:

1. No required documents: nothing to diagnose, `{"stage": "unresolved"}`.
2. The staff label must be JSON `true` or `false`; anything else (absent,
   null, "yes", 1) is `{"error": "answer-label"}`. Labels are never guessed.
3. Required IDs absent from the supplied context (unique, in JavaScript
   sort order) make the stage `retrieval`, even when the answer was labelled
   correct: a lucky answer is a retrieval gap, not a grounded success.
4. With the context complete, the label decides: `pass` or `generation`.

Deliberate extension: `required` absent or null is `unresolved`, where the
reference throws; the source document calls a missing required set
"unprepared", not broken.
"""

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
    """Diagnose one run exactly as the reference `evaluate` does.

    Raises `InvalidRecord` for input the reference was never defined for,
    naming the field and quoting the value.
    """
    record = as_record(record)
    required = [] if record.get("required") is None else id_list(record, "required")
    context = id_list(record, "context")
    correct = record.get("correct")

    if not required:
        return {"stage": "unresolved"}
    if type(correct) is not bool:
        return {"error": "answer-label"}
    # Removing in place: `difference` would first copy the set, which for
    # thousands of IDs costs as much as the lookups themselves.
    absent = set(required)
    absent.difference_update(context)
    missing = js_sorted(absent)
    stage: Stage = "retrieval" if missing else "pass" if correct else "generation"
    return {"stage": stage, "missing": missing}

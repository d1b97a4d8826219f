"""Ordered extraction: did the answer keep every source ID, in source order?

The rules, in the reference evaluator's order:

1. A repeated ID in the source or in the answer breaks the unique-list
   contract: `{"error": "duplicate-id"}`. Nothing is deduplicated first.
2. Membership: the answer holds exactly the source's IDs (same count, every
   source ID present).
3. Order: membership, and every position equal. An alphabetised answer can
   keep every ID and still fail order; nothing is sorted or repaired.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from .fields import as_record, id_list


class Grade(TypedDict):
    membership: bool
    order: bool


class DuplicateError(TypedDict):
    error: Literal["duplicate-id"]


ExtractionResult = Grade | DuplicateError


def has_duplicates(ids: list[str]) -> bool:
    """True when an ID repeats; the reference compares `Set` size to length."""
    return len(set(ids)) != len(ids)


def grade_extraction(record: Any) -> ExtractionResult:
    """Grade one extraction exactly as the reference `evaluate` does.

    Raises `InvalidRecord` for input the reference was never defined for,
    naming the field and quoting the value.
    """
    record = as_record(record)
    source = id_list(record, "source")
    answer = id_list(record, "answer")

    answer_ids = set(answer)
    if has_duplicates(source) or len(answer_ids) != len(answer):
        return {"error": "duplicate-id"}
    membership = len(source) == len(answer) and answer_ids.issuperset(source)
    return {"membership": membership, "order": membership and source == answer}

"""Ordered extraction, in the reference evaluator's order of checks."""

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
    """Grade one extraction as the reference `evaluate` does."""
    record = as_record(record)
    source = id_list(record, "source")
    answer = id_list(record, "answer")

    answer_ids = set(answer)
    if has_duplicates(source) or len(answer_ids) != len(answer):
        return {"error": "duplicate-id"}
    membership = len(source) == len(answer) and answer_ids.issuperset(source)
    return {"membership": membership, "order": membership and source == answer}

"""Where an extraction answer went wrong, beside its grade: `dropped`,
`invented`, `first_order_break` and `kept_in_order` (docs/scores.md), for
the unique-ID lists the rules grade. No rule of the reference evaluator.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import TypedDict


class Itemisation(TypedDict):
    dropped: list[str]
    invented: list[str]
    first_order_break: int | None
    kept_in_order: int


def dropped_ids(source: Sequence[str], answer: Sequence[str]) -> list[str]:
    """The source IDs absent from the answer, in source order."""
    kept = set(answer)
    return [document_id for document_id in source if document_id not in kept]


def invented_ids(source: Sequence[str], answer: Sequence[str]) -> list[str]:
    """The answer IDs absent from the source, in answer order."""
    return dropped_ids(answer, source)


def first_order_break(source: Sequence[str], answer: Sequence[str]) -> int | None:
    """The first 1-based position where the lists differ (a list that ends
    first differs just after its end); None if they are equal."""
    for position, (expected, given) in enumerate(zip(source, answer, strict=False), 1):
        if expected != given:
            return position
    if len(source) == len(answer):
        return None
    return min(len(source), len(answer)) + 1


def kept_in_order(source: Sequence[str], answer: Sequence[str]) -> int:
    """The length of the longest common subsequence of two unique-ID lists.

    Without repeats, that is the longest increasing subsequence of the
    answer's source positions: O(n log n) by patience sorting, where the
    textbook dynamic programme is O(n * m). Repeats raise `ValueError`.
    """
    position = _positions(source)
    _positions(answer)
    return _longest_increasing(position, answer)


def itemise(source: list[str], answer: list[str]) -> Itemisation:
    """All four figures for two unique-ID lists; repeats raise `ValueError`."""
    if source == answer:  # the common passing answer: no search
        if len(set(source)) != len(source):
            raise ValueError("itemising needs ID lists without repeats")
        return {"dropped": [], "invented": [], "first_order_break": None,
                "kept_in_order": len(source)}  # fmt: skip
    position = _positions(source)
    answer_ids = set(answer)
    if len(answer_ids) != len(answer):
        raise ValueError("itemising needs ID lists without repeats")
    return {
        "dropped": [item for item in source if item not in answer_ids],
        "invented": [item for item in answer if item not in position],
        "first_order_break": first_order_break(source, answer),
        "kept_in_order": _longest_increasing(position, answer),
    }


def _positions(ids: Sequence[str]) -> dict[str, int]:
    position = {document_id: index for index, document_id in enumerate(ids)}
    if len(position) != len(ids):
        raise ValueError("itemising needs ID lists without repeats")
    return position


def _longest_increasing(position: Mapping[str, int], answer: Sequence[str]) -> int:
    # tails[k]: the smallest source position that ends an increasing
    # subsequence of length k + 1 so far; sorted, so bisect finds its place.
    tails: list[int] = []
    for document_id in answer:
        index = position.get(document_id)
        if index is not None:
            at = bisect_left(tails, index)
            tails[at : at + 1] = [index]
    return len(tails)

"""Where an extraction answer went wrong, beside its grade: `dropped`,
`invented`, `first_order_break` and `kept_in_order` (docs/scores.md), for
the unique-ID lists the rules grade. No rule of the reference evaluator.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Sequence
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
    allowed = set(source)
    return [document_id for document_id in answer if document_id not in allowed]


def first_order_break(source: Sequence[str], answer: Sequence[str]) -> int | None:
    """The first 1-based position where the lists differ; None if equal.

    A list that ends first differs at the position after its last item.
    """
    # Not strict: lists of different lengths are the case handled after.
    pairs = zip(source, answer, strict=False)
    for position, (expected, given) in enumerate(pairs, start=1):
        if expected != given:
            return position
    if len(source) == len(answer):
        return None
    return min(len(source), len(answer)) + 1


def kept_in_order(source: Sequence[str], answer: Sequence[str]) -> int:
    """The length of the longest common subsequence of two unique-ID lists.

    With no repeats on either side, a common subsequence is a sequence of
    shared IDs whose source positions increase as the answer goes on. So the LCS
    is the longest increasing subsequence of the source positions of the
    answer's shared IDs, found in O(n log n) by patience sorting, where the
    textbook dynamic programme takes O(n * m): 10,000-ID lists are common.
    Repeats would break the reduction, so they raise `ValueError`.
    """
    position = _source_positions(source)
    _check_unique(set(answer), answer)
    return _longest_increasing(position, answer)


def itemise(source: list[str], answer: list[str]) -> Itemisation:
    """All four figures for two unique-ID lists; repeats raise `ValueError`."""
    if source == answer:
        # The common passing answer: one set for the check, no search.
        _check_unique(set(source), source)
        return {
            "dropped": [],
            "invented": [],
            "first_order_break": None,
            "kept_in_order": len(source),
        }
    # One dict and one set serve all four figures: large answers are common.
    position = _source_positions(source)
    answer_ids = set(answer)
    _check_unique(answer_ids, answer)
    return {
        "dropped": [
            document_id for document_id in source if document_id not in answer_ids
        ],
        "invented": [
            document_id for document_id in answer if document_id not in position
        ],
        "first_order_break": first_order_break(source, answer),
        "kept_in_order": _longest_increasing(position, answer),
    }


def _source_positions(source: Sequence[str]) -> dict[str, int]:
    position = {document_id: index for index, document_id in enumerate(source)}
    _check_unique(position.keys(), source)
    return position


def _check_unique(distinct: Collection[str], ids: Sequence[str]) -> None:
    if len(distinct) != len(ids):
        raise ValueError("itemising needs ID lists without repeats")


def _longest_increasing(position: dict[str, int], answer: Sequence[str]) -> int:
    """The length of the longest increasing subsequence of the source
    positions of the answer's shared IDs."""
    # tails[k]: the smallest source position that can end an increasing
    # subsequence of length k + 1 so far. It stays sorted, so bisect finds
    # the one a new position extends or improves.
    tails: list[int] = []
    for document_id in answer:
        index = position.get(document_id)
        if index is None:
            continue
        at = bisect_left(tails, index)
        if at == len(tails):
            tails.append(index)
        else:
            tails[at] = index
    return len(tails)


__all__ = [
    "Itemisation",
    "dropped_ids",
    "first_order_break",
    "invented_ids",
    "itemise",
    "kept_in_order",
]

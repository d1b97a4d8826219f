"""Where an extraction answer went wrong (docs/scores.md); no reference rule."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import TypedDict

_REPEATS = "itemising needs ID lists without repeats"


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
    """The first position (from 1) where the lists differ; None if equal."""
    for position, (expected, given) in enumerate(zip(source, answer, strict=False), 1):
        if expected != given:
            return position
    if len(source) == len(answer):
        return None
    return min(len(source), len(answer)) + 1


def itemise(source: list[str], answer: list[str]) -> Itemisation:
    """All four figures for two unique-ID lists; repeats raise `ValueError`.
    `kept_in_order` is the longest increasing run of source positions."""
    if source == answer:  # the common passing answer: no search
        if len(set(source)) != len(source):
            raise ValueError(_REPEATS)
        return {"dropped": [], "invented": [], "first_order_break": None,
                "kept_in_order": len(source)}  # fmt: skip
    position = {document_id: index for index, document_id in enumerate(source)}
    answer_ids = set(answer)
    if len(position) != len(source) or len(answer_ids) != len(answer):
        raise ValueError(_REPEATS)
    # tails[k]: the smallest source position ending an increasing run of k + 1.
    tails: list[int] = []
    for document_id in answer:
        index = position.get(document_id)
        if index is not None:
            at = bisect_left(tails, index)
            tails[at : at + 1] = [index]
    return {"dropped": [item for item in source if item not in answer_ids],
            "invented": [item for item in answer if item not in position],
            "first_order_break": first_order_break(source, answer),
            "kept_in_order": len(tails)}  # fmt: skip

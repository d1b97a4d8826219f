"""The itemisation of an extraction answer against brute-force definitions
(list scans, the textbook LCS table) on generated lists."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.core import grade_extraction, itemise
from tracegrade.core.itemise import dropped_ids, first_order_break, invented_ids


@pytest.mark.parametrize(
    ("source", "answer"),
    [(["A", "B", "A"], ["A", "B"]), (["A", "B"], ["B", "B"]), (["A", "A"], ["A", "A"])],
    ids=["source repeats", "answer repeats", "equal lists repeat"],
)
def test_repeated_ids_are_refused(source: list[str], answer: list[str]) -> None:
    with pytest.raises(ValueError, match="without repeats"):
        itemise(source, answer)


# --- properties against brute force --------------------------------------------

# Look-alikes that must stay distinct: Latin, Cyrillic and Greek capitals,
# composed and decomposed forms, compatibility forms, whitespace, case,
# astral characters and the empty string.
LOOK_ALIKES: Final = (
    "A", "\u0410", "\u0391", "a", "A ", " A", "\u00e9", "e\u0301", "\u212b",
    "\u00c5", "\ufb01", "fi", "K", "\u212a", "0", "O", "\u039f", "\U0001f600",
    "\uff61", "\ud800", "",
)  # fmt: skip
ids = st.sampled_from(LOOK_ALIKES) | st.text(max_size=3)
unique_lists = st.lists(ids, unique=True, max_size=25)


@st.composite
def source_and_answer(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Two unique lists, most answers built from the source so they overlap:
    some IDs dropped, the rest shuffled or left in order, some invented."""
    source = draw(unique_lists)
    if draw(st.booleans()):
        return source, draw(unique_lists)
    answer = [document_id for document_id in source if draw(st.booleans())]
    if draw(st.booleans()):
        answer = draw(st.permutations(answer))
    # Not filtered while drawing: drawing is where these tests spend their time.
    invented = draw(st.lists(ids, unique=True, max_size=5))
    for document_id in (i for i in invented if i not in source):
        answer.insert(draw(st.integers(0, len(answer))), document_id)
    return source, answer


def lcs_by_dynamic_programme(source: Sequence[str], answer: Sequence[str]) -> int:
    """The textbook longest common subsequence table, O(n * m)."""
    row = [0] * (len(answer) + 1)
    for expected in source:
        previous_diagonal = 0
        for j, answered in enumerate(answer, start=1):
            above = row[j]
            if expected == answered:
                row[j] = previous_diagonal + 1
            else:
                row[j] = max(row[j], row[j - 1])
            previous_diagonal = above
    return row[-1]


def first_difference_by_padding(
    source: Sequence[str], answer: Sequence[str]
) -> int | None:
    """Pad the shorter list with a value no ID equals, compare by position."""
    end = object()
    pairs = itertools.zip_longest(source, answer, fillvalue=end)
    return next((at for at, (a, b) in enumerate(pairs, 1) if a != b), None)


@settings(max_examples=2_000, deadline=None)
@given(source_and_answer())
def test_itemise_matches_brute_force_and_the_grade(
    lists: tuple[list[str], list[str]],
) -> None:
    """One draw serves both checks: drawing, not the brute force, is the cost."""
    source, answer = lists
    itemised = itemise(source, answer)

    assert itemised["dropped"] == [i for i in source if i not in answer]
    assert itemised["invented"] == [i for i in answer if i not in source]
    assert itemised["first_order_break"] == first_difference_by_padding(source, answer)
    assert itemised["kept_in_order"] == lcs_by_dynamic_programme(source, answer)
    # The separate functions give the same figures as the combined one.
    assert dropped_ids(source, answer) == itemised["dropped"]
    assert invented_ids(source, answer) == itemised["invented"]
    assert first_order_break(source, answer) == itemised["first_order_break"]

    grade = grade_extraction({"source": source, "answer": answer})
    assert "error" not in grade
    assert grade["membership"] == (not itemised["dropped"] and not itemised["invented"])
    assert grade["order"] == (itemised["first_order_break"] is None)
    assert grade["order"] == (itemised["kept_in_order"] == len(source) == len(answer))
    # Only shared IDs can be kept in order, and all are when the answer
    # lists them in source order.
    shared = [i for i in answer if i in source]
    assert itemised["kept_in_order"] <= len(shared)
    if shared == [i for i in source if i in answer]:
        assert itemised["kept_in_order"] == len(shared)

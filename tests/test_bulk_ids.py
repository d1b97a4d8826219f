"""The ids `tracegrade score` gives samples, messages and logs, and the
memory of ids it checks for repeats."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.bulk.samples import _ID_ALPHABET, uuid
from tracegrade.bulk.scoring import DiskIds


def test_ids_have_inspects_shortuuid_form_and_never_repeat() -> None:
    ids = [uuid() for _ in range(200_000)]
    assert len(set(ids)) == len(ids)
    assert {len(sample_id) for sample_id in ids} == {22}
    assert set("".join(ids)) == set(_ID_ALPHABET)


# --- DiskIds: the duplicate check of `tracegrade check` and `tracegrade score` --


def _dict_first_lines(ids: Sequence[str]) -> list[int | None]:
    """What a plain dict says: the reference `DiskIds` must agree with."""
    seen: dict[str, int] = {}
    answers: list[int | None] = []
    for line, sample_id in enumerate(ids, start=1):
        first = seen.setdefault(sample_id, line)
        answers.append(first if first != line else None)
    return answers


def _disk_first_lines(ids: Sequence[str]) -> list[int | None]:
    with DiskIds() as seen:
        return [
            seen.first_line(sample_id, line) for line, sample_id in enumerate(ids, 1)
        ]


def test_seen_ids_remember_first_lines() -> None:
    with DiskIds() as seen:
        assert seen.first_line("a", 1) is None
        assert seen.first_line("b", 2) is None
        assert seen.first_line("a", 5) == 1
        assert seen.first_line("a", 9) == 1
        # A lone surrogate is a valid JSON string id, and distinct.
        assert seen.first_line("\ud800", 10) is None
        assert seen.first_line("\ud801", 11) is None
        assert seen.first_line("\ud800", 12) == 10
        # Two lone surrogates are not the character they would pair into.
        assert seen.first_line("\U0001f600", 13) is None
        assert seen.first_line("\ud83d\ude00", 14) is None
        assert seen.first_line("", 15) is None
        assert seen.first_line("", 16) == 15


# A quick property: Hypothesis's own 100 examples, not the profile's thousands.
@settings(max_examples=100)
@given(st.lists(st.text(max_size=4), max_size=200))
def test_disk_ids_agree_with_a_dict_on_any_text(ids: list[str]) -> None:
    assert _disk_first_lines(ids) == _dict_first_lines(ids)

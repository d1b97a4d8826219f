"""The ids `tracegrade score` gives samples, messages and logs, and the
memory of ids it checks for repeats."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tracegrade.bulk.samples import _ID_ALPHABET, uuid
from tracegrade.bulk.scoring import DiskIds


def test_ids_have_inspects_shortuuid_form_and_never_repeat() -> None:
    ids = [uuid() for _ in range(200_000)]
    assert len(set(ids)) == len(ids)
    assert {len(sample_id) for sample_id in ids} == {22}
    assert set("".join(ids)) == set(_ID_ALPHABET)


def _dict_first_lines(ids: Sequence[str]) -> list[int | None]:
    """What a plain dict says: the reference `DiskIds` must agree with."""
    seen: dict[str, int] = {}
    return [
        None if (first := seen.setdefault(sample_id, line)) == line else first
        for line, sample_id in enumerate(ids, start=1)
    ]


# Lone surrogates are valid JSON string ids, each distinct, and two of them
# are not the character they would pair into.
@example(
    ["a", "b", "a", "\ud800", "\ud801", "\ud800", "\U0001f600", "\ud83d\ude00", ""]
)
@settings(max_examples=100)  # a quick property, not the profile's thousands
@given(
    st.lists(st.text(st.characters(exclude_categories=()), max_size=4), max_size=200)
)
def test_disk_ids_agree_with_a_dict_on_any_text(ids: list[str]) -> None:
    with DiskIds() as seen:
        found = [seen.first_line(sample_id, n) for n, sample_id in enumerate(ids, 1)]
    assert found == _dict_first_lines(ids)

"""The ids `tracegrade score` gives samples, messages and logs."""

from __future__ import annotations

from collections import Counter

from tracegrade.bulk.log import _ID_ALPHABET, uuid


def test_ids_have_inspects_shortuuid_form_and_never_repeat() -> None:
    ids = [uuid() for _ in range(200_000)]
    assert len(set(ids)) == len(ids)
    assert {len(sample_id) for sample_id in ids} == {22}
    assert set("".join(ids)) == set(_ID_ALPHABET)


def test_every_character_is_about_equally_likely() -> None:
    # Mapping all 256 byte values onto 57 characters would make 28 of them
    # a quarter likelier; the dropped bytes prevent that. The bound is wide
    # (the expected spread is about 1%), so only such a bias fails it.
    counts = Counter("".join(uuid() for _ in range(100_000)))
    expected = 22 * 100_000 / len(_ID_ALPHABET)
    assert all(abs(count - expected) < 0.1 * expected for count in counts.values())

"""The ids `tracegrade score` gives samples, messages and logs, and the
memory of ids it checks for repeats."""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.bulk.samples import _ID_ALPHABET, uuid
from tracegrade.bulk.scoring import DiskIds


def test_ids_have_inspects_shortuuid_form_and_never_repeat() -> None:
    ids = [uuid() for _ in range(200_000)]
    assert len(set(ids)) == len(ids)
    assert {len(sample_id) for sample_id in ids} == {22}
    assert set("".join(ids)) == set(_ID_ALPHABET)


def test_two_threads_never_take_the_same_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """The `.eval` writer thread makes message ids and sample uuids while
    the main thread makes log ids. Each refills its buffer with the other
    in the middle of its own refill (the OS's random bytes made slow),
    the moment a buffer shared by both would hand out one id twice."""
    urandom = os.urandom

    def slow_urandom(size: int) -> bytes:
        time.sleep(0.01)  # the other thread runs meanwhile
        return urandom(size)

    monkeypatch.setattr(os, "urandom", slow_urandom)
    taken: list[list[str]] = [[], []]
    threads = [
        threading.Thread(target=lambda ids=ids: ids.extend(uuid() for _ in range(2000)))
        for ids in taken
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = taken[0] + taken[1]
    assert len(set(every)) == len(every) == 4000


def test_every_character_is_about_equally_likely() -> None:
    # Mapping all 256 byte values onto 57 characters would make 28 of them
    # a quarter likelier; the dropped bytes prevent that. The bound is wide
    # (the expected spread is about 1%), so only such a bias fails it.
    counts = Counter("".join(uuid() for _ in range(100_000)))
    expected = 22 * 100_000 / len(_ID_ALPHABET)
    assert all(abs(count - expected) < 0.1 * expected for count in counts.values())


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


def test_disk_ids_agree_with_a_dict_on_many_ids() -> None:
    # Every tenth line repeats an earlier id; look-alikes differ by one
    # character.
    rng = random.Random(11)
    ids: list[str] = []
    for line in range(20_000):
        if line and line % 10 == 0:
            ids.append(ids[rng.randrange(len(ids))])
        else:
            ids.append(f"run-{line:07d}" + rng.choice(["", "é", "\ud800", " "]))
    assert _disk_first_lines(ids) == _dict_first_lines(ids)


# A quick property: Hypothesis's own 100 examples, not the profile's thousands.
@settings(max_examples=100)
@given(st.lists(st.text(max_size=4), max_size=200))
def test_disk_ids_agree_with_a_dict_on_any_text(ids: list[str]) -> None:
    assert _disk_first_lines(ids) == _dict_first_lines(ids)

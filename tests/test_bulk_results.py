"""The bulk path's scores in little memory read back as the scores given."""

from __future__ import annotations

import copy
import math

import pytest
from inspect_ai.scorer import Score

from tracegrade.bulk.results import LightScores, RunResults, _Joined
from tracegrade.bulk.scoring import TASKS


def _fields(score: object) -> tuple[object, ...]:
    return tuple(
        getattr(score, name) for name in ("value", "reason", "sample_id", "metadata")
    )


SHARED = {"error": None}
FAILED = {"error": {"kind": "duplicate-id", "side": "answer"}}
ROWS = [
    ("pass", None, "a", SHARED),
    ("retrieval", None, "b", SHARED),
    (math.nan, "duplicate-id", "c", FAILED),
    ("pass", None, "d", SHARED),
]


def _scores(rows: list[tuple[object, str | None, str, object]]) -> LightScores:
    scores = LightScores()
    for row in rows:
        scores.append(*row)
    return scores


def test_each_score_reads_back_as_appended_by_index_slice_and_iteration() -> None:
    scores = _scores(ROWS)
    assert len(scores) == 4
    by_iteration = [_fields(score) for score in scores]
    by_index = [_fields(scores[position]) for position in range(-4, 0)]
    assert by_iteration == by_index == ROWS
    assert [_fields(score) for score in scores[1:3]] == ROWS[1:3]
    assert _fields(scores[2].score) == ROWS[2]  # as metrics read it
    assert scores[0].metadata is SHARED  # shared, not copied
    with pytest.raises(IndexError):
        scores[4]


def test_with_values_changes_each_distinct_value_once() -> None:
    calls: list[object] = []

    def change(value: object) -> object:
        calls.append(value)
        return f"reduced {value}"

    changed = _scores(ROWS).with_values(change)
    assert [score.value for score in changed] == [
        "reduced pass",
        "reduced retrieval",
        "reduced nan",
        "reduced pass",
    ]
    assert len(calls) == 3
    assert [score.sample_id for score in changed] == ["a", "b", "c", "d"]


def test_joined_runs_read_as_one() -> None:
    first, second = _scores(ROWS[:1]), _scores(ROWS[1:])
    joined = _Joined([first, second])
    assert len(joined) == 4
    assert [_fields(score) for score in joined] == ROWS
    assert _fields(joined[2]) == ROWS[2]
    assert _fields(joined[-1]) == ROWS[3]
    with pytest.raises(IndexError):
        joined[4]


def test_a_copy_for_one_key_of_a_dictionary_value_leaves_the_run_alone() -> None:
    # Inspect deep-copies a score and sets its value to one key's value.
    scores = _scores([({"membership": 1, "order": 0}, None, "a", SHARED)])
    copied = copy.deepcopy(scores[0])
    copied.value = 1
    assert scores[0].value == {"membership": 1, "order": 0}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_reduced_values_are_what_the_reducer_gives_each_score(
    task: str, tmp_path: object
) -> None:
    bulk = TASKS[task]
    results = RunResults(bulk.make_scorer(), task, str(tmp_path))
    values: list[object] = [
        math.nan,
        "pass",
        "generation",
        {"membership": 1, "order": 0},
        {"membership": 0, "order": math.nan},
        1,
        0.5,
    ]
    for value in values:
        expected = results.reducer([Score(value=value)]).value
        reduced = results.reduce_value(results._light_value(value))
        # repr tells 1 from 1.0 and shows NaN, which == would not match.
        assert repr(reduced) == repr(expected)
    results.close()


def test_equal_values_are_one_object_and_unequal_types_are_not(
    tmp_path: object,
) -> None:
    bulk = TASKS["ordered_extraction"]
    results = RunResults(bulk.make_scorer(), "ordered_extraction", str(tmp_path))
    with_nan = results._light_value({"membership": 1, "order": math.nan})
    assert results._light_value({"membership": 1, "order": math.nan}) is with_nan
    as_int = results._light_value({"membership": 1, "order": 0})
    as_float = results._light_value({"membership": 1.0, "order": 0.0})
    assert as_int is not as_float
    assert repr(as_float) == "{'membership': 1.0, 'order': 0.0}"
    results.close()


def test_sample_ids_of_any_text_read_back_exactly() -> None:
    # Ids come from JSON: any Unicode, a lone surrogate included.
    ids = ["", "a", "é", "\u0410", "e\u0301", "\U0001f600", "\ud800", "x" * 300]
    scores = LightScores()
    for sample_id in ids:
        scores.append("pass", None, sample_id, SHARED)
    assert scores.sample_ids == ids
    assert [score.sample_id for score in scores] == ids
    assert [scores[position].sample_id for position in range(len(ids))] == ids


def test_recalls_read_back_exactly_and_equal_ones_are_one_float() -> None:
    recalls = [None, 0.5, 1 / 3, 0.0, 0.5, None, 1.0, 1 / 3]
    scores = LightScores()
    for position, recall in enumerate(recalls):
        scores.append("pass", None, f"s{position}", SHARED, recall)
    read = [score.recall for score in scores]
    assert read == recalls
    assert [scores[position].recall for position in range(len(recalls))] == recalls
    assert read[1] is read[4] and read[2] is read[7]
    assert read[3] is not None and math.copysign(1.0, read[3]) == 1.0


def test_recalls_past_the_shared_ones_still_read_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tracegrade.bulk.results._SHARED_SHARES", 2)
    recalls = [k / 7 for k in range(7)] * 2
    scores = LightScores()
    for position, recall in enumerate(recalls):
        scores.append("pass", None, f"s{position}", SHARED, recall)
    read = [score.recall for score in scores]
    assert read == recalls
    assert read[1] is read[8]  # among the first two: shared

"""Staff labels: checked line by line, replacing any other, needed no more after."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai import score
from inspect_ai.log import read_eval_log, recompute_metrics

from tests.support import OfflineLogs, write_lines
from tracegrade import LabelsError, stage_diagnosis_scorer
from tracegrade.scorers.outcome import error_kind


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (None, "cannot read the labels file"),
        ([{"correct": True}], "line 1: no 'id' field"),
        ([{"id": "", "correct": True}], "'id' must be a non-empty string or an"),
        ([{"id": "a"}], "no 'correct' field for id \"a\""),
        ([{"id": "a", "correct": 1}], 'for id "a", got 1; labels are never guessed'),
        ([" \t\r", ""], "holds no labels"),
        (['{"id": "\\ud800", "correct": true}'], "line 1: .*lone surrogate"),
        (
            [{"id": "q1", "correct": True}, {"id": "q2", "correct": True}] * 2,
            'line 3: id "q1" is already labelled on line 1',
        ),
        (
            [{"id": "q", "correct": True}, {"id": "q", "epoch": 1, "correct": True}],
            'line 2: id "q" epoch 1: line 1 labels every epoch of this sample; label',
        ),
        (
            [{"id": "q", "epoch": 1, "correct": True}, {"id": "q", "correct": True}],
            'line 2: id "q": line 1 labels an epoch of this sample; label a sample ei',
        ),
        ([{"id": "q", "epoch": 0, "correct": True}], "'epoch' must be a positive"),
    ],
)
def test_a_bad_labels_file_is_refused_naming_the_line_when_the_scorer_is_built(
    tmp_path: Path, lines: list[Any] | None, message: str
) -> None:
    path = tmp_path / "labels.jsonl"
    if lines is not None:
        write_lines(path, lines)
    with pytest.raises(LabelsError, match=message):
        stage_diagnosis_scorer(labels=str(path))


def test_the_labels_file_replaces_metadata_labels_and_is_needed_no_more(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    """A label in the file replaces the record's own, a run it does not label
    is answer-label; recomputing the log's metrics later needs no labels file."""
    labels = tmp_path / "labels.jsonl"
    write_lines(labels, [{"id": "wrong-generation", "correct": True}])
    rescored = score(
        read_eval_log(offline_logs.stage),
        stage_diagnosis_scorer(labels=str(labels)),
        action="append",
        display="none",
    )
    scores = {
        s.id: (s.scores or {})["stage_diagnosis1"] for s in rescored.samples or []
    }
    relabelled, unlabelled = scores["wrong-generation"], scores["missing-context"]
    assert relabelled.value == "pass"
    assert relabelled.metadata is not None
    assert relabelled.metadata["record"]["correct"] is True
    assert relabelled.metadata["read_from"]["correct"] == f"labels file {labels}"
    assert error_kind(unlabelled) == "answer-label"
    assert f"No staff label was found in labels file {labels}" in str(
        unlabelled.explanation
    )

    assert rescored.results is not None
    (appended,) = [s for s in rescored.results.scores if s.name == "stage_diagnosis1"]
    assert appended.metrics["pass"].value > 0
    before = rescored.results.model_dump()
    labels.unlink()
    recompute_metrics(rescored)
    assert rescored.results.model_dump() == before

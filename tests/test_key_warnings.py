"""No silent key typos: a source no run has is warned of once, in the log."""

from __future__ import annotations

import asyncio
import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, read_eval_log

from tests.commands import run_tracegrade
from tests.support import write_lines
from tests.test_scorers import task_state
from tests.test_tasks import evaluated
from tracegrade import ordered_extraction_scorer, stage_diagnosis_scorer
from tracegrade.scorers.outcome import error_kind
from tracegrade.tasks import replay

RUNS = {
    "q1": {"gold_docs": ["D1"], "retrieved": ["D1"], "judged": True},
    "q2": {"gold_docs": ["D2"], "retrieved": ["D1"], "judged": False},
}


@pytest.fixture(scope="module")
def gold(tmp_path_factory: pytest.TempPathFactory) -> tuple[EvalLog, str]:
    """Two runs keyed gold_docs, retrieved and judged, scored with a misspelled
    key, a labels file that matches no sample, and keys every sample has."""
    work = tmp_path_factory.mktemp("gold")
    labels = write_lines(
        work / "labels.jsonl",
        [{"id": "Q1", "correct": True}, {"id": "Q2", "correct": False}],
    )
    task = Task(
        dataset=[
            Sample(id=run_id, input="?", metadata={**run, "context": run["retrieved"]})
            for run_id, run in RUNS.items()
        ],
        solver=replay(),
        scorer=[
            stage_diagnosis_scorer(
                required_key="gold_docs", correct_key="judged", **arguments
            )
            for arguments in (
                {"context_key": "retreived"},
                {"labels": labels},
                {"context_key": "retrieved"},
            )
        ],
    )
    return read_eval_log(evaluated(task, work).location), labels


def logged_warnings(log: EvalLog, about: str = "") -> list[tuple[Any, str]]:
    """(sample id, message) of each logged warning that holds `about`."""
    return [
        (sample.id, event.message.message)
        for sample in log.samples or []
        for event in sample.events
        if event.event == "logger"
        and event.message.level == "warning"
        and about in event.message.message
    ]


def test_each_source_no_sample_has_is_warned_of_once_in_the_log(
    gold: tuple[EvalLog, str],
) -> None:
    log, labels = gold
    # Per-sample semantics are unchanged: each run gets what the rules say.
    runs = [sample.scores or {} for sample in log.samples or []]
    assert all(math.isnan(run["stage_diagnosis"].value) for run in runs)
    ((sample_id, message),) = logged_warnings(log, "retreived")
    assert (
        f'stage_diagnosis: sample "{sample_id}" has no metadata key "retreived" '
        '(context_key="retreived"), and no run scored before it had one. '
        'Its metadata keys: "context", "gold_docs", "judged", "retrieved". A run '
        "without it is not graded: invalid-input. If no sample has the key, check "
        "context_key."
    ) in message
    assert {error_kind(run["stage_diagnosis1"]) for run in runs} == {"answer-label"}
    ((sample_id, message),) = logged_warnings(log, "labels file")
    said = f'labels file {labels} has no label for sample "{sample_id}" epoch 1'
    assert said in message
    assert 'It labels ids "Q1", "Q2".' in message
    assert [run["stage_diagnosis2"].value for run in runs] == ["pass", "retrieval"]
    metadata = runs[0]["stage_diagnosis2"].metadata or {}
    assert metadata["read_from"] == {
        "required": 'metadata["gold_docs"]',
        "context": 'metadata["retrieved"]',
        "correct": 'metadata["judged"]',
    }
    assert len(logged_warnings(log)) == 2


def warned(caplog: pytest.LogCaptureFixture, scorer: Any, runs: list[Any]) -> list[str]:
    """The warnings of scoring `runs` in turn (sample ids r0, r1, ...)."""
    with caplog.at_level(logging.WARNING, logger="tracegrade"):
        for number, metadata in enumerate(runs):
            state = task_state(metadata, sample_id=f"r{number}", target='["A"]')
            asyncio.run(scorer(state, state.target))
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_key_or_context_the_first_run_lacks_is_warned_of_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Inspect gives a scorer no end of run, so a key the first run lacks
    is warned of even if a later run has it; the warning says "before"."""
    unlabelled = {"required": ["D1"]}
    runs = [unlabelled, unlabelled, {**unlabelled, "correct": True}, unlabelled]
    context, label = warned(caplog, stage_diagnosis_scorer(), runs)
    assert "recorded no context (no solver set RetrievalTrace.context)" in context
    assert "Its store keys: none." in context
    assert label.startswith(
        'stage_diagnosis: sample "r0" has no metadata key "correct" '
        '(correct_key="correct"), and no run scored before it had one.'
    )
    assert 'Its metadata keys: "required".' in label


@pytest.mark.parametrize(
    ("arguments", "keys"),
    [
        ({"source_key": "sources", "answer_key": "answers"}, ["sources", "answers"]),
        # The target and the output are never warned of.
        ({"source_key": None}, []),
    ],
)
def test_the_extraction_scorer_warns_once_of_each_key_no_run_has(
    caplog: pytest.LogCaptureFixture, arguments: dict[str, Any], keys: list[str]
) -> None:
    run = {"source": ["A"], "answer": ["A"]}
    found = warned(caplog, ordered_extraction_scorer(**arguments), [run] * 3)
    assert len(found) == len(keys)  # each at the first run, none again
    for message, key in zip(found, keys, strict=True):
        assert message.startswith(
            f'ordered_extraction: sample "r0" has no metadata key "{key}"'
        )
        assert 'Its metadata keys: "answer", "source".' in message


def test_recorded_outputs_stand_for_the_answer(tmp_path: Path) -> None:
    """`check` finds no field missing in `{"source", "output"}`; neither is named."""
    warnings = []
    for name, record in (("runs", {"output": "A"}), ("neither", {})):
        path = write_lines(
            tmp_path / name, [{"id": "a", "input": {"source": ["A"], **record}}]
        )
        checked = run_tracegrade(
            "check", "ordered_extraction", path, "--json", cwd=tmp_path
        )
        assert checked.returncode == (1 if name == "neither" else 0)
        warnings += json.loads(checked.stdout)["warnings"]
    (warning,) = warnings
    assert warning["field"] == "answer"
    said = f'no record of {path} has "answer" or "output" in its input'
    assert said in warning["message"]

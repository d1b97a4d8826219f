"""A sample whose run failed is `sample-error`, never a stage or a grade."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import CORRECT, Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState, generate

from tests.commands import run_inspect
from tests.test_tasks import evaluated
from tracegrade import ordered_extraction_scorer, stage_diagnosis_scorer

API_DOWN = "the model API is down"
# Each answers '["D1"]' unless it fails.
RUNS = {
    "ok-pass": {"required": ["D1"], "context": ["D1"]},
    "ok-gap": {"required": ["D1", "D2"], "context": ["D1"]},
    "down-1": {"required": ["D1"], "context": ["D1"]},
    "down-2": {"required": ["D1", "D2"], "context": []},
}
FAILING = {"down-1", "down-2"}


GRADED: Counter[Any] = Counter()


@scorer(metrics=[])
def counted_grade() -> Scorer:

    async def grade(state: TaskState, target: Target) -> Score:
        GRADED[state.sample_id] += 1
        return Score(value=CORRECT)

    return grade


def run(tmp_path: Path, scorers: list[Scorer], **kwargs: Any) -> EvalLog:
    """Each run answers '["D1"]', or raises if it is failing (its id the prompt)."""

    def reply(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        if messages[-1].text in FAILING:
            raise RuntimeError(API_DOWN)
        output = ModelOutput.from_content(model="mockllm/model", content='["D1"]')
        output.usage = ModelUsage(input_tokens=5, output_tokens=3, total_tokens=8)
        return output

    samples = [
        Sample(id=run_id, input=run_id, target='["D1"]', metadata=metadata)
        for run_id, metadata in RUNS.items()
    ]
    return evaluated(
        Task(dataset=samples, solver=generate(), scorer=scorers),
        tmp_path / "logs",
        model=get_model("mockllm/model", custom_outputs=reply),
        fail_on_error=False,
        retry_on_error=0,
        **kwargs,
    )


def by_id(log: EvalLog) -> dict[Any, EvalSample]:
    return {sample.id: sample for sample in log.samples or []}


@pytest.fixture(scope="module")
def scored_on_error(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    GRADED.clear()
    return run(
        tmp_path_factory.mktemp("on-error"),
        [
            stage_diagnosis_scorer(context_key="context", label_scorer=counted_grade()),
            ordered_extraction_scorer(source_key=None),
        ],
        score_on_error=True,
    )


def assert_sample_error(sample: EvalSample, name: str) -> Score:
    assert sample.error is not None
    assert API_DOWN in sample.error.message
    score = (sample.scores or {})[name]
    assert isinstance(score.value, float) and math.isnan(score.value)
    assert score.reason == "sample-error"
    assert score.answer is None
    metadata = score.metadata or {}
    assert metadata["error"] == {
        "kind": "sample-error",
        "side": "run",
        "field": None,
        "message": sample.error.message,
    }
    assert metadata["result"] is None and metadata["record"] == {}
    assert score.explanation == (
        f"The run failed before an answer existed ({sample.error.message}), so "
        "there is nothing to grade; inspect eval-retry runs it again."
    )
    return score


def test_a_failed_run_is_no_stage_and_no_grade(scored_on_error: EvalLog) -> None:
    samples = by_id(scored_on_error)
    for run_id in FAILING:
        stage = assert_sample_error(samples[run_id], "stage_diagnosis")
        assert (stage.metadata or {})["recall"] is None
        assert (stage.metadata or {})["precision"] is None
        assert "grader" not in (stage.metadata or {})
        extraction = assert_sample_error(samples[run_id], "ordered_extraction")
        assert (extraction.metadata or {})["itemised"] is None
        assert (extraction.metadata or {})["read_as"] is None
    stages = {
        run_id: (samples[run_id].scores or {})["stage_diagnosis"].value
        for run_id in RUNS
        if run_id not in FAILING
    }
    assert stages == {"ok-pass": "pass", "ok-gap": "retrieval"}
    # The grader judged the answers that exist, and nothing else.
    assert GRADED == {"ok-pass": 1, "ok-gap": 1}
    # Failed runs are counted unscored, and in no metric.
    assert scored_on_error.results is not None
    metrics: dict[str, dict[str, float]] = {}
    for score in scored_on_error.results.scores:
        assert (score.scored_samples, score.unscored_samples) == (2, 2)
        metrics.setdefault(score.name, {}).update(
            {name: metric.value for name, metric in score.metrics.items()}
        )
    stage = metrics["stage_diagnosis"]
    assert (stage["scored_runs"], stage["pass"], stage["retrieval"]) == (2, 0.5, 0.5)
    extraction = metrics["ordered_extraction"]
    assert extraction["scored_runs"] == 2
    assert extraction["unreadable"] == 0
    assert extraction["membership"] == 1.0


def test_inspect_score_gives_unscored_failed_runs_the_same_score(
    tmp_path: Path, scored_on_error: EvalLog
) -> None:
    """`inspect score` finds each failed sample's error in the transcript it
    rebuilds from a log scored without --score-on-error."""
    log = run(tmp_path, [stage_diagnosis_scorer(context_key="context")])
    assert all(not by_id(log)[run_id].scores for run_id in FAILING)
    done = run_inspect(
        *("score", log.location, "--scorer", "tracegrade/stage_diagnosis"),
        *("-S", "context_key=context", "-S", "label_scorer=match"),
        *("--action", "overwrite", "--overwrite"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    rescored = by_id(read_eval_log(log.location))
    first = by_id(scored_on_error)
    for run_id in FAILING:
        score = assert_sample_error(rescored[run_id], "stage_diagnosis")
        before = (first[run_id].scores or {})["stage_diagnosis"]
        assert score.explanation == before.explanation
        assert (score.metadata or {})["error"] == (before.metadata or {})["error"]
    assert (rescored["ok-gap"].scores or {})["stage_diagnosis"].value == "retrieval"

"""Metrics see the real values: with epochs, and when every sample is an error."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest
from inspect_ai.log import (
    EvalLog,
    EvalMetric,
    EvalScore,
    headline_metric,
    read_eval_log,
)
from inspect_ai.scorer import Metric, MetricProtocol, SampleScore, Score, Value

from tests.support import write_lines
from tests.test_scorers import EXTRACTION_CASES, STAGE_CASES
from tests.test_tasks import evaluated
from tracegrade import stage_diagnosis
from tracegrade.core import stage_precision, stage_recall
from tracegrade.schema import STAGES
from tracegrade.scorers import (
    answer_failures,
    criteria_shares,
    lucky_answers,
    scored_runs,
    stage_modes,
    stage_shares,
    step_recall,
)
from tracegrade.scorers.metrics import FAILURE_LABELS, is_count
from tracegrade.scorers.outcome import ANSWER_FAILURES

pytestmark = pytest.mark.runs_long


FAILED = {"membership": False, "order": False}
DATA_ERROR = {"kind": "invalid-input", "side": "data"}
STAGE_ORDER = ("pass", "retrieval", "generation", "unresolved")


def sample_score(
    value: Any, *, correct: Any = None, error: Any = None, sample_id: str = "s"
) -> SampleScore:
    record = {} if correct is None else {"correct": correct}
    return SampleScore(
        sample_id=sample_id,
        score=Score(value=value, metadata={"record": record, "error": error}),
    )


def compute(metric: Metric, scores: list[SampleScore]) -> Value:
    return cast(MetricProtocol, metric)(scores)


def scores_by_name(log: EvalLog) -> dict[tuple[str, str | None], EvalScore]:
    assert log.results is not None
    return {(score.name, score.reducer): score for score in log.results.scores}


def metric_values(score: EvalScore) -> dict[str, float]:
    return {name: metric.value for name, metric in score.metrics.items()}


@pytest.mark.parametrize(
    ("metric", "score", "words"),
    [
        # What the default mean reducer would have handed a reduced metric.
        (stage_shares(), sample_score(0.0), r"got 0\.0"),
        (criteria_shares(), sample_score("pass"), r"got 'pass'"),
        # A kind no label counts would vanish from the count.
        (
            answer_failures(),
            sample_score(FAILED, error={"kind": "new-kind", "side": "answer"}),
            "sample 's': metadata error.kind of an answer failure must be "
            'duplicate-answer-id or unreadable-answer, got "new-kind"',
        ),
    ],
)
def test_metrics_refuse_what_they_cannot_count(
    metric: Metric, score: SampleScore, words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        compute(metric, [score])


@pytest.mark.parametrize(
    ("metric", "scores", "expected"),
    [
        # Pass first: Inspect's headline is a score's first metric.
        (
            stage_shares(),
            [sample_score(v) for v in ("retrieval", "retrieval", "pass", "unresolved")],
            dict(zip(STAGE_ORDER, (0.25, 0.5, 0.0, 0.25), strict=True)),
        ),
        (
            lucky_answers(),
            [
                sample_score("retrieval", correct=True),
                sample_score("retrieval", correct=False),
                sample_score("pass", correct=True),
                sample_score("retrieval", correct=True),
            ],
            {"lucky_answers": 2},
        ),
        (
            answer_failures(),
            [
                sample_score(FAILED, error={"kind": kind, "side": "answer"})
                for kind in (
                    "duplicate-answer-id",
                    "unreadable-answer",
                    "unreadable-answer",
                )
            ]
            # No answer failure: no error, or the data's (an unscored run).
            + [sample_score(FAILED), sample_score(FAILED, error=DATA_ERROR)],
            {"duplicate-id": 1, "unreadable": 2},
        ),
        (scored_runs(), [sample_score("pass")] * 3, {"scored_runs": 3}),
        (
            stage_modes(),
            [
                sample_score(stage, sample_id=sample_id)
                for sample_id, stages in {
                    "a": ["pass", "pass", "generation"],
                    "b": ["retrieval", "pass", "retrieval"],
                    # A tie goes to the earlier stage: a sample that failed
                    # retrieval as often as it passed is not reported as passing.
                    "c": ["pass", "retrieval"],
                    "d": ["unresolved"],
                }.items()
                for stage in stages
            ],
            {
                "pass_mode": 0.25,
                "retrieval_mode": 0.5,
                "generation_mode": 0.0,
                "unresolved_mode": 0.25,
            },
        ),
        # Over no run, counts are mappings, so Inspect logs 0 rather than NaN.
        (lucky_answers(), [], {"lucky_answers": 0}),
        (answer_failures(), [], {"duplicate-id": 0, "unreadable": 0}),
        (scored_runs(), [], {"scored_runs": 0}),
        # Shares over no run are NaN.
        (stage_shares(), [], dict.fromkeys(STAGE_ORDER, math.nan)),
        (criteria_shares(), [], {"membership": math.nan, "order": math.nan}),
        # Reduced values: booleans with one epoch or the mode, means otherwise.
        (
            criteria_shares(),
            [
                sample_score({"membership": membership, "order": order})
                for membership, order in (
                    *((True, True), (True, False)),
                    *((2 / 3, 1 / 3), (False, False)),
                )
            ],
            {"membership": 2 / 3, "order": 1 / 3},
        ),
        (
            step_recall(),
            [
                SampleScore(sample_id="s", score=Score(value="pass", metadata=recall))
                for recall in (
                    {"step_recall": {"retriever": 1.0, "reranker": 0.5}},
                    {"step_recall": {"retriever": 0.5}},
                    {"step_recall": None},
                )
            ],
            {"retriever_recall": 0.75, "reranker_recall": 0.5},
        ),
    ],
)
def test_each_metric_counts_what_it_says(
    metric: Metric, scores: list[SampleScore], expected: dict[str, Any]
) -> None:
    found = compute(metric, scores)
    assert found == pytest.approx(expected, nan_ok=True)
    assert list(cast(dict[str, Any], found)) == list(expected)
    assert set(FAILURE_LABELS) == set(ANSWER_FAILURES)


def test_the_counts_are_known_by_their_logged_names() -> None:
    # As Inspect logs them: a scalar by its registry name, a mapping's
    # entries with the metric's name as their group.
    assert is_count(EvalMetric(name="lucky_answers", group="lucky_answers", value=1.0))
    # Logs from before `lucky_answers` was a mapping.
    assert is_count(EvalMetric(name="tracegrade/lucky_answers", value=3.0))
    assert is_count(EvalMetric(name="unreadable", group="answer_failures", value=1.0))
    assert is_count(EvalMetric(name="scored_runs", group="scored_runs", value=0.0))
    assert not is_count(EvalMetric(name="retrieval", group="stage_shares", value=1.0))
    assert not is_count(EvalMetric(name="accuracy", value=1.0))


@pytest.fixture(scope="module")
def stage_log(two_epoch_logs: dict[str, Path]) -> EvalLog:
    return read_eval_log(str(two_epoch_logs["stage_diagnosis"]))


def test_stage_metrics_survive_epochs(stage_log: EvalLog) -> None:
    (score,) = scores_by_name(stage_log).values()
    values = metric_values(score)
    staged = [
        (case.input, (case.expected or {})["stage"])
        for case in STAGE_CASES
        if "stage" in (case.expected or {})
    ]
    stages = Counter(stage for _, stage in staged)
    for stage in STAGES:
        assert values[stage] == pytest.approx(stages[stage] / len(staged))
    # Unreduced metrics count runs: each sample contributes one per epoch.
    lucky = [
        record
        for record, stage in staged
        if stage == "retrieval" and record.get("correct") is True
    ]
    assert values["lucky_answers"] == len(lucky) * 2
    assert score.unscored_samples == (len(STAGE_CASES) - len(staged)) * 2
    assert score.scored_samples == values["scored_runs"] == len(staged) * 2
    # Recall and precision: means over the scored runs that have one, every
    # epoch a run; an unlabelled run has shares but is unscored.
    for share, of_record in (
        ("context_recall", stage_recall),
        ("context_precision", stage_precision),
    ):
        found = [of_record(record) for record, _ in staged] * 2
        found = [value for value in found if value is not None]
        assert values[share] == math.fsum(found) / len(found)
    # `inspect view` and eval sets show a log's headline: the first metric
    # of its first score. A stage run's is its pass share (higher is
    # better); every other metric is still logged after it.
    headline = headline_metric(stage_log)
    assert headline is not None
    assert headline.name == "pass"
    assert headline.metric.value == values["pass"]
    assert list(headline.score.metrics) == [
        *("pass", "retrieval", "generation", "unresolved"),
        *("pass_mode", "retrieval_mode", "generation_mode", "unresolved_mode"),
        *("lucky_answers", "context_recall", "context_precision", "scored_runs"),
    ]


def test_extraction_metrics_survive_epochs(two_epoch_logs: dict[str, Path]) -> None:
    log = read_eval_log(str(two_epoch_logs["ordered_extraction"]))
    grades = [case.expected or {} for case in EXTRACTION_CASES]
    grades = [grade for grade in grades if "membership" in grade]
    # A repeat in the answer is graded (both fail); one in the source is not.
    answer_duplicates = sum(
        case.expected == {"error": "duplicate-id"}
        and len(set(case.input["source"])) == len(case.input["source"])
        for case in EXTRACTION_CASES
    )
    scored = len(grades) + answer_duplicates
    unscored_cases = len(EXTRACTION_CASES) - scored
    by_name = scores_by_name(log)
    scores = {key: metric_values(score) for key, score in by_name.items()}
    for criterion in ("membership", "order"):
        share = sum(grade[criterion] for grade in grades) / scored
        assert scores[(criterion, "mean")]["accuracy"] == pytest.approx(share)
    assert by_name[("membership", "mean")].unscored_samples == unscored_cases
    # Unreduced: each run counts, two epochs.
    assert by_name[("ordered_extraction", None)].unscored_samples == unscored_cases * 2
    assert scores[("ordered_extraction", None)] == {
        "duplicate-id": answer_duplicates * 2,
        "unreadable": 0,
        "scored_runs": scored * 2,
    }
    # The scorer's reduced entry holds the same shares as the accuracies,
    # to the bit, and is the headline.
    assert scores[("ordered_extraction", "mean")] == {
        "membership": scores[("membership", "mean")]["accuracy"],
        "order": scores[("order", "mean")]["accuracy"],
    }
    assert log.results is not None and log.results.headline is not None
    assert [s.name for s in log.results.scores if not s.metrics] == []  # none empty
    assert log.results.headline.model_dump(exclude_none=True) == {
        "scorer": "ordered_extraction",
        "score": "ordered_extraction",
        "metric": "membership",
        "reducer": "mean",
    }


@pytest.fixture(scope="module")
def errors_only(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    work = tmp_path_factory.mktemp("errors-only")
    dataset = write_lines(
        work / "errors.jsonl",
        [
            {"id": "no-label", "input": {"required": ["D1"], "context": ["D1"]}},
            {"id": "no-context", "input": {"required": ["D1"], "correct": True}},
        ],
    )
    return evaluated(stage_diagnosis(dataset=dataset), work)


def test_a_run_where_every_sample_is_an_error_succeeds_and_says_so(
    errors_only: EvalLog,
) -> None:
    log = errors_only
    (score,) = scores_by_name(log).values()
    assert score.scored_samples == 0
    assert score.unscored_samples == 2
    values = metric_values(score)
    assert all(math.isnan(values[stage]) for stage in STAGES)
    assert values["scored_runs"] == 0
    assert values["lucky_answers"] == 0  # not NaN: none was lucky
    assert log.samples is not None
    reasons = [
        (sample.scores or {})["stage_diagnosis"].reason for sample in log.samples
    ]
    assert sorted(str(reason) for reason in reasons) == [
        "answer-label",
        "invalid-input",
    ]

"""Metrics as a reader of `inspect view` wants them (docs/scores.md#metrics).
The stage metrics take each epoch's own score: the mean would make a stage 0.0."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from itertools import groupby
from statistics import StatisticsError, fmean
from typing import Any, TypeVar, cast

from inspect_ai.log import EvalMetric
from inspect_ai.scorer import (
    Metric,
    MetricProtocol,
    SampleScore,
    Value,
    accuracy,
    frequency,
    metric,
    stderr,
    value_to_float,
)

from ..core.errors import quote
from ..schema import (
    CRITERIA,
    STAGES,
    InvalidScore,
    read_error,
    read_share,
    read_stage_value,
    read_step_recall,
)

_T = TypeVar("_T")

# Inspect's headline is the first, the pass share.
SHOWN_STAGES = ("pass", "retrieval", "generation", "unresolved")

# Short column labels for Inspect's results table; the kinds are the `reason`s.
FAILURE_LABELS = {
    "duplicate-answer-id": "duplicate-id",
    "unreadable-answer": "unreadable",
}

COUNT_METRICS = frozenset({"lucky_answers", "answer_failures", "scored_runs"})


def _read(sample_score: SampleScore, read: Callable[..., _T], *args: Any) -> _T:
    try:
        return read(*args)
    except InvalidScore as invalid:
        raise ValueError(f"sample {sample_score.sample_id!r}: {invalid}") from None


def _stage(sample_score: SampleScore) -> str:
    return _read(sample_score, read_stage_value, sample_score.score.value)


def _sample_id(sample_score: SampleScore) -> str:
    return str(sample_score.sample_id)


def _metadata(sample_score: SampleScore, key: str) -> dict[str, Any]:
    metadata = sample_score.score.metadata or {}
    if key not in metadata:
        raise ValueError(
            f"sample {sample_score.sample_id!r}: score metadata has no {key!r}; "
            "this metric reads scores made by a tracegrade scorer"
        )
    return metadata


@metric(scores="unreduced")
def stage_shares() -> Metric:
    """Share of scored runs in each stage, `pass` first; NaN each over no run."""
    shares = cast(MetricProtocol, frequency(categories=SHOWN_STAGES))

    def compute(scores: list[SampleScore]) -> Value:
        for sample_score in scores:
            _stage(sample_score)  # refuses a value that is no stage
        return shares(scores) if scores else dict.fromkeys(SHOWN_STAGES, math.nan)

    return compute


@metric(scores="unreduced")
def stage_modes() -> Metric:
    """Share of samples by their mode stage over epochs; ties go to the earlier."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        # Grouped by sorting, not a dict per sample id: memory stays flat.
        modes: Counter[str] = Counter()
        for _, runs in groupby(sorted(scores, key=_sample_id), key=_sample_id):
            counts = Counter(map(_stage, runs))
            modes[max(STAGES, key=lambda s: (counts[s], -STAGES.index(s)))] += 1
        total = modes.total() or math.nan
        return {f"{stage}_mode": modes[stage] / total for stage in SHOWN_STAGES}

    return compute


def _lucky(sample_score: SampleScore) -> bool:
    if _stage(sample_score) != "retrieval":
        return False
    record = _metadata(sample_score, "record")["record"]
    return type(record) is dict and record.get("correct") is True


@metric(scores="unreduced")
def lucky_answers() -> Metric:
    """Runs labelled correct though required evidence never reached the context."""

    def compute(scores: list[SampleScore]) -> dict[str, int]:
        return {"lucky_answers": sum(map(_lucky, scores))}

    return compute


@metric(scores="unreduced")
def scored_runs() -> Metric:
    """How many runs got a score, `{"scored_runs": n}` (no NaN over none)."""

    def compute(scores: list[SampleScore]) -> dict[str, int]:
        return {"scored_runs": len(scores)}

    return compute


@metric(scores="unreduced")
def context_recall() -> Metric:
    """Mean `recall` over diagnosed runs, exactly summed: order never changes it."""
    return _mean_share("recall")


@metric(scores="unreduced")
def context_precision() -> Metric:
    """Mean `precision` over scored runs that have one, as `context_recall`."""
    return _mean_share("precision")


def _mean_share(key: str) -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        # A generator: no million floats for a million runs.
        shares = (_read(s, read_share, _metadata(s, key), key) for s in scores)
        try:
            return fmean(share for share in shares if share is not None)
        except StatisticsError:  # no run has the share
            return math.nan

    return compute


@metric(scores="unreduced")
def step_recall() -> Metric:
    """Each pipeline step's mean recall over the runs that have the step."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        shares: dict[str, list[float]] = {}
        for score in scores:
            recalls = _read(score, read_step_recall, score.score.metadata or {}) or {}
            for step, share in recalls.items():
                shares.setdefault(step, []).append(share)
        return {f"{step}_recall": math.fsum(s) / len(s) for step, s in shares.items()}

    return compute


@metric(scores="unreduced")
def answer_failures() -> Metric:
    """Answers that failed both criteria by a repeated ID or no list of IDs."""

    def compute(scores: list[SampleScore]) -> dict[str, int]:
        kinds = Counter(filter(None, map(_answer_failure, scores)))
        return {label: kinds[kind] for kind, label in FAILURE_LABELS.items()}

    return compute


def _answer_failure(sample_score: SampleScore) -> str | None:
    """An answer-side error's kind; one no label counts is refused, not dropped."""
    error = _read(sample_score, read_error, _metadata(sample_score, "error"))
    if error is None or error.side != "answer":
        return None
    if error.kind not in FAILURE_LABELS:
        raise ValueError(
            f"sample {sample_score.sample_id!r}: metadata error.kind of an answer "
            f"failure must be {' or '.join(FAILURE_LABELS)}, got {quote(error.kind)}"
        )
    return error.kind


@metric
def criteria_shares() -> Metric:
    """Share of scored samples passing each criterion, as `accuracy` sums it."""
    to_float = value_to_float()

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        shares: dict[str, float] = {}
        for criterion in CRITERIA:
            total, counted = 0.0, 0
            for sample_score in scores:
                share = _criteria(sample_score)[criterion]  # over epochs, a mean
                if not (isinstance(share, float) and math.isnan(share)):
                    total += to_float(share)
                    counted += 1
            shares[criterion] = total / counted if counted else math.nan
        return shares

    return compute


def _criteria(sample_score: SampleScore) -> dict[str, Any]:
    value = sample_score.score.value
    if isinstance(value, dict) and all(key in value for key in CRITERIA):
        return value
    raise ValueError(
        f"sample {sample_score.sample_id!r}: an extraction metric needs "
        f"{{{', '.join(map(repr, CRITERIA))}}} as the score value, got {value!r}"
    )


def is_count(eval_metric: EvalMetric) -> bool:
    """Whether a logged metric is one of the counts, shown as an integer."""
    name = eval_metric.group or eval_metric.name
    return name.rsplit("/", 1)[-1] in COUNT_METRICS


STAGE_METRICS = [
    stage_shares(),
    stage_modes(),
    lucky_answers(),
    context_recall(),
    context_precision(),
    step_recall(),
    scored_runs(),
]

# `criteria_shares` fills the entry Inspect gives the plain reduced metrics,
# which would otherwise be logged empty and take the headline.
EXTRACTION_METRICS = [
    criteria_shares(),
    {"membership": [accuracy(), stderr()], "order": [accuracy(), stderr()]},
    answer_failures(),
    scored_runs(),
]

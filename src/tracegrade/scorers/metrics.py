"""Metrics as a reader of `inspect view` wants them (docs/scores.md#metrics).

The stage metrics and the counts take each epoch's own score
(`scores="unreduced"`): the default mean reducer would turn a stage into 0.0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from itertools import groupby
from typing import Any, TypeVar, cast

from inspect_ai.log import EvalMetric
from inspect_ai.scorer import (
    Metric,
    MetricProtocol,
    SampleScore,
    Value,
    frequency,
    metric,
    value_to_float,
)

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

SHOWN_STAGES = ("pass", "retrieval", "generation", "unresolved")
"""The order the stage metrics are logged in. Inspect's headline (the
metric `inspect view` and eval sets show for a run) is the first metric
of the first score, so it is the pass share: higher is better, as a
headline is read."""


def _read(sample_score: SampleScore, read: Callable[[Any], _T], of: Any) -> _T:
    """`read(of)`, its `InvalidScore` a `ValueError` naming the sample."""
    try:
        return read(of)
    except InvalidScore as invalid:
        raise ValueError(f"sample {sample_score.sample_id!r}: {invalid}") from None


def _stage(sample_score: SampleScore) -> str:
    return _read(sample_score, read_stage_value, sample_score.score.value)


def _sample_key(sample_score: SampleScore) -> str:
    return str(sample_score.sample_id)


def _metadata(sample_score: SampleScore, key: str) -> Any:
    metadata = sample_score.score.metadata or {}
    if key not in metadata:
        raise ValueError(
            f"sample {sample_score.sample_id!r}: score metadata has no {key!r}; "
            "this metric reads scores made by a tracegrade scorer"
        )
    return metadata[key]


@metric(scores="unreduced")
def stage_shares() -> Metric:
    """Share of scored runs in each stage, `pass` first as the headline: a
    value that is no stage is refused, and with no run each share is NaN."""
    # Called with SampleScores, as every metric of Inspect's today is.
    shares = cast(MetricProtocol, frequency(categories=SHOWN_STAGES))

    def compute(scores: list[SampleScore]) -> Value:
        if not scores:
            return dict.fromkeys(SHOWN_STAGES, math.nan)
        for sample_score in scores:
            _stage(sample_score)
        return shares(scores)

    return compute


@metric(scores="unreduced")
def stage_modes() -> Metric:
    """Share of samples in each stage, each counted once by its mode across
    epochs (`pass_mode`, ...); a tie goes to the earlier stage in `STAGES`."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        # Grouped by sorting rather than a Counter per sample id: a dict
        # per sample would hold memory in proportion to a bulk run.
        modes: Counter[str] = Counter()
        total = 0
        for _, group in groupby(sorted(scores, key=_sample_key), key=_sample_key):
            runs = list(group)
            if len(runs) == 1:
                modes[_stage(runs[0])] += 1
            else:
                counts = Counter(_stage(run) for run in runs)
                modes[max(STAGES, key=lambda s: (counts[s], -STAGES.index(s)))] += 1
            total += 1
        return {
            f"{stage}_mode": modes[stage] / total if total else math.nan
            for stage in SHOWN_STAGES
        }

    return compute


@metric(scores="unreduced")
def lucky_answers() -> Metric:
    """Runs labelled correct while required evidence never reached the context,
    as a mapping: over no run Inspect would log a scalar as NaN, not 0."""

    def compute(scores: list[SampleScore]) -> dict[str, int]:
        lucky = 0
        for sample_score in scores:
            if _stage(sample_score) != "retrieval":
                continue
            record = _metadata(sample_score, "record")
            if type(record) is dict and record.get("correct") is True:
                lucky += 1
        return {"lucky_answers": lucky}

    return compute


@metric(scores="unreduced")
def context_recall() -> Metric:
    """Mean `recall` over diagnosed runs (`unresolved` left out), summed by
    `math.fsum` so that no order of the runs changes the bits."""

    return _mean_share("recall")


@metric(scores="unreduced")
def context_precision() -> Metric:
    """Mean `precision` over scored runs that have one (an empty context left
    out), summed as `context_recall` is."""

    return _mean_share("precision")


def _mean_share(key: str) -> Metric:
    """The mean of the metadata share `key` over the runs where it is not
    null (NaN over none), summed by `math.fsum`."""

    def compute(scores: list[SampleScore]) -> float:
        counted = 0

        def shares() -> Iterator[float]:
            nonlocal counted
            for sample_score in scores:
                _metadata(sample_score, key)  # a tracegrade score's
                metadata = sample_score.score.metadata or {}
                share = _read(sample_score, partial(read_share, key=key), metadata)
                if share is None:
                    continue
                counted += 1
                yield share

        # A generator, not a list: a million runs need no million floats.
        total = math.fsum(shares())
        return total / counted if counted else math.nan

    return compute


@metric(scores="unreduced")
def step_recall() -> Metric:
    """Each pipeline step's mean recall over the runs that have the step,
    `{"retriever_recall": ...}`, summed exactly as `context_recall` is."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        # One pass, each step's shares gathered as read: work in proportion
        # to the runs' steps, however many steps or step names.
        shares: dict[str, list[float]] = {}
        for sample_score in scores:
            metadata = sample_score.score.metadata or {}
            recalls = _read(sample_score, read_step_recall, metadata) or {}
            for step, share in recalls.items():
                shares.setdefault(step, []).append(share)
        return {
            f"{step}_recall": math.fsum(kept) / len(kept)
            for step, kept in shares.items()
        }

    return compute


# Column labels, short enough for Inspect's results table; the full kinds
# are the scores' `reason`.
FAILURE_LABELS = {
    "duplicate-answer-id": "duplicate-id",
    "unreadable-answer": "unreadable",
}


@metric(scores="unreduced")
def answer_failures() -> Metric:
    """Answers that failed both criteria by breaking the answer contract:
    `duplicate-id` (a repeated ID) and `unreadable` (no list of IDs)."""

    def compute(scores: list[SampleScore]) -> dict[str, int]:
        counts = dict.fromkeys(FAILURE_LABELS.values(), 0)
        for sample_score in scores:
            _metadata(sample_score, "error")  # a tracegrade score's
            error = _read(sample_score, read_error, sample_score.score.metadata or {})
            if error is not None and error.side == "answer":
                counts[FAILURE_LABELS[error.kind]] += 1
        return counts

    return compute


@metric(scores="unreduced")
def scored_runs() -> Metric:
    """How many runs got a score, `{"scored_runs": n}`: the terminal shows no
    unscored count, and a mapping, since a scalar over no scores is NaN."""

    def compute(scores: list[SampleScore]) -> dict[str, int]:
        return {"scored_runs": len(scores)}

    return compute


@metric
def criteria_shares() -> Metric:
    """Share of scored samples passing each criterion, as `accuracy` gives it,
    in the scorer's own entry, which Inspect would otherwise log empty and
    so leave the log without a headline metric."""
    to_float = value_to_float()

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        shares: dict[str, float] = {}
        for criterion in CRITERIA:
            # Summed as `accuracy` sums, so the two agree to the last bit.
            total, counted = 0.0, 0
            for sample_score in scores:
                value = _criterion(sample_score, criterion)
                if not _is_nan(value):
                    total += to_float(value)
                    counted += 1
            shares[criterion] = total / float(counted) if counted else math.nan
        return shares

    return compute


def _criterion(sample_score: SampleScore, criterion: str) -> Any:
    value = sample_score.score.value
    if not isinstance(value, dict) or criterion not in value:
        raise ValueError(
            f"sample {sample_score.sample_id!r}: an extraction metric needs "
            f"{{{', '.join(repr(c) for c in CRITERIA)}}} as the score value, "
            f"got {value!r}"
        )
    # Reduced over epochs, a criterion is a mean (a float), not a bool.
    return value[criterion]


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


COUNT_METRICS = frozenset({"lucky_answers", "answer_failures", "scored_runs"})
"""The metrics that count runs, by unqualified registry name."""


def is_count(eval_metric: EvalMetric) -> bool:
    """Whether a logged metric is one of the counts, to be shown as an integer
    (Inspect stores every metric value as a float)."""
    name = eval_metric.group or eval_metric.name
    return name.rsplit("/", 1)[-1] in COUNT_METRICS

"""Metrics as a reader of `inspect view` wants them.

The stage metrics, `answer_failures` and `scored_runs` take each epoch's
own score (`scores="unreduced"`, as Inspect's categorical `frequency()` does).
Inspect's default epoch reducer is the mean, which turns a stage such as
"retrieval" into 0.0 before reduced metrics see it; unreduced metrics see
the real values under any reducer, and with N epochs they count runs, each
sample contributing N. `criteria_shares`, like Inspect's `accuracy` beside
it, takes each sample's reduced extraction score.

Unscored samples (the data errors) never reach a metric: Inspect drops
NaN scores first and reports their number as the score's unscored count,
shown in `inspect view` beside the metrics (the terminal shows metrics
only, hence `scored_runs`); the kind of each is the score's `reason`. When
every sample is an error the metrics get an empty list and report no
runs, instead of failing the log.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from itertools import groupby
from typing import Any, cast

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

from ..report.runs import ExactSum
from ..schema import (
    CRITERIA,
    STAGES,
    InvalidScore,
    read_error,
    read_share,
    read_stage_value,
    read_step_recall,
)

SHOWN_STAGES = ("pass", "retrieval", "generation", "unresolved")
"""The order the stage metrics are logged in. Inspect's headline (the
metric `inspect view` and eval sets show for a run) is the first metric
of the first score, so it is the pass share: higher is better, as a
headline is read."""


def _stage(sample_score: SampleScore) -> str:
    try:
        return read_stage_value(sample_score.score.value)
    except InvalidScore as invalid:
        raise ValueError(f"sample {sample_score.sample_id!r}: {invalid}") from None


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
    """Share of scored runs in each stage: pass, retrieval, generation, unresolved.

    Inspect's `frequency()` over the stages, with two differences that
    matter to a reader: a value that is not a stage is refused, not
    counted as a stage of its own, and with no diagnosed run each share is
    NaN (nothing was diagnosed), not 0. `pass` comes first, so it is the
    log's headline (see `SHOWN_STAGES`).
    """
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
    """Share of samples in each stage, each sample counted once by its mode.

    Inspect's epoch reducers only feed reduced metrics, and a reduced stage
    metric would break under the default mean reducer (a string mean is 0),
    so the mode across epochs is taken here: `pass_mode`, ... Ties go
    to the earlier stage in `STAGES`, so a sample that failed retrieval as
    often as it passed is not reported as passing. With one epoch these
    equal the `stage_shares`.
    """

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
    """Runs labelled correct while required evidence never reached the context.

    A correct label cannot erase a retrieval gap, so these are retrieval
    failures, not grounded passes; the count says how often a right answer
    hid one. A mapping, `{"lucky_answers": n}`, for the reason
    `scored_runs` is one: over no scored run Inspect logs a scalar as NaN,
    and the count is 0.
    """

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
    """Mean ID recall over diagnosed runs: the share of each run's unique
    required IDs that reached its context, averaged.

    Each score's metadata `recall` (`tracegrade.core.recall`) is taken as
    it is, so the figure is Ragas' ID-based context recall and TREC's `R@k`
    averaged over runs. Of the runs a metric sees, the diagnosed ones
    (retrieval, generation, pass) have a recall: `unresolved` runs require
    nothing and are left out, not counted as 0 or 1. An `answer-label` run
    has a recall in its metadata too, but it is unscored, and Inspect
    gives no metric an unscored sample: its recall is read from the
    metadata (`tracegrade.analysis`' `stage_recall`), not here. With no
    diagnosed run it is NaN. Each epoch counts as a run, as in
    `stage_shares`.

    Summed by `math.fsum`, which rounds the exact sum once: the figure does
    not depend on the order of the runs, so `tracegrade score` (which reads
    them in file order) and `inspect eval` give the same bits.
    """

    return _mean_share("recall")


@metric(scores="unreduced")
def context_precision() -> Metric:
    """Mean ID precision over scored runs that have one: the share of each
    run's unique context IDs that were required, averaged.

    Each score's metadata `precision` (`tracegrade.core.recall`) is taken
    as it is, so the figure is Ragas' ID-based context precision, and
    trec_eval's `P@k` at k = the number of unique context IDs, averaged
    over runs. Precision is null for an empty context (nothing to take a
    share of), and such runs are left out, not counted as 0 or 1; an
    `unresolved` run with an empty required list and a context has 0.0
    (nothing it was given was required), and counts. An `answer-label` run
    has a precision in its metadata too, but it is unscored and Inspect
    gives no metric an unscored sample (`tracegrade.analysis`'
    `stage_precision` has it). With no such run it is NaN. Each epoch
    counts as a run, as in `stage_shares`; summed by `math.fsum`, as
    `context_recall` is.
    """

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
                try:
                    share = read_share(sample_score.score.metadata or {}, key)
                except InvalidScore as invalid:
                    raise ValueError(
                        f"sample {sample_score.sample_id!r}: {invalid}"
                    ) from None
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
    """Each pipeline step's mean recall, named after the step:
    `{"retriever_recall": ..., "reranker_recall": ...}`.

    A run whose record carried the pipeline's steps has `step_recall` in
    its metadata (`tracegrade.core.steps`): the share of its required IDs
    in each step's output, counted as context recall is. Each step's mean
    is over the runs that have that step, beside `context_recall`, so a
    reader sees where recall falls along the pipeline. Runs without steps
    add nothing, and a log with none has no such figure (the dictionary
    is empty, and Inspect shows nothing for it). Summed exactly, to the
    double `math.fsum` gives, as `context_recall` is.
    """

    def step_recalls(sample_score: SampleScore) -> dict[str, float] | None:
        try:
            return read_step_recall(sample_score.score.metadata or {})
        except InvalidScore as invalid:
            raise ValueError(f"sample {sample_score.sample_id!r}: {invalid}") from None

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        # One pass, each step's shares summed as read: work in proportion
        # to the runs' steps, however many steps or step names.
        sums: dict[str, ExactSum] = {}
        for sample_score in scores:
            for step, share in (step_recalls(sample_score) or {}).items():
                sums.setdefault(step, ExactSum()).add(share)
        return {
            f"{step}_recall": exact.total / exact.count for step, exact in sums.items()
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
    """Answers that failed both criteria by breaking the answer contract.

    `duplicate-id`: the answer repeats an ID (reason `duplicate-answer-id`).
    `unreadable`: no list of IDs could be read from the output (reason
    `unreadable-answer`).
    """

    def compute(scores: list[SampleScore]) -> dict[str, int]:
        counts = dict.fromkeys(FAILURE_LABELS.values(), 0)
        for sample_score in scores:
            _metadata(sample_score, "error")  # a tracegrade score's
            try:
                error = read_error(sample_score.score.metadata or {})
            except InvalidScore as invalid:
                raise ValueError(
                    f"sample {sample_score.sample_id!r}: {invalid}"
                ) from None
            if error is not None and error.side == "answer":
                counts[FAILURE_LABELS[error.kind]] += 1
        return counts

    return compute


@metric(scores="unreduced")
def scored_runs() -> Metric:
    """How many runs got a score: `{"scored_runs": n}`.

    Inspect shows a score's unscored count in `inspect view` only; the
    terminal prints metrics alone, so a run whose every sample is a data
    error printed nothing but NaN there, with no hint why. Unscored runs
    never reach a metric, so this counts the scored ones, to read against
    the samples (times epochs) in the results header; their reasons are
    each score's `reason`, counted by kind by `tracegrade report`. It is a
    mapping because Inspect reports a scalar metric over no scores as NaN,
    and 0 is what must show.
    """

    def compute(scores: list[SampleScore]) -> dict[str, int]:
        return {"scored_runs": len(scores)}

    return compute


@metric
def criteria_shares() -> Metric:
    """Share of scored samples passing each extraction criterion.

    The same figures as the per-criterion `accuracy` (`value_to_float` of
    each key, averaged; a NaN key is skipped as Inspect skips it), in the
    scorer's own results entry. Inspect gives a scorer whose metrics list
    holds per-key metrics an entry of its own for the plain metrics of each
    view, with no metrics when there are none; that empty entry came first,
    so the log had no headline metric (Inspect takes the first metric of the
    first entry) and `inspect view` listed the run with no score. With this
    metric there, the headline is the membership share.
    """
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
    """Whether a logged metric is one of the counts, to be shown as an integer.

    Inspect stores every metric value as a float and prints it with three
    decimals; a count is an integer all the same. The registry name is the
    metric's `group` when it returned a mapping, else its `name`.
    """
    name = eval_metric.group or eval_metric.name
    return name.rsplit("/", 1)[-1] in COUNT_METRICS

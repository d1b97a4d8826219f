"""From evals to the figures `tracegrade report` shows: samples read one
at a time, only counters kept (the rules: docs/report.md).
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..core.errors import quote
from ..logs.evals import EvalRun, Evals, SampleReader, Superseded, read_evals
from ..logs.samples import SampleRead, UnreadableLog, log_samples
from ..logs.scores import LogError, LogScores, LogSummary
from ..schema import (
    EXTRACTION_SCORER,
    STAGE_SCORER,
    STAGES,
    UNSCORED_SIDES,
    ExtractionScore,
    InvalidScore,
    ScoreError,
    StageScore,
    read_extraction,
    read_stage,
)
from .runs import (
    NO_SCORE,
    NOT_RUN,
    SAMPLE_ERROR,
    Undiagnosed,
    mean_over_all,
    share_of,
    undiagnosed,
)
from .shares import CONFIDENCE, INTERVAL_METHOD, Cluster, Proportion
from .steps import PipelineLosses, PipelineTally
from .thresholds import Target, Threshold, ThresholdCheck, check_thresholds

if TYPE_CHECKING:
    from .results import ResultsDataset

COUNTING_UNIT: Final = "sample-epoch"
# The three ranked ID counts, each shown as a table and a chart: the
# documents diagnosed runs missed, and the IDs itemised answers dropped and
# invented.
ID_COUNTS: Final = ("missed", "dropped", "invented")


class ReportError(LogError):
    """Logs that cannot be reported on: a malformed tracegrade score, evals
    that cannot be pooled, or no tracegrade score at all."""


@dataclass(frozen=True)
class ErrorCount:
    """Runs of one error kind; `side` is "data" or "run" (unscored) or
    "answer" (a failed grade)."""

    kind: str
    side: str
    count: int


@dataclass(frozen=True)
class MissedDocument:
    """How often a required document never reached the context, of the
    `required` diagnosed runs that required it."""

    id: str
    missed: int
    required: int


@dataclass(frozen=True)
class DroppedID:
    """How often itemised answers left out a source ID, of the itemised
    answers whose source held it."""

    id: str
    dropped: int
    in_source: int


@dataclass(frozen=True)
class InventedID:
    """How often itemised answers held an ID their source did not; its
    share is of all itemised answers (`ExtractionSummary.itemised`)."""

    id: str
    invented: int


@dataclass(frozen=True)
class EvalInfo:
    """One eval, as its logs' headers describe it (`report` and `compare`)."""

    key: str
    name: str
    task: str
    model: str
    created: str
    status: str
    epochs: int
    logs: list[str]

    @classmethod
    def of(cls, run: EvalRun) -> EvalInfo:
        info = (run.key, run.name, run.task, run.model, run.created, run.status)
        return cls(*info, run.epochs, [log.path for log in run.logs])


@dataclass(frozen=True)
class EvalSummary(EvalInfo):
    """One eval read: `label` names it in the tables (E1, E2, ...)."""

    label: str
    epochs_reducer: list[str] | None
    missing_parts: list[int]
    """The first of the parts not found (see `EvalRun.missing_parts`)."""
    missing_count: int


@dataclass(frozen=True)
class StageSummary:
    """Stage diagnosis figures for one eval (or pooled evals) and score;
    `diagnosed` the runs with a stage, the shares' denominator, the rest
    `not_diagnosed` by why (docs/report.md)."""

    evals: list[str]
    task: str
    model: str
    scorer: str
    status: str
    epochs: list[int]
    samples: int
    runs: int
    diagnosed: int
    not_diagnosed: list[Undiagnosed]
    over_all_runs: dict[str, float | None]
    stages: dict[str, Proportion]
    lucky: Proportion
    recall: float | None
    recall_runs: int
    precision: float | None
    precision_runs: int
    errors: list[ErrorCount]
    missed: list[MissedDocument]
    distinct_missed: int
    pipeline: PipelineLosses | None = None
    """Where the missing documents were lost, over the diagnosed runs whose
    records carried the pipeline's steps; None when none did."""


@dataclass(frozen=True)
class ExtractionSummary:
    """Ordered extraction figures for one eval (or pooled evals) and score;
    an order pass implies a membership pass, so `gap` is a proportion too."""

    evals: list[str]
    task: str
    model: str
    scorer: str
    status: str
    epochs: list[int]
    samples: int
    runs: int
    graded: int
    not_graded: list[Undiagnosed]
    over_all_runs: dict[str, float | None]
    membership: Proportion
    order: Proportion
    gap: Proportion
    errors: list[ErrorCount]
    itemised: int
    dropped: list[DroppedID]
    invented: list[InventedID]
    distinct_dropped: int
    distinct_invented: int


@dataclass(frozen=True)
class Report:
    """Everything `tracegrade report` shows, in every output form;
    `thresholds` are the `--fail-under` checks."""

    unit: str
    interval: str
    confidence: float
    top: int
    pooled: bool
    evals: list[EvalSummary]
    superseded: list[Superseded]
    logs: list[LogSummary]
    stage_diagnosis: list[StageSummary]
    ordered_extraction: list[ExtractionSummary]
    thresholds: list[ThresholdCheck] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def summaries(self) -> list[StageSummary | ExtractionSummary]:
        """Every summary, stage diagnosis first."""
        return [*self.stage_diagnosis, *self.ordered_extraction]


def build_report(
    paths: Sequence[str],
    *,
    top: int = 10,
    pool: bool = False,
    thresholds: Sequence[Threshold] = (),
    on_log_read: Callable[[str], None] | None = None,
    samples: SampleReader = log_samples,
) -> Report:
    """Read every eval at or under `paths` (Parquet results after the logs'
    evals) and aggregate its tracegrade scores. Raises `LogError`,
    `ReportError` or `InvalidThreshold`."""
    from .results import split_paths

    logs, results = split_paths(paths)
    return report_evals(
        read_evals(logs) if logs else Evals([], []),
        top=top,
        pool=pool,
        thresholds=thresholds,
        on_log_read=on_log_read,
        samples=samples,
        results=results,
    )


def report_evals(
    evals: Evals,
    *,
    top: int = 10,
    pool: bool = False,
    thresholds: Sequence[Threshold] = (),
    on_log_read: Callable[[str], None] | None = None,
    samples: SampleReader = log_samples,
    results: Sequence[ResultsDataset] = (),
) -> Report:
    """`build_report` of evals and Parquet results already found."""
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    aggregate = _Aggregate(pool)
    # Pooled, an eval of one epoch and one of several make one row, whose
    # intervals need every run clustered by sample from the first.
    several = {(run.task, run.model) for run in evals.runs if run.epochs > 1}
    for number, run in enumerate(evals.runs, start=1):
        clustered = run.epochs > 1 or (pool and (run.task, run.model) in several)
        aggregate.add_eval(f"E{number}", run, clustered, on_log_read, samples)
    for number, dataset in enumerate(results, start=len(evals.runs) + 1):
        clustered = pool and (dataset.task, dataset.model) in several
        aggregate.add_results(f"E{number}", dataset, clustered, on_log_read)
    report = aggregate.report(top, evals.superseded)
    if thresholds:
        checks = check_thresholds(thresholds, _targets(report))
        report = dataclasses.replace(report, thresholds=checks)
    return report


def _targets(report: Report) -> Iterator[Target]:
    for summary in report.summaries:
        staged = isinstance(summary, StageSummary)
        yield Target(
            eval="+".join(summary.evals),
            task=summary.task,
            model=summary.model,
            score=summary.scorer,
            kind=STAGE_SCORER if staged else EXTRACTION_SCORER,
            runs=summary.runs,
            over_all_runs=summary.over_all_runs,
        )


@dataclass
class _Clusters:
    """Per sample, how many of its runs had each outcome; kept only when a
    sample can run more than once."""

    samples: defaultdict[Any, Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )

    def add(self, sample: Any, *outcomes: str) -> None:
        self.samples[sample].update(outcomes)

    def of(self, outcome: str, population: str) -> list[Cluster]:
        return [
            (counts[outcome], counts[population])
            for counts in self.samples.values()
            if counts[population]
        ]


@dataclass
class _Counts:
    """What every summary counts."""

    evals: list[str] = field(default_factory=list)
    statuses: set[str] = field(default_factory=set)
    epochs: set[int] = field(default_factory=set)
    runs: int = 0
    not_run: int = 0
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    # Runs with no stage (or grade), by why.
    unscored: Counter[str] = field(default_factory=Counter)
    clusters: _Clusters | None = None


@dataclass
class _StageCounts(_Counts):
    stages: Counter[str] = field(default_factory=Counter)
    lucky: int = 0
    labelled_correct: int = 0
    missed: Counter[str] = field(default_factory=Counter)
    required: Counter[str] = field(default_factory=Counter)
    recalls: array[float] = field(default_factory=lambda: array("d"))
    precisions: array[float] = field(default_factory=lambda: array("d"))
    # Runs not diagnosed that lack the figure: they count 0 over all runs.
    without_recall: int = 0
    without_precision: int = 0
    pipeline: PipelineTally = field(default_factory=PipelineTally)


@dataclass
class _ExtractionCounts(_Counts):
    graded: int = 0
    membership: int = 0
    order: int = 0
    kept_not_ordered: int = 0
    itemised: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    in_source: Counter[str] = field(default_factory=Counter)
    invented: Counter[str] = field(default_factory=Counter)


_GroupKey = tuple[str, ...]


class _Eval(Protocol):
    """What a summary takes from its eval: a log's, or Parquet results'."""

    @property
    def task(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def epochs(self) -> int: ...


def _invalid(
    path: str, sample: SampleRead, score: str, invalid: InvalidScore
) -> ReportError:
    return ReportError(
        f"{path}: sample {quote(sample.id)} epoch {sample.epoch}, "
        f"score {quote(score)}: {invalid}"
    )


class _Aggregate:
    def __init__(self, pool: bool) -> None:
        self.pool = pool
        self.evals: list[EvalSummary] = []
        self.logs: list[LogSummary] = []
        self.stage: dict[_GroupKey, _StageCounts] = {}
        self.extraction: dict[_GroupKey, _ExtractionCounts] = {}
        # Each group's task, model and score name.
        self.meta: dict[_GroupKey, tuple[str, str, str]] = {}
        # With pool: the evals of each group and the sample ids each scored.
        self.pooled_ids: dict[_GroupKey, dict[str, set[Any]]] = {}

    def add_eval(
        self,
        label: str,
        run: EvalRun,
        clustered: bool,
        on_log_read: Callable[[str], None] | None,
        samples: SampleReader,
    ) -> None:
        """Count the eval's samples as they are read; only counters stay.
        `clustered`: keep each sample's outcomes, for the intervals."""
        for log in run.reads(samples):
            # The ids of samples with no score, for the clusters; otherwise
            # only counted, so a log of another scorer's samples costs nothing.
            scores = LogScores(log, keep_scoreless=clustered)
            try:
                for sample, name, scorer, score in scores:
                    key = self._key(label, run, name)
                    counts = self._counts(key, scorer, label, run, clustered)
                    sample_key = sample.id if self.pool else (label, sample.id)
                    read = read_stage if scorer == STAGE_SCORER else read_extraction
                    try:
                        _count(counts, sample_key, read(score.value, score.metadata))
                    except InvalidScore as invalid:
                        raise _invalid(log.path, sample, name, invalid) from None
                    if self.pool:
                        self.pooled_ids.setdefault(key, {}).setdefault(
                            label, set()
                        ).add(sample.id)
            except (UnreadableLog, OSError) as error:
                raise LogError(
                    f"cannot read {log.path!r} as an Inspect log ({error})"
                ) from error
            self._count_unscored(label, run, clustered, scores)
            self.logs.append(scores.summary())
            if on_log_read is not None:
                on_log_read(log.path)
        self.evals.append(
            EvalSummary(
                **vars(EvalInfo.of(run)),
                label=label,
                epochs_reducer=run.epochs_reducer,
                missing_parts=run.missing_parts,
                missing_count=run.missing_count,
            )
        )

    def add_results(
        self,
        label: str,
        results: ResultsDataset,
        clustered: bool,
        on_log_read: Callable[[str], None] | None,
    ) -> None:
        """Count Parquet results as their batches are read: each row a run
        of its own sample, decoded into the score a log's would be."""
        from .results import read_results

        scorer = results.scorer
        key = self._key(label, results, scorer)
        counts = self._counts(key, scorer, label, results, clustered)
        ids: set[Any] | None = None
        if self.pool:
            ids = self.pooled_ids.setdefault(key, {}).setdefault(label, set())
        for row, (sample_id, score) in enumerate(read_results(results)):
            # A row without an id is a sample no other eval can share.
            sample = sample_id if sample_id is not None else (label, row)
            _count(counts, sample if self.pool else (label, sample), score)
            if ids is not None:
                ids.add(sample)
        self.logs.append(
            LogSummary(
                path=results.path,
                task=results.task,
                model=results.model,
                run_id="",
                part=None,
                status=results.status,
                epochs=results.epochs,
                samples=results.rows,
                tracegrade_scores=results.rows,
                samples_without_tracegrade_score=0,
                sample_errors=0,
                other_scorers=[],
            )
        )
        if on_log_read is not None:
            on_log_read(results.path)
        self.evals.append(
            EvalSummary(
                label=label,
                key=f"parquet:{results.path}",
                name=results.path,
                task=results.task,
                model=results.model,
                created=results.created,
                status=results.status,
                epochs=results.epochs,
                epochs_reducer=None,
                logs=[results.path],
                missing_parts=[],
                missing_count=0,
            )
        )

    def _count_unscored(
        self, label: str, run: EvalRun, clustered: bool, scores: LogScores
    ) -> None:
        """Count, under each tracegrade score of the log, its samples with
        no tracegrade score and the sample-epochs it never ran."""
        errored = scores.without_errored
        unscored = scores.without - errored
        not_run = scores.not_run
        if not (errored or unscored or not_run):
            return
        for name, scorer in scores.score_names().items():
            key = self._key(label, run, name)
            counts = self._counts(key, scorer, label, run, clustered)
            missing = errored + unscored + not_run
            counts.runs += missing
            counts.not_run += not_run
            counts.unscored[SAMPLE_ERROR] += errored
            counts.errors[SAMPLE_ERROR, "run"] += errored
            counts.unscored[NO_SCORE] += unscored
            counts.unscored[NOT_RUN] += not_run
            if isinstance(counts, _StageCounts):
                counts.without_recall += missing
                counts.without_precision += missing
            if counts.clusters is not None and scores.scoreless is not None:
                for sample_id, _, _ in scores.scoreless:
                    counts.clusters.add(sample_id if self.pool else (label, sample_id))
            if self.pool:
                ids = self.pooled_ids.setdefault(key, {}).setdefault(label, set())
                ids.update(sample_id for sample_id, _, _ in scores.scoreless or [])

    def _key(self, label: str, run: _Eval, score: str) -> _GroupKey:
        if self.pool:
            return (run.task, run.model, score)
        return (label, score)

    def _counts(
        self, key: _GroupKey, scorer: str, label: str, run: _Eval, clustered: bool
    ) -> _StageCounts | _ExtractionCounts:
        groups: dict[_GroupKey, Any] = (
            self.stage if scorer == STAGE_SCORER else self.extraction
        )
        counts: _StageCounts | _ExtractionCounts | None = groups.get(key)
        if counts is None:
            counts = _StageCounts() if scorer == STAGE_SCORER else _ExtractionCounts()
            groups[key] = counts
            self.meta[key] = (run.task, run.model, key[-1])
        if label not in counts.evals:
            counts.evals.append(label)
            counts.statuses.add(run.status)
            counts.epochs.add(run.epochs)
        if clustered and counts.clusters is None:
            counts.clusters = _Clusters()
        return counts

    def report(self, top: int, superseded: list[Superseded]) -> Report:
        if not self.stage and not self.extraction:
            raise ReportError(_nothing_found(self.logs))
        self._check_pooled()
        return Report(
            unit=COUNTING_UNIT,
            interval=INTERVAL_METHOD,
            confidence=CONFIDENCE,
            top=top,
            pooled=self.pool,
            evals=self.evals,
            superseded=superseded,
            logs=self.logs,
            stage_diagnosis=[
                _stage_summary(self.meta[key], counts, top)
                for key, counts in sorted(self.stage.items(), key=self._order)
            ],
            ordered_extraction=[
                _extraction_summary(self.meta[key], counts, top)
                for key, counts in sorted(self.extraction.items(), key=self._order)
            ],
        )

    def _order(self, item: tuple[_GroupKey, _Counts]) -> tuple[int, str]:
        # Rows in the order of the evals (E1, E2, ...), as the evals table.
        first = int(item[1].evals[0][1:])
        return (first, self.meta[item[0]][2])

    def _check_pooled(self) -> None:
        """Refuse to pool evals that scored the same sample ids."""
        for key, by_eval in self.pooled_ids.items():
            for first, second in combinations(by_eval, 2):
                shared = by_eval[first] & by_eval[second]
                if shared:
                    raise ReportError(_shared_samples(key, first, second, shared))


def _shared_samples(key: _GroupKey, first: str, second: str, shared: set[Any]) -> str:
    example = sorted(shared, key=str)[0]
    task, model, score = key
    return (
        f"--pool: evals {first} and {second} ({task}, {model}, score {quote(score)}) "
        f"both scored {len(shared)} sample id{'s' if len(shared) != 1 else ''} "
        f"(such as {quote(example)}); pooling them would count those samples twice. "
        "Pool evals of different samples, or report them as separate rows "
        "without --pool"
    )


def _count_error(counts: _Counts, error: ScoreError | None) -> None:
    """Count the score's error, if any; an unscored one is also counted
    as a run with no result, by its kind."""
    if error is None:
        return
    counts.errors[error.kind, error.side] += 1
    if error.unscored:
        counts.unscored[error.kind] += 1


def _count_shares(counts: _StageCounts, score: StageScore) -> None:
    """Count the run's recall and precision, those it has; a run not
    diagnosed that lacks one counts 0 over all runs."""
    if score.recall is not None:
        counts.recalls.append(score.recall)
    elif score.stage is None:
        counts.without_recall += 1
    if score.precision is not None:
        counts.precisions.append(score.precision)
    elif score.stage is None:
        counts.without_precision += 1


def _count(
    counts: _StageCounts | _ExtractionCounts,
    sample: Any,
    score: StageScore | ExtractionScore,
) -> None:
    if isinstance(score, StageScore):
        assert isinstance(counts, _StageCounts)
        _count_stage(counts, sample, score)
    else:
        assert isinstance(counts, _ExtractionCounts)
        _count_extraction(counts, sample, score)


def _count_stage(counts: _StageCounts, sample: Any, score: StageScore) -> None:
    counts.runs += 1
    if counts.clusters is not None:
        counts.clusters.add(sample)
    _count_error(counts, score.error)
    # An unscored run has no stage, but a recall and a precision of its own
    # (a run with no label still had a context).
    _count_shares(counts, score)
    stage = score.stage
    if stage is None:
        return
    counts.stages[stage] += 1
    outcomes = ["staged", stage]
    if score.required is not None and score.missing is not None:
        counts.required.update(set(score.required))
        if score.labelled_correct:
            counts.labelled_correct += 1
            outcomes.append("labelled_correct")
        if stage == "retrieval":
            counts.missed.update(score.missing)
            if score.labelled_correct:
                counts.lucky += 1
                outcomes.append("lucky")
        if score.steps is not None:
            counts.pipeline.add(
                score.required, score.context_size or 0, score.steps, score.lost
            )
    if counts.clusters is not None:
        counts.clusters.add(sample, *outcomes)


def _count_extraction(
    counts: _ExtractionCounts, sample: Any, score: ExtractionScore
) -> None:
    counts.runs += 1
    if counts.clusters is not None:
        counts.clusters.add(sample)
    _count_error(counts, score.error)
    membership, order = score.membership, score.order
    if membership is None or order is None:
        return
    counts.graded += 1
    counts.membership += membership
    counts.order += order
    counts.kept_not_ordered += membership and not order
    if counts.clusters is not None:
        outcomes = ["graded"]
        outcomes += ["membership"] if membership else []
        outcomes += ["order"] if order else []
        outcomes += ["gap"] if membership and not order else []
        counts.clusters.add(sample, *outcomes)
    if score.itemised is None or score.source is None:
        return
    counts.itemised += 1
    counts.in_source.update(score.source)
    counts.dropped.update(score.itemised.dropped)
    counts.invented.update(score.itemised.invented)


def _error_counts(errors: Counter[tuple[str, str]]) -> list[ErrorCount]:
    # Unscored runs first: they shrink the denominators of every figure.
    ordered = sorted(
        errors.items(),
        key=lambda item: (item[0][1] not in UNSCORED_SIDES, -item[1], item[0][0]),
    )
    return [ErrorCount(kind, side, count) for (kind, side), count in ordered]


def _status(statuses: Iterable[str]) -> str:
    """ "success", or the first other status of the evals counted."""
    others = sorted(status for status in set(statuses) if status != "success")
    return others[0] if others else "success"


def _share(
    counts: _Counts, outcome: str, count: int, population: str, total: int
) -> Proportion:
    clusters = (
        None if counts.clusters is None else counts.clusters.of(outcome, population)
    )
    return Proportion.of(count, total, clusters)


def _samples(counts: _Counts) -> int:
    """The samples logged: a sample never run is in no cluster."""
    if counts.clusters is None:
        return counts.runs - counts.not_run
    return len(counts.clusters.samples)


def _mean_over_all(shares: array[float], without: int) -> float | None:
    return mean_over_all(math.fsum(shares), len(shares), without)


def _ranked(counter: Counter[str]) -> list[tuple[str, int]]:
    """Most frequent first; ties in code point order, so the list is stable."""
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))


def _stage_summary(
    meta: tuple[str, str, str], counts: _StageCounts, top: int
) -> StageSummary:
    task, model, scorer = meta
    staged = sum(counts.stages.values())
    ranked = _ranked(counts.missed)
    return StageSummary(
        evals=counts.evals,
        task=task,
        model=model,
        scorer=scorer,
        status=_status(counts.statuses),
        epochs=sorted(counts.epochs),
        samples=_samples(counts),
        runs=counts.runs,
        diagnosed=staged,
        not_diagnosed=undiagnosed(counts.unscored),
        over_all_runs={
            "pass": share_of(counts.stages["pass"], counts.runs),
            "context_recall": _mean_over_all(counts.recalls, counts.without_recall),
            "context_precision": _mean_over_all(
                counts.precisions, counts.without_precision
            ),
        },
        stages={
            stage: _share(counts, stage, counts.stages[stage], "staged", staged)
            for stage in STAGES
        },
        lucky=_share(
            counts, "lucky", counts.lucky, "labelled_correct", counts.labelled_correct
        ),
        recall=_mean(counts.recalls),
        recall_runs=len(counts.recalls),
        precision=_mean(counts.precisions),
        precision_runs=len(counts.precisions),
        errors=_error_counts(counts.errors),
        missed=[
            MissedDocument(document_id, missed, counts.required[document_id])
            for document_id, missed in ranked[:top]
        ],
        distinct_missed=len(ranked),
        pipeline=counts.pipeline.summary(),
    )


def _mean(shares: array[float]) -> float | None:
    return math.fsum(shares) / len(shares) if shares else None


def _extraction_summary(
    meta: tuple[str, str, str], counts: _ExtractionCounts, top: int
) -> ExtractionSummary:
    task, model, scorer = meta
    dropped = _ranked(counts.dropped)
    invented = _ranked(counts.invented)
    graded = counts.graded
    return ExtractionSummary(
        evals=counts.evals,
        task=task,
        model=model,
        scorer=scorer,
        status=_status(counts.statuses),
        epochs=sorted(counts.epochs),
        samples=_samples(counts),
        runs=counts.runs,
        graded=graded,
        not_graded=undiagnosed(counts.unscored),
        over_all_runs={
            "membership": share_of(counts.membership, counts.runs),
            "order": share_of(counts.order, counts.runs),
        },
        membership=_share(counts, "membership", counts.membership, "graded", graded),
        order=_share(counts, "order", counts.order, "graded", graded),
        gap=_share(counts, "gap", counts.kept_not_ordered, "graded", graded),
        errors=_error_counts(counts.errors),
        itemised=counts.itemised,
        dropped=[
            DroppedID(document_id, times, counts.in_source[document_id])
            for document_id, times in dropped[:top]
        ],
        invented=[
            InventedID(document_id, times) for document_id, times in invented[:top]
        ],
        distinct_dropped=len(dropped),
        distinct_invented=len(invented),
    )


def _nothing_found(logs: Sequence[LogSummary]) -> str:
    other = sorted({name for log in logs for name in log.other_scorers})
    found = f"; scores found: {', '.join(other)}" if other else "; no scores at all"
    read = ", ".join(log.path for log in logs[:3])
    more = f" and {len(logs) - 3} more" if len(logs) > 3 else ""
    return (
        f"no tracegrade scores ({STAGE_SCORER}, {EXTRACTION_SCORER}) in "
        f"{len(logs)} log{'s' if len(logs) != 1 else ''} ({read}{more}){found}"
    )


__all__ = [
    "COUNTING_UNIT",
    "ID_COUNTS",
    "DroppedID",
    "ErrorCount",
    "EvalInfo",
    "EvalSummary",
    "ExtractionSummary",
    "InventedID",
    "MissedDocument",
    "Report",
    "ReportError",
    "StageSummary",
    "build_report",
    "report_evals",
]

"""Evals to figures, samples read one at a time (rules: docs/report.md)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from statistics import NormalDist
from typing import Any

from ..core.errors import quote
from ..logs.evals import EvalRun, Evals, SampleReader, Superseded, read_evals
from ..logs.samples import UnreadableLog, log_samples
from ..logs.scores import LogError, LogScores, LogSummary, nothing_found
from ..schema import (
    EXTRACTION_SCORER,
    STAGE_SCORER,
    STAGES,
    UNSCORED_SIDES,
    ExtractionScore,
    InvalidScore,
    StageScore,
    read_extraction,
    read_stage,
)
from .results import ResultsDataset, read_results, split_paths
from .runs import SAMPLE_ERROR, AllRuns, Undiagnosed, ranked, undiagnosed
from .steps import PipelineLosses, PipelineTally
from .thresholds import Target, Threshold, ThresholdCheck, check_thresholds

CONFIDENCE = 0.95


class ReportError(LogError):
    """A malformed score, evals that cannot be pooled, or no score at all."""


def wilson(share: float, trials: float) -> tuple[float, float]:
    """Wilson's score interval of `share` over `trials`, whole or effective."""
    z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
    z2n = z * z / trials
    centre = (share + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(share * (1 - share) / trials + z2n / (4 * trials))
    return max(0.0, centre - half), min(1.0, centre + half)


def effective_trials(clusters: Sequence[tuple[int, int]]) -> float:
    """Runs clustered by sample (had, of) over their design effect."""
    runs = sum(size for _, size in clusters)
    count = sum(had for had, _ in clusters)
    samples = len(clusters)
    if samples < 2 or count in (0, runs):
        return float(samples)
    share = count / runs
    deviations = math.fsum((had - size * share) ** 2 for had, size in clusters)
    clustered = deviations * samples / (samples - 1) / runs**2
    independent = share * (1 - share) / (runs - 1)
    return min(float(runs), max(float(samples), runs * independent / clustered))


@dataclass(frozen=True)
class Proportion:
    """`count` of `total` runs, its share and Wilson interval."""

    count: int
    total: int
    share: float | None
    low: float | None
    high: float | None
    effective_total: float | None = None

    @classmethod
    def of(cls, count: int, total: int, clusters: list[tuple[int, int]]) -> Proportion:
        if total == 0:
            return cls(count, 0, None, None, None)
        share = count / total
        clustered = any(size != 1 for _, size in clusters)
        effective = effective_trials(clusters) if clustered else None
        return cls(count, total, share, *wilson(share, effective or total), effective)


@dataclass(frozen=True)
class ErrorCount:
    kind: str
    side: str
    count: int


@dataclass(frozen=True)
class MissedDocument:
    id: str
    missed: int
    required: int


@dataclass(frozen=True)
class DroppedID:
    id: str
    dropped: int
    in_source: int


@dataclass(frozen=True)
class InventedID:
    id: str
    invented: int


@dataclass(frozen=True)
class EvalSummary:
    """One eval, as its logs' headers describe it."""

    key: str
    name: str
    task: str
    model: str
    created: str
    status: str
    epochs: int
    logs: list[str]
    label: str
    epochs_reducer: list[str] | None
    missing_parts: list[int]
    missing_count: int


@dataclass(frozen=True)
class _Row:
    evals: list[str]
    task: str
    model: str
    scorer: str
    status: str
    epochs: list[int]
    samples: int
    runs: int


@dataclass(frozen=True)
class StageSummary(_Row):
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


@dataclass(frozen=True)
class ExtractionSummary(_Row):
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
    """Everything `tracegrade report` shows; its JSON is `to_json`."""

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
        return [*self.stage_diagnosis, *self.ordered_extraction]


def build_report(
    paths: Sequence[str],
    *,
    top: int = 10,
    pool: bool = False,
    thresholds: Sequence[Threshold] = (),
    samples: SampleReader = log_samples,
) -> Report:
    """Count the tracegrade scores of every eval at or under `paths`."""
    logs, results = split_paths(paths)
    evals = read_evals(logs)
    return report_evals(evals, results, top, pool, thresholds, samples=samples)


def report_evals(
    evals: Evals,
    results: Sequence[ResultsDataset],
    top: int = 10,
    pool: bool = False,
    thresholds: Sequence[Threshold] = (),
    on_log_read: Callable[[str], None] = lambda _path: None,
    samples: SampleReader = log_samples,
) -> Report:
    """`build_report` of evals and Parquet results already found."""
    counted = _Counted(pool)
    # Pooled with an eval of several epochs, every run is clustered by sample.
    several = {(run.task, run.model) for run in evals.runs if run.epochs > 1}
    for number, run in enumerate(evals.runs, start=1):
        clustered = run.epochs > 1 or (pool and (run.task, run.model) in several)
        counted.add_eval(f"E{number}", run, clustered, samples, on_log_read)
    for number, dataset in enumerate(results, start=len(evals.runs) + 1):
        clustered = pool and (dataset.task, dataset.model) in several
        counted.add_results(f"E{number}", dataset, clustered)
        on_log_read(dataset.path)
    summaries = counted.summaries(top)
    targets = [
        Target("+".join(s.evals), s.task, s.model, s.scorer, kind, *figures)
        for s in summaries
        for kind in [STAGE_SCORER if isinstance(s, StageSummary) else EXTRACTION_SCORER]
        for figures in [(s.runs, s.over_all_runs)]
    ]
    return Report(
        unit="sample-epoch",
        interval="wilson",
        confidence=CONFIDENCE,
        top=top,
        pooled=pool,
        evals=counted.evals,
        superseded=evals.superseded,
        logs=counted.logs,
        stage_diagnosis=[s for s in summaries if isinstance(s, StageSummary)],
        ordered_extraction=[s for s in summaries if isinstance(s, ExtractionSummary)],
        thresholds=check_thresholds(thresholds, targets) if thresholds else [],
    )


@dataclass
class _Group:
    """One row's counters, and per sample its outcomes when clustered."""

    task: str
    model: str
    score: str
    kind: str
    evals: list[str] = field(default_factory=list)
    statuses: set[str] = field(default_factory=set)
    epochs: set[int] = field(default_factory=set)
    all: AllRuns = field(default_factory=AllRuns)
    not_run: int = 0  # apart from why["not-run"], which a row's error kind may say
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    ids: defaultdict[str, Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    clusters: defaultdict[Any, Counter[str]] | None = None
    pipeline: PipelineTally = field(default_factory=PipelineTally)
    # Pooled: the sample ids each eval scored, which no other may share.
    sample_ids: defaultdict[str, set[Any]] = field(
        default_factory=lambda: defaultdict(set)
    )

    def count(self, sample: Any, score: StageScore | ExtractionScore) -> None:
        outcomes: list[str] = []
        ids = self.ids
        if isinstance(score, StageScore):
            diagnosed = score.stage is not None
            figures = score.recall, score.precision
            if score.stage is not None:
                outcomes += ["staged", score.stage]
            if diagnosed and score.required is not None and score.missing is not None:
                ids["required"].update(set(score.required))
                if score.labelled_correct:
                    outcomes.append("labelled_correct")
                if score.stage == "retrieval":
                    ids["missed"].update(score.missing)
                    if score.labelled_correct:
                        outcomes.append("lucky")
                if score.steps is not None:
                    size = score.context_size or 0
                    self.pipeline.add(score.required, size, score.steps, score.lost)
        else:
            membership, order = score.membership, score.order
            diagnosed = membership is not None and order is not None
            figures = None, None
            if diagnosed:
                criteria = {"membership": membership, "order": order}
                criteria["gap"] = membership and not order
                outcomes += ["graded", *(name for name, met in criteria.items() if met)]
                if score.itemised is not None and score.source is not None:
                    outcomes.append("itemised")
                    ids["in_source"].update(score.source)
                    ids["dropped"].update(score.itemised.dropped)
                    ids["invented"].update(score.itemised.invented)
        if (error := score.error) is not None:
            self.errors[error.kind, error.side] += 1
        why = error.kind if error is not None and error.unscored else None
        self.all.add(diagnosed, why, tuple(outcomes), *figures)
        if self.clusters is not None:
            self.clusters[sample].update(outcomes)

    def share(self, outcome: str, population: str) -> Proportion:
        clusters = [
            (counts[outcome], counts[population])
            for counts in (self.clusters or {}).values()
            if counts[population]
        ]
        n = self.all.outcomes
        return Proportion.of(n[outcome], n[population], clusters)

    def summary(self, top: int) -> StageSummary | ExtractionSummary:
        tally, ids = self.all, self.ids
        status = min(self.statuses - {"success"}, default="success")
        samples = (
            tally.runs - self.not_run if self.clusters is None else len(self.clusters)
        )
        row = self.evals, self.task, self.model, self.score, status
        runs = sorted(self.epochs), samples, tally.runs, tally.diagnosed
        why = undiagnosed(tally.why)
        common = (*row, *runs, why)
        # Unscored runs first: they shrink the denominators of every figure.
        counts = sorted(
            (ErrorCount(kind, side, n) for (kind, side), n in self.errors.items()),
            key=lambda e: (e.side not in UNSCORED_SIDES, -e.count, e.kind),
        )
        if self.kind == STAGE_SCORER:
            missed, required = ranked(ids["missed"]), ids["required"]
            recall, precision = tally.recall, tally.precision
            return StageSummary(
                *common,
                tally.figures(("pass", "context_recall", "context_precision")),
                {stage: self.share(stage, "staged") for stage in STAGES},
                self.share("lucky", "labelled_correct"),
                recall.mean(recall.count),
                recall.count,
                precision.mean(precision.count),
                precision.count,
                counts,
                [MissedDocument(i, n, required[i]) for i, n in missed[:top]],
                len(missed),
                self.pipeline.summary(),
            )
        dropped, invented = ranked(ids["dropped"]), ranked(ids["invented"])
        return ExtractionSummary(
            *common,
            tally.figures(("membership", "order")),
            self.share("membership", "graded"),
            self.share("order", "graded"),
            self.share("gap", "graded"),
            counts,
            tally.outcomes["itemised"],
            [DroppedID(i, n, ids["in_source"][i]) for i, n in dropped[:top]],
            [InventedID(i, n) for i, n in invented[:top]],
            len(dropped),
            len(invented),
        )


class _Counted:
    """Every group of an eval (or, pooled, of a task and model) and score."""

    def __init__(self, pool: bool) -> None:
        self.pool = pool
        self.evals: list[EvalSummary] = []
        self.logs: list[LogSummary] = []
        self.groups: dict[tuple[str, ...], _Group] = {}

    def group(
        self, label: str, run: Any, score: str, kind: str, clustered: bool
    ) -> _Group:
        key = (run.task, run.model, score) if self.pool else (label, score)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = _Group(run.task, run.model, score, kind)
        if label not in group.evals:
            group.evals.append(label)
            group.statuses.add(run.status)
            group.epochs.add(run.epochs)
        if clustered and group.clusters is None:
            group.clusters = defaultdict(Counter)
        return group

    def sample(self, group: _Group, label: str, sample_id: Any) -> Any:
        """The sample's key in the clusters; pooled, its id, kept."""
        if not self.pool:
            return (label, sample_id)
        group.sample_ids[label].add(sample_id)
        return sample_id

    def add_eval(
        self,
        label: str,
        run: EvalRun,
        clustered: bool,
        samples: SampleReader,
        on_log_read: Callable[[str], None],
    ) -> None:
        for log in run.reads(samples):
            # The ids of samples with no score are kept only for clusters.
            scores = LogScores(log, keep_scoreless=clustered)
            try:
                for sample, name, scorer, score in scores:
                    group = self.group(label, run, name, scorer, clustered)
                    read = read_stage if scorer == STAGE_SCORER else read_extraction
                    try:
                        read_score = read(score.value, score.metadata)
                    except InvalidScore as invalid:
                        raise ReportError(
                            f"{log.path}: sample {quote(sample.id)} epoch "
                            f"{sample.epoch}, score {quote(name)}: {invalid}"
                        ) from None
                    group.count(self.sample(group, label, sample.id), read_score)
            except (UnreadableLog, OSError) as error:
                raise LogError(
                    f"cannot read {log.path!r} as an Inspect log ({error})"
                ) from error
            errored, not_run = scores.without_errored, scores.not_run
            unscored = scores.without - errored
            names = scores.score_names() if errored or unscored or not_run else {}
            for name, scorer in names.items():
                group = self.group(label, run, name, scorer, clustered)
                group.all.none(errored, unscored, not_run)
                group.not_run += not_run
                if errored:
                    group.errors[SAMPLE_ERROR, "run"] += errored
                for sample_id, _, _ in scores.scoreless or []:
                    key = self.sample(group, label, sample_id)
                    if group.clusters is not None:
                        group.clusters[key].update(())
            self.logs.append(scores.summary())
            on_log_read(log.path)
        info = (run.key, run.name, run.task, run.model, run.created, run.status)
        logs = [log.path for log in run.logs]
        missing = run.missing_parts, run.missing_count
        self.evals.append(
            EvalSummary(*info, run.epochs, logs, label, run.epochs_reducer, *missing)
        )

    def add_results(self, label: str, results: ResultsDataset, clustered: bool) -> None:
        """Each row a run of its own sample, decoded into a log's score."""
        group = self.group(label, results, results.scorer, results.scorer, clustered)
        for row, (sample_id, score) in enumerate(read_results(results)):
            # A row without an id is a sample no other eval can share.
            sample = sample_id if sample_id is not None else (label, row)
            group.count(self.sample(group, label, sample), score)
        r = results
        log = (r.path, r.task, r.model, "", None, r.status, r.epochs, r.rows, r.rows)
        self.logs.append(LogSummary(*log, 0, 0, []))
        info = (f"parquet:{r.path}", r.path, r.task, r.model, r.created, r.status)
        self.evals.append(EvalSummary(*info, r.epochs, [r.path], label, None, [], 0))

    def summaries(self, top: int) -> list[StageSummary | ExtractionSummary]:
        """Each group's row, in the order of the evals (E1, E2, ...)."""
        if not self.groups:
            raise ReportError(nothing_found("no tracegrade scores", self.logs))
        for g in self.groups.values():
            for first, second in combinations(g.sample_ids, 2):
                if shared := g.sample_ids[first] & g.sample_ids[second]:
                    example, many = sorted(shared, key=str)[0], len(shared) != 1
                    raise ReportError(
                        f"--pool: evals {first} and {second} ({g.task}, {g.model}, "
                        f"score {quote(g.score)}) both scored {len(shared)} sample "
                        f"id{'s' * many} (such as {quote(example)}); pooling them "
                        "would count those samples twice. Pool evals of different "
                        "samples, or report them as separate rows without --pool"
                    )
        groups = sorted(
            self.groups.values(), key=lambda g: (int(g.evals[0][1:]), g.score)
        )
        return [group.summary(top) for group in groups]

"""From Inspect logs to the figures `tracegrade report` shows.

The aggregation is pure: it reads each log's header through Inspect's log
API and its samples one at a time (`samples.py`), keeping only counters,
and returns a typed `Report`; the terminal, HTML and JSON renderings are
built from that one structure, so they cannot disagree.

Choices a reader of the figures needs to know:

- Counts are per sample-epoch, as tracegrade's metrics count them: a
  sample run for three epochs counts three times. Reducing epochs first
  would need a rule for a sample diagnosed `retrieval` once and `pass`
  twice, and any such rule hides the run that failed.
- Logs of the same task, model and scorer are pooled; `logs` says how many
  went into each figure. `tracegrade score` splits a big run into parts
  (logs sharing `eval.run_id`, each with `eval.metadata["tracegrade_part"]
  = {"index": k, "count": n}`), which pool like any logs; the report says
  so where it lists logs, and warns when a run's parts are not all there.
- Data errors (unscored samples) are counted by kind, never as a stage or
  a grade; answer failures count as failed grades, as in the metrics.
- Intervals are 95% Wilson score intervals, which stay inside [0, 1] and
  behave at 0 and n successes where the normal approximation does not.
- The most often dropped and invented IDs come from each graded answer's
  `itemised` metadata. Answers the rules did not grade (a repeated ID, an
  unreadable answer) have none and are not counted. A score logged before
  tracegrade wrote `itemised` is itemised from its `record`, by the same
  definitions, so old and new logs give the same figures and pool.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any, TypeGuard
from urllib.parse import unquote, urlparse

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from ..core.itemise import dropped_ids, invented_ids
from ..core.recall import id_recall
from ..scorers.explain import show_id
from ..scorers.metrics import STAGES
from .samples import SampleRead, ScoreRead, UnreadableLog, eval_header, log_samples

STAGE_SCORER = "stage_diagnosis"
EXTRACTION_SCORER = "ordered_extraction"
CONFIDENCE = 0.95
INTERVAL_METHOD = "wilson"
COUNTING_UNIT = "sample-epoch"
DIAGNOSED_STAGES = ("retrieval", "generation", "pass")
METADATA_KEYS = frozenset({"result", "record", "read_from", "error"})
LOG_SUFFIXES = (".eval", ".json")
PART_KEY = "tracegrade_part"
# The three ranked ID counts, each shown as a table and a chart: the
# documents diagnosed runs missed, and the IDs itemised answers dropped and
# invented. One builder serves all three, given the kind.
ID_COUNTS = ("missed", "dropped", "invented")
_EN_DASH = "\u2013"

# Inspect keys `sample.scores` by the scorer's unqualified name, adding 1,
# 2, ... when a log already holds a score of that name (`inspect score
# --action append`).
_SCORE_KEY = re.compile(rf"({STAGE_SCORER}|{EXTRACTION_SCORER})\d*")


class ReportError(ValueError):
    """A log that cannot be reported on, or no tracegrade result at all."""


def wilson_interval(
    successes: int, trials: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Wilson score interval for `successes` out of `trials`."""
    if trials <= 0:
        raise ValueError(f"a proportion needs at least one trial, got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must lie in 0..{trials}, got {successes}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    share = successes / trials
    z2_n = z * z / trials
    centre = (share + z2_n / 2) / (1 + z2_n)
    half = (z / (1 + z2_n)) * math.sqrt(
        share * (1 - share) / trials + z2_n / (4 * trials)
    )
    # Clamp the rounding error at 0 and n successes, where the exact bound
    # is 0 or 1.
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Proportion:
    """`count` of `total`, with its share and Wilson interval.

    With no trials there is no share: `share`, `low` and `high` are None.
    """

    count: int
    total: int
    share: float | None
    low: float | None
    high: float | None

    @classmethod
    def of(cls, count: int, total: int) -> Proportion:
        if total == 0:
            return cls(count, 0, None, None, None)
        low, high = wilson_interval(count, total)
        return cls(count, total, count / total, low, high)


@dataclass(frozen=True)
class ErrorCount:
    """Samples of one error kind; `side` is "data" (unscored) or "answer"."""

    kind: str
    side: str
    count: int


@dataclass(frozen=True)
class MissedDocument:
    """How often a required document never reached the context.

    `required` counts the diagnosed runs that required it, so that a
    document missed 3 times in 3 differs from one missed 3 times in 300.
    """

    id: str
    missed: int
    required: int


@dataclass(frozen=True)
class DroppedID:
    """How often itemised answers left out a source ID.

    `in_source` counts the itemised answers whose source held it, as
    `MissedDocument.required` does for a missed document.
    """

    id: str
    dropped: int
    in_source: int


@dataclass(frozen=True)
class InventedID:
    """How often itemised answers held an ID their source did not.

    An invented ID is in no source, so its share is of all itemised
    answers (`ExtractionSummary.itemised`).
    """

    id: str
    invented: int


@dataclass(frozen=True)
class StageSummary:
    """Stage diagnosis figures for one task, model and scorer.

    `runs` counts every sample-epoch scored by the scorer; `diagnosed`
    those that got a stage, the denominator of the stage shares. `lucky`
    is the share of runs labelled correct, among those with a required
    set, whose required evidence never reached the context. `recall` is
    the mean context recall of the `recall_runs` runs diagnosed
    retrieval, generation or pass (None without one): what the
    `context_recall` metric gives, summed as exactly, over pooled logs.
    """

    task: str
    model: str
    scorer: str
    logs: int
    epochs: list[int]
    runs: int
    diagnosed: int
    stages: dict[str, Proportion]
    lucky: Proportion
    recall: float | None
    recall_runs: int
    errors: list[ErrorCount]
    missed: list[MissedDocument]
    distinct_missed: int


@dataclass(frozen=True)
class ExtractionSummary:
    """Ordered extraction figures for one task, model and scorer.

    `graded` counts runs with a grade, answer failures included (they fail
    both criteria). An order pass implies a membership pass, so the gap
    between the accuracies is itself a proportion: the runs that kept
    every ID but lost the source order.
    """

    task: str
    model: str
    scorer: str
    logs: int
    epochs: list[int]
    runs: int
    graded: int
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
class LogPart:
    """The log is part `index` (from 1) of the `count` logs of one run."""

    index: int
    count: int


@dataclass(frozen=True)
class LogSummary:
    """What was read from one log file.

    `part` is set for a part of a run that `tracegrade score` split;
    the parts of a run share `run_id`.
    """

    path: str
    task: str
    model: str
    run_id: str
    part: LogPart | None
    status: str
    epochs: int
    samples: int
    tracegrade_scores: int
    samples_without_tracegrade_score: int
    sample_errors: int
    other_scorers: list[str]


@dataclass(frozen=True)
class Report:
    """Everything `tracegrade report` shows, in every output form."""

    unit: str
    interval: str
    confidence: float
    top: int
    logs: list[LogSummary]
    stage_diagnosis: list[StageSummary]
    ordered_extraction: list[ExtractionSummary]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def find_logs(paths: Iterable[str | Path]) -> list[str]:
    """The log files named by `paths`, directories searched recursively.

    A directory is listed the way `inspect view` lists it (`.eval` files,
    and `.json` files named like Inspect logs), so manifests and other
    JSON beside the logs are not mistaken for logs. A file named directly
    is always read. Raises `ReportError` when a directory holds no log.
    """
    found: list[str] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            listed = sorted(
                _local_path(info.name) for info in list_eval_logs(str(path))
            )
            if not listed:
                raise ReportError(
                    f"no Inspect logs ({', '.join(LOG_SUFFIXES)}) under {str(path)!r}"
                )
            found.extend(listed)
        else:
            found.append(str(path))
    return list(dict.fromkeys(found))


def _local_path(name: str) -> str:
    if name.startswith("file://"):
        return unquote(urlparse(name).path)
    return name


@dataclass(frozen=True)
class LogRead:
    """A log's header, and its samples as they are read, one at a time."""

    path: str
    header: EvalLog
    samples: Iterable[SampleRead]


def read_log(path: str) -> LogRead:
    """The header of the log at `path` and an iterator over its samples.

    Raises `ReportError` when the header cannot be read; a sample that
    cannot be read raises `UnreadableLog` (or `OSError`) when reached.
    """
    try:
        header = eval_header(path) if path.endswith(".eval") else None
        if header is None:
            header = read_eval_log(path, header_only=True)
    except Exception as error:
        # Inspect raises whatever its readers raise (JSON, zip, pydantic,
        # OS errors); any of them means the same here: not a readable log.
        raise ReportError(
            f"cannot read {path!r} as an Inspect log ({error})"
        ) from error
    return LogRead(path, header, log_samples(path))


def build_report(
    paths: Sequence[str],
    *,
    top: int = 10,
    on_log_read: Callable[[str], None] | None = None,
    read: Callable[[str], LogRead] = read_log,
) -> Report:
    """Read every log in `paths` and aggregate its tracegrade scores.

    `on_log_read` is called after each log, for a progress display; `read`
    reads one log (the tests give a whole-log reader, to compare). Raises
    `ReportError` for an unreadable log, a malformed tracegrade score, or
    when no log holds a tracegrade score.
    """
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    aggregate = _Aggregate()
    for path in paths:
        log = read(path)
        try:
            aggregate.add_log(log)
        except (UnreadableLog, OSError) as error:
            raise ReportError(
                f"cannot read {path!r} as an Inspect log ({error})"
            ) from error
        if on_log_read is not None:
            on_log_read(path)
    return aggregate.report(top)


def is_tracegrade_metadata(metadata: Any) -> TypeGuard[dict[str, Any]]:
    """A score's metadata has the keys every tracegrade score carries."""
    return isinstance(metadata, dict) and metadata.keys() >= METADATA_KEYS


def tracegrade_scorer(score_name: str) -> str | None:
    """The tracegrade scorer a score name belongs to (`stage_diagnosis1` is
    a `stage_diagnosis` score appended by `inspect score`), or None."""
    match = _SCORE_KEY.fullmatch(score_name)
    return None if match is None else match.group(1)


class _ExactSum:
    """A sum of floats rounded once, as `math.fsum` rounds it, without a
    list of every value: the few partials of Shewchuk's algorithm (the one
    behind `fsum`), so the mean equals the `context_recall` metric's
    `fsum(recalls) / n` bit for bit, whatever the order of the runs."""

    __slots__ = ("count", "partials")

    def __init__(self) -> None:
        self.partials: list[float] = []
        self.count = 0

    def add(self, value: float) -> None:
        kept = 0
        for partial in self.partials:
            if abs(value) < abs(partial):
                value, partial = partial, value
            high = value + partial
            low = partial - (high - value)
            if low:
                self.partials[kept] = low
                kept += 1
            value = high
        self.partials[kept:] = [value]
        self.count += 1

    def mean(self) -> float | None:
        return math.fsum(self.partials) / self.count if self.count else None


@dataclass
class _StageCounts:
    logs: set[str] = field(default_factory=set)
    epochs: set[int] = field(default_factory=set)
    runs: int = 0
    stages: Counter[str] = field(default_factory=Counter)
    lucky: int = 0
    labelled_correct: int = 0
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    missed: Counter[str] = field(default_factory=Counter)
    required: Counter[str] = field(default_factory=Counter)
    recall: _ExactSum = field(default_factory=_ExactSum)


@dataclass
class _ExtractionCounts:
    logs: set[str] = field(default_factory=set)
    epochs: set[int] = field(default_factory=set)
    runs: int = 0
    graded: int = 0
    membership: int = 0
    order: int = 0
    kept_not_ordered: int = 0
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    itemised: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    in_source: Counter[str] = field(default_factory=Counter)
    invented: Counter[str] = field(default_factory=Counter)


_GroupKey = tuple[str, str, str]


class _Aggregate:
    def __init__(self) -> None:
        self.logs: list[LogSummary] = []
        self.stage: dict[_GroupKey, _StageCounts] = {}
        self.extraction: dict[_GroupKey, _ExtractionCounts] = {}

    def add_log(self, log: LogRead) -> None:
        """Count the log's samples as they are read; only counters stay."""
        spec = log.header.eval
        scores = LogScores(log)
        for sample, key, scorer, score in scores:
            group = (spec.task, spec.model, key)
            where = _Where(log.path, sample, key)
            counts: _StageCounts | _ExtractionCounts | None
            if scorer == STAGE_SCORER:
                counts = self.stage.get(group)
                if counts is None:
                    counts = self.stage[group] = _StageCounts()
                _count_stage(counts, score.value, score.metadata, where)
            else:
                counts = self.extraction.get(group)
                if counts is None:
                    counts = self.extraction[group] = _ExtractionCounts()
                _count_extraction(counts, score.value, score.metadata, where)
            counts.logs.add(log.path)
            counts.epochs.add(scores.epochs)
        self.logs.append(scores.summary())

    def report(self, top: int) -> Report:
        if not self.stage and not self.extraction:
            raise ReportError(_nothing_found(self.logs))
        return Report(
            unit=COUNTING_UNIT,
            interval=INTERVAL_METHOD,
            confidence=CONFIDENCE,
            top=top,
            logs=self.logs,
            stage_diagnosis=[
                _stage_summary(key, counts, top)
                for key, counts in sorted(self.stage.items())
            ],
            ordered_extraction=[
                _extraction_summary(key, counts, top)
                for key, counts in sorted(self.extraction.items())
            ],
        )


class LogScores:
    """The tracegrade scores of one log, a sample at a time, and the
    counts of its `LogSummary` once every sample is read.

    Iterating gives `(sample, score name, scorer, score)` for each score
    a tracegrade scorer made (by its name and metadata); every other score
    name is only noted. `tracegrade report` and `tracegrade compare` read
    logs through this one loop, so they count samples alike.
    `keep_scoreless` keeps the id, epoch and error flag of each sample
    with no tracegrade score (compare pairs them as "no score"); otherwise
    they are only counted, so a log of another scorer's million samples
    costs nothing.
    """

    def __init__(self, log: LogRead, *, keep_scoreless: bool = False) -> None:
        self.log = log
        self.epochs: int = log.header.eval.config.epochs or 1
        self.samples = 0
        self.sample_errors = 0
        self.tracegrade_scores = 0
        self.without = 0
        self.scoreless: list[tuple[int | str, int, bool]] | None = (
            [] if keep_scoreless else None
        )
        self.scorers: dict[str, str] = {}
        """Each tracegrade score name seen, with its scorer."""
        self.other: set[str] = set()

    def __iter__(self) -> Iterator[tuple[SampleRead, str, str, ScoreRead]]:
        # The scorer each score name belongs to, matched once per name.
        matched: dict[str, str | None] = {}
        for sample in self.log.samples:
            self.samples += 1
            self.sample_errors += sample.errored
            found = 0
            for name, score in sample.scores.items():
                if name not in matched:
                    matched[name] = tracegrade_scorer(name)
                scorer = matched[name]
                if scorer is None or not is_tracegrade_metadata(score.metadata):
                    self.other.add(name)
                    continue
                found += 1
                self.scorers[name] = scorer
                yield sample, name, scorer, score
            self.tracegrade_scores += found
            if not found:
                self.without += 1
                if self.scoreless is not None:
                    self.scoreless.append((sample.id, sample.epoch, sample.errored))

    def summary(self) -> LogSummary:
        spec = self.log.header.eval
        return LogSummary(
            path=self.log.path,
            task=spec.task,
            model=spec.model,
            run_id=spec.run_id,
            part=log_part(spec.metadata),
            status=self.log.header.status,
            epochs=self.epochs,
            samples=self.samples,
            tracegrade_scores=self.tracegrade_scores,
            samples_without_tracegrade_score=self.without,
            sample_errors=self.sample_errors,
            other_scorers=sorted(self.other),
        )


def log_part(metadata: Mapping[str, Any] | None) -> LogPart | None:
    """The part `tracegrade score` numbered the log, if it is one; a
    malformed number is no part, so the log is still counted."""
    part = (metadata or {}).get(PART_KEY)
    if not isinstance(part, dict):
        return None
    index, count = part.get("index"), part.get("count")
    if type(index) is not int or type(count) is not int or not 1 <= index <= count:
        return None
    return LogPart(index, count)


@dataclass(frozen=True)
class _Where:
    path: str
    sample: SampleRead
    scorer: str

    def fail(self, problem: str) -> ReportError:
        return ReportError(
            f"{self.path}: sample {self.sample.id!r} epoch {self.sample.epoch}, "
            f"score {self.scorer!r}: {problem}"
        )


def _count_error(
    errors: Counter[tuple[str, str]], metadata: Mapping[str, Any], where: _Where
) -> str | None:
    """Count the score's error, if any, and return its side."""
    error = metadata["error"]
    if error is None:
        return None
    if (
        not isinstance(error, dict)
        or not isinstance(error.get("kind"), str)
        or error.get("side") not in ("data", "answer")
    ):
        raise where.fail(
            f"metadata error must be null or have a kind and a side, got {error!r}"
        )
    side: str = error["side"]
    errors[error["kind"], side] += 1
    return side


def _count_stage(
    counts: _StageCounts, value: Any, metadata: Mapping[str, Any], where: _Where
) -> None:
    counts.runs += 1
    if _count_error(counts.errors, metadata, where) == "data":
        return
    if not isinstance(value, str) or value not in STAGES:
        raise where.fail(f"the value must be one of {', '.join(STAGES)}, got {value!r}")
    counts.stages[value] += 1
    if value not in DIAGNOSED_STAGES:
        return
    record = metadata["record"]
    result = metadata["result"]
    if not isinstance(record, dict) or not isinstance(result, dict):
        raise where.fail("a diagnosed score needs its record and result in metadata")
    required = record.get("required")
    missing = result.get("missing")
    if not _is_id_list(required) or not _is_id_list(missing):
        raise where.fail(
            "a diagnosed score needs the ID lists record.required and "
            f"result.missing, got {required!r} and {missing!r}"
        )
    counts.required.update(set(required))
    try:
        counts.recall.add(id_recall(required, missing))
    except ValueError as error:  # no required ID, or more missing than required
        raise where.fail(f"a diagnosed score's ID lists disagree: {error}") from None
    if record.get("correct") is True:
        counts.labelled_correct += 1
    if value == "retrieval":
        counts.missed.update(missing)
        if record.get("correct") is True:
            counts.lucky += 1


def _is_id_list(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _count_extraction(
    counts: _ExtractionCounts, value: Any, metadata: Mapping[str, Any], where: _Where
) -> None:
    counts.runs += 1
    if _count_error(counts.errors, metadata, where) == "data":
        return
    if (
        not isinstance(value, dict)
        or type(value.get("membership")) is not bool
        or type(value.get("order")) is not bool
    ):
        raise where.fail(
            f"the value must be {{'membership': bool, 'order': bool}}, got {value!r}"
        )
    membership: bool = value["membership"]
    order: bool = value["order"]
    if order and not membership:
        raise where.fail(
            "order passes without membership, which the grading rules never give"
        )
    counts.graded += 1
    counts.membership += membership
    counts.order += order
    counts.kept_not_ordered += membership and not order
    itemised = _dropped_and_invented(metadata, where)
    if itemised is None:
        return
    source, dropped, invented = itemised
    counts.itemised += 1
    counts.in_source.update(source)
    counts.dropped.update(dropped)
    counts.invented.update(invented)


def _dropped_and_invented(
    metadata: Mapping[str, Any], where: _Where
) -> tuple[list[str], list[str], list[str]] | None:
    """The graded source, and the IDs the answer dropped and invented.

    None for a score with no grade to itemise. A score logged before
    `itemised` existed is itemised from its record.
    """
    result = metadata["result"]
    if not isinstance(result, dict) or "membership" not in result:
        return None
    record = metadata["record"]
    source = record.get("source") if isinstance(record, dict) else None
    answer = record.get("answer") if isinstance(record, dict) else None
    if not _is_id_list(source):
        raise where.fail(
            f"a graded score needs the ID list record.source, got {source!r}"
        )
    if "itemised" not in metadata:
        if not _is_id_list(answer):
            raise where.fail(
                f"a graded score needs the ID list record.answer, got {answer!r}"
            )
        return source, dropped_ids(source, answer), invented_ids(source, answer)
    itemised = metadata["itemised"]
    if not isinstance(itemised, dict):
        raise where.fail(
            f"a graded score's metadata itemised must be an object, got {itemised!r}"
        )
    dropped = itemised.get("dropped")
    invented = itemised.get("invented")
    if not _is_id_list(dropped) or not _is_id_list(invented):
        raise where.fail(
            "metadata itemised needs the ID lists dropped and invented, "
            f"got {dropped!r} and {invented!r}"
        )
    return source, dropped, invented


def _error_counts(errors: Counter[tuple[str, str]]) -> list[ErrorCount]:
    # Data errors first: they shrink the denominators of every figure.
    ordered = sorted(
        errors.items(), key=lambda item: (item[0][1] != "data", -item[1], item[0][0])
    )
    return [ErrorCount(kind, side, count) for (kind, side), count in ordered]


def _stage_summary(key: _GroupKey, counts: _StageCounts, top: int) -> StageSummary:
    task, model, scorer = key
    diagnosed = sum(counts.stages.values())
    ranked = _ranked(counts.missed)
    return StageSummary(
        task=task,
        model=model,
        scorer=scorer,
        logs=len(counts.logs),
        epochs=sorted(counts.epochs),
        runs=counts.runs,
        diagnosed=diagnosed,
        stages={
            stage: Proportion.of(counts.stages[stage], diagnosed) for stage in STAGES
        },
        lucky=Proportion.of(counts.lucky, counts.labelled_correct),
        recall=counts.recall.mean(),
        recall_runs=counts.recall.count,
        errors=_error_counts(counts.errors),
        missed=[
            MissedDocument(document_id, missed, counts.required[document_id])
            for document_id, missed in ranked[:top]
        ],
        distinct_missed=len(ranked),
    )


def _ranked(counter: Counter[str]) -> list[tuple[str, int]]:
    """Most frequent first; ties in code point order, so the list is stable."""
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))


def _extraction_summary(
    key: _GroupKey, counts: _ExtractionCounts, top: int
) -> ExtractionSummary:
    task, model, scorer = key
    dropped = _ranked(counts.dropped)
    invented = _ranked(counts.invented)
    return ExtractionSummary(
        task=task,
        model=model,
        scorer=scorer,
        logs=len(counts.logs),
        epochs=sorted(counts.epochs),
        runs=counts.runs,
        graded=counts.graded,
        membership=Proportion.of(counts.membership, counts.graded),
        order=Proportion.of(counts.order, counts.graded),
        gap=Proportion.of(counts.kept_not_ordered, counts.graded),
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


# Presentation-neutral tables, shared by the terminal and HTML renderings.


@dataclass(frozen=True)
class Table:
    """A titled table of display strings; `numeric` marks right-aligned columns."""

    key: str
    title: str
    caption: str
    columns: list[str]
    numeric: list[bool]
    rows: list[list[str]]


def percent(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.1f}%"


def share_with_interval(proportion: Proportion) -> str:
    """ "57.1% [39.1, 73.5]": the share and its interval bounds, in percent."""
    if proportion.share is None or proportion.low is None or proportion.high is None:
        return "n/a"
    return (
        f"{percent(proportion.share)} "
        f"[{100 * proportion.low:.1f}, {100 * proportion.high:.1f}]"
    )


def interval_note(report: Report) -> str:
    return (
        f"Counted per {report.unit}; [low, high] are "
        f"{round(100 * report.confidence)}% Wilson score intervals."
    )


def _runs(logs: Sequence[LogSummary]) -> dict[str, list[LogPart]]:
    """The parts read of each split run, by run id."""
    runs: dict[str, list[LogPart]] = {}
    for log in logs:
        if log.part is not None:
            runs.setdefault(log.run_id, []).append(log.part)
    return runs


def _span(numbers: Iterable[int]) -> str:
    """ "1-3, 5" (with an en dash): numbers in order, consecutive ones as
    a range."""
    spans: list[list[int]] = []
    for number in sorted(set(numbers)):
        if spans and number == spans[-1][-1] + 1:
            spans[-1].append(number)
        else:
            spans.append([number])
    return ", ".join(
        str(span[0]) if len(span) == 1 else f"{span[0]}{_EN_DASH}{span[-1]}"
        for span in spans
    )


def logs_read(logs: Sequence[LogSummary]) -> str:
    """ "3 logs (parts 1-3 of one run)": how many logs, and whether some
    were parts of a split run, pooled."""
    text = f"{len(logs)} log{'s' if len(logs) != 1 else ''}"
    runs = _runs(logs)
    if len(runs) == 1:
        (parts,) = runs.values()
        return f"{text} (parts {_span(p.index for p in parts)} of one run)"
    if runs:
        return f"{text} (parts of {len(runs)} runs)"
    return text


def part_warnings(logs: Sequence[LogSummary]) -> list[str]:
    """One line per split run whose parts were not each read once."""
    warnings: list[str] = []
    for run_id, parts in _runs(logs).items():
        count = max(part.count for part in parts)
        found = Counter(part.index for part in parts)
        missing = [index for index in range(1, count + 1) if index not in found]
        if missing:
            warnings.append(
                f"run {run_id} has {count} parts but {len(found)} were read "
                f"(missing: {_span(missing)}); its figures cover only those read."
            )
        repeated = [index for index, times in found.items() if times > 1]
        if repeated:
            warnings.append(
                f"run {run_id}: part {_span(repeated)} read more than once; "
                "every copy is counted."
            )
    return warnings


def task_label(summary: StageSummary | ExtractionSummary) -> str:
    """The task, with the score name when a log holds several tracegrade
    scores of one kind (`stage_diagnosis1` after `inspect score --action
    append`)."""
    if summary.scorer in (STAGE_SCORER, EXTRACTION_SCORER):
        return summary.task
    return f"{summary.task} [{summary.scorer}]"


def report_tables(report: Report) -> list[Table]:
    """The report's tables, in display order; empty sections are left out."""
    note = interval_note(report)
    ci = f"share [{round(100 * report.confidence)}% CI]"
    tables: list[Table] = []
    if report.stage_diagnosis:
        tables.append(
            Table(
                key="stages",
                title="Stage shares",
                caption=f"Of runs that got a stage; data errors excluded. {note}",
                columns=["task", "model", "stage", "runs", "of", ci],
                numeric=[False, False, False, True, True, True],
                rows=[
                    [
                        task_label(s),
                        s.model,
                        stage,
                        str(p.count),
                        str(p.total),
                        share_with_interval(p),
                    ]
                    for s in report.stage_diagnosis
                    for stage, p in s.stages.items()
                ],
            )
        )
        tables.append(
            Table(
                key="lucky",
                title="Lucky answers",
                caption="Runs labelled correct whose required evidence never "
                "reached the context (stage retrieval), of all runs labelled "
                f"correct that had a required set. {note}",
                columns=["task", "model", "lucky", "of", ci],
                numeric=[False, False, True, True, True],
                rows=[
                    [
                        task_label(s),
                        s.model,
                        str(s.lucky.count),
                        str(s.lucky.total),
                        share_with_interval(s.lucky),
                    ]
                    for s in report.stage_diagnosis
                ],
            )
        )
        tables.append(
            Table(
                key="recall",
                title="Context recall",
                caption="The mean share of each run's unique required IDs that "
                "reached its context, over runs diagnosed retrieval, generation "
                "or pass (the context_recall metric); no interval.",
                columns=["task", "model", "recall", "runs"],
                numeric=[False, False, True, True],
                rows=[
                    [task_label(s), s.model, percent(s.recall), str(s.recall_runs)]
                    for s in report.stage_diagnosis
                ],
            )
        )
    summaries: list[StageSummary | ExtractionSummary] = [
        *report.stage_diagnosis,
        *report.ordered_extraction,
    ]
    error_rows = [
        [task_label(s), s.model, error.kind, error.side, str(error.count), str(s.runs)]
        for s in summaries
        for error in s.errors
    ]
    if error_rows:
        tables.append(
            Table(
                key="errors",
                title="Errors by kind",
                caption="side data: the sample's data is at fault, so it is "
                "unscored. side answer: the model's answer broke the answer "
                f"contract and fails both criteria. Counted per {report.unit}.",
                columns=["task", "model", "kind", "side", "runs", "of"],
                numeric=[False, False, False, False, True, True],
                rows=error_rows,
            )
        )
    for kind in ID_COUNTS:
        table = _id_table(report, kind)
        if table is not None:
            tables.append(table)
    if report.ordered_extraction:
        tables.append(
            Table(
                key="extraction",
                title="Membership versus order",
                caption="Accuracy over graded runs; answer failures count as "
                "failures. gap = membership minus order accuracy: the runs "
                f"that kept every ID but lost the source order. {note}",
                columns=["task", "model", "graded", "membership", "order", "gap"],
                numeric=[False, False, True, True, True, True],
                rows=[
                    [
                        task_label(s),
                        s.model,
                        str(s.graded),
                        share_with_interval(s.membership),
                        share_with_interval(s.order),
                        share_with_interval(s.gap),
                    ]
                    for s in report.ordered_extraction
                ],
            )
        )
    tables.append(_logs_table(report))
    return tables


def _logs_table(report: Report) -> Table:
    caption = (
        "samples: sample-epochs in the log. no score: samples with no "
        "tracegrade score, such as one that errored before scoring."
    )
    rows = [
        [
            Path(log.path).name,
            log.status,
            str(log.epochs),
            str(log.samples),
            str(log.samples_without_tracegrade_score),
        ]
        for log in report.logs
    ]
    if not _runs(report.logs):
        return Table(
            key="logs",
            title="Logs read",
            caption=caption,
            columns=["log", "status", "epochs", "samples", "no score"],
            numeric=[False, False, True, True, True],
            rows=rows,
        )
    # A column for the parts only when some log is one.
    return Table(
        key="logs",
        title="Logs read",
        caption=f"{caption} part: the log's part of a run split by "
        "`tracegrade score`; the parts of a run are pooled.",
        columns=["log", "part", "status", "epochs", "samples", "no score"],
        numeric=[False, True, False, True, True, True],
        rows=[
            [
                row[0],
                "" if log.part is None else f"{log.part.index} of {log.part.count}",
                *row[1:],
            ]
            for row, log in zip(rows, report.logs, strict=True)
        ],
    )


@dataclass(frozen=True)
class RankedID:
    """One of the most often counted IDs: counted `count` times of `of`."""

    id: str
    count: int
    of: int


@dataclass(frozen=True)
class IdRanking:
    """One task and model's most often counted IDs of a kind, and how many
    distinct IDs were ever counted."""

    summary: StageSummary | ExtractionSummary
    ids: list[RankedID]
    distinct: int


def id_rankings(report: Report, kind: str) -> list[IdRanking]:
    """Each task and model's most often `kind` IDs (one of `ID_COUNTS`)."""
    if kind == "missed":
        return [
            IdRanking(
                s,
                [RankedID(d.id, d.missed, d.required) for d in s.missed],
                s.distinct_missed,
            )
            for s in report.stage_diagnosis
        ]
    if kind == "dropped":
        return [
            IdRanking(
                s,
                [RankedID(d.id, d.dropped, d.in_source) for d in s.dropped],
                s.distinct_dropped,
            )
            for s in report.ordered_extraction
        ]
    if kind == "invented":
        # An invented ID is in no source: it is counted of all itemised answers.
        return [
            IdRanking(
                s,
                [RankedID(i.id, i.invented, s.itemised) for i in s.invented],
                s.distinct_invented,
            )
            for s in report.ordered_extraction
        ]
    raise ValueError(f"no ID count {kind!r}; there are {', '.join(ID_COUNTS)}")


@dataclass(frozen=True)
class _IdWords:
    title: str
    columns: tuple[str, str, str]
    caption: str


_ID_WORDS = {
    "missed": _IdWords(
        "Most often missing document IDs",
        ("document", "missed", "required"),
        "missed: diagnosed runs whose context lacked the required ID; "
        "required: diagnosed runs that required it.",
    ),
    "dropped": _IdWords(
        "Most often dropped IDs",
        ("ID", "dropped", "in source"),
        "dropped: itemised answers that left out the source ID; in source: "
        "itemised answers whose source held it. Itemised: graded answers "
        "except those that repeat an ID or cannot be read, which fail both "
        "criteria with nothing compared.",
    ),
    "invented": _IdWords(
        "Most often invented IDs",
        ("ID", "invented", "of"),
        "invented: itemised answers that held the ID though their source did "
        "not; of: all itemised answers (graded, neither repeating an ID nor "
        "unreadable).",
    ),
}


def id_count_title(kind: str, top: int) -> str:
    """ "Most often dropped IDs (top 10)": the table's and the chart's title."""
    return f"{_ID_WORDS[kind].title} (top {top})"


def _id_table(report: Report, kind: str) -> Table | None:
    """The most often `kind` IDs of every task and model; None if none."""
    rankings = id_rankings(report, kind)
    rows = [
        [
            task_label(ranking.summary),
            ranking.summary.model,
            show_id(ranked.id),
            str(ranked.count),
            str(ranked.of),
            percent(ranked.count / ranked.of),
        ]
        for ranking in rankings
        for ranked in ranking.ids
    ]
    if not rows:
        return None
    words = _ID_WORDS[kind]
    distinct = "; ".join(
        f"{r.distinct} in {task_label(r.summary)}, {r.summary.model}" for r in rankings
    )
    return Table(
        key=kind,
        title=id_count_title(kind, report.top),
        caption=f"{words.caption} Distinct IDs ever {kind}: {distinct}.",
        columns=["task", "model", *words.columns, "rate"],
        numeric=[False, False, False, True, True, True],
        rows=rows,
    )


__all__ = [
    "CONFIDENCE",
    "ID_COUNTS",
    "DroppedID",
    "ErrorCount",
    "ExtractionSummary",
    "IdRanking",
    "InventedID",
    "LogPart",
    "LogRead",
    "LogSummary",
    "MissedDocument",
    "Proportion",
    "RankedID",
    "Report",
    "ReportError",
    "StageSummary",
    "Table",
    "build_report",
    "find_logs",
    "id_count_title",
    "id_rankings",
    "is_tracegrade_metadata",
    "log_part",
    "logs_read",
    "part_warnings",
    "read_log",
    "report_tables",
    "tracegrade_scorer",
    "wilson_interval",
]

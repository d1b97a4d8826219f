"""The tracegrade scores of one log, a sample at a time, for report and compare."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from inspect_ai.log import EvalLog, read_eval_log

from ..schema import EXTRACTION_SCORER, STAGE_SCORER, is_tracegrade_metadata
from .samples import SampleRead, ScoreRead, eval_header

PART_KEY: Final = "tracegrade_part"

# Inspect adds 1, 2, ... to a score name a log already holds (`--action append`).
_SCORE_KEY = re.compile(rf"({STAGE_SCORER}|{EXTRACTION_SCORER})\d*")


class LogError(ValueError):
    """A log that cannot be read, or logs that hold nothing to count."""


@dataclass(frozen=True)
class LogPart:
    index: int  # from 1
    count: int


@dataclass(frozen=True)
class LogSummary:
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
    not_run: int = 0  # listed by an unfinished eval's header, not logged


class LogRead(NamedTuple):
    path: str
    header: EvalLog
    samples: Iterable[SampleRead]


def read_header(path: str) -> EvalLog:
    """The header of the log at `path`; `LogError` when it cannot be read."""
    try:
        header = eval_header(path) if path.endswith(".eval") else None
        return header or read_eval_log(path, header_only=True)
    except Exception as error:
        # Inspect raises whatever its readers raise: not a readable log.
        raise LogError(f"cannot read {path!r} as an Inspect log ({error})") from error


def tracegrade_scorer(score_name: str) -> str | None:
    """The tracegrade scorer of a score name (`stage_diagnosis1` too), or None."""
    match = _SCORE_KEY.fullmatch(score_name)
    return None if match is None else match.group(1)


def log_part(metadata: Mapping[str, Any] | None) -> LogPart | None:
    """The part `tracegrade score` numbered the log; a malformed one is no part."""
    part = (metadata or {}).get(PART_KEY)
    index, count = map(part.get, ("index", "count")) if type(part) is dict else (0, 0)
    if type(index) is int and type(count) is int and 1 <= index <= count:
        return LogPart(index, count)
    return None


class LogScores:
    """Iterating gives `(sample, score name, scorer, score)` per tracegrade score;
    samples without one, and runs never logged, are counted."""

    def __init__(self, log: LogRead, *, keep_scoreless: bool = False) -> None:
        self.log = log
        self.epochs: int = log.header.eval.config.epochs or 1
        self.samples = self.sample_errors = self.tracegrade_scores = 0
        self.without = self.without_errored = 0
        self.scoreless: list[tuple[int | str, int, bool]] | None = (
            [] if keep_scoreless else None
        )
        self.scorers: dict[str, str] = {}  # each score name seen, and its scorer
        self.other: set[str] = set()
        # The sample-epochs an unfinished log holds: the rest were never run.
        unfinished = log.header.status != "success"
        self.logged: set[tuple[int | str, int]] | None = (
            set() if unfinished and log.header.eval.dataset.sample_ids else None
        )

    def __iter__(self) -> Iterator[tuple[SampleRead, str, str, ScoreRead]]:
        matched: dict[str, str | None] = {}  # each name matched once
        for sample in self.log.samples:
            self.samples += 1
            self.sample_errors += sample.errored
            if self.logged is not None:
                self.logged.add((sample.id, sample.epoch))
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
                self.without_errored += sample.errored
                if self.scoreless is not None:
                    self.scoreless.append((sample.id, sample.epoch, sample.errored))

    def not_run_keys(self) -> Iterator[tuple[int | str, int]]:
        """The sample-epochs an unfinished log's header lists and it lacks."""
        if self.logged is None:
            return
        for epoch in range(1, self.epochs + 1):
            for sample_id in self.log.header.eval.dataset.sample_ids or []:
                if (sample_id, epoch) not in self.logged:
                    yield sample_id, epoch

    @property
    def not_run(self) -> int:
        return sum(1 for _ in self.not_run_keys())

    def score_names(self) -> dict[str, str]:
        """The tracegrade score names and scorers in its samples, else its header's."""
        if self.scorers or not (self.without_errored or self.not_run):
            return self.scorers
        # A registered name may carry its package ("tracegrade/...").
        names = (s.name.rsplit("/", 1)[-1] for s in self.log.header.eval.scorers or [])
        return {name: scorer for name in names if (scorer := tracegrade_scorer(name))}

    def summary(self) -> LogSummary:
        spec = self.log.header.eval
        return LogSummary(
            *(self.log.path, spec.task, spec.model, spec.run_id),
            *(log_part(spec.metadata), self.log.header.status, self.epochs),
            *(self.samples, self.tracegrade_scores, self.without, self.sample_errors),
            *(sorted(self.other), self.not_run),
        )


def nothing_found(
    what: str, logs: Sequence[LogSummary], show: Callable[[str], str] = str
) -> str:
    """`what` (no tracegrade score), the logs read and the scores they hold."""
    other = sorted({name for log in logs for name in log.other_scorers})
    found = f"; scores found: {', '.join(other)}" if other else "; no scores at all"
    read = ", ".join(show(log.path) for log in logs[:3])
    more = f" and {len(logs) - 3} more" if len(logs) > 3 else ""
    return (
        f"{what} ({STAGE_SCORER}, {EXTRACTION_SCORER}) in "
        f"{len(logs)} log{'s' if len(logs) != 1 else ''} ({read}{more}){found}"
    )

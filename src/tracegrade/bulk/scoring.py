"""A fixture-format file scored line by line as the replay tasks score it,
each line `inspect eval` would refuse the file for kept as a `Problem`."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, NamedTuple

from inspect_ai.scorer import Score, Scorer

from ..core.errors import quote
from ..datasets import (
    DUPLICATE_SAMPLE_ID,
    NOT_A_FIXTURE_LINE,
    DatasetError,
    FixtureCase,
    parse_case_line,
)
from ..lines import MALFORMED_JSON, RawLine, is_blank
from ..report.runs import ExactSum
from ..schema import ErrorSide
from ..scorers import ordered_extraction_scorer, stage_diagnosis_scorer
from ..scorers.store import context_store_key, steps_store_key
from ..tasks import ordered_extraction_recorded, stage_diagnosis
from ..tasks.recorded import (
    EXTRACTION_READ_FROM,
    STAGE_READ_FROM,
    extraction_input_score,
    stage_input_score,
)
from .presence import FieldPresence

# Lines that cannot become a sample; `inspect eval` refuses a file of them.
LINE_ERRORS = (MALFORMED_JSON, NOT_A_FIXTURE_LINE, DUPLICATE_SAMPLE_ID)


@dataclass(frozen=True)
class Problem:
    """Why a line is not scored cleanly, in the scores' `error` shape: side
    "data" leaves it unscored, "answer" scores it as failing."""

    kind: str
    side: ErrorSide
    field: str | None
    message: str
    first_line: int | None = None

    def as_json(self) -> dict[str, Any]:
        data = vars(self).copy()
        if self.first_line is None:
            del data["first_line"]
        return data


class ScoredLine(NamedTuple):
    """A sample and its score, or a line error (`case` and `score` None)."""

    line: int
    id: str | None
    case: FixtureCase | None
    score: Score | None
    problem: Problem | None


class BulkTask(NamedTuple):
    """A replay task as `score` runs it without Inspect's runner."""

    name: str
    task: Callable[..., Any]
    make_scorer: Callable[[], Scorer]
    target_field: str | None
    read_from: dict[str, str]
    score_input: Callable[[dict[str, Any]], Score]


Number = int | float


@dataclass
class ScoreSummary:
    """A file's lines counted as `score` and `check` count them."""

    task: str
    path: str
    lines: int = 0
    blank: int = 0
    records: int = 0
    scored: int = 0
    answer_failures: Counter[str] = field(default_factory=Counter)
    not_scored: Counter[str] = field(default_factory=Counter)
    line_errors: int = 0
    logs: list[str] = field(default_factory=list)
    results: str | None = None
    seconds: float = 0.0
    metrics: dict[str, dict[str, Number | None]] = field(default_factory=dict)
    # Over every run with a figure, labelled or not (the logged metrics see
    # only the scored runs).
    recall: ExactSum = field(default_factory=ExactSum)
    precision: ExactSum = field(default_factory=ExactSum)
    warnings: list[dict[str, str]] = field(default_factory=list)

    def count(self, problem: Problem | None, score: Score | None) -> None:
        if problem is not None:
            answer = problem.side == "answer"
            (self.answer_failures if answer else self.not_scored)[problem.kind] += 1
            self.line_errors += problem.kind in LINE_ERRORS
        self.scored += problem is None or problem.side == "answer"
        metadata = {} if score is None else score.metadata or {}
        for name in ("recall", "precision"):
            if (figure := metadata.get(name)) is not None:
                getattr(self, name).add(figure)

    def as_json(self) -> dict[str, Any]:
        shares = {
            name: {"mean": figure.mean(figure.count), "runs": figure.count}
            for name, figure in (("recall", self.recall), ("precision", self.precision))
        }
        rate = round(self.records / self.seconds, 1) if self.seconds else None
        return {
            "task": self.task,
            "path": self.path,
            "log": self.logs[0] if len(self.logs) == 1 else None,
            "logs": self.logs,
            "results": self.results,
            "lines": self.lines,
            "blank": self.blank,
            "records": self.records,
            "scored": self.scored,
            "not_scored": sum(self.not_scored.values()),
            "line_errors": self.line_errors,
            "answer_failures": sum(self.answer_failures.values()),
            "by_kind": dict(sorted((self.not_scored + self.answer_failures).items())),
            "metrics": self.metrics,
            **shares,
            "seconds": round(self.seconds, 3),
            "samples_per_second": rate,
            "warnings": self.warnings,
        }


def _extraction_scorer() -> Scorer:
    return ordered_extraction_scorer(answer_key="answer", output_key="output")


TASKS: dict[str, BulkTask] = {
    task.name: task
    for task in (
        BulkTask(
            *("stage_diagnosis", stage_diagnosis, stage_diagnosis_scorer, None),
            *(STAGE_READ_FROM, stage_input_score),
        ),
        BulkTask(
            *("ordered_extraction", ordered_extraction_recorded, _extraction_scorer),
            *("source", EXTRACTION_READ_FROM, extraction_input_score),
        ),
    )
}


def replayed_store(record_input: dict[str, Any]) -> dict[str, Any]:
    """The sample store after the replay solver: context and steps."""
    keys = {"context": context_store_key(), "steps": steps_store_key()}
    return {
        key: record_input[name] for name, key in keys.items() if name in record_input
    }


class DiskIds:
    """Sample ids as 128-bit digests in SQLite's private temporary database,
    deleted at once: memory stays flat, and no kill leaves a file."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("", isolation_level=None)
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "temp_store=FILE"):
            self._db.execute(f"PRAGMA {pragma}")
        self._db.execute("PRAGMA cache_size=-8192")  # KiB, when negative
        self._db.execute(
            "CREATE TABLE seen (digest BLOB PRIMARY KEY, line INTEGER NOT NULL) "
            "WITHOUT ROWID"
        )
        self._db.execute("BEGIN")

    def first_line(self, sample_id: str, line: int) -> int | None:
        """The line `sample_id` was first seen on, or None (and remember it)."""
        encoded = sample_id.encode("utf-8", "surrogatepass")
        return self.first_line_of(
            hashlib.blake2b(encoded, digest_size=16).digest(), line
        )

    def first_line_of(self, digest: bytes, line: int) -> int | None:
        insert = "INSERT OR IGNORE INTO seen VALUES (?, ?)"
        if self._db.execute(insert, (digest, line)).rowcount == 1:
            return None
        query = "SELECT line FROM seen WHERE digest = ?"
        return int(self._db.execute(query, (digest,)).fetchone()[0])

    def first_seen(self) -> list[tuple[bytes, int]]:
        """Every id's digest and the line first seen on, in line order."""
        rows = self._db.execute("SELECT digest, line FROM seen ORDER BY line")
        return [(bytes(digest), int(line)) for digest, line in rows]

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> DiskIds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class LineScorer:
    """Turns each non-blank line into a `ScoredLine`; `earlier` maps a line
    to the line of an earlier range that first had its id."""

    task: BulkTask
    path: str
    seen: DiskIds
    timings: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    earlier: dict[int, int] = field(default_factory=dict)

    def score_line(self, number: int, text: str) -> ScoredLine:
        started = perf_counter()
        try:
            case = parse_case_line(self.path, number, text)
        except DatasetError as error:
            assert error.kind is not None
            unreadable = Problem(error.kind, "data", "line", error.problem)
            return ScoredLine(number, error.sample_id, None, None, unreadable)
        finally:
            self.timings["parse"] += perf_counter() - started
        first = self.earlier.get(number)
        if first is not None:  # later lines of this id name that line too
            self.seen.first_line(case.id, first)
        else:
            first = self.seen.first_line(case.id, number)
        if first is not None:
            message = (
                f"sample id {quote(case.id)} is already used on line {first}; "
                "sample ids must be unique"
            )
            duplicate = Problem(DUPLICATE_SAMPLE_ID, "data", "id", message, first)
            return ScoredLine(number, case.id, None, None, duplicate)
        started = perf_counter()
        score = self.task.score_input(case.input)
        self.timings["score"] += perf_counter() - started
        recorded = (score.metadata or {}).get("error")
        problem = None if recorded is None else Problem(**recorded)
        return ScoredLine(number, case.id, case, score, problem)


def scored_lines(
    lines: Iterable[RawLine],
    scorer: LineScorer,
    summary: ScoreSummary,
    presence: FieldPresence,
    advance: Callable[[int | None], None],
) -> Iterator[tuple[str, ScoredLine]]:
    """Each record of `lines` and its score, every line counted into `summary`;
    `advance` is told the bytes read so far (None from a pipe)."""
    for raw in lines:
        summary.lines += 1
        advance(raw.bytes_read)
        if is_blank(raw.text):
            summary.blank += 1
            continue
        summary.records += 1
        scored = scorer.score_line(raw.number, raw.text)
        if scored.case is not None:
            presence.note(scored.case.input)
        summary.count(scored.problem, scored.score)
        yield raw.text, scored

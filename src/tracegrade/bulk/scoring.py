"""A fixture-format file scored line by line exactly as the replay tasks
score it, with each line `inspect eval` would refuse the file for kept as a
`Problem` of its own (docs/architecture.md, "Scoring large files")."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Literal

from inspect_ai.scorer import Score, Scorer

from ..core.errors import quote
from ..datasets import (
    DUPLICATE_SAMPLE_ID,
    NOT_A_FIXTURE_LINE,
    DatasetError,
    FixtureCase,
    parse_case_line,
)
from ..lines import MALFORMED_JSON
from ..scorers import ordered_extraction_scorer, stage_diagnosis_scorer
from ..scorers.store import context_store_key, steps_store_key
from ..tasks import ordered_extraction_recorded, stage_diagnosis
from ..tasks.recorded import (
    EXTRACTION_READ_FROM,
    STAGE_READ_FROM,
    extraction_input_score,
    stage_input_score,
)

Side = Literal["data", "answer", "run"]

# Lines that cannot become a sample; `inspect eval` refuses a file of them.
LINE_ERRORS = (MALFORMED_JSON, NOT_A_FIXTURE_LINE, DUPLICATE_SAMPLE_ID)


@dataclass(frozen=True)
class Problem:
    """Why one line would not be scored cleanly, in the scores' `error` shape:
    `side` "data" leaves it unscored, "answer" scores it as failing; `field`
    is "id" for a repeated id (`first_line` then set), "line" for no case."""

    kind: str
    side: Side
    field: str | None
    message: str
    first_line: int | None = None

    def as_json(self) -> dict[str, Any]:
        data = vars(self).copy()
        if self.first_line is None:
            del data["first_line"]
        return data


@dataclass
class ScoredLine:
    """One non-blank line: a sample and its score, or a line error (`case`
    and `score` None); `id` whenever it could be read."""

    line: int
    id: str | None
    case: FixtureCase | None
    score: Score | None
    problem: Problem | None


@dataclass
class Timings:
    """Seconds spent in each stage, summed over lines."""

    parse: float = 0.0  # reading a line as a fixture case
    score: float = 0.0  # the core, and the `Score` around its result
    sample: float = 0.0  # gathering a sample's parts around its score
    serialize: float = 0.0  # building a sample and writing it (deflated)
    jsonl: float = 0.0  # writing its results line
    results: float = 0.0  # metrics and reductions over every score
    write: float = 0.0  # the logs' headers, summaries and reductions

    def as_json(self) -> dict[str, float]:
        return {name: round(value, 4) for name, value in vars(self).items()}


# --- The two tasks -----------------------------------------------------------


@dataclass(frozen=True)
class BulkTask:
    """A replay task as the command line runs it, without Inspect's runner:
    its `@task`, its scorer made as it makes it, and its dataset's naming."""

    name: str
    task: Callable[..., Any]
    make_scorer: Callable[[], Scorer]
    target_field: str | None
    read_from: dict[str, str]
    score_input: Callable[[dict[str, Any]], Score]


TASKS: dict[str, BulkTask] = {
    "stage_diagnosis": BulkTask(
        name="stage_diagnosis",
        task=stage_diagnosis,
        make_scorer=stage_diagnosis_scorer,
        target_field=None,
        read_from=STAGE_READ_FROM,
        score_input=stage_input_score,
    ),
    "ordered_extraction": BulkTask(
        name="ordered_extraction",
        task=ordered_extraction_recorded,
        make_scorer=lambda: ordered_extraction_scorer(
            answer_key="answer", output_key="output"
        ),
        target_field="source",
        read_from=EXTRACTION_READ_FROM,
        score_input=extraction_input_score,
    ),
}


def replayed_store(record_input: dict[str, Any]) -> dict[str, Any]:
    """The sample store after the replay solver: the context and the
    steps, as recorded."""
    store: dict[str, Any] = {}
    if "context" in record_input:
        store[context_store_key()] = record_input["context"]
    if "steps" in record_input:
        store[steps_store_key()] = record_input["steps"]
    return store


# --- Remembering sample ids ---------------------------------------------------


class DiskIds:
    """Sample ids as 128-bit digests in SQLite's private temporary database,
    which it deletes at once: memory stays flat, and no kill leaves a file."""

    def __init__(self, cache_kib: int = 8192) -> None:
        self._db = sqlite3.connect("", isolation_level=None)
        for pragma in (
            "journal_mode=OFF",
            "synchronous=OFF",
            f"cache_size=-{cache_kib}",
            "temp_store=FILE",
        ):
            self._db.execute(f"PRAGMA {pragma}")
        self._db.execute(
            "CREATE TABLE seen (digest BLOB PRIMARY KEY, line INTEGER NOT NULL) "
            "WITHOUT ROWID"
        )
        self._db.execute("BEGIN")

    def first_line(self, sample_id: str, line: int) -> int | None:
        """The line `sample_id` was first seen on, or None (and remember it)."""
        return self.first_line_of(id_digest(sample_id), line)

    def first_line_of(self, digest: bytes, line: int) -> int | None:
        """`first_line`, for an id's `id_digest`."""
        inserted = self._db.execute(
            "INSERT OR IGNORE INTO seen VALUES (?, ?)", (digest, line)
        )
        if inserted.rowcount == 1:
            return None
        row = self._db.execute(
            "SELECT line FROM seen WHERE digest = ?", (digest,)
        ).fetchone()
        return int(row[0])

    def first_seen(self) -> list[tuple[bytes, int]]:
        """Every id's digest and the line it was first seen on, in line order."""
        rows = self._db.execute("SELECT digest, line FROM seen ORDER BY line")
        return [(bytes(digest), int(line)) for digest, line in rows]

    def close(self) -> None:
        """Let the ids go (finishing the logs is a run's peak of memory)."""
        self._db.close()

    def __enter__(self) -> DiskIds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def id_digest(sample_id: str) -> bytes:
    return hashlib.blake2b(
        sample_id.encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()


# --- Scoring one line --------------------------------------------------------


@dataclass
class LineScorer:
    """Turns each non-blank line into a `ScoredLine`; see the module docstring."""

    task: BulkTask
    path: str
    seen: DiskIds
    timings: Timings = field(default_factory=Timings)
    earlier: dict[int, int] = field(default_factory=dict)

    def score_line(self, number: int, text: str) -> ScoredLine:
        started = perf_counter()
        try:
            case = parse_case_line(self.path, number, text)
        except DatasetError as error:
            self.timings.parse += perf_counter() - started
            assert error.kind is not None
            problem = Problem(error.kind, "data", "line", error.problem)
            return ScoredLine(number, error.sample_id, None, None, problem)
        self.timings.parse += perf_counter() - started

        first = self.earlier.get(number)
        if first is not None:  # later lines of this id name that line too
            self.seen.first_line(case.id, first)
        else:
            first = self.seen.first_line(case.id, number)
        if first is not None:
            problem = Problem(
                kind="duplicate-sample-id",
                side="data",
                field="id",
                message=(
                    f"sample id {quote(case.id)} is already used on line {first}; "
                    "sample ids must be unique"
                ),
                first_line=first,
            )
            return ScoredLine(number, case.id, None, None, problem)

        started = perf_counter()
        score = self.task.score_input(case.input)
        self.timings.score += perf_counter() - started
        return ScoredLine(number, case.id, case, score, score_problem(score))


def score_problem(score: Score) -> Problem | None:
    """The error a tracegrade score records, if any, as a `Problem`."""
    error = (score.metadata or {}).get("error")
    if error is None:
        return None
    return Problem(
        kind=error["kind"],
        side=error["side"],
        field=error["field"],
        message=error["message"],
    )

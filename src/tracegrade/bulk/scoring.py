"""A fixture-format file scored line by line as the replay tasks score it,
each line `inspect eval` would refuse the file for kept as a `Problem`."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import defaultdict
from collections.abc import Callable
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
from ..lines import MALFORMED_JSON
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

    def __init__(self, cache_kib: int = 8192) -> None:
        self._db = sqlite3.connect("", isolation_level=None)
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "temp_store=FILE"):
            self._db.execute(f"PRAGMA {pragma}")
        self._db.execute(f"PRAGMA cache_size=-{cache_kib}")
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

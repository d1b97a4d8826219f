"""Scoring a fixture-format file line by line, as the replay tasks would.

`tracegrade check` and `tracegrade score` read files too large for
`inspect eval`, so they cannot go through a `Task`. They must still agree
with it exactly: a line is classified by `datasets.parse_case_line`,
each record is gathered the way the replay solver and the scorer gather
it, and its `Score` comes from the same function the scorer calls
(`diagnosis_score`, `extraction_score`). The end-to-end test compares a
`tracegrade score` log with an `inspect eval` log of the same file.

The one thing `inspect eval` cannot do is keep going past a bad line: it
refuses the whole file. Here such a line becomes a `Problem` of its own
kind (`malformed-json`, `not-a-fixture-line`, `duplicate-sample-id`), so
that every input line is accounted for.
"""

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
from ..scorers import (
    diagnosis_score,
    extraction_score,
    ordered_extraction_scorer,
    stage_diagnosis_scorer,
)
from ..scorers.extraction import recorded_output_score
from ..scorers.outcome import metadata_source
from ..scorers.store import context_store_key, steps_store_key
from ..tasks import ordered_extraction_recorded, stage_diagnosis
from ..tasks.replay import replayed_output

Side = Literal["data", "answer", "run"]

LINE_ERRORS = (MALFORMED_JSON, NOT_A_FIXTURE_LINE, DUPLICATE_SAMPLE_ID)
"""Kinds of line that cannot become a sample; `inspect eval` refuses such a file."""


@dataclass(frozen=True)
class Problem:
    """Why one line would not be scored cleanly; the scores' `error` shape.

    `side` is "data" for anything that leaves the line unscored (the line
    errors above, and the scorers' data errors such as `invalid-input`) and
    "answer" for a recorded answer that is scored as failing both criteria
    (`duplicate-answer-id`). "run", a run that failed before answering, is
    a side of the scores' `error` too, but a recorded line has no run to
    fail. `field` is the record field at fault, "id" for a repeated sample
    id and "line" for a line that is no case at all; None where no field
    is. `first_line` is set for a repeated sample id.
    """

    kind: str
    side: Side
    field: str | None
    message: str
    first_line: int | None = None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "side": self.side,
            "field": self.field,
            "message": self.message,
        }
        if self.first_line is not None:
            data["first_line"] = self.first_line
        return data


@dataclass
class ScoredLine:
    """One non-blank line: a sample and its score, or a line error.

    `case` and `score` are None exactly when the line cannot become a sample
    (`problem.kind` is then one of `LINE_ERRORS`). `id` is the sample id
    when it could be read, even from a line that is otherwise broken.
    """

    line: int
    id: str | None
    case: FixtureCase | None
    score: Score | None
    problem: Problem | None


@dataclass
class Timings:
    """Seconds spent in each stage, summed over lines."""

    parse: float = 0.0
    """Reading a line as a fixture case (`parse_case_line`)."""
    score: float = 0.0
    """The core and the `Score` around its result (`diagnosis_score`, ...)."""
    sample: float = 0.0
    """Gathering each sample's parts around the score (`SampleParts`)."""
    serialize: float = 0.0
    """Building each sample and writing it into its log (or the `.json`
    spool), deflated for `.eval`."""
    jsonl: float = 0.0
    """Writing the JSON Lines results."""
    results: float = 0.0
    """Metrics and reductions over every score (`eval_results`)."""
    write: float = 0.0
    """Writing the log file: header, samples in order, reductions."""

    def as_json(self) -> dict[str, float]:
        return {name: round(value, 4) for name, value in vars(self).items()}


# --- The two tasks -----------------------------------------------------------


def _stage_read_from() -> dict[str, str]:
    # What `stage_diagnosis_scorer()` (the task's scorer, default arguments)
    # records as the source of each field.
    return {
        "required": metadata_source("required"),
        "context": f"store {context_store_key()}",
        "correct": metadata_source("correct"),
    }


def _extraction_read_from(answer_from: str = "answer") -> dict[str, str]:
    # What `ordered_extraction_scorer(answer_key="answer", output_key="output")`
    # records, for a recorded answer and for a recorded output.
    return {
        "source": metadata_source("source"),
        "answer": metadata_source(answer_from),
    }


def score_stage_input(record_input: dict[str, Any]) -> Score:
    """The score `tracegrade/stage_diagnosis` gives a case with this `input`.

    The replay solver records `context` in the store whenever the input has
    one, `null` included, and the scorer reads it back as recorded; the
    label and required IDs come from metadata, absent keys staying absent.
    An `answer` is replayed as the output, which the score shows.
    """
    record: dict[str, Any] = {}
    if "required" in record_input:
        record["required"] = record_input["required"]
    if "context" in record_input:
        record["context"] = record_input["context"]
    read_from = STAGE_READ_FROM
    # The replay solver records steps that are not null, and the scorer
    # reads them, and says so, only then.
    if record_input.get("steps") is not None:
        record["steps"] = record_input["steps"]
        read_from = STAGE_STEPS_READ_FROM
    if "correct" in record_input:
        record["correct"] = record_input["correct"]
    return diagnosis_score(
        record,
        read_from,
        context_recorded=record_input.get("context") is not None,
        output=replayed_answer(record_input) or "",
    )


def score_extraction_input(record_input: dict[str, Any]) -> Score:
    """The score `tracegrade/ordered_extraction_recorded` gives this `input`:
    a recorded `answer` as recorded, a recorded `output` text read."""
    record: dict[str, Any] = {}
    if "source" in record_input:
        record["source"] = record_input["source"]
    if "output" in record_input:
        return recorded_output_score(
            record,
            EXTRACTION_OUTPUT_READ_FROM,
            record_input["output"],
            answer_too="answer" in record_input,
        )
    if "answer" in record_input:
        record["answer"] = record_input["answer"]
    return extraction_score(record, EXTRACTION_READ_FROM)


STAGE_READ_FROM = _stage_read_from()
STAGE_STEPS_READ_FROM = {**STAGE_READ_FROM, "steps": f"store {steps_store_key()}"}
EXTRACTION_READ_FROM = _extraction_read_from()
EXTRACTION_OUTPUT_READ_FROM = _extraction_read_from("output")


@dataclass(frozen=True)
class BulkTask:
    """A replay task as the command line runs it, without Inspect's runner.

    `task` is the registered `@task` function whose log this imitates,
    `make_scorer` builds the scorer exactly as that task does, and
    `dataset_name` and `target_field` are what its dataset passes to
    `case_sample`.
    """

    name: str
    task: Callable[..., Any]
    make_scorer: Callable[[], Scorer]
    dataset_name: str
    target_field: str | None
    read_from: dict[str, str]
    score_input: Callable[[dict[str, Any]], Score]


TASKS: dict[str, BulkTask] = {
    "stage_diagnosis": BulkTask(
        name="stage_diagnosis",
        task=stage_diagnosis,
        make_scorer=stage_diagnosis_scorer,
        dataset_name="stage_diagnosis",
        target_field=None,
        read_from=STAGE_READ_FROM,
        score_input=score_stage_input,
    ),
    "ordered_extraction": BulkTask(
        name="ordered_extraction",
        task=ordered_extraction_recorded,
        make_scorer=lambda: ordered_extraction_scorer(
            answer_key="answer", output_key="output"
        ),
        dataset_name="ordered_extraction",
        target_field="source",
        read_from=EXTRACTION_READ_FROM,
        score_input=score_extraction_input,
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


def replayed_answer(record_input: dict[str, Any]) -> str | None:
    """The output text the replay solver gives the sample, if any."""
    return replayed_output(record_input)


# --- Remembering sample ids ---------------------------------------------------


class DiskIds:
    """Sample ids in a temporary SQLite database, so memory stays flat;
    `tracegrade check` and `tracegrade score` remember ids with it.

    Duplicate detection must remember every id, so something grows with the
    file; here it is SQLite's private temporary database (the empty file
    name), while the process keeps only its page cache (`cache_kib`):
    slower than a dict, but a dict's memory grows with every id.
    SQLite deletes that file right after opening it, so no kill, however
    abrupt, can leave it behind. Ids are stored as 128-bit BLAKE2b digests:
    fixed size whatever the id's length, and a false match among a billion
    ids has a probability below 1e-20.
    """

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
    """Lines whose id an earlier part of the file already has, and the line
    it is first on there (`bulk.workers`)."""

    def score_line(self, number: int, text: str) -> ScoredLine:
        started = perf_counter()
        try:
            case = parse_case_line(self.path, number, text)
        except DatasetError as error:
            self.timings.parse += perf_counter() - started
            assert error.kind is not None
            return _line_error(number, error.sample_id, error.kind, error.problem)
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


def _line_error(
    number: int, sample_id: str | None, kind: str, message: str
) -> ScoredLine:
    problem = Problem(kind=kind, side="data", field="line", message=message)
    return ScoredLine(number, sample_id, None, None, problem)

"""One `tracegrade score` run: each line scored (`scoring.LineScorer`), added
to the Inspect log (`log.BulkLog`) and its results line written; both outputs
put under their names only once complete."""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter
from typing import IO, TYPE_CHECKING, Any, Final

from inspect_ai.log import EvalResults

from ..core import canonical_json
from ..lines import is_blank, read_lines
from ..outputs import AtomicFile, OutputError
from ..report.runs import ExactSum
from ..scorers.metrics import is_count
from ..table import arrow_column, problem_cells, result_schema, score_cells
from .evallog import deflating_with_isal
from .log import (
    BulkLog,
    PartsContext,
    RunIdentity,
    WrittenRun,
    unreadable_explanation,
)
from .presence import READ_FIELDS, FieldPresence
from .ranges import LineRange, read_range
from .scoring import LINE_ERRORS, TASKS, DiskIds, LineScorer

if TYPE_CHECKING:
    import pyarrow as pa

Number = int | float


@dataclass
class ScoreSummary:
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

    def as_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "path": self.path,
            # The one log, or null when the run was split (see "logs").
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
            **{
                name: {"mean": figure.mean(figure.count), "runs": figure.count}
                for name, figure in (
                    ("recall", self.recall),
                    ("precision", self.precision),
                )
            },
            "seconds": round(self.seconds, 3),
            "samples_per_second": (
                round(self.records / self.seconds, 1) if self.seconds else None
            ),
            "warnings": self.warnings,
        }


class ScoreRun:
    """One `score` run: its logs and results under `.partial` names until all
    are complete, then renamed; `abort` removes them."""

    def __init__(
        self,
        task: str,
        path: str,
        log_dir: str,
        out: str | None,
        log_format: str,
        max_samples_per_log: int,
        *,
        replace: bool,
        results_format: str = "jsonl",
        lines: LineRange | None = None,
        identity: RunIdentity | None = None,
        context: PartsContext | None = None,
    ) -> None:
        self.begun = perf_counter()
        self.lines = lines
        self.identity = identity
        self.context = context or PartsContext()
        self.written: WrittenRun | None = None
        self.first_seen: list[tuple[bytes, int]] = []
        self.replace = replace
        self.log_format = log_format
        self.max_samples_per_log = max_samples_per_log
        self.task = task
        self.path = path
        self.log_dir = log_dir
        self.out = out
        self.summary = ScoreSummary(task=task, path=path)
        self.log: BulkLog | None = None
        self.results: AtomicFile | None = None
        self.results_format = results_format
        self.parquet: ParquetResults | None = None
        self.results_path = out
        self.last_line = 0
        self.finishing = False
        self.presence = FieldPresence(READ_FIELDS[task])

    def open(self) -> None:
        """Create the spool and the temporary results file; `stop` removes
        whatever of them exists, wherever a signal lands."""
        bulk_task = TASKS[self.task]
        try:
            self.log = BulkLog(
                bulk_task,
                self.path,
                Path(self.log_dir),
                log_format=self.log_format,
                max_samples=self.max_samples_per_log,
                identity=self.identity,
                context=self.context,
            )
        except OSError as error:
            raise OutputError(
                f"cannot write into --log-dir {self.log_dir!r} ({error.strerror})"
            ) from None
        self.timings = self.log.timings
        self.scorer = LineScorer(
            bulk_task,
            self.path,
            DiskIds(),
            timings=self.timings,
            earlier=self.context.earlier,
        )
        self._open_results(self.log.base)
        if self.results is not None and self.results_format == "parquet":
            self.parquet = ParquetResults(self.results.handle, self.task)

    def _open_results(self, base: Path) -> None:
        """The temporary results file (by default named like the logs,
        `base`), or standard output."""
        if self.results_path is None:
            self.results_path = f"{base}.results.{self.results_format}"
        self.stream: IO[str] = sys.stdout
        if self.results_path == "-":
            return
        try:
            self.results = AtomicFile(
                self.results_path,
                binary=self.results_format == "parquet",
                replace=self.replace,
            )
        except OSError as error:
            raise OutputError(
                f"cannot write the results {self.results_path!r} ({error.strerror})"
            ) from None
        self.stream = self.results.handle

    def score_lines(self, advance: Callable[[int | None], None]) -> None:
        """Score every line; `advance` is told the bytes read so far (None
        from a pipe), for a progress bar."""
        assert self.log is not None
        summary, log, parquet = self.summary, self.log, self.parquet
        # Every stage row has `lost` in Parquet: the columns are fixed
        # before the first record shows whether any has steps.
        steps = self.task == "stage_diagnosis"
        lines = (
            read_lines(self.path)
            if self.lines is None
            else read_range(self.path, self.lines)
        )
        with deflating_with_isal():
            for raw in lines:
                self.last_line = raw.number
                summary.lines += 1
                advance(raw.bytes_read)
                if is_blank(raw.text):
                    summary.blank += 1
                    continue
                summary.records += 1
                started_at = datetime.now(timezone.utc).isoformat()
                started = perf_counter()
                outcome = self.scorer.score_line(raw.number, raw.text)
                problem, score = outcome.problem, outcome.score
                try:
                    if outcome.case is not None and score is not None:
                        self.presence.note(outcome.case.input)
                        log.add_sample(
                            outcome.case, score, started_at, perf_counter() - started
                        )
                    else:
                        assert problem is not None
                        log.add_unreadable(raw.number, raw.text, problem)
                except OSError as error:
                    raise self._naming_the_logs(error) from None
                if problem is None or problem.side == "answer":
                    summary.scored += 1
                    if problem is not None:
                        summary.answer_failures[problem.kind] += 1
                else:
                    summary.not_scored[problem.kind] += 1
                    summary.line_errors += problem.kind in LINE_ERRORS
                writing = perf_counter()
                if score is not None:
                    metadata = score.metadata or {}
                    for name in ("recall", "precision"):
                        if (figure := metadata.get(name)) is not None:
                            getattr(summary, name).add(figure)
                    value = score.value  # NaN (unscored) as null
                    nan = isinstance(value, float) and math.isnan(value)
                    entry: dict[str, Any] = {
                        "value": None if nan else value,
                        "result": metadata.get("result"),
                        "explanation": score.explanation,
                        "error": metadata.get("error"),
                    }
                else:
                    assert problem is not None
                    entry = {
                        "value": None,
                        "result": None,
                        "explanation": unreadable_explanation(raw.number, problem),
                        "error": problem.as_json(),
                    }
                if parquet is not None:
                    cells = (
                        score_cells(self.task, score, steps=steps)
                        if score is not None
                        else problem_cells(self.task, entry["error"], steps=steps)
                    )
                    parquet.add(raw.number, outcome.id, cells)
                else:
                    line = {"line": raw.number, "id": outcome.id, **entry}
                    self.stream.write(canonical_json(line) + "\n")
                self.timings.jsonl += perf_counter() - writing

    def finish(self) -> None:
        """Write the log, then put both outputs under their final names."""
        assert self.log is not None
        self.finishing = True
        if self.parquet is not None:
            self.parquet.close()
        if self.results is not None:
            self.results.flush_to_disk()
        else:
            self.stream.flush()
        publish = self.lines is None
        if not publish:
            self.first_seen = self.scorer.seen.first_seen()
        self.scorer.seen.close()
        self.summary.warnings = self.presence.warnings(self.path)
        self.log.warnings = (
            [warning["message"] for warning in self.summary.warnings]
            if publish
            else self.context.warnings
        )
        try:
            with deflating_with_isal():
                self.written = written = self.log.finish(publish=publish)
        except OSError as error:
            raise self._naming_the_logs(error) from None
        if self.results is not None:
            self.results.commit()
        self.summary.results = self.results_path
        self.summary.logs = [str(location) for location in written.logs]
        self.summary.seconds = perf_counter() - self.begun
        if written.results is not None:
            self.summary.metrics = metrics_of(written.results)

    def _naming_the_logs(self, error: OSError) -> OSError:
        """`error` naming the log directory, if it names no file: the logs
        and their spools are written there."""
        if error.filename is not None:
            return error
        return OSError(error.errno, error.strerror, self.log_dir)

    def discard(self) -> None:
        """No records: nothing to write, and nothing left behind."""
        assert self.log is not None
        self.log.abort()
        if self.parquet is not None:
            self.parquet.abandon()
        if self.results is not None:
            self.results.discard()
        self.summary.seconds = perf_counter() - self.begun

    def abort(self) -> list[str]:
        """Remove whatever was begun; the paths of anything that could not
        be removed. Never raises."""
        if self.parquet is not None:
            self.parquet.abandon()
        left = [] if self.results is None else [self.results.discard()]
        if self.log is not None:
            left.append(self.log.abort())
        return [path for path in left if path is not None]


BATCH_ROWS: Final = 8_192


def results_file_schema(task: str) -> pa.Schema:
    """`line`, then `score_table`'s columns (stage runs with steps')."""
    import pyarrow as pa

    schema = result_schema(task, steps=task == "stage_diagnosis")
    return schema.insert(0, pa.field("line", pa.int64()))


class ParquetResults:
    """Rows appended one per record, written a batch at a time to `handle`."""

    def __init__(self, handle: IO[bytes], task: str) -> None:
        import pyarrow.parquet as pq

        self.schema = results_file_schema(task)
        self._writer = pq.ParquetWriter(handle, self.schema)
        self._rows: list[tuple[Any, ...]] = []

    def add(self, line: int, sample_id: str | None, cells: tuple[Any, ...]) -> None:
        self._rows.append((line, sample_id, *cells))
        if len(self._rows) >= BATCH_ROWS:
            self._write()

    def _write(self) -> None:
        import pyarrow as pa

        if not self._rows:
            return
        columns = zip(*self._rows, strict=True)
        arrays = [
            arrow_column(list(column), field.type)
            for column, field in zip(columns, self.schema, strict=True)
        ]
        self._rows = []
        self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))

    def close(self) -> None:
        """Write what is left and the file's footer."""
        self._write()
        self._writer.close()

    def abandon(self) -> None:
        """Give the file up unfinished: its temporary file is removed by
        its owner. pyarrow's writer would otherwise write a footer when
        collected, into a file already closed, and print that it could not."""
        self._rows = []
        self._writer.is_open = False


def metrics_of(results: EvalResults) -> dict[str, dict[str, Number | None]]:
    """Each score's metrics, NaN as None and a count as the integer it is
    (Inspect logs floats); a scorer with reduced and unreduced metrics
    (`ordered_extraction`) has two entries of one name, of distinct metrics."""
    metrics: dict[str, dict[str, Number | None]] = {}
    for eval_score in results.scores:
        for name, metric in eval_score.metrics.items():
            value: Number | None = metric.value
            if math.isnan(metric.value):
                value = None
            elif is_count(metric):
                value = int(metric.value)
            metrics.setdefault(eval_score.name, {})[name] = value
    return metrics

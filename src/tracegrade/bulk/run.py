"""One range of a `tracegrade score` run (the whole input, or a worker's
lines) scored into part logs left under `.partial` names, and its results."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from time import perf_counter
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalResults,
    EvalSpec,
    EvalStats,
)
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Score
from inspect_ai.util import registry_info

from .._inspect_internals import (
    Plan,
    as_scorer_spec,
    cwd_relative_path,
    eval_config_defaults,
    eval_log_name,
    iso_now,
    plan_to_eval_plan,
    registry_unqualified_name,
    resolve_eval_scorers,
    resolve_package_revision,
    resolve_revision,
    resolve_task_distribution,
)
from ..core import canonical_json
from ..datasets import FixtureCase, case_sample_fields
from ..lines import read_lines
from ..outputs import OutputError
from ..scorers.metrics import is_count
from ..scorers.outcome import data_error, error_info
from ..table import arrow_column, problem_cells, result_schema, score_cells
from ..tasks.replay import replay, replayed_output
from .evallog import EvalArchive, JsonLogWriter, sample_json, sample_summary
from .presence import READ_FIELDS, FieldPresence
from .ranges import LineRange, read_range
from .results import LightScores, RunResults
from .samples import MODEL, SampleParts, SampleTemplates, uuid
from .scoring import (
    TASKS,
    DiskIds,
    LineScorer,
    Number,
    Problem,
    ScoredLine,
    ScoreSummary,
    replayed_store,
    scored_lines,
)

if TYPE_CHECKING:
    import pyarrow as pa

UNREADABLE_INPUT_LIMIT = 2000
# The viewer lists no sample of a `.json` log over 100 MiB; a margin for the header.
MAX_JSON_LOG_BYTES = 90 * 1024 * 1024
_UNREADABLE_OVERHEAD = 2048


@dataclass
class _Part:
    index: int
    eval_id: str
    task_id: str
    writer: EvalArchive | JsonLogWriter
    results: RunResults
    unreadable: IO[bytes] | None = None
    unreadable_count: int = 0
    samples: int = 0
    # The samples' bytes, the unreadable lines' to come counted already.
    sample_bytes: int = 0

    def close(self) -> None:
        self.results.close()
        if self.unreadable is not None:
            with contextlib.suppress(OSError):
                self.unreadable.close()


class RunIdentity(NamedTuple):
    """What every log of one run shares, wherever each is written."""

    run_id: str
    created: str
    base: Path
    task_id: str  # the first log's, which its name holds


@dataclass(frozen=True)
class RangeJob:
    """One range of a run (`lines` None: the whole input), as a worker is
    handed it. What its logs say of the whole run (`first_index` on) is known
    only once every range is read: guessed first, checked after (`bulk.workers`)."""

    task: str
    path: str
    log_dir: str
    log_format: str
    max_samples_per_log: int
    results_format: str
    lines: LineRange | None
    index: int
    identity: RunIdentity
    first_index: int = 1
    count: int | None = None
    warnings: tuple[str, ...] = ()
    taken: frozenset[str] = frozenset()
    earlier: dict[int, int] = field(default_factory=dict)


@functools.cache
def _packages_and_revision(task_name: str) -> tuple[dict[str, str], Any]:
    """Cached: finding the task's distribution reads every package's metadata."""
    distribution = resolve_task_distribution(task_name)
    packages = {"inspect_ai": version("inspect_ai")}
    if distribution is not None:
        packages[distribution.name] = distribution.version
    return packages, resolve_package_revision(distribution) or resolve_revision()


def new_identity(log_dir: Path, task_name: str) -> RunIdentity:
    created, task_id = iso_now(), uuid()
    name = eval_log_name(task=task_name, task_id=task_id, created=created, model=MODEL)
    return RunIdentity(uuid(), created, log_dir / name, task_id)


def log_location(base: Path, index: int, count: int, log_format: str) -> Path:
    """`NAME.eval`, or `NAME-part02of14.eval` for part 2 of 14."""
    if count == 1:
        return base.with_name(f"{base.name}.{log_format}")
    width = len(str(count))
    return base.with_name(f"{base.name}-part{index:0{width}d}of{count}.{log_format}")


def unreadable_explanation(line: int, problem: Problem) -> str:
    duplicate = problem.kind == "duplicate-sample-id"
    cannot = "be a sample of its own" if duplicate else "become a sample"
    return f"Line {line} cannot {cannot}: {problem.message}. It is not graded."


@dataclass
class RangeOutcome:
    summary: ScoreSummary
    presence: FieldPresence
    timings: defaultdict[str, float]
    scores: list[LightScores]
    line_like_ids: set[str]
    first_seen: list[tuple[bytes, int]]


class ScoreRun:
    """One range of a `score` run, scored in this process, its results rows
    written to `stream`."""

    def __init__(self, job: RangeJob, stream: IO[Any]) -> None:
        self.job, self.stream = job, stream
        self.summary = ScoreSummary(task=job.task, path=job.path)
        self.bulk_task = TASKS[job.task]
        self.timings: defaultdict[str, float] = defaultdict(float)
        self.presence = FieldPresence(READ_FIELDS[job.task])
        self.warnings: list[str] = []
        self.first_seen: list[tuple[bytes, int]] = []
        self.line_like_ids: set[str] = set()
        self._parts: list[_Part] = []
        self.parquet: ParquetResults | None = None

    def open(self) -> None:
        """Begin the first log."""
        self.inspect_scorer = self.bulk_task.make_scorer()
        self.scorer_name = registry_unqualified_name(self.inspect_scorer)
        self.task_name = registry_info(self.bulk_task.task).name
        self._templates = SampleTemplates.make()
        # `internal=True` is how Inspect itself wraps a task's solver.
        self.plan = plan_to_eval_plan(Plan([replay()], internal=True), GenerateConfig())
        first_task_id = self.job.identity.task_id
        try:
            self._new_part(first_task_id if self.job.first_index == 1 else None)
        except OSError as error:
            raise OutputError(
                f"cannot write into --log-dir {self.job.log_dir!r} ({error.strerror})"
            ) from None
        self.scorer = LineScorer(
            self.bulk_task, self.job.path, DiskIds(), self.timings, self.job.earlier
        )
        if self.job.results_format == "parquet":
            self.parquet = ParquetResults(self.stream, self.job.task)

    def score_lines(self, advance: Callable[[int | None], None]) -> None:
        job = self.job
        lines = (
            read_lines(job.path)
            if job.lines is None
            else read_range(job.path, job.lines)
        )
        records = scored_lines(lines, self.scorer, self.summary, self.presence, advance)
        started_at, started = iso_now("auto"), perf_counter()
        for text, scored in records:
            try:
                if scored.case is not None and scored.score is not None:
                    seconds = perf_counter() - started
                    self.add_sample(scored.case, scored.score, started_at, seconds)
                else:
                    assert scored.problem is not None
                    self.add_unreadable(scored.line, text, scored.problem)
            except OSError as error:
                raise self._naming_the_logs(error) from None
            writing = perf_counter()
            self._write_result(scored)
            self.timings["jsonl"] += perf_counter() - writing
            started_at, started = iso_now("auto"), perf_counter()

    def _write_result(self, scored: ScoredLine) -> None:
        line, sample_id, _, score, problem = scored
        task = self.job.task
        # Every stage row has `lost`: the columns are fixed before the first
        # record shows whether any has steps.
        steps = task == "stage_diagnosis"
        if score is None:
            assert problem is not None
            if self.parquet is not None:
                cells = problem_cells(task, problem.as_json(), steps=steps)
                return self.parquet.add(line, sample_id, cells)
            entry: dict[str, Any] = {"value": None, "result": None}
            entry["explanation"] = unreadable_explanation(line, problem)
            entry["error"] = problem.as_json()
        elif self.parquet is not None:
            cells = score_cells(task, score, steps=steps)
            return self.parquet.add(line, sample_id, cells)
        else:
            metadata = score.metadata or {}
            nan = isinstance(score.value, float) and math.isnan(score.value)
            entry = {
                "value": None if nan else score.value,  # NaN (unscored) as null
                "result": metadata.get("result"),
                "explanation": score.explanation,
                "error": metadata.get("error"),
            }
        row = {"line": line, "id": sample_id, **entry}
        self.stream.write(canonical_json(row) + "\n")

    def finish(self) -> None:
        """Complete the logs under their `.partial` names (`summary.logs`),
        for the caller (`bulk.workers`) to name."""
        if self.parquet is not None:
            self.parquet.close()
        self.stream.flush()
        self.summary.warnings = self.presence.warnings(self.job.path)
        self.warnings = list(self.job.warnings)
        if self.job.lines is None:
            self.warnings = [warning["message"] for warning in self.summary.warnings]
        else:
            self.first_seen = self.scorer.seen.first_seen()
        self.scorer.seen.close()
        try:
            self._finish_logs()
        except OSError as error:
            raise self._naming_the_logs(error) from None

    def outcome(self) -> RangeOutcome:
        scores = [part.results.scores for part in self._parts]
        return RangeOutcome(
            *(self.summary, self.presence, self.timings, scores),
            *(self.line_like_ids, self.first_seen),
        )

    def _new_part(self, task_id: str | None = None) -> _Part:
        if self._parts:
            self._parts[-1].writer.suspend()
        job = self.job
        index = self.job.first_index + len(self._parts)
        eval_id, task_id = uuid(), task_id or uuid()
        results = RunResults(self.inspect_scorer, self.scorer_name, job.log_dir)
        # The eval's id too: a range's guessed index may be taken.
        base = job.identity.base
        working = base.with_name(f"{base.name}-part{index}-{eval_id}.{job.log_format}")
        writer: EvalArchive | JsonLogWriter
        try:
            if job.log_format == "json":
                writer = JsonLogWriter(working)
            else:
                writer = EvalArchive(working, self._spec(eval_id, task_id), self.plan)
        except BaseException:
            results.close()
            raise
        self._parts.append(_Part(index, eval_id, task_id, writer, results))
        return self._parts[-1]

    def _current_part(self) -> _Part:
        part = self._parts[-1]
        spooled = part.sample_bytes + part.results.spooled
        full = part.samples + part.unreadable_count >= self.job.max_samples_per_log or (
            self.job.log_format == "json" and spooled >= MAX_JSON_LOG_BYTES
        )
        return self._new_part() if full else part

    def add_sample(
        self, case: FixtureCase, score: Score, started_at: str, elapsed: float
    ) -> None:
        """Log one case with its score, as `inspect eval` would have."""
        part = self._current_part()
        text, target, metadata = case_sample_fields(
            case, target_field=self.bulk_task.target_field
        )
        if case.id.startswith("line-"):
            self.line_like_ids.add(case.id)
        parts = SampleParts(
            id=case.id,
            input=text,
            target=target,
            metadata=metadata,
            answer=replayed_output(case.input),
            scores={self.scorer_name: score},
            store=replayed_store(case.input),
            started_at=started_at,
            completed_at=iso_now("auto"),
            seconds=elapsed,
        )
        self._add(part, parts, score)

    def _add(self, part: _Part, parts: SampleParts, score: Score) -> None:
        serialising = perf_counter()
        part.results.add(parts.id, score)
        data = self._templates.build(parts)
        sample = sample_json(data)
        if isinstance(part.writer, EvalArchive):
            part.writer.add_sample(sample, sample_summary(data))
        else:
            part.writer.add(parts.id, sample)
        part.sample_bytes += len(sample)
        part.samples += 1
        self.timings["serialize"] += perf_counter() - serialising

    def add_unreadable(self, line: int, text: str, problem: Problem) -> None:
        """Spool a line that cannot become a sample: its sample is written at
        the end, once every real id is known, so that its `line-N` id
        collides with none."""
        shown = text[: UNREADABLE_INPUT_LIMIT + 1]
        shown = shown.encode("utf-8", "surrogateescape").decode(
            "utf-8", "backslashreplace"
        )
        if len(text) > UNREADABLE_INPUT_LIMIT:
            shown = shown[:UNREADABLE_INPUT_LIMIT] + "..."
        part = self._current_part()
        if part.unreadable is None:
            part.unreadable = tempfile.TemporaryFile(dir=self.job.log_dir)  # noqa: SIM115
        # ensure_ascii: a lone surrogate is escaped, and read back as is.
        record = [line, shown, part.samples, problem.as_json()]
        part.unreadable.write(json.dumps(record).encode("ascii") + b"\n")
        part.unreadable_count += 1
        # Summed as they come: `spooled` is read before every sample.
        part.sample_bytes += 2 * len(shown) + _UNREADABLE_OVERHEAD

    def _unreadable_samples(
        self, part: _Part, taken: set[str]
    ) -> list[tuple[int, str]]:
        """Log the part's unreadable lines as unscored samples; where each
        stands (how many samples came before it) and its id."""
        placed: list[tuple[int, str]] = []
        if part.unreadable is None:
            return placed
        part.unreadable.seek(0)
        for row in part.unreadable:
            line, text, position, error = json.loads(row)
            # `line-N`, unless a real sample already has that id.
            sample_id, suffix = f"line-{line}", 2
            while sample_id in taken:
                sample_id, suffix = f"line-{line}~{suffix}", suffix + 1
            taken.add(sample_id)
            placed.append((position, sample_id))
            problem = Problem(**error)
            score = data_error(
                error_info(problem.kind, "data", problem.field, problem.message),
                answer="",
                explanation=unreadable_explanation(line, problem),
                result=None,
                record={},
                read_from=self.bulk_task.read_from,
            )
            now = iso_now("auto")
            parts = SampleParts(
                id=sample_id,
                input=text,
                target="",
                metadata={"line": line},
                answer=None,
                scores={self.scorer_name: score},
                store={},
                started_at=now,
                completed_at=now,
                seconds=0.0,
            )
            self._add(part, parts, score)
        return placed

    @staticmethod
    def _sample_ids(part: _Part, placed: list[tuple[int, str]]) -> list[int | str]:
        """The part's sample ids in file order, each unreadable line's where
        its line stood (made after the metrics: it holds every id)."""
        read: list[Any] = part.results.scores.sample_ids
        del read[len(read) - len(placed) :]
        sample_ids: list[int | str] = []
        start = 0
        for position, sample_id in placed:
            sample_ids += [*read[start:position], sample_id]
            start = position
        return sample_ids + read[start:]

    def _finish_logs(self) -> None:
        parts = self._parts
        count = self.job.count or len(parts)
        # The only real ids an unreadable line's `line-N` can meet.
        taken = self.line_like_ids | self.job.taken
        for part in parts:
            if part is not parts[-1]:
                part.writer.resume()  # every part but the last was suspended
            placed = self._unreadable_samples(part, taken)
            begun = perf_counter()
            results, reductions = part.results.results(part.samples)
            spec = self._spec(
                part.eval_id,
                part.task_id,
                sample_ids=self._sample_ids(part, placed),
                part=(part.index, count) if count > 1 else None,
            )
            header = EvalLog(
                version=2,
                status="success",
                eval=spec,
                plan=self.plan,
                results=results,
                stats=EvalStats(
                    started_at=self.job.identity.created, completed_at=iso_now()
                ),
            )
            part.writer.complete(header, reductions)
            part.close()
            self.timings["write"] += perf_counter() - begun
        self.summary.logs = [str(part.writer.partial) for part in parts]

    def _spec(
        self,
        eval_id: str,
        task_id: str,
        sample_ids: list[int | str] | None = None,
        part: tuple[int, int] | None = None,
    ) -> EvalSpec:
        packages, revision = _packages_and_revision(self.task_name)
        metadata: dict[str, Any] = {}
        if part is not None:
            metadata["tracegrade_part"] = {"index": part[0], "count": part[1]}
        if self.warnings:
            metadata["tracegrade_warnings"] = list(self.warnings)
        path = self.job.path
        return EvalSpec(
            eval_id=eval_id,
            run_id=self.job.identity.run_id,
            created=self.job.identity.created,
            task=self.task_name,
            task_id=task_id,
            task_version=0,
            task_display_name=registry_unqualified_name(self.bulk_task.task),
            task_registry_name=self.task_name,
            task_attribs={},
            task_args={"dataset": path},
            task_args_passed={"dataset": path},
            dataset=EvalDataset(
                name=self.bulk_task.name,
                location=cwd_relative_path(path),
                samples=None if sample_ids is None else len(sample_ids),
                sample_ids=sample_ids,
                shuffled=False,
            ),
            model=MODEL,
            model_generate_config=GenerateConfig(),
            model_args={},
            config=EvalConfig(**eval_config_defaults()),
            revision=revision,
            packages=dict(packages),
            scorers=resolve_eval_scorers([as_scorer_spec(self.inspect_scorer)]),
            metadata=metadata or None,
        )

    def _naming_the_logs(self, error: OSError) -> OSError:
        # The log directory holds the logs and their spools.
        if error.filename is not None:
            return error
        return OSError(error.errno, error.strerror, self.job.log_dir)

    def abort(self) -> None:
        """Remove the logs begun (what cannot be, its caller's abort finds
        by name); never raises."""
        if self.parquet is not None:
            self.parquet.abandon()
        for part in self._parts:
            part.close()
            with contextlib.suppress(OSError):
                part.writer.abort()


def results_file_schema(task: str) -> pa.Schema:
    """`line`, then `score_table`'s columns (stage runs with steps')."""
    import pyarrow as pa

    schema = result_schema(task, steps=task == "stage_diagnosis")
    return schema.insert(0, pa.field("line", pa.int64()))


class ParquetResults:
    """Rows appended one per record, written 8,192 at a time to `handle`."""

    def __init__(self, handle: IO[bytes], task: str) -> None:
        import pyarrow.parquet as pq

        self.schema = results_file_schema(task)
        self._writer = pq.ParquetWriter(handle, self.schema)
        self._rows: list[tuple[Any, ...]] = []

    def add(self, line: int, sample_id: str | None, cells: tuple[Any, ...]) -> None:
        self._rows.append((line, sample_id, *cells))
        if len(self._rows) >= 8_192:
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
        self._write()
        self._writer.close()

    def abandon(self) -> None:
        """Give the file up unfinished (its owner removes it): pyarrow's
        writer would otherwise write a footer into a closed file when
        collected, and print that it could not."""
        self._rows = []
        self._writer.is_open = False


def metrics_of(results: EvalResults) -> dict[str, dict[str, Number | None]]:
    """Each score's metrics, NaN as None and a count as the integer it is
    (Inspect logs floats)."""
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

"""`tracegrade score`: the whole input scored in this process, or, on every
core, the file cut into ranges of lines, each scored into its own part logs
by a spawned worker (`score_part`); `WorkersRun` puts them together in input
order and is the one place outputs get their final names."""

from __future__ import annotations

import contextlib
import copy
import glob
import os
import shutil
import signal
import stat
import sys
import types
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import active_children, get_context
from pathlib import Path
from time import perf_counter
from typing import IO, Any, Final

from inspect_ai.util import registry_info

from .._inspect_internals import registry_unqualified_name
from ..outputs import (
    PARTIAL_SUFFIX,
    AtomicFile,
    OutputError,
    publish_output,
    sync_directory,
)
from ..table import score_table
from .presence import READ_FIELDS, FieldPresence
from .ranges import LineRange, plan_ranges
from .results import LightScores, RunResults, pooled_results
from .run import (
    PartsContext,
    RunIdentity,
    ScoreRun,
    ScoreSummary,
    log_location,
    metrics_of,
    new_identity,
)
from .scoring import LINE_ERRORS, TASKS, DiskIds

# Input bytes from which workers score by default (a sixteenth of it with
# --workers): a worker's start costs seconds (docs/speed.md).
PARALLEL_FROM: Final = 16 << 20
_WAIT: Final = 0.5  # seconds between looks at whether a worker died
_JOIN: Final = 5.0  # seconds a killed or idle worker is given to end


def default_workers() -> int:
    count = getattr(os, "process_cpu_count", os.cpu_count)()
    return max(1, count or 1)


class WorkerDied(OutputError):
    """A worker ended without an answer (killed, or out of memory)."""


@dataclass(frozen=True)
class RangeJob:
    """One range of a run, as a worker is handed it."""

    task: str
    path: str
    log_dir: str
    log_format: str
    max_samples_per_log: int
    results_format: str
    lines: LineRange
    index: int
    identity: RunIdentity
    context: PartsContext


@dataclass
class RangeOutcome:
    summary: ScoreSummary
    presence: FieldPresence
    timings: defaultdict[str, float]
    scores: list[LightScores]
    line_like_ids: set[str]
    first_seen: list[tuple[bytes, int]]


def score_part(part: Any, task: str = "stage_diagnosis", **keys: str) -> Any:
    """Score one part of a run: a worker's range of lines (a `RangeJob`,
    into its part logs and results), or an Arrow batch for Ray or Spark
    (`score_table`, docs/beyond-one-machine.md)."""
    if not isinstance(part, RangeJob):
        return score_table(part, task, **keys)
    # Read by the run's `finish`; removed, with anything else, by its `abort`.
    chunk = f"{part.identity.base}-lines{part.index}.results"
    binary = part.results_format == "parquet"
    mode, encoding, newline = ("wb", None, None) if binary else ("w", "utf-8", "\n")
    with open(chunk, mode, encoding=encoding, newline=newline) as stream:
        run = ScoreRun(
            *(part.task, part.path, part.log_dir, stream, part.log_format),
            part.max_samples_per_log,
            results_format=part.results_format,
            identity=part.identity,
            lines=part.lines,
            context=part.context,
        )
        try:
            run.open()
            run.score_lines(lambda _: None)
            if run.summary.records:
                run.finish()
                run.summary.results = chunk
            else:
                run.abort()
        except BaseException:
            run.abort()
            raise
    if not run.summary.records:
        os.unlink(chunk)
    return _outcome(run)


def _outcome(run: ScoreRun) -> RangeOutcome:
    return RangeOutcome(
        run.summary,
        run.presence,
        run.timings,
        run.scores,
        run.line_like_ids,
        run.first_seen,
    )


def _ignore_signals() -> None:
    # The terminal's signals are the main process's.
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGBREAK"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)


@contextlib.contextmanager
def _without_main_module() -> Iterator[None]:
    """Spawn would have each worker import the caller's script again."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _result(future: Future[RangeOutcome]) -> RangeOutcome:
    """Looking every `_WAIT` s, so that a signal gets in."""
    while True:
        try:
            return future.result(timeout=_WAIT)
        except TimeoutError:
            continue
        except BrokenProcessPool:
            raise WorkerDied(
                "a scoring worker process ended without a word "
                "(killed, or out of memory)"
            ) from None


class WorkersRun:
    """A `score` run of ranges (`ranges` None: the whole input in this
    process, as one range), put together; its outputs get their final
    names only once all are complete, and `abort` removes them."""

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
        results_format: str,
        ranges: list[LineRange] | None,
        workers: int,
    ) -> None:
        self.begun = perf_counter()
        self.task, self.path, self.log_dir = task, path, log_dir
        self.log_format, self.max_samples_per_log = log_format, max_samples_per_log
        self.replace, self.results_format = replace, results_format
        self.results_path = out
        self.ranges, self.workers = ranges, workers
        self.summary = ScoreSummary(task=task, path=path)
        self.timings: defaultdict[str, float] = defaultdict(float)
        self.identity: RunIdentity | None = None
        self.results: AtomicFile | None = None
        self.stream: IO[Any] = sys.stdout
        self.pool: ProcessPoolExecutor | None = None
        self.inner: ScoreRun | None = None
        self.outcomes: list[RangeOutcome] = []
        self.published: list[str] = []
        self.last_line = 0
        self.finishing = False

    def open(self) -> None:
        """The run's name, its temporary results file, and the workers."""
        task_name = registry_info(TASKS[self.task].task).name
        self.identity = new_identity(Path(self.log_dir), task_name)
        self.results_path = (
            self.results_path or f"{self.identity.base}.results.{self.results_format}"
        )
        if self.results_path != "-":
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
        if self.ranges is None:
            return
        self.pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=get_context("spawn"),
            initializer=_ignore_signals,
        )

    def _job(self, index: int, context: PartsContext) -> RangeJob:
        assert self.identity is not None and self.ranges is not None
        return RangeJob(
            *(self.task, self.path, self.log_dir, self.log_format),
            *(self.max_samples_per_log, self.results_format, self.ranges[index]),
            *(index + 1, self.identity, context),
        )

    def score_lines(self, advance: Callable[[int | None], None]) -> None:
        """Score every range, again those whose guessed context was wrong."""
        if self.ranges is None:
            self._score_in_process(advance)
            return
        count = len(self.ranges)
        jobs = [
            self._job(k, PartsContext(first_index=k + 1, count=count))
            for k in range(count)
        ]
        futures = [self._submit(job) for job in jobs]
        for job, future in zip(jobs, futures, strict=True):
            self.outcomes.append(_result(future))
            self.last_line = job.lines.first_line + job.lines.lines - 1
            advance(job.lines.end)
        earlier = self._earlier()
        for _ in range(4):
            contexts = self._contexts(earlier)
            redo = [k for k, job in enumerate(jobs) if job.context != contexts[k]]
            if not redo:
                self._sum_counts()
                return
            for k in redo:
                self._remove(self.outcomes[k])
                jobs[k] = self._job(k, contexts[k])
            futures = [self._submit(jobs[k]) for k in redo]
            for k, future in zip(redo, futures, strict=True):
                self.outcomes[k] = _result(future)
        raise RuntimeError("the ranges' logs did not settle")  # a bug

    def _score_in_process(self, advance: Callable[[int | None], None]) -> None:
        """The whole input, a pipe too, as one range; its results written
        straight to the run's."""
        assert self.identity is not None
        self.inner = ScoreRun(
            *(self.task, self.path, self.log_dir, self.stream, self.log_format),
            self.max_samples_per_log,
            results_format=self.results_format,
            identity=self.identity,
        )
        self.inner.open()
        try:
            self.inner.score_lines(advance)
        finally:
            self.last_line = self.inner.last_line
        self.outcomes = [_outcome(self.inner)]
        self._sum_counts()

    def _submit(self, job: RangeJob) -> Future[RangeOutcome]:
        assert self.pool is not None
        with _without_main_module():
            return self.pool.submit(score_part, job)

    def _earlier(self) -> list[dict[int, int]]:
        """Each range's lines whose id an earlier range had first."""
        found: list[dict[int, int]] = []
        with DiskIds() as seen:
            for outcome in self.outcomes:
                repeats: dict[int, int] = {}
                for digest, line in outcome.first_seen:
                    first = seen.first_line_of(digest, line)
                    if first is not None:
                        repeats[line] = first
                found.append(repeats)
        return found

    def _contexts(self, earlier: list[dict[int, int]]) -> list[PartsContext]:
        presence = FieldPresence(READ_FIELDS[self.task])
        for outcome in self.outcomes:
            presence.found |= outcome.presence.found
            presence.keys |= outcome.presence.keys
        self.summary.warnings = presence.warnings(self.path)
        warnings = [warning["message"] for warning in self.summary.warnings]
        taken = set().union(*(outcome.line_like_ids for outcome in self.outcomes))
        total = sum(len(outcome.summary.logs) for outcome in self.outcomes)
        contexts: list[PartsContext] = []
        first_index = 1
        for outcome, repeats in zip(self.outcomes, earlier, strict=True):
            unreadable = sum(outcome.summary.not_scored[kind] for kind in LINE_ERRORS)
            contexts.append(
                PartsContext(
                    first_index=first_index,
                    count=total,
                    warnings=warnings,
                    taken=taken if unreadable or repeats else set(),
                    earlier=repeats,
                )
            )
            first_index += len(outcome.summary.logs)
        return contexts

    @staticmethod
    def _remove(outcome: RangeOutcome) -> None:
        for path in [*outcome.summary.logs, outcome.summary.results]:
            if path is not None:
                Path(path).unlink(missing_ok=True)

    def finish(self) -> None:
        """Join the results in input order, name the logs, pool the metrics."""
        self.finishing = True
        if self.inner is None:
            self._gather_results()
        else:
            self.inner.finish()
            self.outcomes = [_outcome(self.inner)]
            self._sum_counts()
            self.summary.warnings = self.inner.summary.warnings
        if self.results is not None:
            self.results.flush_to_disk()
        total = sum(len(outcome.summary.logs) for outcome in self.outcomes)
        logs = [log for outcome in self.outcomes for log in outcome.summary.logs]
        assert self.identity is not None
        locations = [
            log_location(self.identity.base, index, total, self.log_format)
            for index in range(1, total + 1)
        ]
        for partial, location in zip(logs, locations, strict=True):
            self.published.append(str(location))
            publish_output(partial, str(location), replace=False)
        sync_directory(self.log_dir)
        if self.results is not None:
            self.results.commit()
        self._sum_metrics(locations)
        if self.pool is not None:
            self.pool.shutdown()

    def _gather_results(self) -> None:
        chunks = [o.summary.results for o in self.outcomes if o.summary.results]
        if self.results_format == "parquet":
            import pyarrow.parquet as pq

            assert self.results is not None
            first = pq.ParquetFile(chunks[0])
            with pq.ParquetWriter(self.results.handle, first.schema_arrow) as writer:
                for chunk in chunks:
                    for batch in pq.ParquetFile(chunk).iter_batches():
                        writer.write_batch(batch)
        else:
            handle: Any = sys.stdout if self.results is None else self.results.handle
            handle.flush()
            for chunk in chunks:
                with open(chunk, "rb") as part:
                    shutil.copyfileobj(part, handle.buffer)
            handle.flush()
        for chunk in chunks:
            Path(chunk).unlink()

    def _sum_counts(self) -> None:
        warnings = self.summary.warnings
        summary = self.summary = ScoreSummary(self.task, self.path, warnings=warnings)
        self.timings.clear()
        for outcome in self.outcomes:
            done = outcome.summary
            for name in ("lines", "blank", "records", "scored", "line_errors"):
                setattr(summary, name, getattr(summary, name) + getattr(done, name))
            summary.answer_failures += done.answer_failures
            summary.not_scored += done.not_scored
            for mine, theirs in (
                (summary.recall, done.recall),
                (summary.precision, done.precision),
            ):
                # Partials sum exactly: the same mean, in any order of parts.
                for partial in theirs.partials:
                    mine.add(partial)
                mine.count += theirs.count - len(theirs.partials)
            for name, seconds in outcome.timings.items():
                self.timings[name] += seconds

    def _sum_metrics(self, locations: list[Path]) -> None:
        summary = self.summary
        scorer = TASKS[self.task].make_scorer()
        template = RunResults(scorer, registry_unqualified_name(scorer), self.log_dir)
        template.close()
        runs = []
        for scores in (part for outcome in self.outcomes for part in outcome.scores):
            runs.append(copy.copy(template))
            runs[-1].scores = scores
        summary.metrics = metrics_of(pooled_results(runs, summary.records))
        summary.logs = [str(location) for location in locations]
        summary.results = self.results_path
        summary.seconds = perf_counter() - self.begun

    def discard(self) -> None:
        """No records: nothing to write, and nothing left behind."""
        self.abort()
        self.summary.seconds = perf_counter() - self.begun

    def abort(self) -> list[str]:
        """Kill the workers, then remove whatever the run began; the paths
        of anything that could not be removed. Never raises."""
        if self.inner is not None:
            self.inner.abort()
        if self.pool is not None:
            # Killed, a stopped worker too (on Windows kill() terminates).
            children = active_children()
            for process in children:
                process.kill()
            self.pool.shutdown(wait=False, cancel_futures=True)
            for process in children:
                process.join(_JOIN)
        left = [] if self.results is None else [self.results.discard()]
        if self.identity is not None:
            base = self.identity.base
            for path in glob.glob(glob.escape(str(base)) + "-*"):
                if path.endswith((PARTIAL_SUFFIX, ".results")):
                    left.append(_removed(path))
        left.extend(_removed(path) for path in self.published)
        return [path for path in left if path is not None]


def _removed(path: str) -> str | None:
    """None once `path` is gone, else `path`."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        return path
    return None


def score_run(*args: Any, workers: int | None, **options: Any) -> WorkersRun:
    """A run in workers for a large regular file, else in this process;
    `workers` None for the usable cores, from `PARALLEL_FROM` bytes."""
    path, max_samples_per_log = args[1], args[5]
    smallest = PARALLEL_FROM if workers is None else PARALLEL_FROM // 16
    workers = workers or default_workers()
    try:
        status = os.stat(path)
        large = stat.S_ISREG(status.st_mode) and status.st_size >= smallest
    except OSError:
        large = False  # reading it says what is wrong
    ranges = None
    if workers > 1 and path != "-" and large:
        ranges = plan_ranges(path, workers, max_samples_per_log)
    return WorkersRun(
        *args,
        ranges=ranges if ranges and len(ranges) > 1 else None,
        workers=workers,
        **options,
    )

"""`tracegrade score`: the whole input scored in this process, or, on every
core, cut into ranges of lines, each scored into its own part logs by a
spawned worker (`score_part`); `WorkersRun` puts them together in input
order and is the one place outputs get their final names."""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import shutil
import signal
import stat
import sys
import types
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
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
from .results import RunResults, pooled_results
from .run import (
    RangeJob,
    RangeOutcome,
    ScoreRun,
    log_location,
    metrics_of,
    new_identity,
)
from .scoring import TASKS, DiskIds, ScoreSummary

# Input bytes from which workers score by default (a sixteenth of it with
# --workers): a worker's start costs seconds (docs/speed.md).
PARALLEL_FROM: Final = 16 << 20
_WAIT: Final = 0.5  # seconds between looks at whether a worker died
_JOIN: Final = 5.0  # seconds a killed or idle worker is given to end


def default_workers() -> int:
    return getattr(os, "process_cpu_count", os.cpu_count)() or 1


def score_part(part: Any, task: str = "stage_diagnosis", **keys: str) -> Any:
    """Score one part of a run: a worker's range of lines (a `RangeJob`,
    into its part logs and results), or an Arrow batch for Ray or Spark
    (`score_table`, docs/beyond-one-machine.md)."""
    if not isinstance(part, RangeJob):
        return score_table(part, task, **keys)
    # Read by the run's `finish`; removed, with anything else, by its `abort`.
    chunk = f"{part.identity.base}-lines{part.index}.results"
    if part.results_format == "parquet":
        stream: IO[Any] = open(chunk, "wb")  # noqa: SIM115
    else:
        stream = open(chunk, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
    with stream:
        run = ScoreRun(part, stream)
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
    return run.outcome()


def _ignore_signals() -> None:
    # The terminal's signals are the main process's.
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGBREAK"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)


def _result(future: Future[RangeOutcome]) -> RangeOutcome:
    """Looking every `_WAIT` s, so that a signal gets in."""
    while True:
        with contextlib.suppress(TimeoutError):
            try:
                return future.result(timeout=_WAIT)
            except BrokenProcessPool:
                raise OutputError(
                    "a scoring worker process ended without a word "
                    "(killed, or out of memory)"
                ) from None


class WorkersRun:
    """A `score` run of ranges (`ranges` None: the whole input in this
    process, as one range), put together; its outputs get their final
    names only once all are complete, and `abort` removes them."""

    def __init__(
        self,
        job: RangeJob,
        out: str | None,
        *,
        replace: bool,
        ranges: list[LineRange] | None,
        workers: int,
    ) -> None:
        self.begun = perf_counter()
        self.job, self.replace = job, replace
        self.ranges, self.workers = ranges, workers
        self.task, self.path = job.task, job.path
        base = job.identity.base
        self.results_path = out or f"{base}.results.{job.results_format}"
        self.summary = ScoreSummary(task=job.task, path=job.path)
        self.timings: defaultdict[str, float] = defaultdict(float)
        self.results: AtomicFile | None = None
        self.stream: IO[Any] = sys.stdout
        self.pool: ProcessPoolExecutor | None = None
        self.inner: ScoreRun | None = None
        self.outcomes: list[RangeOutcome] = []
        self.published: list[str] = []
        self.last_line = 0
        self.finishing = False

    def open(self) -> None:
        """The run's temporary results file, and the workers."""
        if self.results_path != "-":
            try:
                self.results = AtomicFile(
                    self.results_path,
                    binary=self.job.results_format == "parquet",
                    replace=self.replace,
                )
            except OSError as error:
                raise OutputError(
                    f"cannot write the results {self.results_path!r} ({error.strerror})"
                ) from None
            self.stream = self.results.handle
        if self.ranges is not None:
            self.pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=get_context("spawn"),
                initializer=_ignore_signals,
            )

    def score_lines(self, advance: Callable[[int | None], None]) -> None:
        """Score every range, again those whose guessed context was wrong."""
        if self.ranges is None:
            self.inner = ScoreRun(self.job, self.stream)
            self.inner.open()
            # One range: its counts are the run's.
            self.summary, self.timings = self.inner.summary, self.inner.timings
            try:
                self.inner.score_lines(advance)
            finally:
                self.last_line = self.summary.lines
            self.outcomes = [self.inner.outcome()]
            return
        count = len(self.ranges)
        jobs = [
            dataclasses.replace(
                self.job, lines=lines, index=k, first_index=k, count=count
            )
            for k, lines in enumerate(self.ranges, start=1)
        ]
        futures = [self._submit(job) for job in jobs]
        for job, future in zip(jobs, futures, strict=True):
            self.outcomes.append(_result(future))
            assert job.lines is not None
            self.last_line = job.lines.first_line + job.lines.lines - 1
            advance(job.lines.end)
        earlier = self._earlier()
        for _ in range(4):
            settled = self._settled(jobs, earlier)
            redo = [k for k, job in enumerate(jobs) if job != settled[k]]
            if not redo:
                self._sum_counts()
                return
            for k in redo:
                outcome = self.outcomes[k].summary
                for path in [*outcome.logs, outcome.results]:
                    if path is not None:
                        Path(path).unlink(missing_ok=True)
            jobs = settled
            futures = [self._submit(jobs[k]) for k in redo]
            for k, future in zip(redo, futures, strict=True):
                self.outcomes[k] = _result(future)
        raise RuntimeError("the ranges' logs did not settle")  # a bug

    def _submit(self, job: RangeJob) -> Future[RangeOutcome]:
        assert self.pool is not None
        # Spawn would have each worker import the caller's script again.
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            return self.pool.submit(score_part, job)
        finally:
            sys.modules["__main__"] = main

    def _earlier(self) -> list[dict[int, int]]:
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

    def _settled(
        self, jobs: list[RangeJob], earlier: list[dict[int, int]]
    ) -> list[RangeJob]:
        presence = FieldPresence(READ_FIELDS[self.task])
        for outcome in self.outcomes:
            presence.found |= outcome.presence.found
            for key in outcome.presence.keys:
                presence.add_key(key)
            presence.more_keys |= outcome.presence.more_keys
        self.summary.warnings = presence.warnings(self.path)
        warnings = tuple(warning["message"] for warning in self.summary.warnings)
        taken = frozenset().union(*(o.line_like_ids for o in self.outcomes))
        total = sum(len(outcome.summary.logs) for outcome in self.outcomes)
        settled = []
        first_index = 1
        for job, outcome, repeats in zip(jobs, self.outcomes, earlier, strict=True):
            unreadable = outcome.summary.line_errors
            settled.append(
                dataclasses.replace(
                    job,
                    first_index=first_index,
                    count=total,
                    warnings=warnings,
                    taken=taken if unreadable or repeats else frozenset(),
                    earlier=repeats,
                )
            )
            first_index += len(outcome.summary.logs)
        return settled

    def finish(self) -> None:
        """Join the results in input order, name the logs, pool the metrics."""
        self.finishing = True
        if self.inner is None:
            self._gather_results()
        else:
            self.inner.finish()
        if self.results is not None:
            self.results.flush_to_disk()
        logs = [log for outcome in self.outcomes for log in outcome.summary.logs]
        base, log_format = self.job.identity.base, self.job.log_format
        locations = [
            str(log_location(base, index, len(logs), log_format))
            for index in range(1, len(logs) + 1)
        ]
        for partial, location in zip(logs, locations, strict=True):
            self.published.append(location)
            publish_output(partial, location, replace=False)
        sync_directory(self.job.log_dir)
        if self.results is not None:
            self.results.commit()
        scorer = TASKS[self.task].make_scorer()
        pooled = RunResults(scorer, registry_unqualified_name(scorer), self.job.log_dir)
        pooled.close()
        scores = [part for outcome in self.outcomes for part in outcome.scores]
        results = pooled_results([pooled], self.summary.records, scores=scores)
        self.summary.metrics = metrics_of(results)
        self.summary.logs = locations
        self.summary.results = self.results_path
        self.summary.seconds = perf_counter() - self.begun
        if self.pool is not None:
            self.pool.shutdown()

    def _gather_results(self) -> None:
        chunks = [o.summary.results for o in self.outcomes if o.summary.results]
        if self.job.results_format == "parquet":
            import pyarrow.parquet as pq

            assert self.results is not None
            first = pq.ParquetFile(chunks[0])
            with pq.ParquetWriter(self.results.handle, first.schema_arrow) as writer:
                for chunk in chunks:
                    for batch in pq.ParquetFile(chunk).iter_batches():
                        writer.write_batch(batch)
        else:
            handle: Any = self.stream
            handle.flush()
            for chunk in chunks:
                with open(chunk, "rb") as part:
                    shutil.copyfileobj(part, handle.buffer)
            handle.flush()
        for chunk in chunks:
            Path(chunk).unlink()

    def _sum_counts(self) -> None:
        summary = ScoreSummary(self.task, self.path, warnings=self.summary.warnings)
        self.summary = summary
        self.timings.clear()
        for outcome in self.outcomes:
            done = outcome.summary
            for name in ("lines", "blank", "records", "scored", "line_errors"):
                setattr(summary, name, getattr(summary, name) + getattr(done, name))
            summary.answer_failures += done.answer_failures
            summary.not_scored += done.not_scored
            for name in ("recall", "precision"):
                mine, theirs = getattr(summary, name), getattr(done, name)
                # Partials sum exactly: the same mean, in any order of parts.
                for partial in theirs.partials:
                    mine.add(partial)
                mine.count += theirs.count - len(theirs.partials)
            for name, seconds in outcome.timings.items():
                self.timings[name] += seconds

    def discard(self) -> None:
        self.abort()  # no records: nothing to write, and nothing left behind
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
        begun = glob.glob(glob.escape(str(self.job.identity.base)) + "-*")
        for path in [*begun, *self.published]:
            if path in self.published or path.endswith((PARTIAL_SUFFIX, ".results")):
                try:
                    Path(path).unlink(missing_ok=True)
                except OSError:
                    left.append(path)
        return [path for path in left if path is not None]


def score_run(*args: Any, workers: int | None, **options: Any) -> WorkersRun:
    """A run in workers for a large regular file, else in this process;
    `workers` None for the usable cores, from `PARALLEL_FROM` bytes."""
    task, path, log_dir, out, log_format, max_samples_per_log = args
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
    identity = new_identity(Path(log_dir), registry_info(TASKS[task].task).name)
    job = RangeJob(
        *(task, path, log_dir, log_format, max_samples_per_log),
        *(options.pop("results_format"), None, 1, identity),
    )
    return WorkersRun(
        job,
        out,
        ranges=ranges if ranges and len(ranges) > 1 else None,
        workers=workers,
        **options,
    )

"""A real Inspect eval log for samples scored outside Inspect's runner."""

from __future__ import annotations

import contextlib
import functools
import json
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from time import perf_counter
from typing import IO, Any

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalPlan,
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
from ..datasets import FixtureCase, case_sample_fields
from ..scorers.outcome import ErrorInfo, data_error
from ..tasks.replay import replay, replayed_output
from .evallog import EvalArchive, JsonLogWriter, sample_json, sample_summary
from .results import LightScores, RunResults, pooled_results
from .samples import MODEL, SampleParts, SampleTemplates, uuid
from .scoring import BulkTask, Problem, Timings, replayed_store

UNREADABLE_INPUT_LIMIT = 2000
UNREADABLE_ID_PREFIX = "line-"


LogWriter = EvalArchive | JsonLogWriter


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


# The most samples `inspect view` lists in its target time (docs/speed.md).
MAX_SAMPLES_PER_LOG = 75_000
# The viewer lists no sample of a `.json` log over 100 MiB; a margin for the header.
MAX_JSON_LOG_BYTES = 90 * 1024 * 1024
_UNREADABLE_OVERHEAD = 2048


@dataclass
class _Part:
    """One log of a run, while it is written."""

    index: int
    eval_id: str
    task_id: str
    writer: LogWriter
    results: RunResults
    unreadable: IO[bytes] | None = None
    unreadable_count: int = 0
    samples: int = 0
    waiting_bytes: int = 0
    sample_bytes: int = 0
    published: Path | None = None

    def close(self) -> None:
        self.results.close()
        if self.unreadable is not None:
            with contextlib.suppress(OSError):
                self.unreadable.close()


@dataclass(frozen=True)
class WrittenRun:
    """What `BulkLog.finish` wrote."""

    logs: list[Path]
    results: EvalResults | None
    scores: list[LightScores]


@dataclass(frozen=True)
class RunIdentity:
    """What every log of one run shares, wherever each is written."""

    run_id: str
    created: str
    base: Path


@dataclass
class PartsContext:
    """What one range's logs say of the whole run (`bulk.workers`): known
    only once every range is read, so guessed first and checked after."""

    first_index: int = 1
    count: int | None = None
    warnings: list[str] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)
    earlier: dict[int, int] = field(default_factory=dict)


@dataclass
class BulkLog:
    """Collects scored samples into Inspect eval logs: one, or parts of
    at most `max_samples` samples (and, for `.json`, `MAX_JSON_LOG_BYTES`) that
    `inspect view` can list."""

    task: BulkTask
    dataset_path: str
    log_dir: Path
    log_format: str = "eval"
    max_samples: int = MAX_SAMPLES_PER_LOG
    timings: Timings = field(default_factory=Timings)
    warnings: list[str] = field(default_factory=list)
    identity: RunIdentity | None = None
    context: PartsContext = field(default_factory=PartsContext)

    def __post_init__(self) -> None:
        self.scorer = self.task.make_scorer()
        self.scorer_name = registry_unqualified_name(self.scorer)
        self.task_name = registry_info(self.task.task).name
        first_task_id = uuid()
        if self.identity is None:
            self.identity = new_identity(self.log_dir, self.task_name, first_task_id)
        self.created = self.started_at = self.identity.created
        self.run_id = self.identity.run_id
        self.base = self.identity.base
        self._templates = SampleTemplates.make()
        self._parts: list[_Part] = []
        self.line_like_ids: set[str] = set()
        try:
            self._new_part(first_task_id)
        except BaseException:
            self.abort()
            raise

    def _new_part(self, task_id: str | None = None) -> _Part:
        if self._parts:
            self._parts[-1].writer.suspend()
        index = self.context.first_index + len(self._parts)
        eval_id = uuid()
        task_id = task_id or uuid()
        results = RunResults(self.scorer, self.scorer_name, str(self.log_dir))
        writer: LogWriter
        try:
            working = self.base.with_name(
                f"{self.base.name}-part{index}.{self.log_format}"
            )
            if self.log_format == "json":
                writer = JsonLogWriter(working)
            else:
                spec = self._spec(eval_id, task_id, sample_ids=None, part=None)
                writer = EvalArchive(working)
                try:
                    writer.start(spec, self._plan())
                except BaseException:
                    writer.abort()
                    raise
        except BaseException:
            results.close()
            raise
        part = _Part(index, eval_id, task_id, writer, results)
        self._parts.append(part)
        return part

    def _current_part(self) -> _Part:
        part = self._parts[-1]
        # The unreadable lines' samples, written at the end, count already.
        spooled = part.sample_bytes + part.results.spooled + part.waiting_bytes
        full = part.samples + part.unreadable_count >= self.max_samples or (
            self.log_format == "json" and spooled >= MAX_JSON_LOG_BYTES
        )
        return self._new_part() if full else part

    # -- adding samples ------------------------------------------------------

    def add_sample(
        self, case: FixtureCase, score: Score, started_at: str, elapsed: float
    ) -> None:
        """Log one case with its score, as `inspect eval` would have."""
        begun = perf_counter()
        part = self._current_part()
        sample = case_sample_fields(case, target_field=self.task.target_field)
        if case.id.startswith(UNREADABLE_ID_PREFIX):
            self.line_like_ids.add(case.id)
        parts = SampleParts(
            id=case.id,
            input=sample.input,
            target=sample.target,
            metadata=sample.metadata,
            answer=replayed_output(case.input),
            scores={self.scorer_name: score},
            store=replayed_store(case.input),
            started_at=started_at,
            completed_at=_now(),
            seconds=elapsed,
        )
        self._add(part, parts, score, begun)

    def _add(self, part: _Part, parts: SampleParts, score: Score, begun: float) -> None:
        part.results.add(parts.id, score)
        serialising = perf_counter()
        self.timings.sample += serialising - begun
        data = self._templates.build(parts)
        sample = sample_json(data)
        if isinstance(part.writer, EvalArchive):
            part.writer.add_sample(sample, sample_summary(data))
        else:
            part.writer.add(parts.id, sample)
        part.sample_bytes += len(sample)
        part.samples += 1
        self.timings.serialize += perf_counter() - serialising

    def add_unreadable(self, line: int, text: str, problem: Problem) -> None:
        """Log a line that cannot become a sample, as an unscored sample."""
        shown = text[: UNREADABLE_INPUT_LIMIT + 1]
        shown = shown.encode("utf-8", "surrogateescape").decode(
            "utf-8", "backslashreplace"
        )
        if len(text) > UNREADABLE_INPUT_LIMIT:
            shown = shown[:UNREADABLE_INPUT_LIMIT] + "..."
        part = self._current_part()
        if part.unreadable is None:
            part.unreadable = tempfile.TemporaryFile(dir=self.log_dir)  # noqa: SIM115
        # Built at the end, once every real id is known, so that its
        # `line-N` id collides with none; spooled, not held, till then.
        # ensure_ascii: a lone surrogate is escaped, and read back as is.
        record = [line, shown, part.samples, problem.as_json()]
        part.unreadable.write(json.dumps(record).encode("ascii") + b"\n")
        part.unreadable_count += 1
        # Summed as they come: `spooled` is read before every sample.
        part.waiting_bytes += 2 * len(shown) + _UNREADABLE_OVERHEAD

    def _unreadable_samples(
        self, part: _Part, taken: set[str]
    ) -> list[tuple[int, str]]:
        """Write the part's unreadable lines as samples; where each stands
        (how many samples came before it) and the id it was given."""
        placed: list[tuple[int, str]] = []
        if part.unreadable is None:
            return placed
        part.unreadable.seek(0)
        for row in part.unreadable:
            begun = perf_counter()
            line, text, position, error = json.loads(row)
            # `line-N`, unless a real sample already has that id.
            sample_id, suffix = f"{UNREADABLE_ID_PREFIX}{line}", 2
            while sample_id in taken:
                sample_id, suffix = f"line-{line}~{suffix}", suffix + 1
            taken.add(sample_id)
            placed.append((position, sample_id))
            problem = Problem(**error)
            score = data_error(
                ErrorInfo(
                    kind=problem.kind,
                    side="data",
                    field=problem.field,
                    message=problem.message,
                ),
                answer="",
                explanation=unreadable_explanation(line, problem),
                result=None,
                record={},
                read_from=self.task.read_from,
            )
            now = _now()
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
            self._add(part, parts, score, begun)
        return placed

    # -- finishing -----------------------------------------------------------

    def finish(self, *, publish: bool = True) -> WrittenRun:
        """Complete every log, then publish them all under their names
        (or leave that to the caller, who has the run's other ranges)."""
        parts = self._parts
        count = self.context.count or len(parts)
        # The only real ids an unreadable line's `line-N` can meet.
        taken = self.line_like_ids | self.context.taken
        first_results: EvalResults | None = None
        for part in parts:
            if part is not parts[-1]:
                part.writer.resume()  # every part but the last was suspended
            placed = self._unreadable_samples(part, taken)
            begun = perf_counter()
            results, reductions = part.results.results(part.samples)
            self.timings.results += perf_counter() - begun
            begun = perf_counter()
            header = EvalLog(
                version=2,
                status="success",
                eval=self._spec(
                    part.eval_id,
                    part.task_id,
                    sample_ids=self._sample_ids(part, placed),
                    part=(part.index, count) if count > 1 else None,
                ),
                plan=self._plan(),
                results=results,
                stats=EvalStats(started_at=self.started_at, completed_at=iso_now()),
            )
            if reductions is None and isinstance(part.writer, EvalArchive):
                part.writer.complete(header, [])
            else:
                part.writer.complete(header, reductions)
            part.close()
            # Not the header: its sample ids would keep a string per sample
            # alive through the pooled metrics, the run's peak of memory.
            first_results = first_results or results
            self.timings.write += perf_counter() - begun
        scores = [part.results.scores for part in parts]
        if not publish:
            return WrittenRun([part.writer.partial for part in parts], None, scores)
        begun = perf_counter()
        total = sum(part.samples for part in parts)
        pooled = (
            first_results
            if len(parts) == 1
            else pooled_results([part.results for part in parts], total)
        )
        assert pooled is not None
        self.timings.results += perf_counter() - begun
        locations = [
            log_location(self.base, part.index, count, self.log_format)
            for part in parts
        ]
        for part, location in zip(parts, locations, strict=True):
            part.writer.publish(location)
            part.published = location
        return WrittenRun(logs=locations, results=pooled, scores=scores)

    def _plan(self) -> EvalPlan:
        # `internal=True` is how Inspect itself wraps a task's solver.
        plan: EvalPlan = plan_to_eval_plan(
            Plan([replay()], internal=True), GenerateConfig()
        )
        return plan

    @staticmethod
    def _sample_ids(part: _Part, placed: list[tuple[int, str]]) -> list[int | str]:
        """The part's sample ids in file order: each unreadable line's
        sample (`placed`, its position and id) where its line stood."""
        read = part.results.scores.sample_ids
        read = read[: len(read) - len(placed)]
        sample_ids: list[int | str] = []
        start = 0
        for position, sample_id in placed:
            sample_ids.extend(read[start:position])
            sample_ids.append(sample_id)
            start = position
        sample_ids.extend(read[start:])
        return sample_ids

    def _spec(
        self,
        eval_id: str,
        task_id: str,
        *,
        sample_ids: list[int | str] | None,
        part: tuple[int, int] | None,
    ) -> EvalSpec:
        packages, revision = _packages_and_revision(self.task_name)
        return EvalSpec(
            eval_id=eval_id,
            run_id=self.run_id,
            created=self.created,
            task=self.task_name,
            task_id=task_id,
            task_version=0,
            task_display_name=registry_unqualified_name(self.task.task),
            task_registry_name=self.task_name,
            task_attribs={},
            task_args={"dataset": self.dataset_path},
            task_args_passed={"dataset": self.dataset_path},
            dataset=EvalDataset(
                name=self.task.name,
                location=cwd_relative_path(self.dataset_path),
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
            scorers=resolve_eval_scorers([as_scorer_spec(self.scorer)]),
            metadata=self._metadata(part),
        )

    def _metadata(self, part: tuple[int, int] | None) -> dict[str, Any] | None:
        metadata: dict[str, Any] = {}
        if part is not None:
            metadata["tracegrade_part"] = {"index": part[0], "count": part[1]}
        if self.warnings:
            metadata["tracegrade_warnings"] = list(self.warnings)
        return metadata or None

    def abort(self) -> str | None:
        """Remove everything written after a failure; never raises."""
        left: list[str] = []
        for part in self._parts:
            part.close()
            try:
                part.writer.abort()
            except OSError:
                left.append(str(part.writer.partial))
            if part.published is not None:
                try:
                    part.published.unlink(missing_ok=True)
                except OSError:
                    left.append(str(part.published))
        return ", ".join(left) or None


@functools.cache
def _packages_and_revision(task_name: str) -> tuple[dict[str, str], Any]:
    """What every spec of a run says of its packages: cached, as finding the
    task's distribution reads every installed package's metadata (0.3 s)."""
    distribution = resolve_task_distribution(task_name)
    packages = {"inspect_ai": version("inspect_ai")}
    if distribution is not None:
        packages[distribution.name] = distribution.version
    return packages, resolve_package_revision(distribution) or resolve_revision()


def new_identity(log_dir: Path, task_name: str, task_id: str) -> RunIdentity:
    """A new run's id, time, and the logs' name (that of its first log's task)."""
    created = iso_now()
    name = eval_log_name(task=task_name, task_id=task_id, created=created, model=MODEL)
    return RunIdentity(run_id=uuid(), created=created, base=log_dir / name)


def log_location(base: Path, index: int, count: int, log_format: str) -> Path:
    """Where log `index` of `count` goes: `NAME.eval`, or `NAME-part02of14.eval`."""
    if count == 1:
        return base.with_name(f"{base.name}.{log_format}")
    width = len(str(count))
    return base.with_name(f"{base.name}-part{index:0{width}d}of{count}.{log_format}")


def unreadable_explanation(line: int, problem: Problem) -> str:
    """Why a line that cannot become a sample is not graded."""
    if problem.kind == "duplicate-sample-id":
        return (
            f"Line {line} cannot be a sample of its own: {problem.message}. "
            "It is not graded."
        )
    return f"Line {line} cannot become a sample: {problem.message}. It is not graded."

"""A real Inspect eval log for samples scored outside Inspect's runner.

`tracegrade score` must write a log that `read_eval_log`, `inspect view`,
`inspect score` and `inspect_ai.analysis` open like one from `inspect
eval` of the same file. So every part of it is made by Inspect's own code
wherever Inspect has a function for it: the header by `EvalSpec`,
`plan_to_eval_plan` and `resolve_eval_scorers`; the results and epoch
reductions by `eval_results`, the very function `inspect eval` calls with
the scorer's own metrics; every value serialised by `to_json_safe`, the
function behind Inspect's `.json` writer; the file named by
`eval_log_name`; the samples sorted by Inspect's `(epoch, id)` order.

What differs is how it is put together, because `inspect eval` keeps the
whole log in memory: each sample is serialised as soon as it is scored,
into a spool file beside the log, and only its `SampleScore` stays in
memory, since the metrics and reducers take every score at once. At the
end the header (which needs the results) is written first, then the
samples, copied from the spool in Inspect's order, then the reductions.
The layout is Inspect's `.json` format, key for key; samples are written
one per line without indentation, which JSON readers do not see.

Why `.json` rather than `.eval`: Inspect's `.eval` writer compresses and
summarises every sample through its recorder, which costs seconds per
thousand samples (`benchmarks/bulk_scoring.py` measures both), while a
`.json` log is plain JSON that can be streamed sample by sample.

Samples are built from templates that Inspect's models produce once
(a user message, a replayed output, an empty `EvalSample`), with only the
per-sample values filled in; validating a pydantic model per sample would
cost more than everything else together. The tests prove the result
round-trips through `EvalLog` validation unchanged.

Like `_inspect_glue`, this module reaches past Inspect's public API
(`inspect_ai._eval.task.results`, `._eval.task.log`, `._util.json`); if a
release moves those, this is the module to update.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter
from typing import Any, BinaryIO

from inspect_ai._eval.task import results as _results_module
from inspect_ai._eval.task.log import (
    plan_to_eval_plan,
    resolve_eval_scorers,
    resolve_package_revision,
    resolve_revision,
    resolve_task_distribution,
)
from inspect_ai._eval.task.results import eval_results
from inspect_ai._util.dateutil import iso_now
from inspect_ai._util.json import to_json_safe
from inspect_ai._util.log_layout import eval_log_name
from inspect_ai._util.path import cwd_relative_path
from inspect_ai._util.registry import registry_info, registry_unqualified_name
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalSample,
    EvalSpec,
    EvalStats,
)
from inspect_ai.log._log import EvalSampleReductions, eval_config_defaults
from inspect_ai.model import ChatMessageUser, GenerateConfig, ModelOutput
from inspect_ai.scorer import SampleScore, Score
from inspect_ai.scorer._scorer import as_scorer_spec
from inspect_ai.solver._plan import Plan
from shortuuid import uuid

from .bulk import BulkTask, Problem, Timings, replayed_answer, replayed_store
from .datasets import FixtureCase, case_sample
from .scorers.outcome import ErrorInfo, data_error
from .tasks.replay import REPLAY_MODEL, replay

MODEL = "none/none"
UNREADABLE_INPUT_LIMIT = 2000


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json", exclude_none=True)
    return dumped


@dataclass(frozen=True)
class _Templates:
    """Inspect's own serialised shapes, made once, filled in per sample."""

    sample: dict[str, Any]
    user_message: dict[str, Any]
    no_output: dict[str, Any]
    replay_output: dict[str, Any]
    replay_choice: dict[str, Any]
    replay_message: dict[str, Any]

    @classmethod
    def make(cls) -> _Templates:
        empty = EvalSample(
            id="",
            epoch=1,
            input="",
            target="",
            output=ModelOutput(model=MODEL),
            scores={},
            store={},
            started_at=iso_now(),
            completed_at=iso_now(),
            total_time=0.0,
            working_time=0.0,
            uuid="",
            error_retries=[],
            turn_count=0,
        )
        replayed = _dump(ModelOutput.from_content(model=REPLAY_MODEL, content=""))
        (choice,) = replayed["choices"]
        return cls(
            sample=_dump(empty),
            user_message=_dump(ChatMessageUser(content="", source="input")),
            no_output=_dump(ModelOutput(model=MODEL)),
            replay_output=replayed,
            replay_choice=choice,
            replay_message=choice["message"],
        )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass
class _Unreadable:
    """A line that cannot become a sample; its sample is built at the end,
    once every real sample id is known, so its own id cannot collide."""

    line: int
    text: str
    problem: Problem
    position: int


@dataclass
class BulkLog:
    """Collects scored samples into one Inspect `.json` eval log."""

    task: BulkTask
    dataset_path: str
    log_dir: Path
    timings: Timings = field(default_factory=Timings)

    def __post_init__(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.created = iso_now()
        self.started_at = self.created
        self.eval_id = uuid()
        self.run_id = uuid()
        self.task_id = uuid()
        self.scorer = self.task.make_scorer()
        self.scorer_name = registry_unqualified_name(self.scorer)
        self.task_name = registry_info(self.task.task).name
        self.location = self.log_dir / (
            eval_log_name(
                task=self.task_name,
                task_id=self.task_id,
                created=self.created,
                model=MODEL,
            )
            + ".json"
        )
        self._templates = _Templates.make()
        # Open across calls and closed by `finish` or `close`; unnamed, so it
        # disappears with the process whatever happens.
        self._spool: BinaryIO = tempfile.TemporaryFile(dir=self.log_dir)  # noqa: SIM115
        self._spooled = 0
        # (sort key, offset, length) of each sample in the spool.
        self._index: list[tuple[str, int, int]] = []
        self._sample_ids: list[str | None] = []
        self._scores: list[dict[str, SampleScore]] = []
        self._unreadable: list[_Unreadable] = []
        self._renamed = False

    # -- adding samples ------------------------------------------------------

    def add_sample(
        self, case: FixtureCase, score: Score, started_at: str, elapsed: float
    ) -> None:
        """Log one case with its score, as `inspect eval` would have."""
        begun = perf_counter()
        sample = case_sample(case, target_field=self.task.target_field)
        templates = self._templates
        input_text = sample.input
        assert isinstance(input_text, str)
        messages: list[dict[str, Any]] = [
            {**templates.user_message, "id": uuid(), "content": input_text}
        ]
        answer = replayed_answer(case.input)
        if answer is None:
            output = templates.no_output
        else:
            message = {**templates.replay_message, "id": uuid(), "content": answer}
            messages.append(message)
            output = {
                **templates.replay_output,
                "choices": [{**templates.replay_choice, "message": message}],
                "completion": answer,
            }
        metadata = sample.metadata or {}
        data = {
            **templates.sample,
            "id": case.id,
            "input": input_text,
            "target": sample.target,
            "messages": messages,
            "output": output,
            "scores": {self.scorer_name: score},
            "metadata": metadata,
            "store": replayed_store(case.input),
            "started_at": started_at,
            "completed_at": _now(),
            "total_time": round(elapsed, 3),
            "working_time": round(elapsed, 3),
            "uuid": uuid(),
        }
        self._scores.append(
            {
                self.scorer_name: SampleScore(
                    score=score,
                    sample_id=case.id,
                    sample_metadata=metadata,
                    scorer=self.scorer_name,
                )
            }
        )
        self._sample_ids.append(case.id)
        serialising = perf_counter()
        self.timings.sample += serialising - begun
        self._spool_sample(case.id, to_json_safe(data, indent=None))
        self.timings.serialize += perf_counter() - serialising

    def add_unreadable(self, line: int, text: str, problem: Problem) -> None:
        """Log a line that cannot become a sample, as an unscored sample.

        Its input is the line as read, cut after `UNREADABLE_INPUT_LIMIT`
        characters, undecodable bytes shown as `\\xNN`.
        """
        shown = text[: UNREADABLE_INPUT_LIMIT + 1]
        shown = shown.encode("utf-8", "surrogateescape").decode(
            "utf-8", "backslashreplace"
        )
        if len(text) > UNREADABLE_INPUT_LIMIT:
            shown = shown[:UNREADABLE_INPUT_LIMIT] + "..."
        self._unreadable.append(
            _Unreadable(line, shown, problem, position=len(self._sample_ids))
        )
        self._sample_ids.append(None)

    def _spool_sample(self, sample_id: str, data: bytes) -> None:
        self._spool.write(data)
        self._index.append((sample_id, self._spooled, len(data)))
        self._spooled += len(data)

    def _unreadable_samples(self) -> None:
        taken = {sample_id for sample_id in self._sample_ids if sample_id is not None}
        for unreadable in self._unreadable:
            sample_id = unreadable_sample_id(unreadable.line, taken)
            taken.add(sample_id)
            self._sample_ids[unreadable.position] = sample_id
            score = unreadable_score(unreadable.line, unreadable.problem, self.task)
            text = unreadable.text
            metadata = {"line": unreadable.line}
            now = _now()
            data = {
                **self._templates.sample,
                "id": sample_id,
                "input": text,
                "target": "",
                "messages": [
                    {**self._templates.user_message, "id": uuid(), "content": text}
                ],
                "output": self._templates.no_output,
                "scores": {self.scorer_name: score},
                "metadata": metadata,
                "store": {},
                "started_at": now,
                "completed_at": now,
                "uuid": uuid(),
            }
            self._scores.append(
                {
                    self.scorer_name: SampleScore(
                        score=score,
                        sample_id=sample_id,
                        sample_metadata=metadata,
                        scorer=self.scorer_name,
                    )
                }
            )
            self._spool_sample(sample_id, to_json_safe(data, indent=None))

    # -- finishing -----------------------------------------------------------

    def finish(self) -> EvalLog:
        """Compute the results and write the log; returns its header."""
        begun = perf_counter()
        self._unreadable_samples()
        self.timings.sample += perf_counter() - begun

        begun = perf_counter()
        total = len(self._scores)
        with _shallow_metric_copies():
            results, reductions = eval_results(
                samples=total,
                scores=self._scores,
                reducers=None,
                scorers=[self.scorer],
                metrics=None,
                scorer_names=[self.scorer_name],
                completed_samples=total,
            )
        self.timings.results += perf_counter() - begun

        begun = perf_counter()
        header = EvalLog(
            version=2,
            status="success",
            eval=self._spec(),
            # `internal=True` is how Inspect itself wraps a task's solver.
            plan=plan_to_eval_plan(Plan([replay()], internal=True), GenerateConfig()),
            results=results,
            stats=EvalStats(started_at=self.started_at, completed_at=iso_now()),
        )
        self._write(header, reductions)
        header.location = str(self.location)
        self.timings.write += perf_counter() - begun
        return header

    def _spec(self) -> EvalSpec:
        distribution = resolve_task_distribution(self.task_name)
        packages = {"inspect_ai": _version("inspect_ai")}
        if distribution is not None:
            packages[distribution.name] = distribution.version
        sample_ids: list[int | str] = [
            sample_id for sample_id in self._sample_ids if sample_id is not None
        ]
        return EvalSpec(
            eval_id=self.eval_id,
            run_id=self.run_id,
            created=self.created,
            task=self.task_name,
            task_id=self.task_id,
            task_version=0,
            task_display_name=registry_unqualified_name(self.task.task),
            task_registry_name=self.task_name,
            task_attribs={},
            task_args={"dataset": self.dataset_path},
            task_args_passed={"dataset": self.dataset_path},
            dataset=EvalDataset(
                name=self.task.dataset_name,
                location=cwd_relative_path(self.dataset_path),
                samples=len(sample_ids),
                sample_ids=sample_ids,
                shuffled=False,
            ),
            model=MODEL,
            model_generate_config=GenerateConfig(),
            model_args={},
            config=EvalConfig(**eval_config_defaults()),
            revision=resolve_package_revision(distribution) or resolve_revision(),
            packages=packages,
            scorers=resolve_eval_scorers([as_scorer_spec(self.scorer)]),
        )

    def _write(
        self, header: EvalLog, reductions: list[EvalSampleReductions] | None
    ) -> None:
        head = to_json_safe(header).rstrip()
        if not head.endswith(b"}"):
            raise RuntimeError("Inspect's log header did not serialise to an object")
        partial = self._partial_path()
        spool = self._spool
        spool.flush()
        try:
            with open(partial, "wb") as out:
                out.write(head[:-1].rstrip())
                out.write(b',\n  "samples": [')
                # Inspect's writer sorts samples by (epoch, id); one epoch here.
                self._index.sort(key=lambda entry: entry[0])
                separator = b"\n"
                for _, offset, length in self._index:
                    out.write(separator)
                    out.write(os.pread(spool.fileno(), length, offset))
                    separator = b",\n"
                out.write(b"\n  ]")
                if reductions:
                    out.write(b',\n  "reductions": [')
                    separator = b"\n"
                    for reduction in reductions:
                        out.write(separator)
                        _write_reduction(out, reduction)
                        separator = b",\n"
                    out.write(b"\n  ]")
                out.write(b"\n}\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(partial, self.location)
            self._renamed = True
        finally:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                spool.close()

    def close(self) -> None:
        """Drop the spool without writing a log (nothing to log)."""
        with contextlib.suppress(OSError):
            self._spool.close()

    def abort(self) -> str | None:
        """Drop everything written after a failure; never raises.

        A log already renamed into place is removed too: the run it belongs
        to did not finish (its results were never put in place), and a
        caller says nothing was written. Returns the path of anything that
        could not be removed, else None.
        """
        self.close()
        for path in (self._partial_path(), self.location):
            if path == self.location and not self._renamed:
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                return str(path)
        return None

    def _partial_path(self) -> Path:
        return self.location.with_name(self.location.name + ".partial")


def _write_reduction(out: BinaryIO, reduction: EvalSampleReductions) -> None:
    """One scorer's reductions, a sample a line: serialising the whole list
    at once would hold a second copy of every reduced score in memory."""
    head = to_json_safe(reduction.model_copy(update={"samples": []}), indent=None)
    if not head.endswith(b"[]}"):
        raise RuntimeError("Inspect's reductions did not serialise as expected")
    out.write(head[:-2])
    separator = b"\n"
    for sample_score in reduction.samples:
        out.write(separator)
        out.write(to_json_safe(sample_score, indent=None))
        separator = b",\n"
    out.write(b"\n]}")


def _copy_for_metric(value: Any) -> Any:
    if isinstance(value, SampleScore):
        return value.model_copy(update={"score": value.score.model_copy()})
    return copy.deepcopy(value)


@contextmanager
def _shallow_metric_copies() -> Iterator[None]:
    """Let `eval_results` copy scores shallowly, for dictionary metrics.

    To give each key of a dictionary value (`membership`, `order`) to its
    metrics, `eval_results` deep-copies every sample's score, metadata and
    all, then replaces the copy's value; for 100,000 extraction samples
    that is 15 of the 20 seconds it takes. Copying the `SampleScore` and its
    `Score` one level deep is enough for that (the copy's value is replaced,
    nothing else is written), and gives the metrics the very same values.
    """
    original = vars(_results_module)["deepcopy"]
    setattr(_results_module, "deepcopy", _copy_for_metric)  # noqa: B010
    try:
        yield
    finally:
        setattr(_results_module, "deepcopy", original)  # noqa: B010


def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


def unreadable_sample_id(line: int, taken: set[str]) -> str:
    """`line-N` for line N, unless a real sample already has that id."""
    candidate = f"line-{line}"
    suffix = 2
    while candidate in taken:
        candidate = f"line-{line}~{suffix}"
        suffix += 1
    return candidate


def unreadable_score(line: int, problem: Problem, task: BulkTask) -> Score:
    """An unscored score for a line that could not become a sample.

    The same shape as the scorers' data errors: `reason` is the kind,
    `metadata["error"]` says what is wrong, `result` is None and the record
    is empty, since nothing was read from the line.
    """
    return data_error(
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
        read_from=task.read_from,
    )


def unreadable_explanation(line: int, problem: Problem) -> str:
    """Why a line that cannot become a sample is not graded."""
    if problem.kind == "duplicate-sample-id":
        return (
            f"Line {line} cannot be a sample of its own: {problem.message}. "
            "It is not graded."
        )
    return f"Line {line} cannot become a sample: {problem.message}. It is not graded."


def score_value_json(score: Score) -> Any:
    """A score's value for JSON Lines output: NaN (unscored) becomes null."""
    value = score.value
    if isinstance(value, float) and math.isnan(value):
        return None
    return value

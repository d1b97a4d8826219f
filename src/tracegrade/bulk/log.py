"""A real Inspect eval log for samples scored outside Inspect's runner.

`tracegrade score` must write a log that `read_eval_log`, `inspect view`,
`inspect score` and `inspect_ai.analysis` open like one from `inspect
eval` of the same file. So every part of it is made by Inspect's own code
wherever Inspect has a function for it: the header by `EvalSpec`,
`plan_to_eval_plan` and `resolve_eval_scorers`; the metrics by
`compute_eval_scores` with the scorer's own metrics and the reductions by
the task's own reducer (`results.py`); every value serialised by
`to_json_safe`, the function behind Inspect's writers; the file named by
`eval_log_name`.

What differs is how it is put together, because `inspect eval` keeps the
whole log in memory: each sample is serialised as soon as it is scored
and handed to a writer (`jsonlog.JsonLogWriter`, for Inspect's `.json`
format); only a few small objects per sample
stay in memory for the metrics. At the end the results are computed and
the writer finishes the file, under a temporary `.partial` name until it
is complete.

Samples are built from templates that Inspect's models produce once (a
user message, a replayed output, an empty `EvalSample`), with only the
per-sample values filled in; validating a pydantic model per sample would
cost more than everything else together. The tests prove the result
round-trips through `EvalLog` validation unchanged.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter
from typing import Any, Protocol

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalPlan,
    EvalSample,
    EvalSampleReductions,
    EvalSpec,
    EvalStats,
)
from inspect_ai.model import ChatMessageUser, GenerateConfig, ModelOutput
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
    to_json_safe,
)
from ..datasets import FixtureCase, case_sample
from ..scorers.outcome import ErrorInfo, data_error
from ..tasks.replay import REPLAY_MODEL, replay
from .results import RunResults
from .scoring import BulkTask, Problem, Timings, replayed_answer, replayed_store

MODEL = "none/none"
UNREADABLE_INPUT_LIMIT = 2000


class LogWriter(Protocol):
    """Where a bulk log's parts go, in the order they are made."""

    location: Path

    def add(self, sample_id: str, sample: bytes, data: dict[str, Any]) -> None:
        """One sample, serialised, and as data for its summary if needed."""

    def finish(
        self,
        header: EvalLog,
        reductions: list[EvalSampleReductions],
        reduction_samples: RunResults,
    ) -> None:
        """Write what remains and publish the file under `location`."""

    def abort(self) -> str | None:
        """Remove everything written; the path of anything left, else None."""


# Shortuuid's alphabet and length, which Inspect's ids use. Drawn from a
# generator seeded by the OS: `shortuuid.uuid()` costs a quarter of the
# time of a bulk sample, and these ids need to be unique, not secret.
_ID_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_ids = random.Random(os.urandom(32))


def uuid() -> str:
    """A fresh 22-character id in Inspect's shortuuid form."""
    return "".join(_ids.choices(_ID_ALPHABET, k=22))


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
    """How many samples came before it in the file, to list it in place."""
    sample_id: str = ""


@dataclass
class BulkLog:
    """Collects scored samples into one Inspect eval log."""

    task: BulkTask
    dataset_path: str
    log_dir: Path
    timings: Timings = field(default_factory=Timings)

    def __post_init__(self) -> None:
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
        self._results = RunResults(self.scorer, self.scorer_name, str(self.log_dir))
        self._writer: LogWriter
        try:
            from .jsonlog import JsonLogWriter

            self._writer = JsonLogWriter(self.location)
        except BaseException:
            self._results.close()
            raise
        self._unreadable: list[_Unreadable] = []
        self._taken: set[str] | None = None
        self._samples = 0

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
        data = {
            **templates.sample,
            "id": case.id,
            "input": input_text,
            "target": sample.target,
            "messages": messages,
            "output": output,
            "scores": {self.scorer_name: score},
            "metadata": sample.metadata or {},
            "store": replayed_store(case.input),
            "started_at": started_at,
            "completed_at": _now(),
            "total_time": round(elapsed, 3),
            "working_time": round(elapsed, 3),
            "uuid": uuid(),
        }
        self._add(case.id, data, score, begun)

    def _add(
        self, sample_id: str, data: dict[str, Any], score: Score, begun: float
    ) -> None:
        self._results.add(sample_id, score)
        serialising = perf_counter()
        self.timings.sample += serialising - begun
        self._writer.add(sample_id, to_json_safe(data, indent=None), data)
        self._samples += 1
        self.timings.serialize += perf_counter() - serialising

    def add_unreadable(self, line: int, text: str, problem: Problem) -> None:
        """Log a line that cannot become a sample, as an unscored sample.

        Its input is the line as read, cut after `UNREADABLE_INPUT_LIMIT`
        characters, undecodable bytes shown as `\\xNN`. Its sample is
        written at the end, when its id (`line-N`) is sure not to clash.
        """
        shown = text[: UNREADABLE_INPUT_LIMIT + 1]
        shown = shown.encode("utf-8", "surrogateescape").decode(
            "utf-8", "backslashreplace"
        )
        if len(text) > UNREADABLE_INPUT_LIMIT:
            shown = shown[:UNREADABLE_INPUT_LIMIT] + "..."
        self._unreadable.append(
            _Unreadable(line, shown, problem, position=self._samples)
        )

    def _unreadable_samples(self) -> None:
        taken = {score.sample_id for score in self._results.scores}
        for unreadable in self._unreadable:
            begun = perf_counter()
            sample_id = unreadable_sample_id(unreadable.line, taken)
            unreadable.sample_id = sample_id
            taken.add(sample_id)
            score = unreadable_score(unreadable.line, unreadable.problem, self.task)
            text = unreadable.text
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
                "metadata": {"line": unreadable.line},
                "store": {},
                "started_at": now,
                "completed_at": now,
                "uuid": uuid(),
            }
            self._add(sample_id, data, score, begun)

    # -- finishing -----------------------------------------------------------

    def finish(self) -> EvalLog:
        """Compute the results and write the log; returns its header."""
        self._unreadable_samples()
        begun = perf_counter()
        total = self._samples
        results, reductions = self._results.results(total)
        self.timings.results += perf_counter() - begun

        begun = perf_counter()
        header = EvalLog(
            version=2,
            status="success",
            eval=self._spec(),
            plan=self._plan(),
            results=results,
            stats=EvalStats(started_at=self.started_at, completed_at=iso_now()),
        )
        try:
            self._writer.finish(header, reductions, self._results)
        finally:
            self._results.close()
        header.location = str(self.location)
        self.timings.write += perf_counter() - begun
        return header

    def _plan(self) -> EvalPlan:
        # `internal=True` is how Inspect itself wraps a task's solver.
        plan: EvalPlan = plan_to_eval_plan(
            Plan([replay()], internal=True), GenerateConfig()
        )
        return plan

    def _spec(self) -> EvalSpec:
        distribution = resolve_task_distribution(self.task_name)
        packages = {"inspect_ai": _version("inspect_ai")}
        if distribution is not None:
            packages[distribution.name] = distribution.version
        # In file order: each unreadable line's sample where its line stood.
        read = [score.sample_id for score in self._results.scores]
        read = read[: len(read) - len(self._unreadable)]
        sample_ids: list[int | str] = []
        start = 0
        for unreadable in self._unreadable:
            sample_ids.extend(read[start : unreadable.position])
            sample_ids.append(unreadable.sample_id)
            start = unreadable.position
        sample_ids.extend(read[start:])
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

    def close(self) -> None:
        """Drop everything without writing a log (nothing to log)."""
        self.abort()

    def abort(self) -> str | None:
        """Remove everything written after a failure; never raises.

        A log already renamed into place is removed too: the run it belongs
        to did not finish, and a caller says nothing was written. Returns
        the path of anything that could not be removed, else None.
        """
        self._results.close()
        left = self._writer.abort()
        with contextlib.suppress(FileNotFoundError):
            try:
                if self._published():
                    self.location.unlink()
            except OSError:
                return str(self.location)
        return left

    def _published(self) -> bool:
        return getattr(self._writer, "published", False) is True


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

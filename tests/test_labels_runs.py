"""Labels in real runs: `eval-retry` finishes a failed run with the labels
(or the grader); each log's `status` is checked."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from tests.commands import run_inspect
from tests.support import write_lines

pytestmark = pytest.mark.runs_long


TASK_FILE = '''\
import os
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import Generate, Solver, TaskState, solver

from tracegrade import stage_diagnosis_scorer
from tracegrade.tasks import replay

# id: (required, context, recorded answer); the target is "-18 degrees C."
RUNS = {
    "gap-right": (["D1", "D2"], ["D1"], "-18 degrees C."),
    "full-right": (["D1"], ["D1"], "-18 degrees C."),
    "full-wrong": (["D1"], ["D1", "D2"], "I do not know."),
    "gap-wrong": (["D2"], ["D1"], "I do not know."),
}


@solver
def flaky() -> Solver:
    """Fails the run named in FAIL_ONCE the first time only: a marker in
    FAIL_DIR remembers it failed."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        name = str(state.sample_id)
        marker = Path(os.environ["FAIL_DIR"]) / name
        if name == os.environ.get("FAIL_ONCE") and not marker.exists():
            marker.touch()
            raise RuntimeError(f"the retriever timed out on {name}")
        return state

    return solve


@task
def runs(labels: str | None = None, grader: bool = False) -> Task:
    return Task(
        dataset=[
            Sample(
                id=run_id,
                input="At what temperature is the frozen chamber kept?",
                target="-18 degrees C.",
                metadata={"required": required, "context": context, "answer": answer},
            )
            for run_id, (required, context, answer) in RUNS.items()
        ],
        solver=[flaky(), replay()],
        scorer=stage_diagnosis_scorer(
            labels=labels,
            label_scorer=match() if grader else None,
        ),
    )
'''

STAGES = {
    "gap-right": "retrieval",
    "full-right": "pass",
    "full-wrong": "generation",
    "gap-wrong": "retrieval",
}
# The staff's word, which is also match()'s verdict on these answers.
LABELS = {
    "gap-right": True,
    "full-right": True,
    "full-wrong": False,
    "gap-wrong": False,
}
SOURCES = {"labels": ["-T", "labels=labels.jsonl"], "grader": ["-T", "grader=true"]}


def set_up(directory: Path) -> Path:
    """`directory` with the task file, the labels file and no failure yet."""
    (directory / "runs.py").write_text(TASK_FILE)
    write_lines(
        directory / "labels.jsonl",
        [{"id": key, "correct": value} for key, value in LABELS.items()],
    )
    (directory / "failed").mkdir()
    return directory


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return set_up(tmp_path)


def inspect(
    work: Path, *args: str, fail_once: str = ""
) -> subprocess.CompletedProcess[str]:
    """`inspect ARGS` in `work`, in this interpreter, the runs named in
    `fail_once` failing the first time."""
    env = {"FAIL_ONCE": fail_once, "FAIL_DIR": str(work / "failed")}
    return run_inspect(*args, cwd=work, env=env)


def logs(directory: Path) -> list[EvalLog]:
    """Every log in `directory`, oldest first."""
    found = [read_eval_log(info.name) for info in list_eval_logs(str(directory))]
    return sorted(found, key=lambda log: log.eval.created)


def stage_values(log: EvalLog) -> dict[tuple[Any, int], Any]:
    assert log.samples is not None
    return {
        (s.id, s.epoch): (s.scores or {})["stage_diagnosis"].value
        for s in log.samples
        if s.error is None
    }


def shares(stages: list[str]) -> dict[str, float]:
    return {
        stage: stages.count(stage) / len(stages)
        for stage in ("retrieval", "generation", "pass", "unresolved")
    }


def assert_metrics(log: EvalLog, stages: list[str], *, lucky: int) -> None:
    """The stage shares over `stages`, one per scored run, and the count of
    runs labelled correct that missed required evidence."""
    assert log.results is not None
    (result,) = log.results.scores
    metrics = {name: metric.value for name, metric in result.metrics.items()}
    for stage, share in shares(stages).items():
        assert metrics[stage] == pytest.approx(share), stage
    assert metrics["lucky_answers"] == lucky


@pytest.mark.parametrize("source", ["labels", "grader"])
def test_eval_retry_finishes_the_run_with_metrics_over_every_sample(
    work: Path, source: str
) -> None:
    first = inspect(
        work,
        "eval",
        "runs.py",
        *SOURCES[source],
        "--log-dir",
        "logs",
        fail_once="full-right",
    )
    assert first.returncode in (0, 1), first.stderr
    (failed,) = logs(work / "logs")
    assert failed.status == "error"

    retried = inspect(work, "eval-retry", failed.location, "--log-dir", "logs")
    assert retried.returncode == 0, retried.stderr
    assert "Traceback" not in retried.stdout + retried.stderr
    log = logs(work / "logs")[-1]
    assert log.status == "success", log.error
    assert stage_values(log) == {(k, 1): v for k, v in STAGES.items()}
    assert log.results is not None
    assert log.results.completed_samples == 4
    assert_metrics(log, list(STAGES.values()), lucky=1)
    expected_source = (
        "labels file labels.jsonl" if source == "labels" else "scorer match"
    )
    assert log.samples is not None
    for sample in log.samples:
        metadata = (sample.scores or {})["stage_diagnosis"].metadata or {}
        assert metadata["read_from"]["correct"] == expected_source
        assert metadata["record"]["correct"] is LABELS[str(sample.id)]

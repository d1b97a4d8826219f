"""Labels in real runs: `eval-retry` finishes a failed run with the labels,
metrics over every sample; `report` and `compare` count the retried eval once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from tests.commands import run_inspect, run_tracegrade
from tests.support import write_lines

pytestmark = pytest.mark.runs_long

TASK_FILE = """\
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.solver import Generate, Solver, TaskState, solver

from tracegrade import stage_diagnosis_scorer
from tracegrade.tasks import replay

RUNS = {
    "gap-right": (["D1", "D2"], ["D1"]),
    "full-right": (["D1"], ["D1"]),
    "full-wrong": (["D1"], ["D1", "D2"]),
    "gap-wrong": (["D2"], ["D1"]),
}


@solver
def fail_once() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        marker = Path("failed-once")  # "full-right" fails the first time only
        if state.sample_id == "full-right" and not marker.exists():
            marker.touch()
            raise RuntimeError("the retriever timed out")
        return state

    return solve


@task
def runs(labels: str) -> Task:
    return Task(
        dataset=[
            Sample(id=key, input="?", metadata={"required": gold, "context": got})
            for key, (gold, got) in RUNS.items()
        ],
        solver=[fail_once(), replay()],
        scorer=stage_diagnosis_scorer(labels=labels),
    )
"""

# Each run's stage, and the staff's label.
EXPECTED = {
    "gap-right": ("retrieval", True),
    "full-right": ("pass", True),
    "full-wrong": ("generation", False),
    "gap-wrong": ("retrieval", False),
}
OPTIONS = ["-T", "labels=labels.jsonl"]


def test_eval_retry_finishes_the_run_with_metrics_over_every_sample(
    tmp_path: Path,
) -> None:
    (tmp_path / "runs.py").write_text(TASK_FILE)
    write_lines(
        tmp_path / "labels.jsonl",
        [{"id": key, "correct": label} for key, (_, label) in EXPECTED.items()],
    )
    first = run_inspect("eval", "runs.py", *OPTIONS, "--log-dir", "logs", cwd=tmp_path)
    assert first.returncode in (0, 1), first.stderr
    (failed,) = [read_eval_log(i.name) for i in list_eval_logs(str(tmp_path / "logs"))]
    assert failed.status == "error"

    retried = run_inspect(
        "eval-retry", failed.location, "--log-dir", "logs", cwd=tmp_path
    )
    assert retried.returncode == 0, retried.stderr
    assert "Traceback" not in retried.stdout + retried.stderr
    logs = [read_eval_log(i.name) for i in list_eval_logs(str(tmp_path / "logs"))]
    log = max(logs, key=lambda found: found.eval.created)
    assert log.status == "success", log.error
    assert log.results is not None and log.samples is not None
    assert log.results.completed_samples == 4
    scores = [(s.id, (s.scores or {})["stage_diagnosis"]) for s in log.samples]
    got = {key: (s.value, (s.metadata or {})["record"]["correct"]) for key, s in scores}
    assert got == EXPECTED
    read_from = {(s.metadata or {})["read_from"]["correct"] for _, s in scores}
    assert read_from == {"labels file labels.jsonl"}
    (result,) = log.results.scores
    metrics = {name: metric.value for name, metric in result.metrics.items()}
    stages = [stage for stage, _ in EXPECTED.values()]
    for stage in ("retrieval", "generation", "pass", "unresolved"):
        assert metrics[stage] == pytest.approx(stages.count(stage) / 4), stage
    assert metrics["lucky_answers"] == 1

    # The directory holds both logs of one eval: counted once, and it
    # compares with a clean run of the same task.
    reported = run_tracegrade("report", "logs", "--json", cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    read = json.loads(reported.stdout)
    assert [summary["runs"] for summary in read["stage_diagnosis"]] == [4]
    superseded = [s["path"] for s in read["superseded"]]
    assert superseded == [failed.location.removeprefix("file://")]
    text = run_tracegrade("report", "logs", cwd=tmp_path).stdout
    assert "1 eval in 2 logs (1 log superseded by its retry, not counted)" in text
    clean = run_inspect("eval", "runs.py", *OPTIONS, "--log-dir", "clean", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    compared = run_tracegrade("compare", "clean", "logs", "--json", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    (pair,) = json.loads(compared.stdout)["pairs"]
    assert pair["stage_diagnosis"][0]["pairs"] == 4
    assert "NEW: 1 log superseded by its retry, not counted" in compared.stderr

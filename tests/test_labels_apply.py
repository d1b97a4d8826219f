"""`tracegrade labels export` and `labels apply`, and staff labels through
`eval-retry`, `report` and `compare`."""

from __future__ import annotations

import builtins
import json
import math
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log, write_eval_log
from inspect_ai.scorer import CORRECT, PARTIAL, Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, TaskState, solver

from tests.commands import run_inspect, tracegrade_shell
from tests.commands import run_tracegrade as tracegrade
from tests.faults.conftest import one_clear_line, snapshot
from tests.support import OfflineLogs, write_lines
from tracegrade import outputs, stage_diagnosis_scorer
from tracegrade.cli.labels import lock_path
from tracegrade.label_logs import label_requests
from tracegrade.tasks import stage_diagnosis

RUNS = {
    "gap": {"required": ["D1", "D2"], "context": ["D1"]},
    "full": {"required": ["D1"], "context": ["D1"]},
    "other": {"required": ["D3"], "context": ["D3"]},
}


# One eval per log format and epoch count; each test labels its own copy.
EVALUATED: dict[tuple[str, int], Path] = {}


def run_log(tmp_path: Path, log_format: str = "eval", epochs: int = 1) -> Path:
    """A real `inspect eval` log of RUNS, unlabelled, alone in tmp_path/logs/."""
    if (log_format, epochs) not in EVALUATED:
        # The session's base directory, which pytest cleans as tmp_path's.
        shared = tmp_path.parent / f"labels-apply-{log_format}-{epochs}"
        shared.mkdir()
        dataset = write_lines(
            shared / "runs.jsonl",
            [{"id": key, "input": value} for key, value in RUNS.items()],
        )
        (log,) = eval(
            stage_diagnosis(dataset=dataset),
            display="none",
            log_dir=str(shared / "logs"),
            log_format=log_format,  # type: ignore[arg-type]
            epochs=epochs,
            log_realtime=False,
        )
        assert log.status == "success", log.error
        EVALUATED[log_format, epochs] = Path(log.location)
    source = EVALUATED[log_format, epochs]
    (tmp_path / "logs").mkdir()
    return Path(shutil.copy(source, tmp_path / "logs" / source.name))


def stages(log: EvalLog, name: str) -> dict[tuple[Any, int], Any]:
    assert log.samples is not None
    return {
        (s.id, s.epoch): (s.scores or {})[name].value
        for s in log.samples
        if name in (s.scores or {})
    }


def test_labels_join_by_epoch_and_out_writes_a_new_log_in_the_logs_format(
    tmp_path: Path,
) -> None:
    log = run_log(tmp_path, log_format="json", epochs=2)
    original = log.read_bytes()
    # The export names each epoch: each gets its own label.
    exported = [(x["id"], x["epoch"]) for x in label_requests(read_eval_log(str(log)))]
    assert sorted(exported) == [(i, e) for i in sorted(RUNS) for e in (1, 2)]
    labels = write_lines(
        tmp_path / "labels.jsonl",
        [
            {"id": "gap", "correct": True},
            {"id": "full", "epoch": 1, "correct": True},
            {"id": "full", "epoch": 2, "correct": False},
        ],
    )
    out = tmp_path / "labelled.json"
    done = tracegrade(
        *("labels", "apply", str(log), labels, "--out", str(out)),
        *("--action", "overwrite"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert log.read_bytes() == original
    assert (
        f"warning: 2 run(s) of {log} have no label in {labels} (first: sample "
        "'other' epoch 1); they are answer-label."
    ) in done.stderr
    assert (
        f"4 of 6 runs (3 samples, 2 epochs) labelled and diagnosed with the labels "
        f"in {labels} as stage_diagnosis; 2 have no label (answer-label); log "
        f"written to {out}"
    ) in done.stderr

    labelled = read_eval_log(str(out))
    assert labelled.status == "success" and labelled.results is not None
    new = stages(labelled, "stage_diagnosis")
    assert all(math.isnan(new.pop(("other", epoch))) for epoch in (1, 2))
    assert new == {
        ("full", 1): "pass",
        ("full", 2): "generation",
        ("gap", 1): "retrieval",
        ("gap", 2): "retrieval",
    }
    (overwritten,) = labelled.results.scores
    assert overwritten.metrics["retrieval"].value == pytest.approx(0.5)
    assert overwritten.metrics["lucky_answers"].value == 2
    assert not list(tmp_path.glob("*.partial"))


def test_a_refusal_is_one_line_and_leaves_every_file_as_it_was(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    log = run_log(tmp_path)
    labels = write_lines(
        tmp_path / "labels.jsonl",
        [
            {"id": "gap", "correct": True},
            {"id": "ful", "correct": False},
            {"id": 1, "correct": False},
            {"id": "full", "epoch": 2, "correct": False},
        ],
    )
    bogus = tmp_path / "not-a-log.eval"
    bogus.write_text("hello")
    before = snapshot(tmp_path)
    for args, said in [
        (
            ("apply", str(log), labels),
            f'Error: {labels}: 3 labels name no run of {log} (3 samples): "ful" '
            '(line 2), 1 (line 3), "full" epoch 2 (line 4). Ids match exactly, '
            'type included ("1" is not 1).',
        ),
        (("export", offline_logs.extraction), "no sample has a stage_diagnosis"),
        (("export", str(bogus)), f"cannot read {str(bogus)!r} as an Inspect log"),
    ]:
        done = tracegrade("labels", *args, cwd=tmp_path)
        assert done.returncode == 1
        assert said in one_clear_line(done.stderr)
    assert snapshot(tmp_path) == before


@scorer(metrics=[])
def unsure_judge() -> Scorer:
    """PARTIAL for run "spare", CORRECT otherwise, with a reason each."""

    async def judge(state: TaskState, target: Target) -> Score:
        unsure = state.sample_id == "spare"
        return Score(
            value=PARTIAL if unsure else CORRECT,
            explanation="half of it" if unsure else "all of it",
        )

    return judge


def test_the_labelled_score_reads_the_logs_keys_and_counts_every_run(
    tmp_path: Path,
) -> None:
    """Own keys, a grader, "gap" errored, "spare" unlabelled, "empty" needing no
    label: the export prefills, the apply reads the keys and counts each outcome."""

    @solver
    def fail_on_gap() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if state.sample_id == "gap":
                raise RuntimeError("retriever down")
            return state

        return solve

    runs = {key: (run["required"], run["context"]) for key, run in RUNS.items()}
    runs |= {"spare": (["D4"], ["D4"]), "empty": ([], [])}
    task = Task(
        dataset=[
            Sample(id=key, input="?", metadata={"gold_docs": gold, "retrieved": got})
            for key, (gold, got) in runs.items()
        ],
        solver=fail_on_gap(),
        scorer=[
            unsure_judge(),
            stage_diagnosis_scorer(
                required_key="gold_docs",
                context_key="retrieved",
                label_from="unsure_judge",
            ),
        ],
    )
    (first,) = eval(
        task,
        display="none",
        log_dir=str(tmp_path / "logs"),
        fail_on_error=0.5,
        log_realtime=False,
    )
    # The export prefills the grader's verdict (one that is no label is null);
    # the errored run is a line too, with nothing recorded.
    exported = {x["id"]: (x["context"], x["correct"]) for x in label_requests(first)}
    assert exported == {
        "gap": (None, None),
        "full": (["D1"], True),
        "other": (["D3"], True),
        "spare": (["D4"], None),
        "empty": ([], True),
    }
    graders = {x["id"]: x["grader"] for x in label_requests(first)}
    assert graders["spare"] == {"name": "unsure_judge", "explanation": "half of it"}
    assert graders["full"] == {"name": "unsure_judge", "explanation": "all of it"}
    labels = _all_labelled(tmp_path)
    done = tracegrade("labels", "apply", first.location, labels, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        f"warning: 1 run(s) of {first.location} have no label in {labels} (first: "
        "sample 'spare' epoch 1); they are answer-label."
    ) in done.stderr
    assert (
        f"2 of 5 runs labelled and diagnosed with the labels in {labels} as "
        "stage_diagnosis1; 1 has no label (answer-label); 1 has no label and "
        "needs none (unresolved); 1 errored before answering (sample-error); "
        f"log written to {first.location}"
    ) in done.stderr
    samples = {s.id: s for s in read_eval_log(first.location).samples or []}
    labelled = (samples["full"].scores or {})["stage_diagnosis1"]
    assert labelled.value == "pass"
    assert (labelled.metadata or {})["read_from"] == {
        "required": 'metadata["gold_docs"]',
        "context": 'metadata["retrieved"]',
        "correct": f"labels file {labels}",
    }


def _all_labelled(tmp_path: Path) -> str:
    return write_lines(
        tmp_path / "labels.jsonl",
        [{"id": key, "correct": True} for key in RUNS],
    )


@pytest.mark.parametrize("when", ["final sync", "before the rename", "into the aside"])
def test_a_log_rewritten_at_the_last_moment_is_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Another program rewrites the log while the labelled one is synced, or
    once it is moved aside, or writes into the moved-aside log: its write stays."""
    log = run_log(tmp_path)
    labels = _all_labelled(tmp_path)
    flush_to_disk, publish = outputs.AtomicFile.flush_to_disk, outputs.publish
    kept = [log.read_bytes() + b"appended"] if when == "into the aside" else []

    def rewrite() -> None:  # by a rename, as Inspect writes
        if not kept:
            log.with_name("other.eval").write_bytes(b"rewritten")
            os.replace(log.with_name("other.eval"), log)
            kept.append(b"rewritten")

    def sync_then_rewrite(self: outputs.AtomicFile) -> None:
        flush_to_disk(self)
        rewrite()

    def rewrite_then_publish(temporary: str, final: str, *, replace: bool) -> None:
        if final == str(log):
            rewrite()
        publish(temporary, final, replace=replace)

    def publish_then_write_aside(temporary: str, final: str, *, replace: bool) -> None:
        publish(temporary, final, replace=replace)
        if final == str(log):
            (aside,) = log.parent.glob(f"{log.name}.*.replaced")
            with aside.open("ab") as still_open:
                still_open.write(b"appended")

    if when == "final sync":
        monkeypatch.setattr(outputs.AtomicFile, "flush_to_disk", sync_then_rewrite)
    elif when == "before the rename":
        monkeypatch.setattr(outputs, "publish", rewrite_then_publish)
    else:
        monkeypatch.setattr(outputs, "publish", publish_then_write_aside)
    done = tracegrade("labels", "apply", str(log), labels, cwd=log.parent)
    assert done.returncode == 2, done.stderr
    assert "changed while its labels were applied" in one_clear_line(done.stderr)
    assert log.read_bytes() == kept[0]
    assert sorted(path.name for path in log.parent.iterdir()) == [log.name]


def test_a_log_whose_eval_has_not_finished_is_labelled_only_with_force(
    tmp_path: Path,
) -> None:
    log = run_log(tmp_path)
    labels = _all_labelled(tmp_path)
    started = read_eval_log(str(log))
    started.status = "started"
    write_eval_log(started, str(log))
    before = log.read_bytes()

    refused = tracegrade("labels", "apply", str(log), labels, cwd=tmp_path)
    assert refused.returncode == 1, refused.stderr
    line = one_clear_line(refused.stderr)
    assert "has status 'started': its eval has not finished" in line
    assert "pass --force" in line
    assert log.read_bytes() == before

    # Anyone can put the lock's name in TMPDIR first: the apply goes on.
    lock = tmp_path / "tmp" / Path(lock_path(str(log))).name
    lock.mkdir(parents=True)
    forced = tracegrade(
        *("labels", "apply", str(log), labels, "--force"),
        cwd=tmp_path,
        env={"TMPDIR": str(lock.parent)},
    )
    assert forced.returncode == 0, forced.stderr
    assert f"warning: {str(lock)!r} cannot be a lock (" in forced.stderr
    assert "going on without taking turns with other labels apply runs" in forced.stderr
    assert len(stages(read_eval_log(str(log)), "stage_diagnosis1")) == len(RUNS)


WALKTHROUGH = (
    Path(__file__).resolve().parent.parent / "docs" / "evaluate-your-own-model.md"
).read_text(encoding="utf-8")


def test_the_walkthroughs_label_steps_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps 5 and 6 of docs/evaluate-your-own-model.md, its placeholder filled
    in as the page says, staff's labels set between export and apply."""
    log = run_log(tmp_path)
    bash = re.findall(r"```bash\n(.*?)```", WALKTHROUGH, re.DOTALL)
    (export,) = [block for block in bash if "labels export" in block]
    (apply,) = [block for block in bash if "labels apply" in block]
    (report,) = [block for block in bash if block.startswith("tracegrade report")]
    filled = export.replace("<the-log-file>", shlex.quote(str(log)))
    assert filled != export

    exported = tracegrade_shell(filled, tmp_path, errexit=True)
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in (tmp_path / "labels.jsonl").open()]
    samples = read_eval_log(str(log)).samples or []
    for line, sample in zip(lines, samples, strict=True):
        assert line == {
            "id": sample.id,
            "question": sample.input,
            "answer": sample.output.completion,
            **RUNS[str(sample.id)],
            "correct": None,
            "grader": None,
        }
    write_lines(
        tmp_path / "labels.jsonl",
        [{**line, "correct": line["id"] != "gap"} for line in lines],
    )
    later = filled.splitlines()[0] + "\n" + apply + report
    done = tracegrade_shell(later, tmp_path, errexit=True)
    assert done.returncode == 0, done.stderr
    assert "3 of 3 runs labelled and diagnosed" in done.stderr
    # A row for each score, as the page says.
    assert "E1 [stage_diagnosis1]" in done.stdout
    labelled = stages(read_eval_log(str(log)), "stage_diagnosis1")
    assert labelled[("gap", 1)] == "retrieval"
    # The relabelled log (two stage scores per sample) exports the same lines.
    again = tracegrade(
        "labels", "export", str(log), "--out", "again.jsonl", cwd=tmp_path
    )
    assert "3 lines to label written to again.jsonl" in again.stderr
    assert [json.loads(x) for x in (tmp_path / "again.jsonl").open()] == lines

    (python,) = [
        block
        for block in re.findall(r"```python\n(.*?)```", WALKTHROUGH, re.DOTALL)
        if 'os.environ["LOG"]' in block
    ]
    monkeypatch.setenv("LOG", str(log))
    namespace: dict[str, Any] = {}
    *statements, shares = python.strip().splitlines()
    exec("\n".join(statements), namespace)
    assert sorted(namespace["runs"]["staff"]) == ["pass", "pass", "retrieval"]
    staff = builtins.eval(shares.split("#")[0], namespace)  # stage shares
    assert staff.to_dict() == pytest.approx({"pass": 2 / 3, "retrieval": 1 / 3})


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


@pytest.mark.runs_long
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
    reported = tracegrade("report", "logs", "--json", cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    read = json.loads(reported.stdout)
    assert [summary["runs"] for summary in read["stage_diagnosis"]] == [4]
    superseded = [s["path"] for s in read["superseded"]]
    assert superseded == [failed.location.removeprefix("file://")]
    text = tracegrade("report", "logs", cwd=tmp_path).stdout
    assert "1 eval in 2 logs (1 log superseded by its retry, not counted)" in text
    clean = run_inspect("eval", "runs.py", *OPTIONS, "--log-dir", "clean", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    compared = tracegrade("compare", "clean", "logs", "--json", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    (pair,) = json.loads(compared.stdout)["pairs"]
    assert pair["stage_diagnosis"][0]["pairs"] == 4
    assert "NEW: 1 log superseded by its retry, not counted" in compared.stderr
